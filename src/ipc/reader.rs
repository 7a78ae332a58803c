//! `zstdpool.ipc` readers: `open_stream`, `open_file`, `read_stream`, `read_file`.

use crate::args;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;

use crate::errors::{IntoPyErr as _, OrRaise as _};
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::errors;
use crate::errors::Format;
use crate::export::{batch_to_py, schema_to_py, stream_capsule, table_to_py, NextBatch};
use crate::field_names;
use crate::held::Held;
use crate::io::unwrap_py_error_in;
use crate::ipc::options::{to_key_value_metadata, ReadSettings};
use crate::lifecycle::{lifecycle_methods, Lifecycle, State, OPEN_SOURCE};
use crate::params;
use crate::source::InputSource;
use crate::store::PathOptions;
use zstdpool_core::error::{Error, Result};
use zstdpool_core::ipc::inspect::inspect;
use zstdpool_core::ipc::reader::BatchWithMetadata;
use zstdpool_core::ipc::{FileReader, IpcFormat, KeyValues, ReadLimits, ReadStats, StreamReader};

/// The exception for a failed read: a corrupt or oversized body is an `IpcDecompressionError`
/// or `IpcOutputLimitError`, each also an `IpcError`.
fn failed(err: Error) -> PyErr {
    unwrap_py_error_in(Format::Ipc, err)
}

fn limits(max_buffer_size: Option<i64>, max_batch_size: Option<i64>) -> PyResult<ReadLimits> {
    let d = ReadLimits::default();
    Ok(ReadLimits {
        max_buffer_size: match max_buffer_size {
            Some(n) => params::size("max_buffer_size", n).or_raise()?,
            None => d.max_buffer_size,
        },
        max_batch_size: match max_batch_size {
            Some(n) => params::size("max_batch_size", n).or_raise()?,
            None => d.max_batch_size,
        },
    })
}

/// A `ReadStats` record of `s`.
fn read_stats<'py>(py: Python<'py>, s: ReadStats) -> PyResult<Bound<'py, PyAny>> {
    py.import("zstdpool._stats")?.getattr("ReadStats")?.call1((
        s.num_messages,
        s.num_record_batches,
        s.num_dictionary_batches,
        s.num_dictionary_deltas,
        s.num_replaced_dictionaries,
    ))
}

/// A batch and its metadata as pyarrow's `RecordBatchWithMetadata` (the metadata a
/// `pyarrow.KeyValueMetadata`, or None when the message has none).
fn with_metadata<'py>(py: Python<'py>, found: BatchWithMetadata) -> PyResult<Bound<'py, PyAny>> {
    let (batch, metadata) = found;
    let metadata = match metadata {
        Some(pairs) => to_key_value_metadata(py, &pairs)?,
        None => py.None().into_bound(py),
    };
    py.import("pyarrow.lib")?
        .getattr("RecordBatchWithMetadata")?
        .call1((batch_to_py(py, batch)?, metadata))
}

/// What both readers open with: the source, the limits, the threads and the columns read.
struct Opening {
    input: InputSource,
    limits: ReadLimits,
    threads: Option<usize>,
    included_fields: Option<Vec<usize>>,
}

impl Opening {
    fn new<'py>(
        source: &Bound<'py, PyAny>,
        at: PathOptions<'_, 'py>,
        options: Option<&Bound<'py, PyAny>>,
        memory_pool: Option<&Bound<'py, PyAny>>,
        max_buffer_size: Option<i64>,
        max_batch_size: Option<i64>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let settings = ReadSettings::new(options, memory_pool, threads)?;
        let threads = params::threads(settings.threads).or_raise()?;
        let limits = limits(max_buffer_size, max_batch_size)?;
        Ok(Opening {
            input: InputSource::open(source, at)?,
            limits,
            threads,
            included_fields: settings.included_fields,
        })
    }
}

impl NextBatch for StreamReader<InputSource> {
    fn schema(&self) -> SchemaRef {
        StreamReader::schema(self)
    }
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        StreamReader::next_batch(self)
    }
}

/// Reads an Arrow IPC stream batch by batch, decompressing with pooled contexts.
/// Iterate over it for pyarrow RecordBatches, or call `read_all()`.
///
/// Constructed as pyarrow's is, `RecordBatchStreamReader(source, options=..., memory_pool=...)`
/// (`open_stream` is another name for it): `source` is bytes-like (read without copying), a
/// path, or a binary file object (a `pyarrow.NativeFile` among them). `options`, a
/// `pyarrow.ipc.IpcReadOptions`, gives `included_fields` (only those columns are
/// decompressed) and `use_threads`; `memory_pool` is accepted and unused.
///
#[doc = doc_ipc_read!()]
#[doc = doc_pool!()]
#[doc = doc_location!("source")]
#[pyclass(frozen, name = "RecordBatchStreamReader", module = "zstdpool.ipc")]
pub struct PyIpcStreamReader {
    reader: Held<StreamReader<InputSource>>,
    schema: SchemaRef,
}

impl PyIpcStreamReader {
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        let mut reader = self.reader.take()?;
        py.detach(|| reader.next_batch()).map_err(failed)
    }

    fn next_with_metadata(&self, py: Python<'_>) -> PyResult<Option<BatchWithMetadata>> {
        let mut reader = self.reader.take()?;
        py.detach(|| reader.next_batch_with_metadata())
            .map_err(failed)
    }

    fn open(
        py: Python<'_>,
        opening: Opening,
        pool: &zstdpool_core::pool::ContextPool,
    ) -> PyResult<Self> {
        let Opening {
            input,
            limits,
            threads,
            included_fields,
        } = opening;
        let reader = py
            .detach(|| {
                let mut reader = StreamReader::try_new(input, limits, pool, threads)?;
                if let Some(fields) = included_fields {
                    reader.project(fields)?;
                }
                Ok(reader)
            })
            .map_err(failed)?;
        let schema = reader.schema();
        check_exportable(&schema)?;
        Ok(PyIpcStreamReader {
            reader: Held::new(reader, "IPC reader"),
            schema,
        })
    }
}

/// What the stream and the file reader share, written once: the constructor, with pyarrow's
/// arguments (`source`, the file reader's `footer_offset`, `options`, `memory_pool`), then
/// zstdpool's limits, threads and pool, gathered into an [`Opening`] for the class's own
/// `open`; and `stats`.
macro_rules! ipc_reader_shared {
    ($class:ty $(, $footer_offset:ident)?) => {
        shared_keywords! {
            decoding(with, 'py),
            signature = (source, $($footer_offset=None,)? *, options=None, memory_pool=None, max_buffer_size=None, max_batch_size=None, threads=None);
            impl $class {
                #[new]
                fn new<'py>(
                    py: Python<'py>,
                    source: &Bound<'py, PyAny>,
                    $(
                        #[pyo3(from_py_with = args::arg::<args::FooterOffset, _>)]
                        $footer_offset: Option<i64>,
                    )?
                    options: Option<&Bound<'py, PyAny>>,
                    memory_pool: Option<&Bound<'py, PyAny>>,
                    #[pyo3(from_py_with = args::arg::<args::MaxBufferSize, _>)]
                    max_buffer_size: Option<i64>,
                    #[pyo3(from_py_with = args::arg::<args::MaxBatchSize, _>)]
                    max_batch_size: Option<i64>,
                    #[pyo3(from_py_with = args::arg::<args::Threads, _>)]
                    threads: Option<i64>
                ) -> PyResult<Self> {
                    let opening = Opening::new(
                        source,
                        with.at,
                        options,
                        memory_pool,
                        max_buffer_size,
                        max_batch_size,
                        threads,
                    )?;
                    Self::open(py, opening, $($footer_offset,)? with.pool)
                }
            }
        }

        #[pymethods]
        impl $class {
            /// What has been read so far, as a `ReadStats` (pyarrow's fields).
            #[getter]
            fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let reader = self.reader.take()?;
                let stats = reader.stats();
                drop(reader);
                read_stats(py, stats)
            }
        }
    };
}

ipc_reader_shared!(PyIpcStreamReader);
ipc_reader_shared!(PyIpcFileReader, footer_offset);

#[pymethods]
impl PyIpcStreamReader {
    /// The rows of the remaining batches, counted from their headers without decompressing
    /// a body. The stream is consumed.
    fn count_rows(&self, py: Python<'_>) -> PyResult<u64> {
        let mut reader = self.reader.take()?;
        py.detach(|| reader.count_rows()).map_err(failed)
    }

    /// The next batch with its message's metadata, as pyarrow's `RecordBatchWithMetadata`;
    /// raises StopIteration at the end.
    fn read_next_batch_with_custom_metadata<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.next_with_metadata(py)? {
            Some(found) => with_metadata(py, found),
            None => Err(errors::stop_iteration()),
        }
    }

    /// Iterates over the remaining batches as `RecordBatchWithMetadata` records.
    fn iter_batches_with_custom_metadata(slf: PyRef<'_, Self>) -> BatchesWithMetadata {
        BatchesWithMetadata { reader: slf.into() }
    }

    /// The stream's schema, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.next_batch(py)?.map(|b| batch_to_py(py, b)).transpose()
    }

    /// The next batch as a pyarrow RecordBatch; raises StopIteration at the end (pyarrow's name).
    fn read_next_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.next_batch(py)? {
            Some(b) => batch_to_py(py, b),
            None => Err(errors::stop_iteration()),
        }
    }

    /// The remaining batches as one pyarrow Table.
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut reader = self.reader.take()?;
        let batches = py
            .detach(|| -> Result<Vec<RecordBatch>> {
                let mut batches = Vec::new();
                while let Some(b) = reader.next_batch()? {
                    batches.push(b);
                }
                Ok(batches)
            })
            .map_err(failed)?;
        table_to_py(py, batches, self.schema.clone())
    }

    /// The remaining batches as a pandas DataFrame (through pyarrow).
    #[pyo3(signature = (**kwargs))]
    fn read_pandas<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.read_all(py)?.call_method("to_pandas", (), kwargs)
    }

    /// Exports the remaining batches through the Arrow C stream interface (pyarrow, polars,
    /// duckdb read it without copies). The reader is consumed.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the stream is exported with its own schema
        let reader = self.reader.take()?.retire();
        stream_capsule(py, reader)
    }
}

impl Lifecycle for PyIpcStreamReader {
    const WHAT: &'static str = "RecordBatchStreamReader";
    const NOT_PICKLED: &'static str = OPEN_SOURCE;

    fn state(&self) -> &dyn State {
        &self.reader
    }

    fn close(&self, _py: Python<'_>) -> PyResult<()> {
        if let Some(mut r) = self.reader.close() {
            r.close();
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "zstdpool.ipc.RecordBatchStreamReader {} columns",
            self.schema.fields().len()
        )
    }
}

lifecycle_methods!(
    PyIpcStreamReader,
    close = "Gives the decompression context back and releases the source. Idempotent."
);

/// Iterates over a stream reader's batches with their metadata.
#[pyclass(frozen, name = "_BatchesWithMetadata", module = "zstdpool.ipc")]
pub struct BatchesWithMetadata {
    reader: Py<PyIpcStreamReader>,
}

#[pymethods]
impl BatchesWithMetadata {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.reader
            .get()
            .next_with_metadata(py)?
            .map(|found| with_metadata(py, found))
            .transpose()
    }
}

/// Reads an Arrow IPC file (Feather v2): any batch by index, decompressing with pooled contexts.
///
/// Constructed as pyarrow's is, `RecordBatchFileReader(source, footer_offset=None,
/// options=..., memory_pool=...)` (`open_file` is another name for it): `source` is
/// bytes-like, a path, or a seekable binary file object; `footer_offset` is where the file ends in a source that
/// holds more after it. The other arguments are the stream reader's: `options`, a
/// `pyarrow.ipc.IpcReadOptions`, gives `included_fields` and `use_threads`; `memory_pool` is
/// accepted and unused.
///
#[doc = doc_ipc_read!()]
#[doc = doc_pool!()]
#[doc = doc_location!("source")]
#[pyclass(frozen, name = "RecordBatchFileReader", module = "zstdpool.ipc")]
pub struct PyIpcFileReader {
    reader: Held<FileReader<InputSource>>,
    schema: SchemaRef,
    num_batches: usize,
    metadata: Option<KeyValues>,
}

impl PyIpcFileReader {
    fn open(
        py: Python<'_>,
        opening: Opening,
        footer_offset: Option<i64>,
        pool: &zstdpool_core::pool::ContextPool,
    ) -> PyResult<Self> {
        let Opening {
            input,
            limits,
            threads,
            included_fields,
        } = opening;
        if !input.seekable(py)? {
            return Err(errors::wrong_type(
                "open_file needs a seekable source (a path, bytes, or a file object with seek()); \
                 read the data into bytes first, or use open_stream for IPC streams",
            ));
        }
        let end = footer_offset
            .map(|n| params::size("footer_offset", n).map(|n| n as u64))
            .transpose()
            .or_raise()?;
        let reader = py
            .detach(|| {
                let mut reader = FileReader::try_new_ending_at(input, end, limits, pool, threads)?;
                if let Some(fields) = included_fields {
                    reader.project(fields)?;
                }
                Ok(reader)
            })
            .map_err(failed)?;
        let schema = reader.schema();
        check_exportable(&schema)?;
        let num_batches = reader.num_batches();
        let metadata = reader.metadata().cloned();
        Ok(PyIpcFileReader {
            reader: Held::new(reader, "IPC reader"),
            schema,
            num_batches,
            metadata,
        })
    }

    fn index(&self, i: isize) -> PyResult<usize> {
        let n = self.num_batches as isize;
        let index = if i < 0 { i + n } else { i };
        if index < 0 || index >= n {
            return Err(errors::index(format!(
                "batch index {i} is out of range: the file has {n} batches"
            )));
        }
        Ok(index as usize)
    }
}

#[pymethods]
impl PyIpcFileReader {
    /// The rows of every batch, counted from the batches' headers without reading a body.
    fn count_rows(&self, py: Python<'_>) -> PyResult<u64> {
        let mut reader = self.reader.take()?;
        py.detach(|| reader.count_rows()).map_err(failed)
    }

    /// Batch `i` with its message's metadata, as pyarrow's `RecordBatchWithMetadata`.
    fn get_batch_with_custom_metadata<'py>(
        &self,
        py: Python<'py>,
        i: isize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let index = self.index(i)?;
        let mut reader = self.reader.take()?;
        let found = py
            .detach(|| reader.batch_with_metadata(index))
            .map_err(failed)?;
        drop(reader);
        with_metadata(py, found)
    }

    /// The file's schema, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
    }

    /// The number of record batches in the file.
    #[getter]
    fn num_record_batches(&self) -> usize {
        self.num_batches
    }

    fn __len__(&self) -> usize {
        self.num_batches
    }

    /// The footer's key-value metadata as pyarrow gives it: a dict of bytes to bytes, or
    /// None when the footer has none (read at open, like the schema).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(pairs) = &self.metadata else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        for (k, v) in pairs {
            d.set_item(
                pyo3::types::PyBytes::new(py, k.as_bytes()),
                pyo3::types::PyBytes::new(py, v.as_bytes()),
            )?;
        }
        Ok(Some(d))
    }

    /// Batch `i` as a pyarrow RecordBatch (negative indices count from the end).
    fn get_batch<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyAny>> {
        let index = self.index(i)?;
        let mut reader = self.reader.take()?;
        let batch = py.detach(|| reader.batch(index)).map_err(failed)?;
        batch_to_py(py, batch)
    }

    /// Same as `get_batch` (pyarrow's name): the batch at index `i` (negative counts from
    /// the end).
    fn get_record_batch<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyAny>> {
        self.get_batch(py, i)
    }

    /// Every batch as one pyarrow Table.
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut reader = self.reader.take()?;
        let n = self.num_batches;
        let batches = py
            .detach(|| (0..n).map(|i| reader.batch(i)).collect::<Result<Vec<_>>>())
            .map_err(failed)?;
        table_to_py(py, batches, self.schema.clone())
    }

    /// Every batch as a pandas DataFrame (through pyarrow).
    #[pyo3(signature = (**kwargs))]
    fn read_pandas<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.read_all(py)?.call_method("to_pandas", (), kwargs)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> FileBatches {
        FileBatches {
            reader: slf.into(),
            next: Held::new(0, "batch iterator"),
        }
    }
}

impl Lifecycle for PyIpcFileReader {
    const WHAT: &'static str = "RecordBatchFileReader";
    const NOT_PICKLED: &'static str = OPEN_SOURCE;

    fn state(&self) -> &dyn State {
        &self.reader
    }

    fn close(&self, _py: Python<'_>) -> PyResult<()> {
        if let Some(mut r) = self.reader.close() {
            r.release();
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "zstdpool.ipc.RecordBatchFileReader {} batches, {} columns",
            self.num_batches,
            self.schema.fields().len()
        )
    }
}

lifecycle_methods!(
    PyIpcFileReader,
    close = "Gives the decompression contexts back and releases the source. Idempotent."
);

/// Iterates over a file reader's batches in order; like the reader, for one thread at a time.
#[pyclass(frozen, name = "_FileBatches", module = "zstdpool.ipc")]
pub struct FileBatches {
    reader: Py<PyIpcFileReader>,
    /// The index of the next batch, taken for the length of one `__next__`.
    next: Held<usize>,
}

#[pymethods]
impl FileBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut next = self.next.take()?;
        let reader = self.reader.get();
        if *next >= reader.num_batches {
            return Ok(None);
        }
        let b = reader.get_batch(py, *next as isize)?;
        *next += 1;
        Ok(Some(b))
    }
}

/// `read_stream` and `read_file`: one definition makes both, differing only in the reader
/// they open (and the file reader's footer offset, None: at the end).
macro_rules! ipc_read_function {
    ($(#[doc = $doc:literal])* $name:ident, $class:ty $(, $footer_offset:expr)?) => {
        shared_keywords! {
            decoding(with, 'py),
            signature = (source, *, max_buffer_size=None, max_batch_size=None, threads=None);
            $(#[doc = $doc])*
            ///
            /// - `source`: a path (str or `os.PathLike`), an object store URL, bytes or another
            ///   buffer, or a binary file object.
            #[doc = doc_ipc_read!()]
            #[pyfunction]
            pub fn $name<'py>(
                py: Python<'py>,
                source: &Bound<'py, PyAny>,
                #[pyo3(from_py_with = args::arg::<args::MaxBufferSize, _>)]
                max_buffer_size: Option<i64>,
                #[pyo3(from_py_with = args::arg::<args::MaxBatchSize, _>)]
                max_batch_size: Option<i64>,
                #[pyo3(from_py_with = args::arg::<args::Threads, _>)]
                threads: Option<i64>
            ) -> PyResult<Bound<'py, PyAny>> {
                let opening = Opening::new(
                    source,
                    with.at,
                    None,
                    None,
                    max_buffer_size,
                    max_batch_size,
                    threads,
                )?;
                let reader = <$class>::open(py, opening, $($footer_offset,)? with.pool)?;
                let table = reader.read_all(py);
                Lifecycle::close(&reader, py)?;
                table
            }
        }
    };
}

ipc_read_function!(
    /// Reads a whole Arrow IPC stream into a pyarrow Table.
    read_stream,
    PyIpcStreamReader
);

ipc_read_function!(
    /// Reads a whole Arrow IPC file into a pyarrow Table.
    read_file,
    PyIpcFileReader,
    None
);

/// Refuses, at open, a schema that cannot cross the Arrow C data interface to pyarrow (a NUL
/// byte in a nested field's name, for one: top-level names cross under placeholders and are
/// restored), so that the failure is an IpcError and not pyarrow's.
fn check_exportable(schema: &SchemaRef) -> PyResult<()> {
    let placeholders = field_names::exportable(schema).map(|(s, _)| s);
    let schema = placeholders.as_ref().unwrap_or(schema);
    arrow_schema::ffi::FFI_ArrowSchema::try_from(schema.as_ref())
        .map(drop)
        .map_err(|e| {
            Error::Ipc(format!(
                "the schema cannot be handed to pyarrow through the Arrow C data interface: {e}"
            ))
            .into_py_err()
        })
}

shared_keywords! {
    source(at, 'py),
    signature = (source, *);
    /// Summarizes an Arrow IPC stream or file without decoding its data: format, schema, batches,
    /// rows, codecs, and per column the stored and uncompressed bytes.
    ///
    #[pyfunction]
    pub fn inspect_ipc<'py>(
        py: Python<'py>,
        source: &Bound<'py, PyAny>
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut input = InputSource::open(source, at)?;
        let found = py
            .detach(|| inspect(&mut input, &ReadLimits::default()))
            .map_err(failed)?;
        let d = PyDict::new(py);
        d.set_item(
            "format",
            match found.format {
                IpcFormat::Stream => "stream",
                IpcFormat::File => "file",
            },
        )?;
        let schema = schema_to_py(py, &found.schema)?;
        d.set_item("schema", &schema)?;
        d.set_item("num_batches", found.num_batches)?;
        d.set_item("num_rows", found.num_rows)?;
        d.set_item("num_dictionary_batches", found.num_dictionary_batches)?;
        d.set_item("codecs", found.codecs.iter().collect::<Vec<_>>())?;
        d.set_item("body_bytes", found.body_bytes)?;
        let columns = PyList::empty(py);
        for (i, (field, bytes)) in found.schema.fields().iter().zip(&found.columns).enumerate() {
            let c = PyDict::new(py);
            c.set_item("name", field.name())?;
            // pyarrow's spelling of the type, as the schema prints it.
            let pa_type = schema.call_method1("field", (i,))?.getattr("type")?;
            c.set_item("type", pa_type.str()?)?;
            c.set_item("compressed_bytes", bytes.compressed)?;
            c.set_item("uncompressed_bytes", bytes.uncompressed)?;
            columns.append(c)?;
        }
        d.set_item("columns", columns)?;
        Ok(d)
    }
}
