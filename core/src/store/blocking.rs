//! A store over a filesystem reached through blocking calls: what a pyarrow or fsspec
//! filesystem object passed as `filesystem=` is to the core (the bindings implement
//! [`BlockingFs`] with calls into Python). The dataset writer, the scanner and the single-file
//! sinks and sources are written against `object_store`, so such a filesystem is reached by
//! the same code as S3: this is `object_store::ObjectStore` over the few calls a filesystem
//! has, which no library provides for a filesystem that lives in the caller's process.
//!
//! A whole file's write runs on the runtime's pool of blocking threads, so that uploads left
//! running go at once up to the store's bound; the other calls run on the thread that polls
//! them (a caller blocking on the runtime runs them itself). A multipart upload's
//! parts are written as they are handed over, in order, since a file stream has no parts.

use std::fmt;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt as _};
use object_store::path::Path as Key;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
    UploadPart,
};

/// A file being written through a [`BlockingFs`].
pub trait BlockingWriter: Send {
    fn write(&mut self, data: &[u8]) -> io::Result<()>;
    /// Closes the file, whole.
    fn close(self: Box<Self>) -> io::Result<()>;
}

/// The calls a filesystem takes. Paths are the store's keys ("a/b/c"); the implementation
/// maps them to its own paths and makes the directories a file needs.
pub trait BlockingFs: Send + Sync + fmt::Debug + 'static {
    /// Opens `path` for writing, replacing what is there.
    fn create(&self, path: &str) -> io::Result<Box<dyn BlockingWriter>>;
    /// `range` of the file `path` (the whole file for None; a range past its end is cut
    /// short), and the file's size.
    fn read(&self, path: &str, range: Option<Range<u64>>) -> io::Result<(Bytes, u64)>;
    fn size(&self, path: &str) -> io::Result<u64>;
    /// The files below the directory `prefix` ("" for all), at any depth: keys and sizes.
    /// A missing directory has none.
    fn list(&self, prefix: &str) -> io::Result<Vec<(String, u64)>>;
    /// Deletes the file `path`; a missing file is not an error.
    fn delete(&self, path: &str) -> io::Result<()>;
    fn copy(&self, from: &str, to: &str) -> io::Result<()>;
}

/// The name `object_store`'s errors give the store.
const STORE: &str = "filesystem";

fn store_error(path: &str, e: io::Error) -> object_store::Error {
    use object_store::Error as E;
    let path = path.to_string();
    let source = Box::new(e);
    match source.kind() {
        io::ErrorKind::NotFound => E::NotFound { path, source },
        io::ErrorKind::PermissionDenied => E::PermissionDenied { path, source },
        io::ErrorKind::AlreadyExists => E::AlreadyExists { path, source },
        _ => E::Generic {
            store: STORE,
            source,
        },
    }
}

fn meta(location: Key, size: u64) -> ObjectMeta {
    ObjectMeta {
        location,
        // A filesystem's modification times are not read: nothing here uses them, and each
        // would be one more call.
        last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        size,
        e_tag: None,
        version: None,
    }
}

/// [`BlockingFs`] as an `ObjectStore`.
pub struct BlockingStore {
    fs: Arc<dyn BlockingFs>,
}

impl BlockingStore {
    pub fn new(fs: Arc<dyn BlockingFs>) -> Self {
        BlockingStore { fs }
    }
}

impl fmt::Debug for BlockingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockingStore({:?})", self.fs)
    }
}

impl fmt::Display for BlockingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.fs)
    }
}

/// Writes `payload` to `writer` and closes it; on failure the partial file is deleted.
fn write_whole(fs: &dyn BlockingFs, path: &str, payload: &PutPayload) -> io::Result<()> {
    let mut writer = fs.create(path)?;
    let written = payload
        .iter()
        .try_for_each(|chunk| writer.write(chunk))
        .and_then(|()| writer.close());
    if written.is_err() {
        let _ = fs.delete(path);
    }
    written
}

#[async_trait]
impl ObjectStore for BlockingStore {
    async fn put_opts(
        &self,
        location: &Key,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let path = location.as_ref();
        if !matches!(opts.mode, PutMode::Overwrite) {
            return Err(object_store::Error::NotImplemented {
                operation: "a conditional put".into(),
                implementer: STORE.into(),
            });
        }
        // On the runtime's pool of blocking threads: an upload left running would otherwise
        // hold one of the runtime's two workers for the whole of its calls, so no more than
        // two files went at once whatever the store's bound on uploads in flight.
        let fs = self.fs.clone();
        let owned = path.to_string();
        tokio::task::spawn_blocking(move || write_whole(fs.as_ref(), &owned, &payload))
            .await
            .map_err(|e| store_error(path, io::Error::other(e)))?
            .map_err(|e| store_error(path, e))?;
        Ok(PutResult {
            e_tag: None,
            version: None,
            extensions: Default::default(),
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Key,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let path = location.as_ref().to_string();
        let file = self.fs.create(&path).map_err(|e| store_error(&path, e))?;
        Ok(Box::new(BlockingUpload {
            fs: self.fs.clone(),
            path,
            file: Some(file),
        }))
    }

    async fn get_opts(
        &self,
        location: &Key,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let path = location.as_ref();
        let fail = |e| store_error(path, e);
        if options.if_match.is_some()
            || options.if_none_match.is_some()
            || options.if_modified_since.is_some()
            || options.if_unmodified_since.is_some()
            || options.version.is_some()
        {
            return Err(object_store::Error::NotImplemented {
                operation: "a conditional or versioned get".into(),
                implementer: STORE.into(),
            });
        }
        let (data, size, range) = if options.head {
            let size = self.fs.size(path).map_err(fail)?;
            (Bytes::new(), size, 0..0)
        } else {
            let wanted = match &options.range {
                None => None,
                Some(GetRange::Bounded(r)) => Some(r.clone()),
                Some(GetRange::Offset(o)) => Some(*o..u64::MAX),
                Some(GetRange::Suffix(n)) => {
                    let size = self.fs.size(path).map_err(fail)?;
                    Some(size.saturating_sub(*n)..size)
                }
            };
            let (data, size) = self.fs.read(path, wanted.clone()).map_err(fail)?;
            let start = wanted.map_or(0, |r| r.start);
            if options.range.is_some() && start >= size && size > 0 {
                return Err(object_store::Error::Generic {
                    store: STORE,
                    source: format!(
                        "the range starts at {start}, past the end of {path} ({size} bytes)"
                    )
                    .into(),
                });
            }
            let range = start..start + data.len() as u64;
            (data, size, range)
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(data) }).boxed()),
            meta: meta(location.clone(), size),
            range,
            attributes: Default::default(),
            extensions: Default::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Key>>,
    ) -> BoxStream<'static, object_store::Result<Key>> {
        let fs = self.fs.clone();
        locations
            .map(move |location| {
                let location = location?;
                fs.delete(location.as_ref())
                    .map_err(|e| store_error(location.as_ref(), e))?;
                Ok(location)
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let fs = self.fs.clone();
        let prefix = prefix.map_or_else(String::new, |p| p.as_ref().to_string());
        stream::once(async move { list_metas(fs.as_ref(), &prefix) })
            .flat_map(|listed| match listed {
                Ok(metas) => stream::iter(metas.into_iter().map(Ok)).boxed(),
                Err(e) => stream::iter([Err(e)]).boxed(),
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Key>) -> object_store::Result<ListResult> {
        let prefix = prefix.map_or_else(String::new, |p| p.as_ref().to_string());
        let metas = list_metas(self.fs.as_ref(), &prefix)?;
        let depth = if prefix.is_empty() {
            0
        } else {
            prefix.len() + 1
        };
        let mut common_prefixes = Vec::new();
        let mut objects = Vec::new();
        for m in metas {
            let rest = &m.location.as_ref()[depth.min(m.location.as_ref().len())..];
            match rest.split_once('/') {
                Some((dir, _)) => {
                    let dir = if prefix.is_empty() {
                        dir.to_string()
                    } else {
                        format!("{prefix}/{dir}")
                    };
                    let dir = Key::from(dir.as_str());
                    if common_prefixes.last() != Some(&dir) {
                        common_prefixes.push(dir);
                    }
                }
                None => objects.push(m),
            }
        }
        common_prefixes.dedup();
        Ok(ListResult {
            common_prefixes,
            objects,
            extensions: Default::default(),
        })
    }

    async fn copy_opts(
        &self,
        from: &Key,
        to: &Key,
        _options: CopyOptions,
    ) -> object_store::Result<()> {
        self.fs
            .copy(from.as_ref(), to.as_ref())
            .map_err(|e| store_error(from.as_ref(), e))
    }
}

/// The files below `prefix` as object metadata, sorted by key.
fn list_metas(fs: &dyn BlockingFs, prefix: &str) -> object_store::Result<Vec<ObjectMeta>> {
    let mut listed = fs.list(prefix).map_err(|e| store_error(prefix, e))?;
    listed.sort();
    listed
        .into_iter()
        .map(|(path, size)| {
            let key = Key::parse(&path).map_err(|e| object_store::Error::Generic {
                store: STORE,
                source: Box::new(e),
            })?;
            Ok(meta(key, size))
        })
        .collect()
}

/// A file written through a [`BlockingFs`] as a multipart upload: each part is written as it
/// is handed over; completing closes the file, and aborting deletes it.
struct BlockingUpload {
    fs: Arc<dyn BlockingFs>,
    path: String,
    file: Option<Box<dyn BlockingWriter>>,
}

impl fmt::Debug for BlockingUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockingUpload({})", self.path)
    }
}

impl BlockingUpload {
    fn closed(&self) -> object_store::Error {
        store_error(
            &self.path,
            io::Error::other(format!("{} was closed already", self.path)),
        )
    }
}

#[async_trait]
impl MultipartUpload for BlockingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let written = match self.file.as_mut() {
            Some(file) => data
                .iter()
                .try_for_each(|chunk| file.write(chunk))
                .map_err(|e| store_error(&self.path, e)),
            None => Err(self.closed()),
        };
        Box::pin(std::future::ready(written))
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let file = self.file.take().ok_or_else(|| self.closed())?;
        if let Err(e) = file.close() {
            let _ = self.fs.delete(&self.path);
            return Err(store_error(&self.path, e));
        }
        Ok(PutResult {
            e_tag: None,
            version: None,
            extensions: Default::default(),
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        if let Some(file) = self.file.take() {
            let _ = file.close();
        }
        self.fs
            .delete(&self.path)
            .map_err(|e| store_error(&self.path, e))
    }
}

/// A [`BlockingFs`] over a local directory, for the core's tests of the adapter.
#[cfg(test)]
#[derive(Debug)]
pub struct DirFs(pub std::path::PathBuf);

#[cfg(test)]
impl BlockingFs for DirFs {
    fn create(&self, path: &str) -> io::Result<Box<dyn BlockingWriter>> {
        struct W(std::fs::File);
        impl BlockingWriter for W {
            fn write(&mut self, data: &[u8]) -> io::Result<()> {
                io::Write::write_all(&mut self.0, data)
            }
            fn close(self: Box<Self>) -> io::Result<()> {
                self.0.sync_all()
            }
        }
        let full = self.0.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        Ok(Box::new(W(std::fs::File::create(full)?)))
    }

    fn read(&self, path: &str, range: Option<Range<u64>>) -> io::Result<(Bytes, u64)> {
        let all = std::fs::read(self.0.join(path))?;
        let size = all.len() as u64;
        let r = range.unwrap_or(0..size);
        let (start, end) = (r.start.min(size) as usize, r.end.min(size) as usize);
        Ok((Bytes::copy_from_slice(&all[start..end.max(start)]), size))
    }

    fn size(&self, path: &str) -> io::Result<u64> {
        Ok(std::fs::metadata(self.0.join(path))?.len())
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<(String, u64)>> {
        fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, u64)>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else if let Ok(m) = e.metadata() {
                    let rel = p.strip_prefix(root).expect("below the root");
                    out.push((rel.to_string_lossy().into_owned(), m.len()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.0, &self.0.join(prefix), &mut out);
        Ok(out)
    }

    fn delete(&self, path: &str) -> io::Result<()> {
        match std::fs::remove_file(self.0.join(path)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn copy(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::copy(self.0.join(from), self.0.join(to)).map(|_| ())
    }
}
