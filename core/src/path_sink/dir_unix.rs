//! The target's directory, opened once: every later step is relative to its descriptor.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub struct Dir(File);

/// What a replaced file keeps: its permission bits, owner and group.
pub struct Existing {
    mode: libc::mode_t,
    uid: libc::uid_t,
    gid: libc::gid_t,
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl Dir {
    pub fn open(path: &Path) -> io::Result<Dir> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)?;
        Ok(Dir(file))
    }

    /// Another descriptor of the same directory.
    pub fn try_clone(&self) -> io::Result<Dir> {
        self.0.try_clone().map(Dir)
    }

    /// The directory `name` in this one, created if it is missing (mode 0777 under the umask,
    /// as `mkdir` gives), and opened without following a link: a symbolic link there, to
    /// anywhere, is refused (ELOOP or ENOTDIR), never gone through.
    pub fn open_child(&self, name: &OsStr) -> io::Result<Dir> {
        let c = cstr(name)?;
        let fd = self.0.as_raw_fd();
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if let Err(e) = check(unsafe { libc::mkdirat(fd, c.as_ptr(), 0o777) }) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: as above.
        let child = check(unsafe { libc::openat(fd, c.as_ptr(), flags) })?;
        // SAFETY: `child` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { File::from_raw_fd(child) }))
    }

    /// `name` in this directory as a path that reaches it through this descriptor
    /// (`/proc/self/fd/N/name`), so that what the path names cannot be swapped by a rename or a
    /// link above this directory, for as long as the descriptor is open.
    pub fn path_of(&self, name: &OsStr) -> PathBuf {
        Path::new("/proc/self/fd")
            .join(self.0.as_raw_fd().to_string())
            .join(name)
    }

    /// What `name` in this directory is (its `S_IFMT` bits), not following a link, with what a
    /// replacement of it keeps.
    pub fn entry(&self, name: &OsStr) -> io::Result<Option<(libc::mode_t, Existing)>> {
        Ok(self.lstat(name)?.map(|st| {
            let existing = Existing {
                mode: st.st_mode & 0o777,
                uid: st.st_uid,
                gid: st.st_gid,
            };
            (st.st_mode & libc::S_IFMT, existing)
        }))
    }

    /// The regular file `name` in this directory, if there is one (not following links:
    /// the caller resolved the target already).
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<Existing>> {
        Ok(self
            .entry(name)?
            .and_then(|(kind, existing)| (kind == libc::S_IFREG).then_some(existing)))
    }

    fn lstat(&self, name: &OsStr) -> io::Result<Option<libc::stat>> {
        let c = cstr(name)?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid directory descriptor, a NUL-terminated name and a stat buffer.
        let rc = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(st))
    }

    /// Creates `name` exclusively, never through a link, with `existing`'s owner, group and
    /// permission bits (those the process may set), or for a new file mode 0666 under the
    /// umask, as `open(path, "wb")` gives.
    pub fn create_exclusive(&self, name: &OsStr, existing: Option<&Existing>) -> io::Result<File> {
        let c = cstr(name)?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // Created no wider than the target (the umask may narrow it further until the
        // fchmod below sets the target's bits exactly).
        let mode = existing.map_or(0o666, |e| e.mode) as libc::c_uint;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags, mode) })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        if let Some(e) = existing {
            let fd = file.as_raw_fd();
            // SAFETY: plain syscalls on a descriptor we own. Ownership first (a change of
            // owner may clear mode bits), each only as far as the process may: an ordinary
            // user cannot give a file away, but may set a group it belongs to.
            unsafe {
                if libc::fchown(fd, e.uid, e.gid) != 0 {
                    let _ = libc::fchown(fd, u32::MAX, e.gid);
                }
            }
            // SAFETY: as above.
            if unsafe { libc::fchmod(fd, e.mode) } != 0 {
                let err = io::Error::last_os_error();
                drop(file);
                let _ = self.remove(name);
                return Err(err);
            }
        }
        Ok(file)
    }

    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (cstr(from)?, cstr(to)?);
        let fd = self.0.as_raw_fd();
        // SAFETY: a valid directory descriptor and NUL-terminated names.
        check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) }).map(drop)
    }

    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.0.sync_all()
    }
}
