//! Where IPC bytes go and come from: paths, Python file objects and bytes-like objects.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;

use crate::errors::OrRaise as _;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString, PyType};

use crate::buffer::type_name;
use crate::bytes_output::MemoryOutput;
use crate::errors;
use zstdpool_core::error::{path_error, Error, Result};
use zstdpool_core::ipc::source::{BytesSource, RandomSource, ReaderSource, Source};
use zstdpool_core::output::Output;
use zstdpool_core::path_sink::{Durability, PathSink};

/// What a path argument may be: str or os.PathLike.
fn as_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        let os = obj.py().import("os")?;
        let p = os.call_method1("fspath", (obj,))?;
        if p.is_instance_of::<PyBytes>() {
            let b: Vec<u8> = p.extract()?;
            return Ok(Some(PathBuf::from(
                String::from_utf8_lossy(&b).into_owned(),
            )));
        }
        return Ok(Some(p.extract::<PathBuf>()?));
    }
    Ok(None)
}

/// Whether `obj` is an instance of `io.IOBase` (what `open` and `io.BytesIO` return). The C
/// base class `_io._IOBase` answers for those, and for Python classes derived from io's, with
/// a plain subtype check; only a miss asks the `io.IOBase` ABC (for classes registered with
/// it), a check several times slower.
fn is_io_object(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static C_BASE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static IO_BASE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = obj.py();
    let io_type = |module: &str, name: &str| -> PyResult<Py<PyType>> {
        Ok(py
            .import(module)?
            .getattr(name)?
            .cast_into::<PyType>()?
            .unbind())
    };
    let c_base = C_BASE.get_or_try_init(py, || io_type("_io", "_IOBase"))?;
    if obj.get_type().is_subclass(c_base.bind(py))? {
        return Ok(true);
    }
    let base = IO_BASE.get_or_try_init(py, || io_type("io", "IOBase"))?;
    obj.is_instance(base.bind(py))
}

/// The most one `write` call on a Python sink receives: each call gets a new bytes object.
const PYTHON_WRITE_CHUNK: usize = 1 << 20;

/// What a bytes output starts with: a small write's whole output, so that it never takes the
/// GIL to grow (output is shrunk to its length at the end).
const MEMORY_START: usize = 64 << 10;

/// Appends to a memory sink what is not encoded in place: the last few bytes of an output
/// (end-of-stream marker, footer). Reserved exactly: an amortized reserve would grow the
/// whole output's allocation for them. Takes the GIL only if the bytes object must grow.
fn append_tail(out: &mut MemoryOutput, bytes: &[u8]) -> PyResult<()> {
    out.try_reserve_exact(bytes.len()).or_raise()?;
    out.extend_from_slice(bytes).or_raise()
}

/// Where a writer's bytes go.
pub enum Sink {
    /// Built in a bytes object, returned at the end.
    Memory(MemoryOutput),
    /// A path (see [`PathSink`]: a temporary file renamed into place on commit).
    Path(PathSink),
    /// A Python object with `write`.
    Python(Py<PyAny>),
}

impl Sink {
    /// A sink for `obj`: None (bytes), a path, or a binary file object.
    /// A path sink commits with `durability`.
    pub fn open(
        py: Python<'_>,
        obj: Option<&Bound<'_, PyAny>>,
        durability: Durability,
    ) -> PyResult<Sink> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(Sink::Memory(MemoryOutput::with_capacity(py, MEMORY_START)?));
        };
        // io objects (BytesIO, open files) first: asking one for `__fspath__` raises (and
        // formats) an AttributeError inside hasattr, a fifth of opening a writer. Other
        // objects are paths first: some path types (py.path.local) have a write() of their own.
        let io_object = is_io_object(obj)?;
        if !io_object {
            if let Some(target) = as_path(obj)? {
                return PathSink::create(&target, durability)
                    .map(Sink::Path)
                    .map_err(errors::os_error);
            }
        }
        if io_object || obj.hasattr("write")? {
            if let Ok(closed) = obj.getattr("closed") {
                if closed.is_truthy()? {
                    return Err(errors::io("the sink is closed"));
                }
            }
            if let Ok(writable) = obj.call_method0("writable") {
                if !writable.is_truthy()? {
                    return Err(errors::io(format!(
                        "the sink ({}) is not writable",
                        type_name(obj)
                    )));
                }
            }
            return Ok(Sink::Python(obj.clone().unbind()));
        }
        Err(errors::wrong_type(format!(
            "sink must be None, a path (str or os.PathLike) or a binary file object with a \
             write() method, not '{}'",
            type_name(obj)
        )))
    }

    /// Whether bytes go to memory (then the writer encodes straight into the sink's bytes).
    pub fn memory(&mut self) -> Option<&mut MemoryOutput> {
        match self {
            Sink::Memory(v) => Some(v),
            _ => None,
        }
    }

    /// Writes `bytes` without the GIL where the sink allows it.
    pub fn write(&mut self, py: Python<'_>, bytes: &[u8]) -> PyResult<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        match self {
            Sink::Memory(v) => append_tail(v, bytes),
            Sink::Path(t) => py.detach(|| t.write_all(bytes)).map_err(errors::os_error),
            Sink::Python(obj) => {
                let obj = obj.bind(py);
                let mut done = 0;
                while done < bytes.len() {
                    // In pieces: a large batch is not copied whole into one more bytes object.
                    let end = bytes.len().min(done + PYTHON_WRITE_CHUNK);
                    let chunk = PyBytes::new(py, &bytes[done..end]);
                    let n = obj.call_method1("write", (chunk,))?;
                    // Raw files may write less than asked and say how much.
                    done += match n.extract::<Option<usize>>()? {
                        Some(0) => {
                            return Err(errors::io("the sink accepted no bytes"));
                        }
                        Some(n) => n.min(end - done),
                        None => end - done,
                    };
                }
                Ok(())
            }
        }
    }

    /// As [`Sink::write`], called without the GIL: a Python sink takes it for its `write`.
    pub fn write_detached(&mut self, bytes: &[u8]) -> PyResult<()> {
        match self {
            Sink::Path(t) => t.write_all(bytes).map_err(errors::os_error),
            Sink::Memory(v) => append_tail(v, bytes),
            Sink::Python(_) => Python::attach(|py| self.write(py, bytes)),
        }
    }

    /// Completes the output: renames a path sink's file into place. Returns the bytes for a
    /// memory sink (once: the sink is empty after).
    pub fn commit<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self {
            Sink::Memory(v) => {
                let done = std::mem::replace(v, MemoryOutput::with_capacity(py, 0)?);
                done.finish(py).map(Some)
            }
            Sink::Path(t) => py
                .detach(|| t.commit())
                .map(|()| None)
                .map_err(errors::os_error),
            Sink::Python(_) => Ok(None),
        }
    }

    /// Abandons the output: a path sink's temporary file is removed.
    pub fn discard(&mut self) {
        if let Sink::Path(t) = self {
            t.discard();
        }
    }
}

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

/// Carries a Python exception through Rust I/O as the error's payload.
fn to_io(err: PyErr) -> std::io::Error {
    std::io::Error::other(PyIoError(err))
}

#[derive(Debug)]
struct PyIoError(PyErr);

impl std::fmt::Display for PyIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for PyIoError {}

/// The Python exception behind an I/O error, if a Python file object raised it; otherwise the
/// core error mapped as usual.
pub fn unwrap_py_error(err: Error) -> PyErr {
    if let Error::Io(io) = &err {
        if io.get_ref().is_some_and(|e| e.is::<PyIoError>()) {
            if let Error::Io(io) = err {
                let inner = io.into_inner().expect("checked above");
                let py_err = inner.downcast::<PyIoError>().expect("checked above");
                return py_err.0;
            }
        }
    }
    crate::errors::from_core(err)
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

impl InputSource {
    pub fn open(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Some(path) = as_path(obj)? {
            let cannot_read = |e| errors::os_error(path_error("cannot read", &path, e));
            let file = File::open(&path).map_err(cannot_read)?;
            if file.metadata().is_ok_and(|m| m.is_dir()) {
                return Err(cannot_read(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "it is a directory",
                )));
            }
            return Ok(InputSource::File(ReaderSource::new(
                BufReader::with_capacity(1 << 16, file),
            )));
        }
        if let Some(buffer) = buffer_from_python(obj)? {
            return Ok(InputSource::Bytes(BytesSource::new(buffer)));
        }
        if obj.hasattr("read")? {
            return Ok(InputSource::Python(ReaderSource::new(PyFileLike {
                obj: obj.clone().unbind(),
            })));
        }
        Err(errors::wrong_type(format!(
            "source must be a bytes-like object, a path (str or os.PathLike) or a binary file \
             object with read(), not '{}'",
            type_name(obj)
        )))
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

/// Removes zstdpool's temporary files left by writes that never finished (a process killed
/// mid-write): those of the file `path`, or of every file in the directory `path` and, with
/// `recursive` (the default), in the directories below it, last modified at least `min_age`
/// seconds ago (default one hour, so that writes still running are left alone). Temporary
/// files are named `.<target>.zstdpool-<pid>-<random>.tmp`; nothing else is touched, and
/// links are neither followed nor removed. Returns the paths removed.
#[pyfunction]
#[pyo3(signature = (path, *, min_age=3600.0, recursive=true))]
pub fn remove_stale_temp_files(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    min_age: f64,
    recursive: bool,
) -> PyResult<Vec<PathBuf>> {
    let Some(path) = as_path(path)? else {
        return Err(errors::wrong_type(format!(
            "path must be a str or os.PathLike, not '{}'",
            type_name(path)
        )));
    };
    let min_age = zstdpool_core::params::timeout("min_age", Some(min_age))
        .or_raise()?
        .unwrap_or(std::time::Duration::MAX);
    py.detach(|| zstdpool_core::path_sink::remove_stale(&path, min_age, recursive))
        .map_err(|e| errors::os_error(path_error("cannot clean", &path, e)))
}
