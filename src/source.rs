//! Where a reader's bytes come from: bytes-like objects (read without copying), paths, and
//! Python file objects.

use crate::args;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_buffer::Buffer;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;

use crate::buffer::type_name;
use crate::errors;
use crate::errors::OrRaise as _;
use crate::io::{as_path, to_io, unwrap_py_io_error};
use crate::store::{self, Located, PathOptions};
use zstdpool_core::error::{path_error, Result};
use zstdpool_core::ipc::source::{BytesSource, RandomSource, ReaderSource, Source};
use zstdpool_core::parquet::{ParquetSource, ReadAt};

/// A Python binary file object as a Rust reader. Each call takes the GIL for its length.
pub struct PyFileLike {
    obj: Py<PyAny>,
}

impl Read for PyFileLike {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Python::attach(|py| {
            let data = self
                .obj
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(to_io)?;
            let view = PyUntypedBuffer::get(&data).map_err(|_| {
                std::io::Error::other(format!(
                    "the source's read() returned '{}', not bytes",
                    type_name(&data)
                ))
            })?;
            if view.len_bytes() > buf.len() {
                return Err(std::io::Error::other(format!(
                    "the source's read({}) returned {} bytes, more than asked",
                    buf.len(),
                    view.len_bytes()
                )));
            }
            let n = view.len_bytes();
            if n > 0 {
                // SAFETY: the export is held for the length of this copy, and `n` is within both.
                let src = unsafe { std::slice::from_raw_parts(view.buf_ptr() as *const u8, n) };
                buf[..n].copy_from_slice(src);
            }
            Ok(n)
        })
    }
}

impl Seek for PyFileLike {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        Python::attach(|py| {
            let (offset, whence) = match pos {
                SeekFrom::Start(n) => (n as i64, 0),
                SeekFrom::Current(n) => (n, 1),
                SeekFrom::End(n) => (n, 2),
            };
            self.obj
                .bind(py)
                .call_method1("seek", (offset, whence))
                .and_then(|r| r.extract::<u64>())
                .map_err(to_io)
        })
    }
}

/// A Python bytes-like object as an Arrow buffer, without copying: the buffer keeps the
/// Python export alive for as long as any array made from it lives.
fn buffer_from_python(obj: &Bound<'_, PyAny>) -> PyResult<Option<Buffer>> {
    let Ok(view) = PyUntypedBuffer::get(obj) else {
        return Ok(None);
    };
    if !view.is_c_contiguous() {
        return Err(errors::unusable_buffer("source must be C-contiguous"));
    }
    let len = view.len_bytes();
    let ptr = NonNull::new(view.buf_ptr() as *mut u8).unwrap_or(NonNull::dangling());
    let owner = Arc::new(std::panic::AssertUnwindSafe(view));
    // SAFETY: `ptr` points at `len` readable bytes that stay valid while `owner` holds the export.
    Ok(Some(unsafe {
        Buffer::from_custom_allocation(ptr, len, owner)
    }))
}

/// A reader's input.
pub enum InputSource {
    Bytes(BytesSource),
    File(ReaderSource<BufReader<File>>),
    Python(ReaderSource<PyFileLike>),
}

/// A file to read, named in errors (a directory is refused here: opening one succeeds).
fn open_path(path: &Path) -> PyResult<File> {
    let cannot_read = |e| errors::os_error(path_error("cannot read", path, e));
    let file = File::open(path).map_err(cannot_read)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(cannot_read(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    Ok(file)
}

/// The file behind a `pyarrow.MemoryMappedFile`, opened anew from its descriptor and placed
/// at the mapping's position. Reading the mapping itself would fault (SIGBUS, killing the
/// process) if another process truncated the file; reading the file gives a short read
/// instead, which the readers report as truncated input.
fn mapped_file(obj: &Bound<'_, PyAny>) -> PyResult<Option<File>> {
    let Ok(pyarrow) = obj.py().import("pyarrow") else {
        return Ok(None);
    };
    if !obj.is_instance(&pyarrow.getattr("MemoryMappedFile")?)? {
        return Ok(None);
    }
    let fd: i32 = obj.call_method0("fileno")?.extract()?;
    let position: u64 = obj.call_method0("tell")?.extract()?;
    // SAFETY: the descriptor is the mapping's, open for the length of this call; the dup
    // below owns a descriptor of its own.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut file = File::from(borrowed.try_clone_to_owned().map_err(errors::os_error)?);
    file.seek(SeekFrom::Start(position))
        .map_err(errors::os_error)?;
    Ok(Some(file))
}

/// A Parquet reader's input: bytes-like (read without copying), a path (read at offsets, by
/// several threads at once), or a seekable binary file object (each read takes the GIL).
pub fn parquet_source<'py>(
    obj: &Bound<'py, PyAny>,
    at: PathOptions<'_, 'py>,
) -> PyResult<ParquetSource> {
    let obj = match store::locate("source", obj, at)? {
        Located::Store(store, key) => {
            return obj
                .py()
                .detach(|| store.parquet_source(&key, None))
                .or_raise()
        }
        Located::Keys(..) => {
            return Err(errors::wrong_type("source must be one file, not a list"));
        }
        Located::Other(obj) => obj,
    };
    let obj = &obj;
    if let Some(path) = as_path(obj)? {
        let file = open_path(&path)?;
        return ParquetSource::file(file)
            .map_err(|e| errors::os_error(path_error("cannot read", &path, e)));
    }
    if let Some(buffer) = buffer_from_python(obj)? {
        return Ok(ParquetSource::memory(buffer));
    }
    if let Some(file) = mapped_file(obj)? {
        return ParquetSource::file(file).map_err(errors::os_error);
    }
    if obj.hasattr("read")? && obj.hasattr("seek")? {
        let file = PyReadAt(Mutex::new(PyFileLike {
            obj: obj.clone().unbind(),
        }));
        return ParquetSource::read_at(Arc::new(file)).map_err(unwrap_py_io_error);
    }
    Err(args::not_one_of(
        obj,
        "source",
        "a bytes-like object, a path (str or os.PathLike) or a seekable binary file object",
    ))
}

/// A Python file object read at offsets: seek and read, one thread at a time.
struct PyReadAt(Mutex<PyFileLike>);

impl ReadAt for PyReadAt {
    fn size(&self) -> std::io::Result<u64> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .seek(SeekFrom::End(0))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut file = self.0.lock().unwrap_or_else(|p| p.into_inner());
        file.seek(SeekFrom::Start(offset))?;
        file.read(buf)
    }
}

impl InputSource {
    pub fn open<'py>(obj: &Bound<'py, PyAny>, at: PathOptions<'_, 'py>) -> PyResult<Self> {
        let obj = match store::locate("source", obj, at)? {
            Located::Store(store, key) => {
                // An IPC file or stream of a store is read whole, in one request.
                let data = obj.py().detach(|| store.get(&key)).or_raise()?;
                return Ok(InputSource::Bytes(BytesSource::new(Buffer::from(data))));
            }
            Located::Keys(..) => {
                return Err(errors::wrong_type("source must be one file, not a list"));
            }
            Located::Other(obj) => obj,
        };
        let obj = &obj;
        if let Some(path) = as_path(obj)? {
            let file = open_path(&path)?;
            return Ok(InputSource::File(ReaderSource::new(
                BufReader::with_capacity(1 << 16, file),
            )));
        }
        if let Some(buffer) = buffer_from_python(obj)? {
            return Ok(InputSource::Bytes(BytesSource::new(buffer)));
        }
        // Checked after paths and buffers, which need no import to recognise.
        if let Some(file) = mapped_file(obj)? {
            return Ok(InputSource::File(ReaderSource::new(
                BufReader::with_capacity(1 << 16, file),
            )));
        }
        if obj.hasattr("read")? {
            return Ok(InputSource::Python(ReaderSource::new(PyFileLike {
                obj: obj.clone().unbind(),
            })));
        }
        Err(args::not_one_of(
            obj,
            "source",
            "a bytes-like object, a path (str or os.PathLike) or a binary file object with read()",
        ))
    }
}

impl InputSource {
    /// Whether reads at any offset work (a Python file object must be seekable).
    pub fn seekable(&self, py: Python<'_>) -> PyResult<bool> {
        match self {
            InputSource::Bytes(_) | InputSource::File(_) => Ok(true),
            InputSource::Python(s) => {
                let obj = s.get_ref().obj.bind(py);
                if !obj.hasattr("seek")? {
                    return Ok(false);
                }
                match obj.call_method0("seekable") {
                    Ok(v) => v.is_truthy(),
                    Err(_) => Ok(true),
                }
            }
        }
    }
}

impl Source for InputSource {
    fn read(&mut self, n: usize) -> Result<Buffer> {
        match self {
            InputSource::Bytes(s) => s.read(n),
            InputSource::File(s) => s.read(n),
            InputSource::Python(s) => s.read(n),
        }
    }
}

impl RandomSource for InputSource {
    fn size(&mut self) -> Result<u64> {
        match self {
            InputSource::Bytes(s) => s.size(),
            InputSource::File(s) => s.size(),
            InputSource::Python(s) => s.size(),
        }
    }
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer> {
        match self {
            InputSource::Bytes(s) => s.read_at(offset, n),
            InputSource::File(s) => s.read_at(offset, n),
            InputSource::Python(s) => s.read_at(offset, n),
        }
    }
}
