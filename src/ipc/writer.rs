//! `zstdpool.ipc` writers: `new_stream`, `new_file`, `write_stream`, `write_file`.

use crate::args;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;

use crate::errors::{IntoPyErr as _, OrRaise as _};
use pyo3::types::PyBytes;

use crate::errors;
use crate::export::schema_to_py;
use crate::held::Held;
use crate::input::{schema_of, to_input, Failure, Imported};
use crate::ipc::options::{key_values, WriteSettings};
use crate::lifecycle::{lifecycle_methods, Lifecycle, State, UNWRITTEN};
use crate::params;
use crate::shared_keywords::Writing;
use crate::sink::Sink;
use crate::store::PathOptions;
use zstdpool_core::error::Error;
use zstdpool_core::ipc::{Compression, IpcFormat, IpcWriter, KeyValues, WriteStats, WriterOptions};
use zstdpool_core::memory::trim;
use zstdpool_core::path_sink::Durability;
use zstdpool_core::pool::ContextPool;

/// The options every writer function takes, checked.
fn writer_options(
    format: IpcFormat,
    compression_name: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<WriterOptions> {
    let settings = WriteSettings::new(None, compression_name, threads, dictionary_deltas)?;
    writer_options_from(format, &settings, level, metadata)
}

/// As `writer_options`, from settings merged with a pyarrow `IpcWriteOptions`.
fn writer_options_from(
    format: IpcFormat,
    settings: &WriteSettings,
    level: Option<i64>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<WriterOptions> {
    if metadata.is_some() && format == IpcFormat::Stream {
        return Err(Error::Parameter(
            "metadata is written in the file footer: it applies to new_file and write_file".into(),
        )
        .into_py_err());
    }
    Ok(WriterOptions {
        format,
        compression: params::ipc_compression(settings.compression.as_deref(), level).or_raise()?,
        threads: params::threads(settings.threads).or_raise()?,
        dictionary_deltas: settings.dictionary_deltas,
        footer_metadata: metadata.unwrap_or_default(),
    })
}

/// Writes every batch of `input`; runs without the GIL, which the caller releases once for
/// the whole loop: reading the next batch, encoding and compressing run without it, and only a
/// Python sink's `write` (or a bytes output's growth) takes it back. Released around each step
/// instead, a thread hands the GIL to another and then waits for it at every step, and two
/// threads gain much less over one (benchmarks/RESULTS.md#gil-per-step).
fn write_batches(open: &mut Open, input: &mut Imported) -> Result<(), Failure> {
    write_batches_as(open, input, None, &[])
}

/// As `write_batches`, cutting batches into at most `max_rows` rows and putting
/// `custom_metadata` on each batch's message.
fn write_batches_as(
    open: &mut Open,
    input: &mut Imported,
    max_rows: Option<usize>,
    custom_metadata: &[(String, String)],
) -> Result<(), Failure> {
    while let Some(batch) = input.next_batch()? {
        match max_rows {
            Some(max) if batch.num_rows() > max => {
                for start in (0..batch.num_rows()).step_by(max) {
                    let len = max.min(batch.num_rows() - start);
                    open.write_batch(&batch.slice(start, len), custom_metadata)?;
                }
            }
            _ => open.write_batch(&batch, custom_metadata)?,
        }
    }
    Ok(())
}

struct Open {
    writer: IpcWriter,
    sink: Sink,
    /// Reused between writes for sinks that are not memory.
    scratch: Vec<u8>,
}

impl Open {
    /// Makes the writer, then opens the sink: a bad option or schema leaves no file behind.
    fn new<'py>(
        py: Python<'py>,
        sink: Option<&Bound<'py, PyAny>>,
        at: PathOptions<'_, 'py>,
        schema: SchemaRef,
        options: WriterOptions,
        durability: Durability,
        pool: &ContextPool,
    ) -> PyResult<Open> {
        let writer = IpcWriter::try_new(schema, options, pool).or_raise()?;
        let sink = Sink::open(py, sink, durability, at)?;
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
    fn write_batch(
        &mut self,
        batch: &RecordBatch,
        custom_metadata: &[(String, String)],
    ) -> Result<(), Failure> {
        let Open {
            writer,
            sink,
            scratch,
        } = self;
        if let Some(out) = sink.memory() {
            return writer
                .write_with_metadata(batch, custom_metadata, out)
                .map_err(|e| Failure::Encode(e.into_py_err()));
        }
        scratch.clear();
        writer
            .write_with_metadata(batch, custom_metadata, scratch)
            .map_err(|e| Failure::Encode(e.into_py_err()))?;
        let result = sink.write_detached(scratch).map_err(Failure::Sink);
        // Keep at most a modest scratch between writes: a large batch's output is not held.
        if scratch.capacity() > 4 << 20 {
            *scratch = Vec::new();
        }
        result
    }

    /// Encodes the end of the output (see `IpcWriter::finish`) into the scratch buffer.
    fn encode_tail(&mut self) -> zstdpool_core::error::Result<()> {
        self.scratch.clear();
        self.writer.finish(&mut self.scratch)
    }

    /// Writes the end of the output without the GIL; a Python sink takes it for its `write`.
    /// The caller commits or discards the sink.
    fn finish_detached(&mut self) -> Result<(), Failure> {
        self.encode_tail()
            .map_err(|e| Failure::Encode(e.into_py_err()))?;
        self.sink
            .write_detached(&self.scratch)
            .map_err(Failure::Sink)
    }

    /// As `finish_detached`, with the GIL held (a writer's `close`), then commits the sink.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let result = (|| -> PyResult<()> {
            self.encode_tail().or_raise()?;
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

    /// The sink, once the writer and its scratch are freed (see [`Open::free`]). Call without
    /// the GIL.
    fn into_sink(self) -> Sink {
        let Open {
            writer,
            sink,
            scratch,
        } = self;
        Open::free(writer, scratch);
        sink
    }

    /// Frees the writer and its scratch, then, after a large output, gives the allocator's
    /// free memory back. Call without the GIL.
    fn free(writer: IpcWriter, scratch: Vec<u8>) {
        let bytes = writer.bytes_written();
        drop((writer, scratch));
        trim::after_write(bytes as u64);
    }
}

/// An Arrow IPC writer (stream or file format) with pooled compression: the base of
/// `RecordBatchStreamWriter` and `RecordBatchFileWriter`, which `new_stream` and `new_file`
/// return.
#[pyclass(frozen, subclass, name = "IpcWriter", module = "zstdpool.ipc")]
pub struct PyIpcWriter {
    open: Held<Open>,
    schema: SchemaRef,
    format: IpcFormat,
    compression: Compression,
    unify_dictionaries: bool,
    /// What was written (messages, batches, bytes), kept here so that it stays readable
    /// after close.
    bytes: AtomicUsize,
    stats: Mutex<WriteStats>,
}

impl PyIpcWriter {
    fn record(&self, writer: &IpcWriter) {
        self.bytes.store(writer.bytes_written(), Ordering::Relaxed);
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = writer.stats();
    }

    fn written(&self) -> WriteStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn create<'py>(
        sink: &Bound<'py, PyAny>,
        at: PathOptions<'_, 'py>,
        schema: SchemaRef,
        options: WriterOptions,
        unify_dictionaries: bool,
        durability: Durability,
        pool: &ContextPool,
    ) -> PyResult<Self> {
        let (format, compression) = (options.format, options.compression);
        let open = Open::new(
            sink.py(),
            Some(sink),
            at,
            schema.clone(),
            options,
            durability,
            pool,
        )?;
        Ok(PyIpcWriter {
            open: Held::new(open, "IPC writer"),
            schema,
            format,
            compression,
            unify_dictionaries,
            bytes: AtomicUsize::new(0),
            stats: Mutex::new(WriteStats::default()),
        })
    }

    /// Writes every batch of `data`; a failure closes the writer (sink errors) or leaves it
    /// usable (a batch that does not fit), never with part of a batch written.
    fn write_data(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        max_rows: Option<usize>,
        custom_metadata: &[(String, String)],
    ) -> PyResult<()> {
        let unified;
        let data = if self.unify_dictionaries && self.format == IpcFormat::File && is_table(data)? {
            // As pyarrow: a file holds one dictionary per field, so a table's chunks are
            // given one before they are written.
            unified = data.call_method0("unify_dictionaries")?;
            &unified
        } else {
            data
        };
        let input = to_input(data)?;
        let mut open = self.open.take()?;
        let open_ref: &mut Open = &mut open;
        let result = py.detach(move || {
            write_batches_as(open_ref, &mut input.import()?, max_rows, custom_metadata)
        });
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
    /// writer's (field names, types and nullability): `data` is written batch by batch.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(py, data, None, &[])
    }

    /// As `write` (pyarrow's name) of one `batch`, with `custom_metadata` (a dict or a
    /// `pyarrow.KeyValueMetadata`, or None) on the batch's message, read back with the batch by
    /// `read_next_batch_with_custom_metadata` and `get_batch_with_custom_metadata`.
    #[pyo3(signature = (batch, custom_metadata=None))]
    fn write_batch(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        custom_metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let pairs: KeyValues = match custom_metadata.filter(|m| !m.is_none()) {
            Some(m) => key_values("custom_metadata", m)?,
            None => Vec::new(),
        };
        self.write_data(py, batch, None, &pairs)
    }

    /// As `write` (pyarrow's name) of `table`; `max_chunksize` cuts the table's batches into
    /// batches of at most that many rows.
    #[pyo3(signature = (table, max_chunksize=None))]
    fn write_table(
        &self,
        py: Python<'_>,
        table: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::arg::<args::MaxChunksize, _>)] max_chunksize: Option<i64>,
    ) -> PyResult<()> {
        let max_rows = max_chunksize
            .map(|n| params::positive("max_chunksize", n))
            .transpose()
            .or_raise()?;
        self.write_data(py, table, max_rows, &[])
    }

    /// What has been written so far: a `WriteStats` with pyarrow's fields and the body bytes
    /// before and after compression.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.written();
        py.import("zstdpool._stats")?.getattr("WriteStats")?.call1((
            s.num_messages,
            s.num_record_batches,
            s.num_dictionary_batches,
            s.num_dictionary_deltas,
            s.num_replaced_dictionaries,
            s.total_raw_body_size,
            s.total_serialized_body_size,
        ))
    }

    /// Abandons the output: nothing more is written, a path sink's file is removed, and the
    /// context goes back. Idempotent.
    fn abort(&self) {
        if let Some(mut open) = self.open.close() {
            open.abandon();
        }
    }

    /// The schema batches must have, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
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
        self.written().num_record_batches as usize
    }

    /// Bytes written to the sink so far.
    #[getter]
    fn bytes_written(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

impl Lifecycle for PyIpcWriter {
    const WHAT: &'static str = "IPC writer";
    const NOT_PICKLED: &'static str = UNWRITTEN;

    fn state(&self) -> &dyn State {
        &self.open
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(mut open) = self.open.close_idle()? {
            let result = open.finish(py);
            self.record(&open.writer);
            // The sink (which may hold a Python object) goes with the GIL, the rest without.
            let Open {
                writer,
                sink,
                scratch,
            } = open;
            drop(sink);
            py.detach(move || Open::free(writer, scratch));
            result?;
        }
        Ok(())
    }

    fn close_after_error(&self, _py: Python<'_>) -> PyResult<()> {
        self.abort();
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "zstdpool.ipc.{} compression={:?}",
            match self.format {
                IpcFormat::Stream => "RecordBatchStreamWriter",
                IpcFormat::File => "RecordBatchFileWriter",
            },
            self.compression().unwrap_or("none"),
        )
    }
}

lifecycle_methods!(
    PyIpcWriter,
    close = "Writes the end of the stream (and the file footer), completes the sink and gives \
             the compression context back. Idempotent. A path sink appears under its name only \
             now. Leaving a `with` block that raised abandons the output instead (see `abort`)."
);

impl Drop for PyIpcWriter {
    /// A writer collected without close() leaves no partial file behind.
    fn drop(&mut self) {
        if let Some(mut open) = self.open.close() {
            open.abandon();
        }
    }
}

/// Opens a writer of `format` on `sink` with pyarrow's `options` merged into the keywords.
#[allow(clippy::too_many_arguments)]
fn open_writer<'py>(
    format: IpcFormat,
    sink: &Bound<'py, PyAny>,
    schema: &Bound<'py, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    metadata: Option<&Bound<'_, PyAny>>,
    compression: Option<&str>,
    level: Option<i64>,
    threads: Option<i64>,
    dictionary_deltas: bool,
    with: Writing<'_, 'py>,
) -> PyResult<PyIpcWriter> {
    require_sink(sink)?;
    let settings = WriteSettings::new(options, compression, threads, dictionary_deltas)?;
    let options = writer_options_from(format, &settings, level, footer_metadata(metadata)?)?;
    PyIpcWriter::create(
        sink,
        with.at,
        schema_of(schema)?,
        options,
        settings.unify_dictionaries,
        with.durability,
        with.pool,
    )
}

/// A file footer's metadata from a dict or `pyarrow.KeyValueMetadata` (str or bytes).
fn footer_metadata(
    metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<HashMap<String, String>>> {
    match metadata.filter(|m| !m.is_none()) {
        Some(m) => Ok(Some(key_values("metadata", m)?.into_iter().collect())),
        None => Ok(None),
    }
}

/// The stream and the file writer: subclasses of `IpcWriter` that differ only in their format
/// and, for the file writer, a `metadata` argument for the footer. One definition makes both,
/// so their constructors cannot drift apart.
macro_rules! ipc_writer_class {
    ($(#[doc = $doc:literal])* $class:ident, $name:literal, $format:expr $(, $metadata:ident)?) => {
        $(#[doc = $doc])*
        ///
        #[doc = doc_path_sink!()]
        ///
        /// - `sink`: a path (str or `os.PathLike`), an object store URL, or a binary file
        ///   object.
        /// - `schema`: the batches' schema (a `pyarrow.Schema` or any object with
        ///   `__arrow_c_schema__`).
        /// - `options`: a `pyarrow.ipc.IpcWriteOptions` (its compression, `use_threads` and
        ///   `emit_dictionary_deltas` are read), instead of the keywords below.
        #[doc = doc_ipc_write!()]
        #[doc = doc_fsync!()]
        #[doc = doc_pool!()]
        #[doc = doc_location!("sink")]
        #[pyclass(frozen, extends = PyIpcWriter, name = $name, module = "zstdpool.ipc")]
        pub struct $class;

        shared_keywords! {
            sink(with, 'py),
            signature = (sink, schema, *, options=None, $($metadata=None,)? compression="zstd", level=None, threads=None, dictionary_deltas=false);
            impl $class {
                #[new]
                fn new<'py>(
                    sink: &Bound<'py, PyAny>,
                    schema: &Bound<'py, PyAny>,
                    options: Option<&Bound<'py, PyAny>>,
                    $($metadata: Option<&Bound<'py, PyAny>>,)?
                    #[pyo3(from_py_with = args::arg::<args::Compression, _>)]
                    compression: Option<&str>,
                    #[pyo3(from_py_with = args::arg::<args::Level, _>)]
                    level: Option<i64>,
                    #[pyo3(from_py_with = args::arg::<args::Threads, _>)]
                    threads: Option<i64>,
                    dictionary_deltas: bool
                ) -> PyResult<PyClassInitializer<Self>> {
                    let footer: Option<&Bound<'_, PyAny>> = None $(.or($metadata))?;
                    let base = open_writer(
                        $format,
                        sink,
                        schema,
                        options,
                        footer,
                        compression,
                        level,
                        threads,
                        dictionary_deltas,
                        with,
                    )?;
                    Ok(PyClassInitializer::from(base).add_subclass($class))
                }
            }
        }
    };
}

ipc_writer_class!(
    /// An Arrow IPC stream writer on `sink` (a path, or a binary file object), constructed as
    /// pyarrow's is: `RecordBatchStreamWriter(sink, schema, options=pa.ipc.IpcWriteOptions(...))`,
    /// or with zstdpool's keywords (`new_stream` is another name for it).
    PyStreamWriter,
    "RecordBatchStreamWriter",
    IpcFormat::Stream
);

ipc_writer_class!(
    /// An Arrow IPC file writer on `sink` (a path, or a binary file object), constructed as
    /// pyarrow's is: `RecordBatchFileWriter(sink, schema, options=..., metadata=...)`, or with
    /// zstdpool's keywords (`new_file` is another name for it). `metadata` (a dict or
    /// `pyarrow.KeyValueMetadata`) goes in the footer.
    PyFileWriter,
    "RecordBatchFileWriter",
    IpcFormat::File,
    metadata
);

/// Whether `data` is a pyarrow Table (whose dictionaries `unify_dictionaries` can unify).
fn is_table(data: &Bound<'_, PyAny>) -> PyResult<bool> {
    let table = data.py().import("pyarrow")?.getattr("Table")?;
    data.is_instance(&table)
}

fn require_sink(sink: &Bound<'_, PyAny>) -> PyResult<()> {
    if sink.is_none() {
        return Err(errors::wrong_type(
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
    with: Writing<'_, 'py>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Writing {
        durability,
        pool,
        at,
    } = with;
    let input = to_input(data)?;
    let sink = Sink::open(py, sink, durability, at)?;
    let (result, mut sink) = py.detach(move || {
        let started = input.import().and_then(|input| {
            let writer = IpcWriter::try_new(input.schema(), options, pool)
                .map_err(|e| Failure::Encode(e.into_py_err()))?;
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
        (result, open.into_sink())
    });
    match result {
        Ok(()) => sink.commit(py),
        Err(failure) => {
            sink.discard();
            Err(failure.into_err(data))
        }
    }
}

/// `write_stream` and `write_file`: one definition makes both, differing only in their format
/// and, for `write_file`, a `metadata` argument for the footer.
macro_rules! ipc_write_function {
    ($(#[doc = $doc:literal])* $name:ident, $format:expr $(, $metadata:ident)?) => {
        shared_keywords! {
            sink(with, 'py),
            signature = (data, sink=None, *, compression="zstd", level=None, threads=None, dictionary_deltas=false $(, $metadata=None)?);
            $(#[doc = $doc])*
            ///
            #[doc = doc_path_sink!()]
            ///
            /// - `sink`: None (return bytes), a path (str or `os.PathLike`), an object store
            ///   URL, or a binary file object.
            #[doc = doc_ipc_write!()]
            #[pyfunction]
            pub fn $name<'py>(
                py: Python<'py>,
                data: &Bound<'py, PyAny>,
                sink: Option<&Bound<'py, PyAny>>,
                #[pyo3(from_py_with = args::arg::<args::Compression, _>)]
                compression: Option<&str>,
                #[pyo3(from_py_with = args::arg::<args::Level, _>)]
                level: Option<i64>,
                #[pyo3(from_py_with = args::arg::<args::Threads, _>)]
                threads: Option<i64>,
                dictionary_deltas: bool
                $(, $metadata: Option<&Bound<'py, PyAny>>)?
            ) -> PyResult<Option<Bound<'py, PyBytes>>> {
                let footer: Option<&Bound<'_, PyAny>> = None $(.or($metadata))?;
                let options = writer_options(
                    $format,
                    compression,
                    level,
                    threads,
                    dictionary_deltas,
                    footer_metadata(footer)?,
                )?;
                write_all(py, data, sink, options, with)
            }
        }
    };
}

ipc_write_function!(
    /// Writes `data` (a table, batch, reader, DataFrame or Arrow PyCapsule object) as one Arrow
    /// IPC stream. Returns the bytes when `sink` is None; otherwise writes to the path or file
    /// object and returns None.
    write_stream,
    IpcFormat::Stream
);

ipc_write_function!(
    /// Writes `data` as one Arrow IPC file (Feather v2). Returns the bytes when `sink` is None.
    /// `metadata` (a dict or `pyarrow.KeyValueMetadata`) goes in the footer.
    write_file,
    IpcFormat::File,
    metadata
);
