//! Writing to a path safely, in shared and private directories alike. Every path sink (the IPC
//! writers, `recompress`, and the Parquet and dataset writers) writes through [`PathSink`].
//!
//! A regular file is written under a temporary name beside its target and renamed over it on
//! commit, so a failed or abandoned write leaves nothing under the target's name. What makes
//! that safe where others can write:
//! - the temporary file is created exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`), under a
//!   random name, retried on a collision: a link planted at that name is never followed;
//! - every step after the target's directory is opened goes through that directory's file
//!   descriptor (`openat`, `renameat`), so the directory cannot be swapped underneath;
//! - the new file has its target's permission bits (and owner and group, where the process may
//!   set them) from the moment it exists, or for a new target what `open(path, "wb")` gives
//!   under the umask: never wider than the target.
//!
//! What each kind of target gets:
//! - missing: created (its directory must exist);
//! - a regular file: replaced; other hard links to it keep the old content, since the write
//!   never goes through the old file;
//! - a symbolic link: the link is followed to the file it names, which is replaced beside it,
//!   so the link stays and shows the new content; a link to nothing is refused;
//! - a FIFO or a character device (`/dev/null`, a terminal): written directly, as
//!   `open(path, "wb")` would, since there is nothing to replace atomically;
//! - a directory, a block device or a socket: refused.
//!
//! Durability is the caller's choice ([`Durability`]). Temporary files of a process killed
//! mid-write are recognisable by their name ([`is_temp_name`]) and [`remove_stale`] removes them.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use rustix::io::Errno;

/// What a committed write promises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Rename into place without syncing, as pyarrow and polars write. After a crash of the
    /// process the target holds its old content or the new, whole. After a power loss it may
    /// hold the old content, the new, or (depending on the file system) an empty or partial
    /// file under the new name: the data may not have reached the disk.
    #[default]
    Rename,
    /// Sync the file before the rename and its directory after: once the commit returns, the
    /// new content is on the disk under the target's name, and after a power loss at any
    /// moment the target holds its old content or the new, whole.
    Sync,
}

/// Marks a temporary file of ours: `.<target name>.zstdpool-<pid>-<random>.tmp`.
const TEMP_MARK: &str = ".zstdpool-";
const TEMP_END: &str = ".tmp";

/// The most bytes of the target's name kept in a temporary name (file names are at most 255).
const NAME_KEPT: usize = 180;

/// Names tried before giving up: a collision with a random name means someone is planting.
const ATTEMPTS: usize = 64;

/// Where the bytes of a path sink go.
pub struct PathSink {
    file: File,
    kind: Kind,
}

enum Kind {
    /// A temporary file, renamed over the target on commit.
    Replace(Pending),
    /// A FIFO or device, written in place.
    Direct { target: PathBuf },
}

struct Pending {
    dir: Dir,
    temp: OsString,
    name: OsString,
    /// The target as the caller gave it, for messages.
    target: PathBuf,
    durability: Durability,
    done: bool,
}

impl PathSink {
    /// Opens a sink for `target` (see the module documentation for what each kind of target
    /// gets).
    pub fn create(target: &Path, durability: Durability) -> io::Result<PathSink> {
        Self::create_named(target, durability, &mut random_suffix)
    }

    /// [`Self::create`] with the source of temporary names replaceable (tests plant links at
    /// the names it will try).
    fn create_named(
        target: &Path,
        durability: Durability,
        suffix: &mut dyn FnMut() -> u64,
    ) -> io::Result<PathSink> {
        let fail = |e: io::Error| named(target, e);
        let resolved = match std::fs::symlink_metadata(target) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(target)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::NotFound => io::Error::new(
                        io::ErrorKind::NotFound,
                        "it is a symbolic link to a file that does not exist",
                    ),
                    _ => e,
                })
                .map_err(fail)?,
            _ => target.to_path_buf(),
        };
        match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_dir() => {
                return Err(fail(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "it is a directory",
                )))
            }
            Ok(meta) if !meta.is_file() => return open_direct(target, &resolved, &meta),
            _ => {}
        }
        let name = resolved
            .file_name()
            .ok_or_else(|| {
                fail(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the path does not name a file",
                ))
            })?
            .to_os_string();
        let parent = match resolved.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = Dir::open(parent).map_err(fail)?;
        let existing = dir.stat(&name).map_err(fail)?;
        Self::replace_in(dir, name, existing, target, durability, suffix)
    }

    /// A sink for the file `name` in `dir`, which was opened beneath a dataset's base
    /// directory without following a link (see [`Beneath`]): an existing regular file is
    /// replaced, and anything else there (a symbolic link above all) is refused, never
    /// followed. `shown` is the path that messages and callers see.
    pub fn create_beneath(
        dir: &Beneath,
        name: &OsStr,
        shown: &Path,
        durability: Durability,
    ) -> io::Result<PathSink> {
        let fail = |e: io::Error| named(shown, e);
        let existing = match dir.0.entry(name).map_err(fail)? {
            None => None,
            Some((EntryKind::File, existing)) => Some(existing),
            Some((EntryKind::Link, _)) => return Err(fail(link_refused())),
            Some((EntryKind::Directory, _)) => {
                return Err(fail(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "it is a directory",
                )))
            }
            Some(_) => {
                return Err(fail(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it is not a regular file",
                )))
            }
        };
        let dir = dir.0.try_clone().map_err(fail)?;
        Self::replace_in(
            dir,
            name.to_os_string(),
            existing,
            shown,
            durability,
            &mut random_suffix,
        )
    }

    /// A sink writing a temporary file in `dir`, renamed over `name` on commit.
    fn replace_in(
        dir: Dir,
        name: OsString,
        existing: Option<dir::Existing>,
        target: &Path,
        durability: Durability,
        suffix: &mut dyn FnMut() -> u64,
    ) -> io::Result<PathSink> {
        let fail = |e: io::Error| named(target, e);
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let temp = temp_name(&name, suffix());
            match dir.create_exclusive(&temp, existing.as_ref()) {
                Ok(file) => {
                    return Ok(PathSink {
                        file,
                        kind: Kind::Replace(Pending {
                            dir,
                            temp,
                            name,
                            target: target.to_path_buf(),
                            durability,
                            done: false,
                        }),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(fail(e)),
            }
        }
        Err(fail(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{ATTEMPTS} temporary names beside it were all taken ({})",
                last.map_or_else(String::new, |e| e.to_string())
            ),
        )))
    }

    /// The path the data appears under.
    pub fn target(&self) -> &Path {
        match &self.kind {
            Kind::Replace(p) => &p.target,
            Kind::Direct { target } => target,
        }
    }

    /// Completes the write: the temporary file is renamed over its target (synced first, with
    /// its directory after, for [`Durability::Sync`]). On failure the temporary file is
    /// removed and the target is as it was.
    pub fn commit(&mut self) -> io::Result<()> {
        let file = &mut self.file;
        match &mut self.kind {
            Kind::Direct { .. } => file.flush(),
            Kind::Replace(p) => {
                if p.done {
                    return Ok(());
                }
                let result = (|| {
                    if p.durability == Durability::Sync {
                        file.sync_all()?;
                    }
                    p.dir.rename(&p.temp, &p.name)?;
                    p.done = true;
                    if p.durability == Durability::Sync {
                        p.dir.sync()?;
                    }
                    Ok(())
                })();
                if result.is_err() {
                    p.discard();
                }
                result.map_err(|e| named(&p.target, e))
            }
        }
    }

    /// Abandons the write: the temporary file is removed (bytes already written to a FIFO or
    /// device cannot be taken back). Idempotent.
    pub fn discard(&mut self) {
        if let Kind::Replace(p) = &mut self.kind {
            p.discard();
        }
    }
}

impl Pending {
    fn discard(&mut self) {
        if !self.done {
            self.done = true;
            let _ = self.dir.remove(&self.temp);
        }
    }
}

/// Write errors name the target (the temporary file is an implementation detail).
impl Write for PathSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.write(buf) {
            Ok(n) => Ok(n),
            Err(e) => Err(named(self.target(), e)),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.file.write_all(buf) {
            Ok(()) => Ok(()),
            Err(e) => Err(named(self.target(), e)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(named(self.target(), e)),
        }
    }
}

impl Drop for PathSink {
    fn drop(&mut self) {
        self.discard();
    }
}

/// An error about `target`, naming it.
fn named(target: &Path, e: io::Error) -> io::Error {
    crate::error::path_error("cannot write", target, e)
}

/// Opens a FIFO or character device for writing in place; refuses other special files.
fn open_direct(target: &Path, resolved: &Path, meta: &std::fs::Metadata) -> io::Result<PathSink> {
    if !is_fifo_or_char_device(meta) {
        return Err(named(
            target,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is neither a regular file nor a FIFO or character device",
            ),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(resolved)
        .map_err(|e| named(target, e))?;
    Ok(PathSink {
        file,
        kind: Kind::Direct {
            target: target.to_path_buf(),
        },
    })
}

fn is_fifo_or_char_device(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo() || meta.file_type().is_char_device()
}

/// `.<name>.zstdpool-<pid>-<suffix>.tmp`: hidden (dataset readers skip dot files), and naming
/// the process that wrote it.
fn temp_name(name: &OsStr, suffix: u64) -> OsString {
    let mut temp = temp_prefix(name);
    temp.push(format!(
        "{TEMP_MARK}{}-{suffix:016x}{TEMP_END}",
        std::process::id()
    ));
    temp
}

/// What every temporary name for `name` starts with: a dot and the name, cut to
/// [`NAME_KEPT`] bytes on a character boundary.
fn temp_prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    if let Some(s) = name.to_str() {
        let mut keep = s.len().min(NAME_KEPT);
        while !s.is_char_boundary(keep) {
            keep -= 1;
        }
        prefix.push(&s[..keep]);
        return prefix;
    }
    use std::os::unix::ffi::OsStrExt;
    let b = name.as_bytes();
    prefix.push(OsStr::from_bytes(&b[..b.len().min(NAME_KEPT)]));
    prefix
}

/// 64 bits no other process can predict: a hash of a counter, the time and the process id
/// with the hasher's random keys (drawn from the operating system once per thread).
fn random_suffix() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// A directory opened beneath another without following a link at any step: a dataset's
/// partition directories, each opened from its base directory's descriptor one component at
/// a time with `O_NOFOLLOW`. A symbolic link at any of them, whoever planted it and wherever
/// it points (inside the base directory too), is refused rather than followed, so that
/// nothing is written or deleted outside the base directory. The base directory itself is
/// the caller's path and is opened as given.
pub struct Beneath(Dir);

impl Beneath {
    /// The base directory.
    pub fn base(path: &Path) -> io::Result<Beneath> {
        Dir::open(path).map(Beneath)
    }

    /// The directory `relative` (plain names, no `..`) beneath this one, each missing
    /// component created; `shown` is its path for messages.
    pub fn child(&self, relative: &Path, shown: &Path) -> io::Result<Beneath> {
        let mut dir = self.0.try_clone()?;
        for part in relative.components() {
            let std::path::Component::Normal(name) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a plain path beneath the base directory",
                        shown.display()
                    ),
                ));
            };
            dir = dir.open_child(name).map_err(|e| match e.raw_os_error() {
                Some(e) if e == Errno::LOOP.raw_os_error() || e == Errno::NOTDIR.raw_os_error() => {
                    crate::error::path_error(
                        "cannot create",
                        shown,
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("{}: {}", name.to_string_lossy(), link_refused()),
                        ),
                    )
                }
                _ => crate::error::path_error("cannot create", shown, e),
            })?;
        }
        Ok(Beneath(dir))
    }

    /// Removes `name` in this directory and everything below it, without following a link
    /// (a link there is removed, not what it points to); nothing if it is missing.
    pub fn remove_all(&self, name: &OsStr) -> io::Result<()> {
        self.0.remove_all(name)
    }
}

fn link_refused() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a symbolic link is not followed beneath a dataset's base directory",
    )
}

mod dir;
mod stale;
#[cfg(test)]
mod tests;

use dir::{Dir, EntryKind};
pub use stale::{is_temp_name, remove_stale};
