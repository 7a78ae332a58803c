//! The target's directory, opened once: every later step is relative to its descriptor.
//!
//! The `*at` system calls come from rustix, on every Unix the core builds for (Linux and
//! macOS). One step has a Linux shortcut: removing a tree goes through `/proc/self/fd`, where
//! std's `remove_dir_all` (which descends with `O_NOFOLLOW` beneath each parent's descriptor)
//! can start at this directory's descriptor; elsewhere, and on Linux with the core's
//! `portable` feature, the walk below does the same by hand.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, RawMode, Uid};

pub struct Dir(File);

/// What a name in a directory is, not following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Link,
    Directory,
    Other,
}

/// What a replaced file keeps: its permission bits, owner and group.
pub struct Existing {
    mode: RawMode,
    uid: Uid,
    gid: Gid,
}

/// Opened as a directory, not following a link at the last component, not inherited by
/// child processes.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// The directory at `path`, as given (links in it followed: it is the caller's).
    pub fn open(path: &std::path::Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(Dir(rustix::fs::open(path, flags, Mode::empty())?.into()))
    }

    /// Another descriptor of the same directory.
    pub fn try_clone(&self) -> io::Result<Dir> {
        self.0.try_clone().map(Dir)
    }

    /// The directory `name` in this one, created if it is missing (mode 0777 under the umask,
    /// as `mkdir` gives), and opened without following a link: a symbolic link there, to
    /// anywhere, is refused (ELOOP or ENOTDIR), never gone through.
    pub fn open_child(&self, name: &OsStr) -> io::Result<Dir> {
        match rustix::fs::mkdirat(&self.0, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        self.open_existing(name)
    }

    /// The directory `name` in this one, not following a link.
    fn open_existing(&self, name: &OsStr) -> io::Result<Dir> {
        Ok(Dir(rustix::fs::openat(
            &self.0,
            name,
            DIRECTORY,
            Mode::empty(),
        )?
        .into()))
    }

    /// What `name` in this directory is, not following a link, with what a replacement of it
    /// keeps; None if there is nothing of that name.
    pub fn entry(&self, name: &OsStr) -> io::Result<Option<(EntryKind, Existing)>> {
        let st = match rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => EntryKind::File,
            FileType::Symlink => EntryKind::Link,
            FileType::Directory => EntryKind::Directory,
            _ => EntryKind::Other,
        };
        let existing = Existing {
            mode: st.st_mode & 0o777,
            uid: Uid::from_raw(st.st_uid),
            gid: Gid::from_raw(st.st_gid),
        };
        Ok(Some((kind, existing)))
    }

    /// The regular file `name` in this directory, if there is one (not following links:
    /// the caller resolved the target already).
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<Existing>> {
        Ok(self
            .entry(name)?
            .and_then(|(kind, existing)| (kind == EntryKind::File).then_some(existing)))
    }

    /// Creates `name` exclusively, never through a link, with `existing`'s owner, group and
    /// permission bits (those the process may set), or for a new file mode 0666 under the
    /// umask, as `open(path, "wb")` gives.
    pub fn create_exclusive(&self, name: &OsStr, existing: Option<&Existing>) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        // Created no wider than the target (the umask may narrow it further until the
        // fchmod below sets the target's bits exactly).
        let mode = Mode::from_raw_mode(existing.map_or(0o666, |e| e.mode));
        let file: File = rustix::fs::openat(&self.0, name, flags | OFlags::CLOEXEC, mode)?.into();
        if let Some(e) = existing {
            // Ownership first (a change of owner may clear mode bits), each only as far as
            // the process may: an ordinary user cannot give a file away, but may set a group
            // it belongs to.
            if rustix::fs::fchown(&file, Some(e.uid), Some(e.gid)).is_err() {
                let _ = rustix::fs::fchown(&file, None, Some(e.gid));
            }
            if let Err(err) = rustix::fs::fchmod(&file, Mode::from_raw_mode(e.mode)) {
                drop(file);
                let _ = self.remove(name);
                return Err(err.into());
            }
        }
        Ok(file)
    }

    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.0, from, &self.0, to)?)
    }

    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    /// Removes `name` in this directory and everything below it, without following a link
    /// (a link there is removed, not what it points to); nothing if it is missing.
    pub fn remove_all(&self, name: &OsStr) -> io::Result<()> {
        #[cfg(all(target_os = "linux", not(feature = "portable")))]
        {
            use std::os::fd::AsRawFd;
            let path = std::path::Path::new("/proc/self/fd")
                .join(self.0.as_raw_fd().to_string())
                .join(name);
            match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            }
        }
        #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
        self.remove_tree(name)
    }

    /// [`Dir::remove_all`] by hand: a walk that opens each directory beneath its parent's
    /// descriptor without following a link. It keeps a stack of open directories rather
    /// than recursing, so a hostile, very deep tree ends in an error (out of descriptors),
    /// never in a stack overflow.
    #[cfg_attr(all(target_os = "linux", not(feature = "portable")), allow(dead_code))]
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        match self.entry(name)? {
            None => return Ok(()),
            Some((EntryKind::Directory, _)) => {}
            Some(_) => return self.remove(name),
        }
        /// One open directory of the walk, its name in its parent, and how often its
        /// listing was read again because it was not empty at the end (some file systems
        /// skip entries of a listing that changes while it is read).
        struct Level {
            dir: Dir,
            entries: rustix::fs::Dir,
            name: std::ffi::OsString,
            rereads: u32,
        }
        let level = |parent: &Dir, name: &OsStr| -> io::Result<Level> {
            let dir = parent.open_existing(name)?;
            let entries = rustix::fs::Dir::read_from(&dir.0)?;
            Ok(Level {
                dir,
                entries,
                name: name.to_owned(),
                rereads: 0,
            })
        };
        let mut levels = vec![level(self, name)?];
        while let Some(top) = levels.last_mut() {
            match top.entries.next() {
                Some(entry) => {
                    let entry = entry?;
                    let child = OsStr::from_bytes(entry.file_name().to_bytes());
                    if child == "." || child == ".." {
                        continue;
                    }
                    let is_dir = match entry.file_type() {
                        FileType::Directory => true,
                        FileType::Unknown => {
                            matches!(top.dir.entry(child)?, Some((EntryKind::Directory, _)))
                        }
                        _ => false,
                    };
                    if is_dir {
                        let next = level(&top.dir, child)?;
                        levels.push(next);
                    } else {
                        top.dir.remove(child)?;
                    }
                }
                None => {
                    let done = levels.pop().expect("the loop holds a level");
                    let parent = levels.last().map_or(self, |l| &l.dir);
                    match rustix::fs::unlinkat(&parent.0, &done.name, AtFlags::REMOVEDIR) {
                        Ok(()) => {}
                        Err(rustix::io::Errno::NOTEMPTY) if done.rereads < 3 => {
                            let mut again = done;
                            again.entries.rewind();
                            again.rereads += 1;
                            levels.push(again);
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(())
    }
}
