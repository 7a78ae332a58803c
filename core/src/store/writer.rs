//! Writing one object: what a local path's `PathSink` is for a store. Nothing appears under
//! the key until the object is whole, since an object store has no rename: a small object is
//! one PUT when it is committed (atomic), a large one a multipart upload whose parts go while
//! it is written and which the store shows only once it is completed. One dropped before it
//! is committed aborts its upload, so that its parts are not kept (and billed).

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use object_store::path::Path as Key;
use object_store::{
    MultipartUpload, ObjectStoreExt as _, PutPayload, PutResult, UploadPart, WriteMultipart,
};
use tokio::task::JoinHandle;

use super::runtime::runtime;
use super::Store;
use crate::error::{Error, Result};

/// Parts of one multipart upload in flight at once: what keeps a large file's upload going
/// at the link's speed while bounding what it holds to this many parts.
const PARTS_IN_FLIGHT: usize = 8;

/// An object being written.
pub struct ObjectWriter {
    store: Store,
    key: Key,
    path: String,
    /// What is written and not yet sent: the whole object while it is smaller than a part.
    buf: Vec<u8>,
    /// The upload, once the object passed a part's size. In a mutex only to be `Sync` (a
    /// dataset's open files are shared with its writing threads); never contended.
    pub(super) multipart: Option<Mutex<WriteMultipart>>,
    /// Why the upload's completion failed, when it did: object_store's `finish` aborts the
    /// upload then, and gives back the abort's error instead when that fails too.
    completion: Arc<Mutex<Option<String>>>,
    written: u64,
}

/// A multipart upload that notes on its store each abort the store does not answer, however
/// the abort came (a failed part, a failed completion, a writer dropped), and keeps why its
/// completion failed.
#[derive(Debug)]
struct NotedUpload {
    inner: Box<dyn MultipartUpload>,
    store: Store,
    path: String,
    completion: Arc<Mutex<Option<String>>>,
}

#[async_trait]
impl MultipartUpload for NotedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let completed = self.inner.complete().await;
        if let Err(e) = &completed {
            *self.completion.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
        completed
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        let aborted = self.inner.abort().await;
        if let Err(e) = &aborted {
            let why = e.to_string().replace(['\r', '\n'], " ");
            self.store.note_unaborted(&self.path, why);
        }
        aborted
    }
}

/// An upload started by [`ObjectWriter::commit_in_background`].
pub enum Upload {
    Done(u64),
    Pending {
        task: JoinHandle<std::result::Result<(), Error>>,
        bytes: u64,
    },
}

impl Upload {
    /// Whether the upload ended (waiting for it would not block).
    pub fn is_done(&self) -> bool {
        match self {
            Upload::Done(_) => true,
            Upload::Pending { task, .. } => task.is_finished(),
        }
    }

    /// Waits for the upload; returns the object's size.
    pub fn wait(self) -> Result<u64> {
        match self {
            Upload::Done(n) => Ok(n),
            Upload::Pending { task, bytes } => {
                match runtime()?.block_on(task) {
                    Ok(result) => result.map(|()| bytes),
                    // The task panicked or the runtime went away: the object was not written.
                    Err(e) => Err(Error::Io(io::Error::other(format!(
                        "an upload did not complete: {e}"
                    )))),
                }
            }
        }
    }
}

impl ObjectWriter {
    pub(super) fn new(store: Store, key: Key, path: String) -> Result<ObjectWriter> {
        Ok(ObjectWriter {
            store,
            key,
            path,
            buf: Vec::new(),
            multipart: None,
            completion: Default::default(),
            written: 0,
        })
    }

    /// The key, as pyarrow's filesystems show it ("bucket/key").
    pub fn shown(&self) -> String {
        self.store.bucket_path(&self.path)
    }

    fn io_error(&self, action: &str, e: object_store::Error) -> io::Error {
        match self.store.error(action, &self.path, e) {
            Error::Io(io) => io,
            other => io::Error::other(other.to_string()),
        }
    }

    /// Sends what is buffered as parts of the multipart upload (started now if it was not).
    fn send_parts(&mut self) -> io::Result<()> {
        let rt = runtime()?;
        if self.multipart.is_none() {
            let upload = rt
                .block_on(self.store.0.store.put_multipart(&self.key))
                .map_err(|e| self.io_error("write", e))?;
            let upload = NotedUpload {
                inner: upload,
                store: self.store.clone(),
                path: self.path.clone(),
                completion: self.completion.clone(),
            };
            self.multipart = Some(Mutex::new(WriteMultipart::new_with_chunk_size(
                Box::new(upload),
                self.store.0.options.part_size,
            )));
        }
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let upload = self.multipart.as_mut().expect("started above");
        let upload = upload.get_mut().unwrap_or_else(|p| p.into_inner());
        {
            // The parts' requests are spawned on the runtime.
            let _entered = rt.enter();
            upload.put(data);
        }
        let waited = rt.block_on(upload.wait_for_capacity(PARTS_IN_FLIGHT));
        waited.map_err(|e| self.io_error("write", e))
    }

    /// Completes the object, waiting for it to be whole in the store; returns its size.
    pub fn commit(self) -> Result<u64> {
        self.commit_in_background()?.wait()
    }

    /// Completes the object. A small one's PUT is left running (bounded by the store's
    /// requests in flight: this waits for one to end when as many are running); a multipart
    /// upload is completed before this returns.
    pub fn commit_in_background(mut self) -> Result<Upload> {
        let rt = runtime()?;
        let bytes = self.written;
        if let Some(upload) = self.multipart.take() {
            let mut upload = upload.into_inner().unwrap_or_else(|p| p.into_inner());
            let rest = Bytes::from(std::mem::take(&mut self.buf));
            {
                let _entered = rt.enter();
                upload.put(rest);
            }
            // The parts are waited for here rather than in `finish`, which aborts a failed
            // upload itself and, when the abort fails too, returns only the abort's error: a
            // part's failure is the error (an abort the store does not answer is noted by
            // `NotedUpload`).
            if let Err(e) = rt.block_on(upload.wait_for_capacity(0)) {
                let _ = rt.block_on(upload.abort());
                return Err(Error::Io(self.io_error("write", e)));
            }
            return match rt.block_on(upload.finish()) {
                Ok(_) => Ok(Upload::Done(bytes)),
                Err(e) => {
                    let completion = self
                        .completion
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take();
                    Err(Error::Io(match completion {
                        // The completion's failure is the error, not its abort's.
                        Some(why) if why != e.to_string() => io::Error::other(format!(
                            "cannot write {}: {}",
                            self.store.url(&self.path),
                            why.replace(['\r', '\n'], " ")
                        )),
                        _ => self.io_error("write", e),
                    }))
                }
            };
        }
        let permit = rt
            .block_on(self.store.0.in_flight.clone().acquire_owned())
            .map_err(|e| Error::Io(io::Error::other(e)))?;
        let payload = PutPayload::from(std::mem::take(&mut self.buf));
        let store = self.store.clone();
        let key = self.key.clone();
        let path = self.path.clone();
        let task = rt.spawn(async move {
            let result = store.0.store.put(&key, payload).await;
            drop(permit);
            result
                .map(|_| ())
                .map_err(|e| store.error("write", &path, e))
        });
        Ok(Upload::Pending { task, bytes })
    }
}

impl Write for ObjectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.try_reserve(data.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "{} bytes to write {}",
                    data.len(),
                    self.store.url(&self.path)
                ),
            )
        })?;
        self.buf.extend_from_slice(data);
        self.written += data.len() as u64;
        if self.buf.len() >= self.store.0.options.part_size {
            self.send_parts()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ObjectWriter {
    /// An object dropped before its commit leaves nothing: a multipart upload is aborted
    /// (its parts deleted), and a small object was never sent.
    /// An abort the store does not answer (the endpoint went away) is noted on the store, for
    /// the write's error to name (by `NotedUpload`, or here when there is no runtime to ask).
    fn drop(&mut self) {
        if let Some(upload) = self.multipart.take() {
            let upload = upload.into_inner().unwrap_or_else(|p| p.into_inner());
            match runtime() {
                Ok(rt) => {
                    let _ = rt.block_on(upload.abort());
                }
                Err(e) => self.store.note_unaborted(&self.path, e),
            }
        }
    }
}
