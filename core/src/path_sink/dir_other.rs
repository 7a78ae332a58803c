//! Elsewhere the same steps by path: creation is still exclusive, but the directory is named
//! again at each step.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub struct Dir(PathBuf);

pub struct Existing {
    readonly: bool,
}

impl Dir {
    pub fn open(path: &Path) -> io::Result<Dir> {
        if !std::fs::metadata(path)?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"));
        }
        Ok(Dir(path.to_path_buf()))
    }

    pub fn stat(&self, name: &OsStr) -> io::Result<Option<Existing>> {
        match std::fs::symlink_metadata(self.0.join(name)) {
            Ok(m) if m.is_file() => Ok(Some(Existing {
                readonly: m.permissions().readonly(),
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn create_exclusive(&self, name: &OsStr, existing: Option<&Existing>) -> io::Result<File> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.0.join(name))?;
        if let Some(e) = existing {
            let mut p = file.metadata()?.permissions();
            p.set_readonly(e.readonly);
            file.set_permissions(p)?;
        }
        Ok(file)
    }

    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        std::fs::rename(self.0.join(from), self.0.join(to))
    }

    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        std::fs::remove_file(self.0.join(name))
    }

    pub fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}
