//! Temporary files of writes that never finished (a process killed mid-write): recognised by
//! their name and removed once old enough.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{temp_prefix, TEMP_END, TEMP_MARK};

/// Whether `name` is a temporary file name of ours.
pub fn is_temp_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let Some(rest) = name.strip_suffix(TEMP_END) else {
        return false;
    };
    let Some(at) = rest.rfind(TEMP_MARK) else {
        return false;
    };
    let tail = &rest[at + TEMP_MARK.len()..];
    let Some((pid, random)) = tail.split_once('-') else {
        return false;
    };
    name.starts_with('.')
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 16
        && random.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Removes temporary files of ours left by writes that never finished (a process killed
/// mid-write) and last modified at least `min_age` ago: those of the file `path`, or, for a
/// directory, every one in it and (with `recursive`) in the directories below it. Symbolic
/// links are neither followed nor removed. Returns the paths removed.
pub fn remove_stale(path: &Path, min_age: Duration, recursive: bool) -> io::Result<Vec<PathBuf>> {
    let now = SystemTime::now();
    let mut removed = Vec::new();
    let is_dir = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.is_dir(),
        // A write killed before its rename never created its target; its temporary files are
        // still beside where the target would be.
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    if is_dir {
        remove_stale_in(path, None, now, min_age, recursive, &mut removed)?;
    } else {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
        })?;
        remove_stale_in(parent, Some(name), now, min_age, false, &mut removed)?;
    }
    Ok(removed)
}

fn remove_stale_in(
    dir: &Path,
    only_for: Option<&OsStr>,
    now: SystemTime,
    min_age: Duration,
    recursive: bool,
    removed: &mut Vec<PathBuf>,
) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if kind.is_dir() {
            if recursive {
                remove_stale_in(&entry.path(), None, now, min_age, true, removed)?;
            }
            continue;
        }
        if !kind.is_file() || !is_temp_name(&name) {
            continue;
        }
        if let Some(target) = only_for {
            let prefix = temp_prefix(target);
            if !name
                .as_encoded_bytes()
                .starts_with(prefix.as_encoded_bytes())
            {
                continue;
            }
        }
        let modified = entry.metadata()?.modified()?;
        if now.duration_since(modified).unwrap_or_default() >= min_age {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed.push(entry.path()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
