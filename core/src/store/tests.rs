use std::io::Write;

use super::*;

fn small_parts() -> ClientOptions {
    ClientOptions {
        part_size: 5 << 20,
        max_in_flight: 4,
        ..Default::default()
    }
}

#[test]
fn urls_split_into_scheme_bucket_and_prefix() {
    assert_eq!(split_url("s3://b/a/c/").unwrap(), ("s3".into(), "b", "a/c"));
    assert_eq!(split_url("GS://b").unwrap(), ("gs".into(), "b", ""));
    assert!(split_url("s3:///x").is_err());
    assert!(split_url("bucket/x").is_err());
}

#[test]
fn options_are_checked_and_named() {
    let open = |k: &str, v: &str| Store::open("s3://b/p", &[(k.into(), v.into())]);
    let e = open("max_in_flight", "many").unwrap_err().to_string();
    assert!(e.contains("max_in_flight") && e.contains("many"), "{e}");
    let e = open("part_size", "1024").unwrap_err().to_string();
    assert!(e.contains("5 MiB"), "{e}");
    let e = open("no_such_option", "1").unwrap_err().to_string();
    assert!(e.contains("no_such_option"), "{e}");
    let e = open("retry_timeout", "soon").unwrap_err().to_string();
    assert!(e.contains("retry_timeout"), "{e}");
    for name in ["timeout", "request_timeout", "connect_timeout"] {
        let e = open(name, "soon").unwrap_err().to_string();
        assert!(e.contains(name), "{e}");
        // Seconds as pyarrow gives them, or a duration with its unit.
        for value in ["1.5", "2s", "750ms"] {
            assert!(open(name, value).is_ok(), "{name}={value}");
        }
    }
    let (store, prefix) = Store::open(
        "s3://b/p/q",
        &[
            ("endpoint".into(), "http://127.0.0.1:9".into()),
            ("retry_timeout".into(), "250ms".into()),
            ("max_in_flight".into(), "7".into()),
        ],
    )
    .unwrap();
    assert_eq!(prefix, "p/q");
    assert_eq!(store.max_in_flight(), 7);
    assert_eq!(
        store.0.options.retry.retry_timeout,
        Duration::from_millis(250)
    );
    let e = Store::open("ftp://b/p", &[]).unwrap_err().to_string();
    assert!(e.contains("ftp://"), "{e}");
}

#[test]
fn keys_are_taken_as_they_are() {
    assert_eq!(key("a/x=%2F/f").unwrap().as_ref(), "a/x=%2F/f");
    assert!(key("a//b").is_err());
    assert!(key("a/../b").is_err());
}

#[test]
fn a_small_object_is_one_put_when_committed() {
    let store = Store::in_memory(small_parts());
    let mut w = store.create("d/f.bin").unwrap();
    w.write_all(b"hello").unwrap();
    assert!(!store.any_below("d").unwrap(), "nothing before the commit");
    assert_eq!(w.commit().unwrap(), 5);
    assert_eq!(store.get("d/f.bin").unwrap().as_ref(), b"hello");
    assert_eq!(store.list("d").unwrap(), vec![("d/f.bin".to_string(), 5)]);
}

#[test]
fn a_large_object_is_a_multipart_upload_shown_only_when_complete() {
    let store = Store::in_memory(small_parts());
    let data: Vec<u8> = (0..(12 << 20)).map(|i| (i % 251) as u8).collect();
    let mut w = store.create("big").unwrap();
    for chunk in data.chunks(1 << 20) {
        w.write_all(chunk).unwrap();
    }
    assert!(w.multipart.is_some(), "parts went while it was written");
    assert!(store.list("").unwrap().is_empty());
    w.commit().unwrap();
    assert_eq!(store.get("big").unwrap().as_ref(), &data[..]);
    assert_eq!(
        store.get_range("big", 100..110).unwrap().as_ref(),
        &data[100..110]
    );
}

#[test]
fn a_dropped_object_leaves_nothing() {
    let store = Store::in_memory(small_parts());
    let mut w = store.create("gone").unwrap();
    w.write_all(&vec![1u8; 6 << 20]).unwrap();
    drop(w);
    let mut small = store.create("gone2").unwrap();
    small.write_all(b"x").unwrap();
    drop(small);
    assert!(store.list("").unwrap().is_empty());
}

#[test]
fn background_uploads_are_bounded_and_all_complete() {
    let store = Store::in_memory(small_parts());
    let uploads: Vec<Upload> = (0..50)
        .map(|i| {
            let mut w = store.create(&format!("p/{i}")).unwrap();
            w.write_all(&[i as u8; 10]).unwrap();
            w.commit_in_background().unwrap()
        })
        .collect();
    for u in uploads {
        assert_eq!(u.wait().unwrap(), 10);
    }
    assert_eq!(store.list("p").unwrap().len(), 50);
    assert_eq!(
        store.0.in_flight.available_permits(),
        4,
        "every permit returned"
    );
    store.delete_below("p").unwrap();
    assert!(!store.any_below("p").unwrap());
}

#[test]
fn ranged_reads_serve_read_at() {
    let store = Store::in_memory(small_parts());
    let mut w = store.create("r").unwrap();
    w.write_all(b"0123456789").unwrap();
    w.commit().unwrap();
    let o = StoreObject::open(&store, "r").unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(o.read_at(8, &mut buf).unwrap(), 2);
    assert_eq!(&buf[..2], b"89");
    assert_eq!(o.read_at(10, &mut buf).unwrap(), 0);
    match StoreObject::open(&store, "missing")
        .map(|_| ())
        .unwrap_err()
    {
        Error::Io(io) => assert_eq!(io.kind(), io::ErrorKind::NotFound),
        other => panic!("{other}"),
    }
}

#[test]
fn reads_near_the_end_come_from_one_fetched_tail() {
    let store = Store::in_memory(small_parts());
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let mut w = store.create("t").unwrap();
    w.write_all(&data).unwrap();
    w.commit().unwrap();
    let o = StoreObject::open(&store, "t").unwrap();
    let mut buf = [0u8; 100];
    for offset in [199_990u64, 150_000, 136_000, 1_000, 199_900] {
        let n = o.read_at(offset, &mut buf).unwrap();
        let want = &data[offset as usize..(offset as usize + 100).min(data.len())];
        assert_eq!(&buf[..n], want, "at {offset}");
    }
    assert_eq!(o.tail.get().map(|t| t.len()), Some(TAIL as usize));
}

/// A directory as a filesystem reached through blocking calls, counting its reads.
fn dir_store(dir: &std::path::Path, options: ClientOptions) -> (Store, Arc<CountingFs>) {
    let fs = Arc::new(CountingFs {
        inner: blocking::DirFs(dir.to_path_buf()),
        reads: Default::default(),
    });
    (Store::over_filesystem(fs.clone(), "/d/", options), fs)
}

#[derive(Debug)]
struct CountingFs {
    inner: blocking::DirFs,
    reads: std::sync::Mutex<Vec<Option<Range<u64>>>>,
}

impl blocking::BlockingFs for CountingFs {
    fn create(&self, path: &str) -> io::Result<Box<dyn blocking::BlockingWriter>> {
        self.inner.create(path)
    }
    fn read(&self, path: &str, range: Option<Range<u64>>) -> io::Result<(Bytes, u64)> {
        self.reads.lock().unwrap().push(range.clone());
        self.inner.read(path, range)
    }
    fn size(&self, path: &str) -> io::Result<u64> {
        self.inner.size(path)
    }
    fn list(&self, prefix: &str) -> io::Result<Vec<(String, u64)>> {
        self.inner.list(prefix)
    }
    fn delete(&self, path: &str) -> io::Result<()> {
        self.inner.delete(path)
    }
    fn copy(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.copy(from, to)
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("zstdpool-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_filesystem_of_blocking_calls_is_a_store() {
    let dir = temp_dir("blocking");
    let (store, _) = dir_store(&dir, small_parts());
    for (key, n) in [("a/x=1/f.bin", 10usize), ("a/x=2/g.bin", 3), ("b/h.bin", 1)] {
        let mut w = store.create(key).unwrap();
        w.write_all(&vec![7u8; n]).unwrap();
        w.commit().unwrap();
    }
    assert_eq!(
        store.list("a").unwrap(),
        vec![
            ("a/x=1/f.bin".to_string(), 10),
            ("a/x=2/g.bin".to_string(), 3)
        ]
    );
    assert!(store.any_below("b").unwrap() && !store.any_below("c").unwrap());
    assert_eq!(store.size("a/x=2/g.bin").unwrap(), 3);
    assert_eq!(
        &store.get_range("a/x=1/f.bin", 2..5).unwrap()[..],
        &[7, 7, 7]
    );
    assert_eq!(store.url("b/h.bin"), "/d/b/h.bin");
    store.delete_below("a").unwrap();
    assert_eq!(store.list("").unwrap(), vec![("b/h.bin".to_string(), 1)]);
    match store.get("a/x=1/f.bin").unwrap_err() {
        Error::Io(io) => {
            assert_eq!(io.kind(), io::ErrorKind::NotFound);
            assert!(io.to_string().contains("/d/a/x=1/f.bin"), "{io}");
        }
        other => panic!("{other}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn large_files_through_blocking_calls_go_in_parts_and_aborts_remove_them() {
    let dir = temp_dir("blocking-parts");
    let (store, _) = dir_store(&dir, small_parts());
    let data: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 251) as u8).collect();
    let mut w = store.create("big").unwrap();
    for chunk in data.chunks(1 << 20) {
        w.write_all(chunk).unwrap();
    }
    assert!(w.multipart.is_some(), "past a part's size");
    w.commit().unwrap();
    assert_eq!(std::fs::read(dir.join("big")).unwrap(), data);
    let mut w = store.create("dropped").unwrap();
    w.write_all(&data).unwrap();
    assert!(dir.join("dropped").exists(), "written as it goes");
    drop(w);
    assert!(!dir.join("dropped").exists(), "an abort removes it");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn small_reads_are_served_by_windows() {
    let dir = temp_dir("windows");
    let (store, fs) = dir_store(&dir, small_parts());
    let data: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 241) as u8).collect();
    std::fs::write(dir.join("w"), &data).unwrap();
    let o = StoreObject::open(&store, "w").unwrap();
    // A page header of 4 KiB, then its body of 150 KB, then the next: as the reader reads.
    let mut offset = 1000u64;
    while offset + 200_000 < 2 << 20 {
        for len in [4096usize, 150_000] {
            let mut buf = vec![0u8; len];
            assert_eq!(o.read_at(offset, &mut buf).unwrap(), len);
            assert_eq!(&buf[..], &data[offset as usize..offset as usize + len]);
            offset += len as u64;
        }
    }
    let reads = fs.reads.lock().unwrap().len();
    assert!(
        (2..=3).contains(&reads),
        "{reads} reads for two MiB in windows of one"
    );
    // A read larger than a window is fetched as asked.
    let mut big = vec![0u8; (WINDOW + 10) as usize];
    assert_eq!(o.read_at(5, &mut big).unwrap(), big.len());
    assert_eq!(&big[..], &data[5..5 + big.len()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn store_urls_are_those_of_the_schemes_listed_once() {
    for url in ["s3://b/k", "S3A://b", "gs://b/k/", "GCS://b"] {
        assert!(super::is_store_url(url), "{url}");
    }
    for url in [
        "hdfs://b/k",
        "file:///tmp",
        "s3:/b",
        "/tmp/x",
        "s3",
        "memory://x",
    ] {
        assert!(!super::is_store_url(url), "{url}");
    }
    assert_eq!(
        super::schemes().collect::<Vec<_>>(),
        ["s3", "s3a", "gs", "gcs"]
    );
}
