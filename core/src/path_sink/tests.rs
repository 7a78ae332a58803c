//! Planted links, modes, links and special files, abandoned writes.

use super::*;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::time::Duration;

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

fn write(target: &Path, data: &[u8]) -> io::Result<()> {
    let mut sink = PathSink::create(target, Durability::Rename)?;
    sink.write_all(data)?;
    sink.commit()
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zstdpool-path-sink-{tag}-{}", random_suffix()));
    std::fs::create_dir(&d).unwrap();
    d
}

#[test]
fn links_planted_at_every_name_tried_are_never_followed() {
    let dir = tempdir("planted");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let target = dir.join("out.arrow");
    // The names the sink will try: plant a link at the first ten.
    let mut n = 0u64;
    let mut names = || {
        n += 1;
        n
    };
    for i in 1..=10u64 {
        let temp = dir.join(temp_name(OsStr::new("out.arrow"), i));
        std::os::unix::fs::symlink(&victim, temp).unwrap();
    }
    let mut sink = PathSink::create_named(&target, Durability::Rename, &mut names).unwrap();
    sink.write_all(b"new data").unwrap();
    sink.commit().unwrap();
    assert_eq!(read(&victim), b"precious");
    assert_eq!(read(&target), b"new data");
    assert_eq!(n, 11, "the eleventh name was free");
    // With every name taken, the write fails clearly and writes nothing.
    let mut always = || 1u64;
    let err = PathSink::create_named(&dir.join("out.arrow"), Durability::Rename, &mut always)
        .err()
        .expect("every name taken");
    assert!(err.to_string().contains("temporary names"), "{err}");
    assert_eq!(read(&victim), b"precious");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask() {
    let dir = tempdir("modes");
    let target = dir.join("private");
    std::fs::write(&target, b"old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    write(&target, b"new").unwrap();
    assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o600);
    // Wider than the umask allows: kept too, as it was the target's.
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o664)).unwrap();
    write(&target, b"newer").unwrap();
    assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o664);
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o027));
    let fresh = dir.join("fresh");
    write(&fresh, b"x").unwrap();
    rustix::process::umask(old);
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o640);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn links_stay_links_and_hard_links_keep_the_old_content() {
    let dir = tempdir("links");
    let real = dir.join("real");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink("real", &link).unwrap();
    write(&link, b"via link").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read(&real), b"via link");
    let hard = dir.join("hard");
    std::fs::hard_link(&real, &hard).unwrap();
    write(&real, b"replaced").unwrap();
    assert_eq!(read(&real), b"replaced");
    assert_eq!(read(&hard), b"via link");
    let dangling = dir.join("dangling");
    std::os::unix::fs::symlink("missing", &dangling).unwrap();
    let err = write(&dangling, b"x").unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!dir.join("missing").exists());
    let err = write(&dir, b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    // /dev/null is written in place, not replaced.
    write(Path::new("/dev/null"), b"discarded").unwrap();
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_abandoned_write_leaves_nothing_and_stale_files_are_found() {
    let dir = tempdir("stale");
    let target = dir.join("t.arrow");
    std::fs::write(&target, b"old").unwrap();
    {
        let mut sink = PathSink::create(&target, Durability::Sync).unwrap();
        sink.write_all(b"partial").unwrap();
    }
    assert_eq!(read(&target), b"old");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    // A write that never finished: its file stays until removed.
    let sink = PathSink::create(&target, Durability::Rename).unwrap();
    std::mem::forget(sink);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(names.iter().any(|n| is_temp_name(n)), "{names:?}");
    assert!(!is_temp_name(OsStr::new("t.arrow")));
    assert!(!is_temp_name(OsStr::new(".t.zstdpool-12-xyz.tmp")));
    assert!(remove_stale(&dir, Duration::from_secs(3600), true)
        .unwrap()
        .is_empty());
    let removed = remove_stale(&target, Duration::ZERO, false).unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stale_files_are_found_for_a_target_the_killed_write_never_created() {
    let dir = tempdir("never");
    let target = dir.join("new.parquet");
    std::mem::forget(PathSink::create(&target, Durability::Rename).unwrap());
    assert!(!target.exists());
    let removed = remove_stale(&target, Duration::ZERO, false).unwrap();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // Nothing to find is no error; a directory that does not exist is.
    assert!(remove_stale(&target, Duration::ZERO, false)
        .unwrap()
        .is_empty());
    let err = remove_stale(&dir.join("gone").join("x"), Duration::ZERO, false).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn long_names_make_valid_temporary_names() {
    let long = "é".repeat(120); // 240 bytes
    let temp = temp_name(OsStr::new(&long), 7);
    assert!(temp.len() <= 255, "{}", temp.len());
    assert!(temp.to_str().is_some());
    assert!(is_temp_name(&temp));
}

#[test]
fn beneath_a_base_no_link_is_followed_and_no_path_leaves_it() {
    let root = tempdir("beneath");
    let (base, outside) = (root.join("base"), root.join("outside"));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, base.join("link")).unwrap();
    let b = Beneath::base(&base).unwrap();
    // Directories are made one component at a time, each opened without following a link.
    let made = b.child(Path::new("a/b"), &base.join("a/b")).unwrap();
    assert!(base.join("a/b").is_dir());
    for bad in ["link", "link/x", "a/../link", "../outside", "/tmp"] {
        let err = b.child(Path::new(bad), &base.join(bad)).err();
        assert!(err.is_some(), "{bad}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // A file is written through the directory's descriptor; a link at its name is refused.
    let mut sink =
        PathSink::create_beneath(&made, "f".as_ref(), &base.join("a/b/f"), Durability::Rename)
            .unwrap();
    sink.write_all(b"data").unwrap();
    sink.commit().unwrap();
    assert_eq!(read(&base.join("a/b/f")), b"data");
    std::os::unix::fs::symlink(outside.join("victim"), base.join("a/b/g")).unwrap();
    let refused =
        PathSink::create_beneath(&made, "g".as_ref(), &base.join("a/b/g"), Durability::Rename);
    assert!(refused.is_err());
    // Removal removes a link, not what it points to.
    std::fs::write(outside.join("keep"), b"x").unwrap();
    b.remove_all("link".as_ref()).unwrap();
    assert!(outside.join("keep").exists() && !base.join("link").exists());
    b.remove_all("a".as_ref()).unwrap();
    assert!(!base.join("a").exists());
    b.remove_all("missing".as_ref()).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}

/// The walk other systems remove trees with (Linux goes through /proc/self/fd unless the
/// `portable` feature is on), run here either way: links inside the tree are removed, never
/// followed, however deep, and a file where a tree was expected is removed as a file.
#[test]
fn the_portable_tree_removal_never_follows_a_link() {
    let root = tempdir("walk");
    let (base, outside) = (root.join("base"), root.join("outside"));
    std::fs::create_dir_all(base.join("t/a/b/c")).unwrap();
    std::fs::create_dir_all(outside.join("d")).unwrap();
    std::fs::write(outside.join("d/keep"), b"x").unwrap();
    std::fs::write(outside.join("keep"), b"x").unwrap();
    for (i, dir) in ["t", "t/a", "t/a/b", "t/a/b/c"].iter().enumerate() {
        for j in 0..40 {
            std::fs::write(base.join(dir).join(format!("f{j}")), b"data").unwrap();
        }
        std::os::unix::fs::symlink(&outside, base.join(dir).join(format!("to-dir-{i}"))).unwrap();
        std::os::unix::fs::symlink(outside.join("keep"), base.join(dir).join("to-file")).unwrap();
    }
    std::fs::write(base.join("plain"), b"x").unwrap();
    let b = Beneath::base(&base).unwrap();
    b.0.remove_tree("t".as_ref()).unwrap();
    b.0.remove_tree("plain".as_ref()).unwrap();
    b.0.remove_tree("missing".as_ref()).unwrap();
    assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
    assert_eq!(read(&outside.join("keep")), b"x");
    assert_eq!(read(&outside.join("d/keep")), b"x");
    // A link given as the tree itself is removed as a link.
    std::os::unix::fs::symlink(&outside, base.join("link")).unwrap();
    b.0.remove_tree("link".as_ref()).unwrap();
    assert!(outside.join("d/keep").exists() && !base.join("link").exists());
    std::fs::remove_dir_all(&root).unwrap();
}
