//! `zstdpool.parquet` readers: `read_table`, `read_schema`, `ParquetFile` and its batches.

use crate::args;
use std::sync::{Arc, RwLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::batch_stream::PyBatchStream;
use crate::errors;
use crate::errors::Format;
use crate::errors::OrRaise as _;
use crate::export::{schema_to_py, table_to_py, NextBatch};
use crate::io::unwrap_py_error_in;
use crate::lifecycle::{lifecycle_methods, Lifecycle, State, OPEN_SOURCE};
use crate::params;
use crate::source::parquet_source;
use crate::store::PathOptions;
use zstdpool_core::error::{Error, Result};
use zstdpool_core::parquet::{Batches, ParquetFile, ParquetLimits};
use zstdpool_core::pool::ContextPool;

/// The exception for a failed read: a corrupt or oversized body is also a ParquetError.
fn failed(err: Error) -> PyErr {
    unwrap_py_error_in(Format::Parquet, err)
}

fn limits(max_page_size: Option<i64>, verify_checksums: bool) -> PyResult<ParquetLimits> {
    let mut limits = ParquetLimits {
        verify_checksums,
        ..Default::default()
    };
    if let Some(n) = max_page_size {
        limits.max_page_size = params::size("max_page_size", n).or_raise()?;
    }
    Ok(limits)
}

/// `threads`, or `use_threads=False` for one thread, as pyarrow spells it.
fn threads(threads: Option<i64>, use_threads: bool) -> PyResult<Option<usize>> {
    match (params::threads(threads).or_raise()?, use_threads) {
        (Some(n), _) => Ok(Some(n)),
        (None, true) => Ok(None),
        (None, false) => Ok(Some(1)),
    }
}

fn open<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    at: PathOptions<'_, 'py>,
    limits: ParquetLimits,
    threads: Option<usize>,
    pool: &ContextPool,
) -> PyResult<ParquetFile> {
    let source = parquet_source(source, at)?;
    py.detach(|| ParquetFile::open(source, limits, pool, threads))
        .map_err(failed)
}

/// Reads `columns` (all by default) of `row_groups` (all by default) into one pyarrow Table.
fn read<'py>(
    py: Python<'py>,
    file: &ParquetFile,
    columns: Option<Vec<String>>,
    row_groups: Option<Vec<usize>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let projection = file.projection(columns.as_deref()).or_raise()?;
    let batches = py
        .detach(|| file.read(&projection, row_groups.as_deref(), threads))
        .map_err(failed)?;
    table_to_py(py, batches, projection.schema().clone())
}

/// A Parquet file opened for reading: its schema and footer are read at open, its row groups
/// and columns on request, zstd pages decompressed with pooled contexts. Reads take no lock:
/// several threads may read one file at once. `source` is bytes-like (read without copying),
/// a path, or a seekable binary file object; `max_page_size` bounds what one page may declare
/// uncompressed (default 2 GiB), checked before anything is allocated. With
/// `page_checksum_verification`, each page whose header gives a CRC is checked against it.
///
/// - `use_threads`: as in pyarrow: False reads every column on the calling thread.
/// - `threads`: how many threads decode a read's columns (None: by size).
#[doc = doc_pool!()]
#[doc = doc_location!("source")]
#[pyclass(frozen, name = "ParquetFile", module = "zstdpool.parquet")]
pub struct PyParquetFile {
    file: RwLock<Option<Arc<ParquetFile>>>,
    schema: SchemaRef,
}

impl PyParquetFile {
    fn file(&self) -> PyResult<Arc<ParquetFile>> {
        self.file
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| errors::closed("Parquet file"))
    }
}

shared_keywords! {
    decoding(with, 'py),
    signature = (source, *, max_page_size=None, page_checksum_verification=false, use_threads=true, threads=None);
    impl PyParquetFile {
        #[new]
        fn new<'py>(
            py: Python<'py>,
            source: &Bound<'py, PyAny>,
            #[pyo3(from_py_with = args::arg::<args::MaxPageSize, _>)] max_page_size: Option<i64>,
            page_checksum_verification: bool,
            use_threads: bool,
            #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>
        ) -> PyResult<Self> {
            let threads = self::threads(threads, use_threads)?;
            let limits = limits(max_page_size, page_checksum_verification)?;
            let file = open(py, source, with.at, limits, threads, with.pool)?;
            Ok(PyParquetFile {
                schema: file.schema().clone(),
                file: RwLock::new(Some(Arc::new(file))),
            })
        }
    }
}

#[pymethods]
impl PyParquetFile {
    /// The file's Arrow schema as a pyarrow Schema (restored from `ARROW:schema` where the
    /// file has one, as pyarrow does), with its metadata.
    #[getter]
    fn schema_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
    }

    /// The same as `schema_arrow` (zstdpool has no separate Parquet schema object).
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema_arrow(py)
    }

    /// The number of row groups.
    #[getter]
    fn num_row_groups(&self) -> PyResult<usize> {
        Ok(self.file()?.num_row_groups())
    }

    /// What the footer says, as a dict: num_rows, num_row_groups, num_columns, created_by,
    /// format_version, key_value_metadata, and per row group its num_rows, total_byte_size
    /// and columns (path_in_schema, physical_type, compression, encodings, num_values,
    /// total_compressed_size, total_uncompressed_size, has_dictionary_page).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metadata_dict(py, &*self.file()?)
    }

    /// Reads `columns` (top-level names or dotted paths into nested columns; all by default)
    /// into one pyarrow Table; `use_threads=False` reads on the calling thread.
    #[pyo3(signature = (columns=None, use_threads=true))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        use_threads: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        // Without use_threads, one thread; with it, what the file was opened with.
        read(
            py,
            &*self.file()?,
            columns,
            None,
            (!use_threads).then_some(1),
        )
    }

    /// Reads row group `i` (negative counts from the end) into a pyarrow Table, with only
    /// `columns` where given.
    #[pyo3(signature = (i, columns=None))]
    fn read_row_group<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::arg::<args::I, _>)] i: usize,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        read(py, &*self.file()?, columns, Some(vec![i]), None)
    }

    /// Reads the row groups `row_groups`, in that order, into one pyarrow Table, with only
    /// `columns` where given.
    #[pyo3(signature = (row_groups, columns=None))]
    fn read_row_groups<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::arg::<args::RowGroups, _>)] row_groups: Vec<usize>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        read(py, &*self.file()?, columns, Some(row_groups), None)
    }

    /// Batches of at most `batch_size` rows of `row_groups` (all by default) and `columns`
    /// (all by default), read in order as they are asked for; the iterator also offers
    /// `__arrow_c_stream__`.
    #[pyo3(signature = (batch_size=65536, row_groups=None, columns=None))]
    fn iter_batches(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::arg::<args::BatchSize, _>)] batch_size: i64,
        #[pyo3(from_py_with = args::arg::<args::RowGroups, _>)] row_groups: Option<Vec<usize>>,
        columns: Option<Vec<String>>,
    ) -> PyResult<PyBatchStream> {
        let batch_size = params::count("batch_size", batch_size).or_raise()?;
        let file = self.file()?;
        let projection = file.projection(columns.as_deref()).or_raise()?;
        let batches = py
            .detach(|| file.batches(&projection, row_groups.as_deref(), batch_size))
            .map_err(failed)?;
        Ok(PyBatchStream::new(batches, Format::Parquet))
    }
}

/// A file is open while it holds its source (a lock rather than a `Held`, since reads share it).
impl State for PyParquetFile {
    fn is_closed(&self) -> bool {
        self.file
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    fn check_open(&self) -> PyResult<()> {
        self.file().map(drop)
    }
}

impl Lifecycle for PyParquetFile {
    const WHAT: &'static str = "ParquetFile";
    const NOT_PICKLED: &'static str = OPEN_SOURCE;

    fn state(&self) -> &dyn State {
        self
    }

    fn close(&self, _py: Python<'_>) -> PyResult<()> {
        *self.file.write().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "zstdpool.parquet.ParquetFile {} columns",
            self.schema.fields().len()
        )
    }
}

lifecycle_methods!(
    PyParquetFile,
    close = "Releases the source. Idempotent; reads running now finish first."
);

impl NextBatch for Batches {
    fn schema(&self) -> SchemaRef {
        Batches::schema(self).clone()
    }
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        Batches::next_batch(self)
    }
}

shared_keywords! {
    decoding(with, 'py),
    signature = (source, *, columns=None, row_groups=None, use_threads=true, threads=None, max_page_size=None, page_checksum_verification=false);
    /// Reads a Parquet file into one pyarrow Table: `columns` (top-level names or dotted paths
    /// into nested columns; all by default) of `row_groups` (all by default). Columns of a large
    /// file are decoded on several threads (`threads`, or `use_threads=False` for one); zstd pages
    /// are decompressed with pooled contexts. `source` is bytes-like (read without copying), a
    /// path, or a seekable binary file object; `max_page_size` bounds what a page may declare.
    /// With `page_checksum_verification`, each page whose header gives a CRC is checked against
    /// it before it is decompressed, and a mismatch is a ParquetError.
    ///
    #[pyfunction]
    pub fn read_table<'py>(
        py: Python<'py>,
        source: &Bound<'py, PyAny>,
        columns: Option<Vec<String>>,
        #[pyo3(from_py_with = args::arg::<args::RowGroups, _>)] row_groups: Option<Vec<usize>>,
        use_threads: bool,
        #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::MaxPageSize, _>)] max_page_size: Option<i64>,
        page_checksum_verification: bool
    ) -> PyResult<Bound<'py, PyAny>> {
        let threads = self::threads(threads, use_threads)?;
        let limits = limits(max_page_size, page_checksum_verification)?;
        let file = open(py, source, with.at, limits, threads, with.pool)?;
        read(py, &file, columns, row_groups, None)
    }
}

shared_keywords! {
    source(at, 'py),
    signature = (source, *);
    /// The Arrow schema of a Parquet file (read from its footer alone), as a pyarrow Schema.
    ///
    /// - `source`: a path (str or `os.PathLike`), an object store URL, bytes or another buffer,
    ///   or a binary file object.
    #[pyfunction]
    pub fn read_schema<'py>(
        py: Python<'py>,
        source: &Bound<'py, PyAny>
    ) -> PyResult<Bound<'py, PyAny>> {
        let file = open(py, source, at, ParquetLimits::default(), Some(1), ContextPool::global())?;
        schema_to_py(py, file.schema())
    }
}

fn metadata_dict<'py>(py: Python<'py>, file: &ParquetFile) -> PyResult<Bound<'py, PyDict>> {
    let s = file.summary();
    let d = PyDict::new(py);
    d.set_item("num_rows", s.num_rows)?;
    d.set_item("num_row_groups", s.row_groups.len())?;
    d.set_item("num_columns", s.num_columns)?;
    d.set_item("created_by", s.created_by)?;
    d.set_item("format_version", s.format_version)?;
    let kv = PyDict::new(py);
    for (k, v) in &s.key_value_metadata {
        kv.set_item(
            PyBytes::new(py, k.as_bytes()),
            v.as_ref().map(|v| PyBytes::new(py, v.as_bytes())),
        )?;
    }
    d.set_item("key_value_metadata", kv)?;
    let groups = PyList::empty(py);
    for g in &s.row_groups {
        let gd = PyDict::new(py);
        gd.set_item("num_rows", g.num_rows)?;
        gd.set_item("total_byte_size", g.total_byte_size)?;
        let columns = PyList::empty(py);
        for c in &g.columns {
            let cd = PyDict::new(py);
            cd.set_item("path_in_schema", &c.path_in_schema)?;
            cd.set_item("physical_type", &c.physical_type)?;
            cd.set_item("compression", c.compression)?;
            cd.set_item("encodings", &c.encodings)?;
            cd.set_item("num_values", c.num_values)?;
            cd.set_item("total_compressed_size", c.total_compressed_size)?;
            cd.set_item("total_uncompressed_size", c.total_uncompressed_size)?;
            cd.set_item("has_dictionary_page", c.has_dictionary_page)?;
            columns.append(cd)?;
        }
        gd.set_item("columns", columns)?;
        groups.append(gd)?;
    }
    d.set_item("row_groups", groups)?;
    Ok(d)
}
