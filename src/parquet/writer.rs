//! `zstdpool.parquet` writers: `ParquetWriter` and `write_table`.

use crate::args;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMapping};

use crate::errors;
use crate::errors::{IntoPyErr as _, OrRaise as _};
use crate::export::schema_to_py;
use crate::held::Held;
use crate::input::{schema_of, to_input, Failure, Imported};
use crate::io::unwrap_py_error;
use crate::lifecycle::{lifecycle_methods, Lifecycle, State, UNWRITTEN};
use crate::params;
use crate::parquet::options::{writer_keywords, WriterKeywords};
use crate::shared_keywords::Writing;
use crate::sink::{Sink, SinkWriter};
use zstdpool_core::error::Error;
use zstdpool_core::memory::trim;
use zstdpool_core::parquet::{ParquetWriter, WriteOptions};

type Writer = ParquetWriter<SinkWriter>;

/// Classifies a core error of a write: I/O is the sink's (the output is incomplete), anything
/// else the batch's.
fn failure(e: Error) -> Failure {
    match e {
        Error::Io(_) => Failure::Sink(unwrap_py_error(e)),
        other => Failure::Encode(other.into_py_err()),
    }
}

/// Writes every batch of `input`; input with no rows is written as a row group of none, as
/// pyarrow writes each empty table. Runs without the GIL.
fn write_batches(writer: &mut Writer, input: &mut Imported) -> Result<(), Failure> {
    let mut rows = 0;
    while let Some(batch) = input.next_batch()? {
        rows += batch.num_rows();
        writer.write(&batch).map_err(failure)?;
    }
    if rows == 0 {
        writer.write_empty_row_group().map_err(failure)?;
    }
    Ok(())
}

/// Writes the footer and hands the sink back to commit; then, the row groups' buffers being
/// freed, gives the allocator's free memory back after a large file. Runs without the GIL.
fn finish(writer: &mut Writer) -> Result<Sink, Failure> {
    let sink = writer.finish().map_err(failure)?;
    let sink = sink.into_sink().map_err(|e| failure(Error::Io(e)))?;
    trim::after_write(writer.bytes_written() as u64);
    Ok(sink)
}

/// A Parquet file writer with pooled zstd compression, for pyarrow tables, batches and
/// readers, pandas DataFrames, and any object with the Arrow PyCapsule interface. Rows are
/// buffered into row groups of `row_group_size` rows (`flush()` ends a row group early); each
/// row group's columns are encoded and compressed without the GIL, a large one on several
/// threads. The options are those of `write_table`; a path appears under its name on `close()`.
///
/// - `where`: a path (str or `os.PathLike`), an object store URL, or a binary file object.
/// - `schema`: the schema of every table written (a `pyarrow.Schema` or any object with
///   `__arrow_c_schema__`).
/// - `**options`: the keywords of `write_table`, listed with their types under
///   `ParquetWriteOptions`.
#[pyclass(frozen, name = "ParquetWriter", module = "zstdpool.parquet")]
pub struct PyParquetWriter {
    writer: Held<Writer>,
    schema: SchemaRef,
    rows: AtomicU64,
    row_groups: AtomicUsize,
    bytes: AtomicUsize,
    /// The footer written on close (see `metadata`).
    footer: std::sync::OnceLock<Vec<u8>>,
}

impl PyParquetWriter {
    fn record(&self, w: &Writer) {
        self.rows.store(w.rows_written(), Ordering::Relaxed);
        self.row_groups.store(w.row_groups(), Ordering::Relaxed);
        self.bytes.store(w.bytes_written(), Ordering::Relaxed);
        if let Some(footer) = w.footer() {
            let _ = self.footer.set(footer.to_vec());
        }
    }

    fn write_data(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        row_group_size: Option<i64>,
    ) -> PyResult<()> {
        let rows = row_group_size
            .map(|n| params::positive("row_group_size", n))
            .transpose()
            .or_raise()?;
        let input = to_input(data)?;
        let mut taken = self.writer.take()?;
        let writer: &mut Writer = &mut taken;
        let result = py.detach(move || -> Result<(), Failure> {
            let mut input = input.import()?;
            match rows {
                None => write_batches(writer, &mut input),
                // Row groups of exactly this size for this data, as pyarrow's write_table.
                Some(n) => {
                    writer.flush().map_err(failure)?;
                    let limit = writer.row_group_size();
                    writer.set_row_group_size(n);
                    let result = write_batches(writer, &mut input)
                        .and_then(|()| writer.flush().map_err(failure));
                    writer.set_row_group_size(limit);
                    result
                }
            }
        });
        self.record(&taken);
        match result {
            Ok(()) => Ok(()),
            Err(Failure::Sink(e)) => {
                taken.retire().abandon();
                Err(e)
            }
            Err(f) => Err(f.into_err(data)),
        }
    }
}

#[pymethods]
impl PyParquetWriter {
    /// Opens a writer on `where` (a path or a binary file object) for data of `schema`, with
    /// the keywords of `write_table`.
    #[new]
    #[pyo3(signature = (r#where, schema, **options))]
    fn new(
        py: Python<'_>,
        r#where: &Bound<'_, PyAny>,
        schema: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if r#where.is_none() {
            return Err(errors::wrong_type(
                "where must be a path or a binary file object; to get bytes use write_table \
                 with where=None",
            ));
        }
        let WriterKeywords { options, shared } = writer_keywords("ParquetWriter()", options)?;
        let with = shared.writing();
        let schema = schema_of(schema)?;
        let sink = Sink::open(py, Some(r#where), with.durability, with.at)?;
        let writer =
            ParquetWriter::try_new(SinkWriter::new(sink), schema.clone(), options, with.pool)
                .map_err(unwrap_py_error)?;
        Ok(PyParquetWriter {
            writer: Held::new(writer, "Parquet writer"),
            schema,
            rows: AtomicU64::new(0),
            row_groups: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            footer: Default::default(),
        })
    }

    /// Writes `table_or_batch`: a pyarrow Table, RecordBatch or RecordBatchReader, a pandas
    /// DataFrame, or any object with `__arrow_c_stream__` or `__arrow_c_array__`, whose schema
    /// matches the writer's (see `write_table` for `row_group_size`).
    #[pyo3(signature = (table_or_batch, row_group_size=None))]
    fn write(
        &self,
        py: Python<'_>,
        table_or_batch: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::arg::<args::RowGroupSize, _>)] row_group_size: Option<i64>,
    ) -> PyResult<()> {
        self.write_data(py, table_or_batch, row_group_size)
    }

    /// Adds `key_value_metadata`, a mapping of str or UTF-8 bytes, to the footer written on
    /// `close()`.
    fn add_key_value_metadata(&self, key_value_metadata: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = |v: &Bound<'_, PyAny>, what: &str| -> PyResult<String> {
            if let Ok(b) = v.cast::<PyBytes>() {
                return String::from_utf8(b.as_bytes().to_vec()).map_err(|_| {
                    errors::parameter(format!(
                        "key_value_metadata: a {what} is not UTF-8, which Parquet's key-value \
                         metadata holds"
                    ))
                });
            }
            v.extract().map_err(|_| {
                args::not_one_of(
                    v,
                    &format!("key_value_metadata: each {what}"),
                    "a str or bytes",
                )
            })
        };
        let mapping = key_value_metadata.cast::<PyMapping>().map_err(|_| {
            args::not_one_of(
                key_value_metadata,
                "key_value_metadata",
                "a dict of str or bytes",
            )
        })?;
        let pairs = mapping
            .items()?
            .iter()
            .map(|item| {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
                Ok((text(&k, "key")?, text(&v, "value")?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut taken = self.writer.take()?;
        taken.add_key_value_metadata(pairs).or_raise()
    }

    /// Writes `table`; with `row_group_size`, as row groups of at most that many rows of its
    /// own (pyarrow's behaviour), else buffered with the rows before it.
    #[pyo3(signature = (table, row_group_size=None))]
    fn write_table(
        &self,
        py: Python<'_>,
        table: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::arg::<args::RowGroupSize, _>)] row_group_size: Option<i64>,
    ) -> PyResult<()> {
        self.write_data(py, table, row_group_size)
    }

    /// Writes `batch` (see `write_table` for `row_group_size`).
    #[pyo3(signature = (batch, row_group_size=None))]
    fn write_batch(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::arg::<args::RowGroupSize, _>)] row_group_size: Option<i64>,
    ) -> PyResult<()> {
        self.write_data(py, batch, row_group_size)
    }

    /// Writes the buffered rows as a row group now, however few.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let mut taken = self.writer.take()?;
        let writer: &mut Writer = &mut taken;
        let result = py.detach(move || writer.flush().map_err(failure));
        self.record(&taken);
        match result {
            Ok(()) => Ok(()),
            Err(Failure::Sink(e)) => {
                taken.retire().abandon();
                Err(e)
            }
            Err(f) => Err(f.into_err(py.None().bind(py))),
        }
    }

    /// Abandons the output: nothing more is written and a path's file is removed. Idempotent.
    fn abort(&self) {
        if let Some(mut w) = self.writer.close() {
            w.abandon();
        }
    }

    /// The schema data must have, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
    }

    /// Rows written to the sink so far (rows still buffered for a row group not counted).
    #[getter]
    fn num_rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// Row groups written so far.
    #[getter]
    fn num_row_groups(&self) -> usize {
        self.row_groups.load(Ordering::Relaxed)
    }

    /// Bytes written to the sink so far.
    #[getter]
    fn bytes_written(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The file's footer as a `pyarrow.parquet.FileMetaData` (row groups, column chunks and
    /// their statistics, as pyarrow's `ParquetWriter.metadata` gives them) once the writer is
    /// closed; None before.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(footer) = self.footer.get() else {
            return Ok(py.None().into_bound(py));
        };
        // The footer behind the leading magic bytes is a file pyarrow reads the footer of.
        let mut file = Vec::with_capacity(footer.len() + 4);
        file.extend_from_slice(b"PAR1");
        file.extend_from_slice(footer);
        let pa = py.import("pyarrow")?;
        let buffer = pa
            .getattr("BufferReader")?
            .call1((pyo3::types::PyBytes::new(py, &file),))?;
        py.import("pyarrow.parquet")?
            .getattr("read_metadata")?
            .call1((buffer,))
    }
}

impl Lifecycle for PyParquetWriter {
    const WHAT: &'static str = "ParquetWriter";
    const NOT_PICKLED: &'static str = UNWRITTEN;

    fn state(&self) -> &dyn State {
        &self.writer
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(mut writer) = self.writer.close_idle()? else {
            return Ok(());
        };
        let result = py.detach(|| finish(&mut writer));
        self.record(&writer);
        match result {
            Ok(mut sink) => sink.commit(py).map(drop),
            Err(Failure::Sink(e) | Failure::Encode(e) | Failure::Import(e)) => {
                writer.abandon();
                Err(e)
            }
        }
    }

    fn close_after_error(&self, _py: Python<'_>) -> PyResult<()> {
        self.abort();
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "zstdpool.parquet.ParquetWriter {} columns",
            self.schema.fields().len()
        )
    }
}

lifecycle_methods!(
    PyParquetWriter,
    close = "Writes the buffered rows and the footer, completes the sink and gives the contexts \
             back. Idempotent. A path appears under its name only now; if this fails, nothing \
             does. Leaving a `with` block that raised abandons the output instead (see `abort`)."
);

impl Drop for PyParquetWriter {
    /// A writer collected without close() leaves no partial file behind.
    fn drop(&mut self) {
        if let Some(mut w) = self.writer.close() {
            w.abandon();
        }
    }
}

/// Writes `data` in one call. Everything after taking the input and opening the sink runs
/// without the GIL; a failed write leaves no file under the path's name.
fn write_all<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    sink: Option<&Bound<'py, PyAny>>,
    options: WriteOptions,
    with: Writing<'_, 'py>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Writing {
        durability,
        pool,
        at,
    } = with;
    let input = to_input(data)?;
    let sink = Sink::open(py, sink, durability, at)?;
    let result = py.detach(move || -> Result<Sink, Failure> {
        let mut input = input.import()?;
        let mut writer =
            ParquetWriter::try_new(SinkWriter::new(sink), input.schema(), options, pool)
                .map_err(failure)?;
        let written = write_batches(&mut writer, &mut input).and_then(|()| finish(&mut writer));
        if written.is_err() {
            writer.abandon();
        }
        written
    });
    match result {
        Ok(mut sink) => sink.commit(py),
        Err(f) => Err(f.into_err(data)),
    }
}

/// Writes `data` (a table, batch, reader, DataFrame or Arrow PyCapsule object) as one Parquet
/// file. Returns the bytes when `where` is None; otherwise writes to the path or binary file
/// object and returns None. Every keyword of `pyarrow.parquet.write_table` is taken, with
/// pyarrow's meaning (the README lists the few deliberate differences); the main ones:
///
/// `compression` is "zstd" (the default, with pooled contexts; level 1 unless
/// `compression_level` says otherwise, as in pyarrow), "lz4", "snappy", "gzip", "brotli" or
/// None, or a dict of column names to codecs (columns it leaves out are uncompressed, as in
/// pyarrow); `compression_level` may also be a dict. `use_dictionary` and `write_statistics`
/// are True, False, or a list of the columns that get them. `row_group_size` caps the rows of
/// a row group (default 1,048,576), `data_page_size` the bytes of a page (1 MiB),
/// `data_page_version` is "1.0" or "2.0". `threads` encodes a large row group's columns in
/// parallel (None: by size); the file is the same whatever it is. A path is written under a
/// hidden temporary name and renamed into place when complete; `fsync=True` also syncs the file
/// and its directory, so that the file survives a power loss once the call returns.
///
/// `**options` are the keywords of `ParquetWriter` (listed, with their types, under
/// `ParquetWriteOptions` in this reference), plus `pool` (the `ContextPool` to borrow from),
/// `filesystem` (a pyarrow or fsspec filesystem that `where` is a path on) and
/// `storage_options` (options of the object store a URL `where` names).
#[pyfunction]
#[pyo3(signature = (data, r#where=None, **options))]
pub fn write_table<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    r#where: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let WriterKeywords { options, shared } = writer_keywords("write_table()", options)?;
    write_all(py, data, r#where, options, shared.writing())
}
