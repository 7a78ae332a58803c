//! Where a writer's bytes go: a bytes object built in place, a path (through the core's
//! `PathSink`), or a Python file object.

use crate::args;
use std::io::Write;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::type_name;
use crate::bytes_output::MemoryOutput;
use crate::errors;
use crate::errors::OrRaise as _;
use crate::io::{as_path, is_io_object, to_io};
use crate::store::{self, Located, PathOptions};
use zstdpool_core::output::Output;
use zstdpool_core::path_sink::{Durability, PathSink};
use zstdpool_core::store::ObjectWriter;

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
    /// An object store's object (see [`ObjectWriter`]: nothing under the key until the
    /// commit; None once committed or discarded).
    Object(Option<ObjectWriter>),
}

impl Sink {
    /// A sink for `obj`: None (bytes), a path (of `filesystem`, or an object store URL with
    /// `storage_options`), or a binary file object. A path sink commits with `durability`.
    pub fn open<'py>(
        py: Python<'py>,
        obj: Option<&Bound<'py, PyAny>>,
        durability: Durability,
        at: PathOptions<'_, 'py>,
    ) -> PyResult<Sink> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            if at.given() {
                return Err(errors::parameter(
                    "filesystem and storage_options are for a path; the sink is None (bytes)",
                ));
            }
            return Ok(Sink::Memory(MemoryOutput::with_capacity(py, MEMORY_START)?));
        };
        let obj = match store::locate("sink", obj, at)? {
            Located::Store(store, key) => {
                return store.create(&key).map(|w| Sink::Object(Some(w))).or_raise()
            }
            Located::Keys(..) => {
                return Err(errors::wrong_type("sink must be one path, not a list"));
            }
            Located::Other(obj) => obj,
        };
        let obj = &obj;
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
        Err(args::not_one_of(
            obj,
            "sink",
            "None, a path (str or os.PathLike) or a binary file object with a write() method",
        ))
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
            Sink::Object(_) => py.detach(|| self.write_detached(bytes)),
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
            Sink::Object(w) => w
                .as_mut()
                .ok_or_else(|| errors::io("the object was completed already"))?
                .write_all(bytes)
                .map_err(errors::os_error),
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
            Sink::Object(w) => match w.take() {
                Some(w) => py.detach(|| w.commit()).map(|_| None).or_raise(),
                None => Ok(None),
            },
            Sink::Python(_) => Ok(None),
        }
    }

    /// Abandons the output: a path sink's temporary file is removed, an object's multipart
    /// upload aborted.
    pub fn discard(&mut self) {
        match self {
            Sink::Path(t) => t.discard(),
            Sink::Object(w) => drop(w.take()),
            _ => {}
        }
    }
}

/// Bytes gathered before a path or Python sink gets them: a streaming writer (Parquet) hands
/// over pieces of a few KiB, and each piece would be a system call, or a Python call with the
/// GIL and a new bytes object.
const GATHER: usize = 1 << 20;

/// A sink as [`Write`], for writers that stream their output (Parquet). Runs without the GIL;
/// a memory sink grows in place (taking the GIL to resize), a Python sink takes the GIL for
/// each `write` of up to [`GATHER`] bytes. Errors a Python sink raised travel inside the
/// `io::Error` (see `crate::io::unwrap_py_error`).
pub struct SinkWriter {
    sink: Sink,
    gathered: Vec<u8>,
}

impl SinkWriter {
    pub fn new(sink: Sink) -> Self {
        SinkWriter {
            sink,
            gathered: Vec::new(),
        }
    }

    fn hand_over(&mut self) -> std::io::Result<()> {
        if !self.gathered.is_empty() {
            let result = self.sink.write_detached(&self.gathered);
            self.gathered.clear();
            result.map_err(to_io)?;
        }
        Ok(())
    }

    /// Everything written, handed to the sink; the sink, to commit or discard.
    pub fn into_sink(mut self) -> std::io::Result<Sink> {
        self.hand_over()?;
        Ok(self.sink)
    }
}

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if let Sink::Memory(out) = &mut self.sink {
            return out.extend_from_slice(buf).map_err(std::io::Error::other);
        }
        if self.gathered.len() + buf.len() > GATHER {
            self.hand_over()?;
        }
        if buf.len() >= GATHER {
            return self.sink.write_detached(buf).map_err(to_io);
        }
        if self.gathered.capacity() == 0 {
            self.gathered.reserve_exact(GATHER);
        }
        self.gathered.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
