//! `zstdpool.ipc` writers: `new_stream`, `new_file`, `write_stream`, `write_file`.

use std::collections::HashMap;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PySchema;

use super::buffer::type_name;
use super::errors::new_err;
use super::held::Held;
use super::io::Sink;
use super::pool::{pool_or_default, PyContextPool};
use crate::context::CompressParams;
use crate::error::Error;
use crate::ipc::{Compression, IpcFormat, IpcWriter, WriterOptions};

/// zstd level 1 by default, the same as pyarrow, so that sizes compare fairly.
const DEFAULT_IPC_ZSTD_LEVEL: i32 = 1;

fn compression(name: Option<&str>, level: Option<i32>) -> PyResult<Compression> {
    match name.map(str::to_ascii_lowercase).as_deref() {
        Some("zstd") => Ok(Compression::Zstd(CompressParams::level(
            level.unwrap_or(DEFAULT_IPC_ZSTD_LEVEL),
        ))),
        Some("lz4") | Some("lz4_frame") | None | Some("none") | Some("uncompressed")
            if level.is_some() =>
        {
            Err(Error::Parameter(format!(
                "level applies to zstd only, not to compression={name:?}"
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

/// Turns what `write` accepts into Arrow: pandas DataFrames go through pyarrow (keeping the
/// pandas metadata that restores the index), anything else through the PyCapsule interface.
fn to_reader(data: &Bound<'_, PyAny>) -> PyResult<Box<dyn RecordBatchReader + Send>> {
    let py = data.py();
    let sys_modules = py.import("sys")?.getattr("modules")?;
    if let Ok(pandas) = sys_modules.get_item("pandas") {
        if data.is_instance(&pandas.getattr("DataFrame")?)? {
            let table = py
                .import("pyarrow")?
                .getattr("Table")?
                .call_method1("from_pandas", (data,))?;
            return table.extract::<AnyRecordBatch>()?.into_reader();
        }
    }
    match data.extract::<AnyRecordBatch>() {
        Ok(any) => any.into_reader(),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "cannot write '{}': expected a pyarrow Table, RecordBatch or RecordBatchReader, a \
             pandas DataFrame, or an object with __arrow_c_stream__ or __arrow_c_array__ \
             (polars, duckdb, arro3, nanoarrow)",
            type_name(data)
        ))),
    }
}

/// Why a write failed: the batch (nothing was written; the writer goes on) or the sink
/// (the output is incomplete; the writer is abandoned).
enum Failure {
    Encode(PyErr),
    Sink(PyErr),
}

struct Open {
    writer: IpcWriter,
    sink: Sink,
    /// Reused between writes for sinks that are not memory.
    scratch: Vec<u8>,
}

impl Open {
    /// Encodes and writes one batch; the whole batch reaches the sink or none of it does.
    fn write_batch(&mut self, py: Python<'_>, batch: &RecordBatch) -> Result<(), Failure> {
        let Open {
            writer,
            sink,
            scratch,
        } = self;
        if let Some(out) = sink.memory() {
            return py
                .detach(|| writer.write(batch, out))
                .map_err(|e| Failure::Encode(e.into()));
        }
        scratch.clear();
        py.detach(|| writer.write(batch, scratch))
            .map_err(|e| Failure::Encode(e.into()))?;
        let result = sink.write(py, scratch).map_err(Failure::Sink);
        // Keep at most a modest scratch between writes: a large batch's output is not held.
        if scratch.capacity() > 4 << 20 {
            *scratch = Vec::new();
        }
        result
    }

    fn finish(mut self, py: Python<'_>) -> PyResult<Option<Vec<u8>>> {
        let mut tail = Vec::new();
        let result = (|| {
            self.writer.finish(&mut tail)?;
            self.sink.write(py, &tail)?;
            Ok(())
        })();
        match result {
            Ok(()) => self.sink.commit(py),
            Err(e) => {
                self.sink.discard();
                Err(e)
            }
        }
    }

    fn abandon(mut self) {
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
}

impl PyIpcWriter {
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        sink: Option<&Bound<'_, PyAny>>,
        schema: SchemaRef,
        format: IpcFormat,
        compression_name: Option<&str>,
        level: Option<i32>,
        threads: Option<usize>,
        dictionary_deltas: bool,
        metadata: Option<HashMap<String, String>>,
        pool: Option<&Bound<'_, PyContextPool>>,
    ) -> PyResult<Self> {
        let compression = compression(compression_name, level)?;
        if threads == Some(0) {
            return Err(Error::Parameter("threads must be at least 1 (or None)".into()).into());
        }
        if metadata.is_some() && format == IpcFormat::Stream {
            return Err(Error::Parameter(
                "metadata is written in the file footer: it applies to new_file and write_file"
                    .into(),
            )
            .into());
        }
        let options = WriterOptions {
            format,
            compression,
            threads,
            dictionary_deltas,
            footer_metadata: metadata.unwrap_or_default(),
        };
        let pool = pool_or_default(pool);
        let mut sink = Sink::open(sink)?;
        let mut header = Vec::new();
        let writer = match IpcWriter::try_new(schema.clone(), options, &pool, &mut header) {
            Ok(w) => w,
            Err(e) => {
                sink.discard();
                return Err(e.into());
            }
        };
        if let Err(e) = sink.write(py, &header) {
            // The writer drops here and gives its context back.
            sink.discard();
            return Err(e);
        }
        Ok(PyIpcWriter {
            open: Held::new(
                Open {
                    writer,
                    sink,
                    scratch: Vec::new(),
                },
                "IPC writer",
            ),
            schema,
            format,
            compression,
        })
    }

    /// Writes every batch of `data`; a failure closes the writer (sink errors) or leaves it
    /// usable (a batch that does not fit), never with part of a batch written.
    fn write_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let reader = to_reader(data)?;
        let mut open = self.open.take()?;
        let mut reader = reader;
        loop {
            let next = py.detach(|| reader.next());
            let Some(batch) = next else { return Ok(()) };
            let batch = batch.map_err(Error::from)?;
            match open.write_batch(py, &batch) {
                Ok(()) => {}
                Err(Failure::Encode(e)) => return Err(e),
                Err(Failure::Sink(e)) => {
                    open.retire().abandon();
                    return Err(e);
                }
            }
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
        if let Some(open) = self.open.close() {
            open.finish(py)?;
        }
        Ok(())
    }

    /// Abandons the output: nothing more is written, a path sink's file is removed, and the
    /// context goes back. Idempotent.
    fn abort(&self) {
        if let Some(open) = self.open.close() {
            open.abandon();
        }
    }

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
        self.open.peek(|o| o.writer.num_batches()).unwrap_or(0)
    }

    /// Bytes written to the sink so far.
    #[getter]
    fn bytes_written(&self) -> usize {
        self.open.peek(|o| o.writer.bytes_written()).unwrap_or(0)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if slf.open.is_closed() {
            return Err(new_err(
                "ClosedError",
                "I/O operation on a closed IPC writer",
            ));
        }
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
        if let Some(open) = self.open.close() {
            open.abandon();
        }
    }
}

fn schema_of(schema: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    schema
        .extract::<PySchema>()
        .map(|s| s.into_inner())
        .map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "schema must be a pyarrow Schema or an object with __arrow_c_schema__, not '{}'",
                type_name(schema)
            ))
        })
}

/// Opens an Arrow IPC stream writer on `sink` (a path, or a binary file object).
#[pyfunction]
#[pyo3(signature = (sink, schema, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn new_stream(
    py: Python<'_>,
    sink: &Bound<'_, PyAny>,
    schema: &Bound<'_, PyAny>,
    compression: Option<&str>,
    level: Option<i32>,
    threads: Option<usize>,
    dictionary_deltas: bool,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyIpcWriter> {
    require_sink(sink)?;
    PyIpcWriter::create(
        py,
        Some(sink),
        schema_of(schema)?,
        IpcFormat::Stream,
        compression,
        level,
        threads,
        dictionary_deltas,
        None,
        pool,
    )
}

/// Opens an Arrow IPC file writer on `sink` (a path, or a binary file object).
#[pyfunction]
#[pyo3(signature = (sink, schema, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, metadata=None, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn new_file(
    py: Python<'_>,
    sink: &Bound<'_, PyAny>,
    schema: &Bound<'_, PyAny>,
    compression: Option<&str>,
    level: Option<i32>,
    threads: Option<usize>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyIpcWriter> {
    require_sink(sink)?;
    PyIpcWriter::create(
        py,
        Some(sink),
        schema_of(schema)?,
        IpcFormat::File,
        compression,
        level,
        threads,
        dictionary_deltas,
        metadata,
        pool,
    )
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
#[allow(clippy::too_many_arguments)]
fn write_all<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    format: IpcFormat,
    compression: Option<&str>,
    level: Option<i32>,
    threads: Option<usize>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let reader = to_reader(data)?;
    let schema = reader.schema();
    let writer = PyIpcWriter::create(
        py,
        sink,
        schema,
        format,
        compression,
        level,
        threads,
        dictionary_deltas,
        metadata,
        pool,
    )?;
    let mut open = writer.open.take()?.retire();
    let mut reader = reader;
    loop {
        let next = py.detach(|| reader.next());
        let Some(batch) = next else { break };
        let written = match batch {
            Ok(b) => open.write_batch(py, &b),
            Err(e) => Err(Failure::Encode(Error::from(e).into())),
        };
        if let Err(Failure::Encode(e) | Failure::Sink(e)) = written {
            open.abandon();
            return Err(e);
        }
    }
    Ok(open.finish(py)?.map(|bytes| PyBytes::new(py, &bytes)))
}

/// Writes `data` (a table, batch, reader, DataFrame or Arrow PyCapsule object) as one Arrow
/// IPC stream. Returns the bytes when `sink` is None; otherwise writes to the path or file
/// object and returns None.
#[pyfunction]
#[pyo3(signature = (data, sink=None, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_stream<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    compression: Option<&str>,
    level: Option<i32>,
    threads: Option<usize>,
    dictionary_deltas: bool,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    write_all(
        py,
        data,
        sink,
        IpcFormat::Stream,
        compression,
        level,
        threads,
        dictionary_deltas,
        None,
        pool,
    )
}

/// Writes `data` as one Arrow IPC file (Feather v2). Returns the bytes when `sink` is None.
#[pyfunction]
#[pyo3(signature = (data, sink=None, *, compression=Some("zstd"), level=None, threads=None, dictionary_deltas=false, metadata=None, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_file<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    compression: Option<&str>,
    level: Option<i32>,
    threads: Option<usize>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    write_all(
        py,
        data,
        sink,
        IpcFormat::File,
        compression,
        level,
        threads,
        dictionary_deltas,
        metadata,
        pool,
    )
}
