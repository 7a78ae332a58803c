//! Where a dataset's files go: a local directory, whose partition directories and files are
//! made beneath its descriptor without following a link, or an object store's prefix, whose
//! files are objects uploaded as they are completed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{path_error, Error, Result};
use crate::path_sink::{Beneath, Durability, PathSink};
use crate::store::{ObjectWriter, Store, Upload};

use super::file::WrittenFile;
use super::options::ExistingData;

/// Where a dataset is written.
#[derive(Clone, Debug)]
pub enum Destination {
    /// A local directory.
    Local(PathBuf),
    /// Keys below `prefix` in an object store (no trailing '/'; empty for the bucket's root).
    Store { store: Store, prefix: String },
}

/// Where the files go, prepared.
pub(super) enum Target {
    /// A local directory, opened once: every partition directory and file is made beneath
    /// its descriptor, without following a link. The partition directories made (and
    /// emptied, for `DeleteMatching`) so far are kept open.
    Local {
        base: PathBuf,
        base_dir: Beneath,
        prepared: HashMap<String, Beneath>,
    },
    /// An object store: files are objects, uploaded as they are completed (a small one in
    /// the background, bounded by the store's requests in flight). Partitions are prefixes;
    /// those emptied for `DeleteMatching` so far are kept.
    Store {
        store: Store,
        prefix: String,
        prepared: HashSet<String>,
        uploads: Vec<(WrittenFile, Upload)>,
    },
}

impl Target {
    /// The key of `relative` (a partition directory, or a file in one) below the prefix.
    fn key(prefix: &str, relative: &str) -> String {
        match prefix.is_empty() {
            true => relative.to_string(),
            false => format!("{prefix}/{relative}"),
        }
    }
}

impl Target {
    /// Prepares `destination` for a write, refusing one that holds files already where
    /// `existing` says to (and making a missing local directory).
    pub(super) fn open(destination: Destination, existing: ExistingData) -> Result<Target> {
        match destination {
            Destination::Local(base) => Self::open_local(base, existing),
            Destination::Store { store, prefix } => {
                if existing == ExistingData::Error && store.any_below(&prefix)? {
                    return Err(Error::Io(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        format!(
                            "cannot write a dataset to {}: objects exist below it ({})",
                            store.url(&prefix),
                            NOT_EMPTY
                        ),
                    )));
                }
                Ok(Target::Store {
                    store,
                    prefix,
                    prepared: HashSet::new(),
                    uploads: Vec::new(),
                })
            }
        }
    }

    /// Checks a local base directory for `existing` (making it if it is missing) and opens it.
    fn open_local(base: PathBuf, existing: ExistingData) -> Result<Target> {
        match std::fs::read_dir(&base) {
            Ok(mut entries) => {
                if existing == ExistingData::Error && entries.next().is_some() {
                    return Err(Error::Io(path_error(
                        "cannot write a dataset to",
                        &base,
                        std::io::Error::new(
                            std::io::ErrorKind::AlreadyExists,
                            format!("the directory is not empty ({NOT_EMPTY})"),
                        ),
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&base).map_err(|e| path_error("cannot create", &base, e))?
            }
            Err(e) => return Err(Error::Io(path_error("cannot write a dataset to", &base, e))),
        }
        let base_dir =
            Beneath::base(&base).map_err(|e| path_error("cannot write a dataset to", &base, e))?;
        Ok(Target::Local {
            base,
            base_dir,
            prepared: HashMap::new(),
        })
    }

    /// Makes a partition's directory beneath the base directory (emptied first for
    /// `delete`: `DeleteMatching`), once, and keeps it open.
    pub(super) fn prepare(&mut self, dir: &str, delete: bool) -> Result<()> {
        match self {
            Target::Local {
                base,
                base_dir,
                prepared,
            } => {
                if prepared.contains_key(dir) {
                    return Ok(());
                }
                let path = base.join(dir);
                let relative = Path::new(dir);
                let opened = match (relative.parent(), relative.file_name()) {
                    (Some(parent), Some(name)) if delete => {
                        let above = base_dir.child(parent, &base.join(parent))?;
                        above
                            .remove_all(name)
                            .map_err(|e| path_error("cannot delete", &path, e))?;
                        above.child(Path::new(name), &path)?
                    }
                    _ => base_dir.child(relative, &path)?,
                };
                prepared.insert(dir.to_string(), opened);
            }
            Target::Store {
                store,
                prefix,
                prepared,
                ..
            } => {
                if prepared.contains(dir) {
                    return Ok(());
                }
                // The partition's objects, as a local partition directory is emptied; the
                // base's own objects stay, as the base directory's files stay.
                if delete && !dir.is_empty() {
                    store.delete_below(&Target::key(prefix, dir))?;
                }
                prepared.insert(dir.to_string());
            }
        }
        Ok(())
    }

    /// A new file `name` in the partition `dir`: its sink and the path it is shown as.
    pub(super) fn create_file(
        &self,
        dir: &str,
        name: &str,
        durability: Durability,
    ) -> Result<(FileSink, PathBuf)> {
        match self {
            Target::Local { base, prepared, .. } => {
                let path = base.join(dir).join(name);
                let opened = prepared.get(dir).ok_or_else(|| {
                    Error::Io(path_error(
                        "cannot write",
                        &path,
                        std::io::Error::other("its directory was not prepared"),
                    ))
                })?;
                let sink = PathSink::create_beneath(opened, name.as_ref(), &path, durability)?;
                Ok((FileSink::Path(sink), path))
            }
            Target::Store { store, prefix, .. } => {
                let relative = match dir.is_empty() {
                    true => name.to_string(),
                    false => format!("{dir}/{name}"),
                };
                let object = store.create(&Target::key(prefix, &relative))?;
                let path = PathBuf::from(object.shown());
                Ok((FileSink::Object(object), path))
            }
        }
    }
}

/// Where a file's bytes go.
pub(super) enum FileSink {
    Path(PathSink),
    Object(ObjectWriter),
}

impl std::io::Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            FileSink::Path(s) => s.write(buf),
            FileSink::Object(o) => o.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            FileSink::Path(s) => s.write_all(buf),
            FileSink::Object(o) => o.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            FileSink::Path(s) => s.flush(),
            FileSink::Object(o) => o.flush(),
        }
    }
}

/// What `existing_data_behavior="error"` refuses, and the ways out.
const NOT_EMPTY: &str = "existing_data_behavior=\"error\"; \"overwrite_or_ignore\" writes beside \
                         what is there, \"delete_matching\" replaces the partitions written";
