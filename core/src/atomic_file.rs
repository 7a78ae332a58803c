//! A file written under a temporary name beside its target and renamed over the target on
//! commit, so that a failed or abandoned write never leaves a partial file under the target's
//! name. Every path sink (IPC writers, `recompress`) writes through it.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written; dropping it uncommitted removes it.
pub struct TempFile {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    done: bool,
}

impl TempFile {
    /// Creates the temporary file for `target`.
    pub fn create(target: PathBuf) -> std::io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        if target.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                format!("cannot write to {}: it is a directory", target.display()),
            ));
        }
        let mut name = target
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(format!(
            ".zstdpool-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let temp = target.with_file_name(name);
        let file = File::create(&temp).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot write to {}: {e}", target.display()),
            )
        })?;
        Ok(TempFile {
            file,
            temp,
            target,
            done: false,
        })
    }

    /// The path the file appears under on commit.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the data and renames the file over its target; on failure the file is removed.
    pub fn commit(&mut self) -> std::io::Result<()> {
        let result = self
            .file
            .sync_data()
            .or_else(|e| {
                // Some files (pipes, /dev/null) cannot sync; that is no failure.
                if e.kind() == std::io::ErrorKind::InvalidInput {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .and_then(|()| std::fs::rename(&self.temp, &self.target));
        if result.is_ok() {
            self.done = true;
        } else {
            self.discard();
        }
        result
    }

    /// Removes the file, unless it was committed. Idempotent.
    pub fn discard(&mut self) {
        if !self.done {
            self.done = true;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.discard();
    }
}
