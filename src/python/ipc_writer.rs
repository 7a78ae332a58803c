//! `zstdpool.ipc` writers: `new_stream`, `new_file`, `write_stream`, `write_file`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyString};
use pyo3_arrow::{PyRecordBatch, PySchema};

use super::args::{level_arg, threads_arg};
use super::buffer::{is_exact_type, is_heap_type, type_name};
use super::held::Held;
use super::io::Sink;
use super::pool::{pool_or_default, PyContextPool};
use crate::context::CompressParams;
use crate::error::Error;
use crate::ipc::{Compression, IpcFormat, IpcWriter, WriterOptions};
use crate::pool::ContextPool;

/// zstd level 1 by default, the same as pyarrow, so that sizes compare fairly.
const DEFAULT_IPC_ZSTD_LEVEL: i32 = 1;

fn compression(name: Option<&str>, level: Option<i64>) -> PyResult<Compression> {
    match name.map(str::to_ascii_lowercase).as_deref() {
        Some("zstd") => {
            let level = level.map(level_arg).transpose()?;
            let params = CompressParams::level(level.unwrap_or(DEFAULT_IPC_ZSTD_LEVEL));
            params.validate()?;
            Ok(Compression::Zstd(params))
        }
        Some("lz4") | Some("lz4_frame") | None | Some("none") | Some("uncompressed")
            if level.is_some() =>
        {
            Err(Error::Parameter(format!(
                "level applies to zstd only, not to compression={}",
                name.map_or("None".to_string(), |n| format!("{n:?}"))
            ))
            .into())
        }
        Some("lz4") | Some("lz4_frame") => Ok(Compression::Lz4),
        None | Some("none") | Some("uncompressed") => Ok(Compression::None),
        Some(other) => Err(Error::Parameter(format!(
            "unknown compression {other:?}: use \"zstd\", \"lz4\" or None"
        ))
        .into()),
    }
}

/// The options every writer function takes, checked.
fn writer_options(
    format: IpcFormat,
    compression_name: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<WriterOptions> {
    if metadata.is_some() && format == IpcFormat::Stream {
        return Err(Error::Parameter(
            "metadata is written in the file footer: it applies to new_file and write_file".into(),
        )
        .into());
    }
    Ok(WriterOptions {
        format,
        compression: compression(compression_name, level)?,
        threads: threads_arg(threads)?,
        dictionary_deltas,
        footer_metadata: metadata.unwrap_or_default(),
    })
}

/// What `write` was given, as Arrow: one batch (the common case, with no stream around it),
/// or a C stream taken from its capsule and not yet imported.
enum Input {
    Batch(RecordBatch),
    /// Imported by the detached part of the write: asking the producer for the schema and
    /// converting it need not hold the GIL.
    Exported(FFI_ArrowArrayStream),
}

/// An [`Input`] imported, ready to be read batch by batch.
enum Imported {
    /// The batch's schema, and the batch until it is read.
    Batch(SchemaRef, Option<RecordBatch>),
    Stream(ArrowArrayStreamReader),
}

// Producer callbacks (get_schema, get_next, release) run without the GIL, on the writing
// thread, as the C stream interface allows: consumers such as DuckDB and polars call them from
// threads of their own, so producers that need the GIL take it themselves.
impl Input {
    /// Imports an exported stream's schema. Runs without the GIL.
    fn import(self) -> Result<Imported, Failure> {
        match self {
            Input::Batch(b) => Ok(Imported::Batch(b.schema(), Some(b))),
            Input::Exported(stream) => {
                std::panic::catch_unwind(|| ArrowArrayStreamReader::try_new(stream))
                    .map_err(|_| Failure::Encode(import_failed()))?
                    .map(Imported::Stream)
                    // A stream of something other than record batches (a ChunkedArray, a
                    // polars Series) is refused here: the object cannot be written.
                    .map_err(|e| Failure::Import(PyValueError::new_err(e.to_string())))
            }
        }
    }
}

impl Imported {
    fn schema(&self) -> SchemaRef {
        match self {
            Imported::Batch(schema, _) => schema.clone(),
            Imported::Stream(r) => r.schema(),
        }
    }

    /// The next batch, or None at the end. Runs without the GIL.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, Failure> {
        match self {
            Imported::Batch(_, b) => Ok(b.take()),
            Imported::Stream(reader) => {
                let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next()))
                    .map_err(|_| Failure::Encode(import_failed()))?;
                next.transpose()
                    .map_err(|e| Failure::Encode(Error::from(e).into()))
            }
        }
    }
}

/// Whether `obj` has the attribute `name`. Before Python 3.13 pyo3's `hasattr` builds and
/// formats the AttributeError of a miss before discarding it (half a microsecond per write of
/// a pyarrow Table, which has no `__arrow_c_array__`); `PyObject_HasAttr` answers a miss
/// without one, but also takes any other error for a miss, so [`to_input`] asks again through
/// `hasattr` before it refuses an object. From 3.13 `hasattr` is as cheap and is used.
fn has_attr(obj: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<bool> {
    static CHEAP_HASATTR: OnceLock<bool> = OnceLock::new();
    if *CHEAP_HASATTR.get_or_init(|| obj.py().version_info() >= (3, 13)) {
        return obj.hasattr(name);
    }
    // SAFETY: both pointers are live references held by the caller, with the GIL.
    Ok(unsafe { pyo3::ffi::PyObject_HasAttr(obj.as_ptr(), name.as_ptr()) == 1 })
}

/// Whether `obj` is a pandas object. pandas' classes are Python classes; checking that first
/// spares static types (pyarrow's) a `__module__` string built on every call.
fn is_pandas(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let ty = obj.get_type();
    Ok(is_heap_type(&ty)
        && ty
            .module()
            .is_ok_and(|m| m.to_str().is_ok_and(|m| m.starts_with("pandas")))
        && has_attr(obj, intern!(obj.py(), "to_numpy"))?)
}

/// Turns what `write` accepts into Arrow: pandas DataFrames go through pyarrow (keeping the
/// pandas metadata that restores the index), anything else through the PyCapsule interface,
/// a batch (`__arrow_c_array__`) before a stream, as pyo3-arrow orders them. A stream is only
/// taken from its capsule here; the writer imports it without the GIL.
fn to_input(data: &Bound<'_, PyAny>) -> PyResult<Input> {
    let py = data.py();
    let converted;
    let data = if is_pandas(data)? {
        converted = py
            .import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_pandas", (data,))?;
        &converted
    } else {
        data
    };
    let (array, stream) = (
        intern!(py, "__arrow_c_array__"),
        intern!(py, "__arrow_c_stream__"),
    );
    let exported = if has_attr(data, array)? {
        // arrow-rs's C data import panics on some valid inputs (sliced structs nested in
        // structs, apache/arrow-rs#9235); that must reach the caller as an exception.
        let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            data.extract::<PyRecordBatch>()
        }))
        .map_err(|_| import_failed())?;
        batch.map(|b| Input::Batch(b.into_inner()))
    } else if has_attr(data, stream)? {
        take_stream(data).map(Input::Exported)
    } else {
        // Asked again through `hasattr`: what the object's attribute lookup raised, other than
        // AttributeError, is the better error (see `has_attr`).
        data.hasattr(array)?;
        data.hasattr(stream)?;
        return Err(cannot_write(data));
    };
    // The object offers the interface but its export failed: say why.
    exported.map_err(|cause| cannot_write_because(data, cause))
}

fn cannot_write(data: &Bound<'_, PyAny>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "cannot write '{}': expected a pyarrow Table, RecordBatch or RecordBatchReader, a \
         pandas DataFrame, or an object with __arrow_c_stream__ or __arrow_c_array__ \
         (polars, duckdb, arro3, nanoarrow)",
        type_name(data)
    ))
}

fn cannot_write_because(data: &Bound<'_, PyAny>, cause: PyErr) -> PyErr {
    let err = cannot_write(data);
    err.set_cause(data.py(), Some(cause));
    err
}

/// Calls `__arrow_c_stream__` and moves the stream out of its capsule (which is left released).
fn take_stream(data: &Bound<'_, PyAny>) -> PyResult<FFI_ArrowArrayStream> {
    let capsule = data.call_method0(intern!(data.py(), "__arrow_c_stream__"))?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_array_stream"))
        .map_err(|_| {
            // SAFETY: the name is read at once, with the GIL, while the capsule is alive.
            let name = capsule
                .name()
                .ok()
                .flatten()
                .map(|n| unsafe { n.as_cstr() });
            PyValueError::new_err(format!(
                "__arrow_c_stream__ returned a capsule named {}, not \"arrow_array_stream\"",
                name.map_or("None".into(), |n| format!("{:?}", n.to_string_lossy()))
            ))
        })?;
    // SAFETY: a capsule named "arrow_array_stream" holds an ArrowArrayStream (the PyCapsule
    // interface); `from_raw` moves it out and marks the capsule's copy released.
    Ok(unsafe { FFI_ArrowArrayStream::from_raw(ptr.as_ptr().cast()) })
}

fn import_failed() -> PyErr {
    Error::Ipc(
        "arrow-rs could not import this data through the Arrow C data interface (it fails on \
         sliced struct columns nested in structs, lists or unions: apache/arrow-rs#9235); \
         write a copy without the slice offset, e.g. table.take(list(range(table.num_rows)))"
            .into(),
    )
    .into()
}

/// Writes every batch of `input`; runs without the GIL, which the caller releases once for
/// the whole loop: reading the next batch, encoding and compressing run without it, and only a
/// Python sink's `write` (or a bytes output's growth) takes it back. Released around each step
/// instead, a thread hands the GIL to another and then waits for it at every step: two threads
/// writing 4096-row tables got 1.3x one thread's throughput instead of 1.8x.
fn write_batches(open: &mut Open, input: &mut Imported) -> Result<(), Failure> {
    while let Some(batch) = input.next_batch()? {
        open.write_batch(&batch)?;
    }
    Ok(())
}

/// Why a write failed: the input (it cannot be imported), the batch (nothing was written; the
/// writer goes on) or the sink (the output is incomplete; the writer is abandoned).
enum Failure {
    Import(PyErr),
    Encode(PyErr),
    Sink(PyErr),
}

impl Failure {
    /// The exception for a failed write of `data`: an input that cannot be imported is an
    /// object that cannot be written, with the reason as the cause.
    fn into_err(self, data: &Bound<'_, PyAny>) -> PyErr {
        match self {
            Failure::Import(cause) => cannot_write_because(data, cause),
            Failure::Encode(e) | Failure::Sink(e) => e,
        }
    }
}

struct Open {
    writer: IpcWriter,
    sink: Sink,
    /// Reused between writes for sinks that are not memory.
    scratch: Vec<u8>,
}

impl Open {
    /// Makes the writer, then opens the sink: a bad option or schema leaves no file behind.
    fn new(
        py: Python<'_>,
        sink: Option<&Bound<'_, PyAny>>,
        schema: SchemaRef,
        options: WriterOptions,
        pool: &ContextPool,
    ) -> PyResult<Open> {
        let writer = IpcWriter::try_new(schema, options, pool)?;
        let sink = Sink::open(py, sink)?;
        Ok(Open::with_sink(writer, sink))
    }

    fn with_sink(writer: IpcWriter, sink: Sink) -> Open {
        Open {
            writer,
            sink,
            scratch: Vec::new(),
        }
    }

    /// Encodes and writes one batch; the whole batch reaches the sink or none of it does.
    /// Runs without the GIL.
    fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), Failure> {
        let Open {
            writer,
            sink,
            scratch,
        } = self;
        if let Some(out) = sink.memory() {
            return writer
                .write(batch, out)
                .map_err(|e| Failure::Encode(e.into()));
        }
        scratch.clear();
        writer
            .write(batch, scratch)
            .map_err(|e| Failure::Encode(e.into()))?;
        let result = sink.write_detached(scratch).map_err(Failure::Sink);
        // Keep at most a modest scratch between writes: a large batch's output is not held.
        if scratch.capacity() > 4 << 20 {
            *scratch = Vec::new();
        }
        result
    }

    /// Encodes the end of the output (see `IpcWriter::finish`) into the scratch buffer.
    fn encode_tail(&mut self) -> crate::error::Result<()> {
        self.scratch.clear();
        self.writer.finish(&mut self.scratch)
    }

    /// Writes the end of the output without the GIL; a Python sink takes it for its `write`.
    /// The caller commits or discards the sink.
    fn finish_detached(&mut self) -> Result<(), Failure> {
        self.encode_tail().map_err(|e| Failure::Encode(e.into()))?;
        self.sink
            .write_detached(&self.scratch)
            .map_err(Failure::Sink)
    }

    /// As `finish_detached`, with the GIL held (a writer's `close`), then commits the sink.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let result = (|| -> PyResult<()> {
            self.encode_tail()?;
            self.sink.write(py, &self.scratch)
        })();
        match result {
            Ok(()) => self.sink.commit(py),
            Err(e) => {
                self.sink.discard();
                Err(e)
            }
        }
    }

    fn abandon(&mut self) {
        self.writer.abandon();
        self.sink.discard();
    }
}

/// An Arrow IPC writer (stream or file format) with pooled compression. Made by
/// `zstdpool.ipc.new_stream` and `new_file`.
#[pyclass(frozen, name = "IpcWriter", module = "zstdpool.ipc")]
pub struct PyIpcWriter {
    open: Held<Open>,
    schema: SchemaRef,
    format: IpcFormat,
    compression: Compression,
    /// Batches and bytes written, kept here so that they stay readable after close.
    batches: AtomicUsize,
    bytes: AtomicUsize,
}

impl PyIpcWriter {
    fn record(&self, writer: &IpcWriter) {
        self.batches.store(writer.num_batches(), Ordering::Relaxed);
        self.bytes.store(writer.bytes_written(), Ordering::Relaxed);
    }

    fn create(
        sink: &Bound<'_, PyAny>,
        schema: SchemaRef,
        options: WriterOptions,
        pool: &ContextPool,
    ) -> PyResult<Self> {
        let (format, compression) = (options.format, options.compression);
        let open = Open::new(sink.py(), Some(sink), schema.clone(), options, pool)?;
        Ok(PyIpcWriter {
            open: Held::new(open, "IPC writer"),
            schema,
            format,
            compression,
            batches: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
        })
    }

    /// Writes every batch of `data`; a failure closes the writer (sink errors) or leaves it
    /// usable (a batch that does not fit), never with part of a batch written.
    fn write_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let input = to_input(data)?;
        let mut open = self.open.take()?;
        let open_ref: &mut Open = &mut open;
        let result = py.detach(move || write_batches(open_ref, &mut input.import()?));
        self.record(&open.writer);
        match result {
            Ok(()) => Ok(()),
            Err(Failure::Sink(e)) => {
                open.retire().abandon();
                Err(e)
            }
            Err(failure) => Err(failure.into_err(data)),
        }
    }
}

#[pymethods]
impl PyIpcWriter {
    /// Writes a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, or any
    /// object with `__arrow_c_stream__` or `__arrow_c_array__`. Its schema must match the
    /// writer's (field names, types and nullability).
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(py, data)
    }

    /// Same as `write` (pyarrow's name).
    fn write_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(py, batch)
    }

    /// Same as `write` (pyarrow's name).
    fn write_table(&self, py: Python<'_>, table: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(py, table)
    }

    /// Writes the end of the stream (and the file footer), completes the sink and gives the
    /// compression context back. Idempotent. A path sink appears under its name only now.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(mut open) = self.open.close_idle()? {
            let result = open.finish(py);
            self.record(&open.writer);
            result?;
        }
        Ok(())
    }

    /// Abandons the output: nothing more is written, a path sink's file is removed, and the
    /// context goes back. Idempotent.
    fn abort(&self) {
        if let Some(mut open) = self.open.close() {
            open.abandon();
        }
    }

    /// Whether the writer is closed (or abandoned after a sink error).
    #[getter]
    fn closed(&self) -> bool {
        self.open.is_closed()
    }

    /// The schema batches must have, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.schema.clone()).into_pyarrow(py)
    }

    /// "stream" or "file".
    #[getter]
    fn format(&self) -> &'static str {
        match self.format {
            IpcFormat::Stream => "stream",
            IpcFormat::File => "file",
        }
    }

    /// "zstd", "lz4" or None.
    #[getter]
    fn compression(&self) -> Option<&'static str> {
        match self.compression {
            Compression::Zstd(_) => Some("zstd"),
            Compression::Lz4 => Some("lz4"),
            Compression::None => None,
        }
    }

    /// The zstd level, or None for other codecs.
    #[getter]
    fn level(&self) -> Option<i32> {
        match self.compression {
            Compression::Zstd(p) => Some(p.level),
            _ => None,
        }
    }

    /// Record batches written so far.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.load(Ordering::Relaxed)
    }

    /// Bytes written to the sink so far.
    #[getter]
    fn bytes_written(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.open.check_open()?;
        Ok(slf)
    }

    /// Closes the writer; if the block raised, abandons the output instead (see `abort`).
    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc_value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if exc_type.is_none() {
            self.close(py)?;
        } else {
            self.abort();
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "<zstdpool.ipc.IpcWriter format={} compression={:?}{}>",
            self.format(),
            self.compression().unwrap_or("none"),
            if self.closed() { " closed" } else { "" }
        )
    }
}

impl Drop for PyIpcWriter {
    /// A writer collected without close() leaves no partial file behind.
    fn drop(&mut self) {
        if let Some(mut open) = self.open.close() {
            open.abandon();
        }
    }
}

/// The last pyarrow Schema a writer was opened with, and its import, matched by identity. A
/// service that keeps its schema in a variable (a module constant, a writer factory) passes
/// the same object to every writer, and importing it through `__arrow_c_schema__` is a
/// twentieth of writing a small table. (`table.schema` makes a new object on every access, so
/// it is imported each time.) pyarrow Schemas are immutable, and the reference held here,
/// one schema for the life of the process, keeps the identity from passing to another object.
static LAST_SCHEMA: Mutex<Option<(Py<PyAny>, SchemaRef)>> = Mutex::new(None);

fn schema_of(schema: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    let cacheable = is_exact_type(schema, c"pyarrow.lib.Schema");
    if cacheable {
        let last = LAST_SCHEMA.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((obj, imported)) = last.as_ref() {
            if obj.as_ptr() == schema.as_ptr() {
                return Ok(imported.clone());
            }
        }
    }
    let imported = schema
        .extract::<PySchema>()
        .map(|s| s.into_inner())
        .map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "schema must be a pyarrow Schema or an object with __arrow_c_schema__, not '{}'",
                type_name(schema)
            ))
        })?;
    if cacheable {
        let entry = Some((schema.clone().unbind(), imported.clone()));
        let replaced = std::mem::replace(
            &mut *LAST_SCHEMA.lock().unwrap_or_else(|e| e.into_inner()),
            entry,
        );
        drop(replaced); // its reference is released outside the lock
    }
    Ok(imported)
}

/// Opens an Arrow IPC stream writer on `sink` (a path, or a binary file object).
#[pyfunction]
#[pyo3(
    signature = (sink, schema, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, pool=None),
    text_signature = "(sink, schema, *, compression='zstd', level=None, threads=None, dictionary_deltas=False, pool=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn new_stream(
    sink: &Bound<'_, PyAny>,
    schema: &Bound<'_, PyAny>,
    compression: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyIpcWriter> {
    require_sink(sink)?;
    let options = writer_options(
        IpcFormat::Stream,
        compression,
        level,
        threads,
        dictionary_deltas,
        None,
    )?;
    PyIpcWriter::create(sink, schema_of(schema)?, options, pool_or_default(pool))
}

/// Opens an Arrow IPC file writer on `sink` (a path, or a binary file object).
#[pyfunction]
#[pyo3(
    signature = (sink, schema, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, metadata=None, pool=None),
    text_signature = "(sink, schema, *, compression='zstd', level=None, threads=None, dictionary_deltas=False, metadata=None, pool=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn new_file(
    sink: &Bound<'_, PyAny>,
    schema: &Bound<'_, PyAny>,
    compression: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyIpcWriter> {
    require_sink(sink)?;
    let options = writer_options(
        IpcFormat::File,
        compression,
        level,
        threads,
        dictionary_deltas,
        metadata,
    )?;
    PyIpcWriter::create(sink, schema_of(schema)?, options, pool_or_default(pool))
}

fn require_sink(sink: &Bound<'_, PyAny>) -> PyResult<()> {
    if sink.is_none() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "sink must be a path or a binary file object; to get bytes use write_stream or \
             write_file with sink=None",
        ));
    }
    Ok(())
}

/// Writes `data` as one IPC stream or file in one call; returns bytes when sink is None.
///
/// Everything from importing the input's schema to the end of the output runs in one
/// detached stretch; with the GIL come only taking the input, opening the sink and the
/// bytes' final size. The sink is therefore opened before the input's schema is read: an
/// input that turns out unwritable leaves no file (a path sink's temporary file is removed),
/// and a sink that cannot be opened is reported before it.
fn write_all<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    options: WriterOptions,
    pool: &ContextPool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let input = to_input(data)?;
    let sink = Sink::open(py, sink)?;
    let (result, mut sink) = py.detach(move || {
        let started = input.import().and_then(|input| {
            let writer = IpcWriter::try_new(input.schema(), options, pool)
                .map_err(|e| Failure::Encode(e.into()))?;
            Ok((input, writer))
        });
        let (mut input, writer) = match started {
            Ok(started) => started,
            Err(e) => return (Err(e), sink),
        };
        let mut open = Open::with_sink(writer, sink);
        let result = write_batches(&mut open, &mut input).and_then(|()| open.finish_detached());
        if result.is_err() {
            open.writer.abandon();
        }
        (result, open.sink)
    });
    match result {
        Ok(()) => sink.commit(py),
        Err(failure) => {
            sink.discard();
            Err(failure.into_err(data))
        }
    }
}

/// Writes `data` (a table, batch, reader, DataFrame or Arrow PyCapsule object) as one Arrow
/// IPC stream. Returns the bytes when `sink` is None; otherwise writes to the path or file
/// object and returns None.
#[pyfunction]
#[pyo3(
    signature = (data, sink=None, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, pool=None),
    text_signature = "(data, sink=None, *, compression='zstd', level=None, threads=None, dictionary_deltas=False, pool=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn write_stream<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    compression: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let options = writer_options(
        IpcFormat::Stream,
        compression,
        level,
        threads,
        dictionary_deltas,
        None,
    )?;
    write_all(py, data, sink, options, pool_or_default(pool))
}

/// Writes `data` as one Arrow IPC file (Feather v2). Returns the bytes when `sink` is None.
#[pyfunction]
#[pyo3(
    signature = (data, sink=None, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, metadata=None, pool=None),
    text_signature = "(data, sink=None, *, compression='zstd', level=None, threads=None, dictionary_deltas=False, metadata=None, pool=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn write_file<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    compression: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let options = writer_options(
        IpcFormat::File,
        compression,
        level,
        threads,
        dictionary_deltas,
        metadata,
    )?;
    write_all(py, data, sink, options, pool_or_default(pool))
}
