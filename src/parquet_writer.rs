//! `zstdpool.parquet` writers: `ParquetWriter` and `write_table`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::PySchema;

use crate::buffer::type_name;
use crate::errors;
use crate::errors::{IntoPyErr as _, OrRaise as _};
use crate::held::Held;
use crate::input::{schema_of, to_input, Failure, Imported};
use crate::io::unwrap_py_error;
use crate::ipc_writer::durability;
use crate::lifecycle::{lifecycle_methods, Lifecycle, State, UNWRITTEN};
use crate::pool::{pool_or_default, PyContextPool};
use crate::sink::{Sink, SinkWriter};
use zstdpool_core::error::Error;
use zstdpool_core::params;
use zstdpool_core::parquet::{PageCodec, PageVersion, ParquetWriter, PerColumn, WriteOptions};
use zstdpool_core::path_sink::Durability;
use zstdpool_core::pool::ContextPool;

/// A level argument: one for every column, or one per column.
enum Levels {
    All(Option<i64>),
    PerColumn(Vec<(String, i64)>),
}

impl Levels {
    fn parse(level: Option<&Bound<'_, PyAny>>) -> PyResult<Levels> {
        let Some(level) = level.filter(|l| !l.is_none()) else {
            return Ok(Levels::All(None));
        };
        if let Ok(dict) = level.cast::<PyDict>() {
            return dict
                .iter()
                .map(|(k, v)| Ok((column_name(&k, "compression_level")?, v.extract::<i64>()?)))
                .collect::<PyResult<_>>()
                .map(Levels::PerColumn);
        }
        level
            .extract::<i64>()
            .map(|l| Levels::All(Some(l)))
            .map_err(|_| {
                errors::wrong_type(format!(
                    "compression_level must be an int, a dict of column names to ints or None, \
                     not '{}'",
                    type_name(level)
                ))
            })
    }

    fn for_column(&self, column: Option<&str>) -> Option<i64> {
        match (self, column) {
            (Levels::All(l), _) => *l,
            (Levels::PerColumn(levels), Some(c)) => {
                levels.iter().find(|(name, _)| name == c).map(|(_, l)| *l)
            }
            (Levels::PerColumn(_), None) => None,
        }
    }
}

fn column_name(key: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    key.extract::<String>().map_err(|_| {
        errors::wrong_type(format!(
            "{what} keys must be column names (str), not '{}'",
            type_name(key)
        ))
    })
}

/// An argument whose default pyo3 cannot spell as a literal, since the argument takes a str or
/// a bool as well as a dict or a list: `compression` (zstd when not given), `use_dictionary`
/// and `write_statistics` (True when not given).
pub enum Defaulted<'py> {
    Default,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Defaulted<'py> {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Defaulted::Given(obj.to_owned()))
    }
}

/// `compression`: a codec name or None for every column, or a dict of column names to codecs
/// (columns it does not name are uncompressed, as in pyarrow).
fn codecs(
    compression: &Defaulted<'_>,
    level: Option<&Bound<'_, PyAny>>,
) -> PyResult<PerColumn<PageCodec>> {
    let levels = Levels::parse(level)?;
    let codec = |name: Option<&str>, column: Option<&str>| {
        PageCodec::from_name(name, levels.for_column(column)).or_raise()
    };
    // One codec for every column, at each column's level where levels are per column.
    let every = |name: Option<&str>| -> PyResult<PerColumn<PageCodec>> {
        let mut all = PerColumn::all(codec(name, None)?);
        if let Levels::PerColumn(per) = &levels {
            for (column, _) in per {
                all.columns
                    .insert(column.clone(), codec(name, Some(column))?);
            }
        }
        Ok(all)
    };
    let compression = match compression {
        Defaulted::Default => return every(Some("zstd")),
        Defaulted::Given(c) if c.is_none() => return every(None),
        Defaulted::Given(c) => c,
    };
    if let Ok(name) = compression.cast::<PyString>() {
        return every(Some(name.to_str()?));
    }
    if let Ok(dict) = compression.cast::<PyDict>() {
        let mut all = PerColumn::all(PageCodec::None);
        for (k, v) in dict.iter() {
            let column = column_name(&k, "compression")?;
            let name: Option<String> = v.extract().map_err(|_| {
                errors::wrong_type(format!(
                    "the codec of column {column:?} must be a str or None, not '{}'",
                    type_name(&v)
                ))
            })?;
            let c = codec(name.as_deref(), Some(&column))?;
            all.columns.insert(column, c);
        }
        return Ok(all);
    }
    Err(errors::wrong_type(format!(
        "compression must be a codec name, a dict of column names to codec names, or None, not \
         '{}'",
        type_name(compression)
    )))
}

/// `use_dictionary` and `write_statistics`: True (the default) or False for every column, or a
/// list of the columns that get it (the others do not), as in pyarrow.
fn switches(value: &Defaulted<'_>, what: &str) -> PyResult<PerColumn<bool>> {
    let value = match value {
        Defaulted::Default => return Ok(PerColumn::all(true)),
        Defaulted::Given(v) => v,
    };
    if let Ok(on) = value.extract::<bool>() {
        return Ok(PerColumn::all(on));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let mut some = PerColumn::all(false);
        for item in list.iter() {
            some.columns.insert(column_name(&item, what)?, true);
        }
        return Ok(some);
    }
    if let Ok(names) = value.extract::<Vec<String>>() {
        let mut some = PerColumn::all(false);
        for name in names {
            some.columns.insert(name, true);
        }
        return Ok(some);
    }
    Err(errors::wrong_type(format!(
        "{what} must be a bool or a list of column names, not '{}'",
        type_name(value)
    )))
}

/// The options every Parquet writer takes, checked.
#[allow(clippy::too_many_arguments)]
pub fn write_options(
    compression: &Defaulted<'_>,
    compression_level: Option<&Bound<'_, PyAny>>,
    row_group_size: Option<i64>,
    use_dictionary: &Defaulted<'_>,
    write_statistics: &Defaulted<'_>,
    data_page_size: Option<i64>,
    data_page_version: &str,
    threads: Option<i64>,
) -> PyResult<WriteOptions> {
    let defaults = WriteOptions::default();
    Ok(WriteOptions {
        compression: codecs(compression, compression_level)?,
        dictionary: switches(use_dictionary, "use_dictionary")?,
        statistics: switches(write_statistics, "write_statistics")?,
        row_group_size: match row_group_size {
            Some(n) => params::positive("row_group_size", n).or_raise()?,
            None => defaults.row_group_size,
        },
        data_page_size: data_page_size
            .map(|n| params::size("data_page_size", n))
            .transpose()
            .or_raise()?,
        page_version: PageVersion::from_name(data_page_version).or_raise()?,
        threads: params::threads(threads).or_raise()?,
        metadata: Vec::new(),
    })
}

type Writer = ParquetWriter<SinkWriter>;

/// Classifies a core error of a write: I/O is the sink's (the output is incomplete), anything
/// else the batch's.
fn failure(e: Error) -> Failure {
    match e {
        Error::Io(_) => Failure::Sink(unwrap_py_error(e)),
        other => Failure::Encode(other.into_py_err()),
    }
}

/// Writes every batch of `input`. Runs without the GIL.
fn write_batches(writer: &mut Writer, input: &mut Imported) -> Result<(), Failure> {
    while let Some(batch) = input.next_batch()? {
        writer.write(&batch).map_err(failure)?;
    }
    Ok(())
}

/// Writes the footer and hands the sink back to commit. Runs without the GIL.
fn finish(writer: &mut Writer) -> Result<Sink, Failure> {
    let sink = writer.finish().map_err(failure)?;
    sink.into_sink().map_err(|e| failure(Error::Io(e)))
}

/// A Parquet file writer with pooled zstd compression, for pyarrow tables, batches and
/// readers, pandas DataFrames, and any object with the Arrow PyCapsule interface. Rows are
/// buffered into row groups of `row_group_size` rows (`flush()` ends a row group early); each
/// row group's columns are encoded and compressed without the GIL, a large one on several
/// threads. The options are those of `write_table`; a path appears under its name on `close()`.
#[pyclass(frozen, name = "ParquetWriter", module = "zstdpool.parquet")]
pub struct PyParquetWriter {
    writer: Held<Writer>,
    schema: SchemaRef,
    rows: AtomicU64,
    row_groups: AtomicUsize,
    bytes: AtomicUsize,
}

impl PyParquetWriter {
    fn record(&self, w: &Writer) {
        self.rows.store(w.rows_written(), Ordering::Relaxed);
        self.row_groups.store(w.row_groups(), Ordering::Relaxed);
        self.bytes.store(w.bytes_written(), Ordering::Relaxed);
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
    /// Opens a writer on `where` (a path or a binary file object) for data of `schema`.
    #[new]
    #[pyo3(signature = (r#where, schema, *, compression=Defaulted::Default, compression_level=None, row_group_size=None, use_dictionary=Defaulted::Default, write_statistics=Defaulted::Default, data_page_size=None, data_page_version="1.0", threads=None, fsync=false, pool=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        r#where: &Bound<'_, PyAny>,
        schema: &Bound<'_, PyAny>,
        compression: Defaulted<'_>,
        compression_level: Option<&Bound<'_, PyAny>>,
        row_group_size: Option<i64>,
        use_dictionary: Defaulted<'_>,
        write_statistics: Defaulted<'_>,
        data_page_size: Option<i64>,
        data_page_version: &str,
        threads: Option<i64>,
        fsync: bool,
        pool: Option<&Bound<'_, PyContextPool>>,
    ) -> PyResult<Self> {
        if r#where.is_none() {
            return Err(errors::wrong_type(
                "where must be a path or a binary file object; to get bytes use write_table \
                 with where=None",
            ));
        }
        let options = write_options(
            &compression,
            compression_level,
            row_group_size,
            &use_dictionary,
            &write_statistics,
            data_page_size,
            data_page_version,
            threads,
        )?;
        let schema = schema_of(schema)?;
        let sink = Sink::open(py, Some(r#where), durability(fsync))?;
        let writer = ParquetWriter::try_new(
            SinkWriter::new(sink),
            schema.clone(),
            options,
            pool_or_default(pool),
        )
        .map_err(unwrap_py_error)?;
        Ok(PyParquetWriter {
            writer: Held::new(writer, "Parquet writer"),
            schema,
            rows: AtomicU64::new(0),
            row_groups: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
        })
    }

    /// Writes a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, or any
    /// object with `__arrow_c_stream__` or `__arrow_c_array__`, whose schema matches the
    /// writer's.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(py, data, None)
    }

    /// Writes `table`; with `row_group_size`, as row groups of at most that many rows of its
    /// own (pyarrow's behaviour), else buffered with the rows before it.
    #[pyo3(signature = (table, row_group_size=None))]
    fn write_table(
        &self,
        py: Python<'_>,
        table: &Bound<'_, PyAny>,
        row_group_size: Option<i64>,
    ) -> PyResult<()> {
        self.write_data(py, table, row_group_size)
    }

    /// Writes `batch` (see `write_table`).
    #[pyo3(signature = (batch, row_group_size=None))]
    fn write_batch(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        row_group_size: Option<i64>,
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
        PySchema::new(self.schema.clone()).into_pyarrow(py)
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
    durability: Durability,
    pool: &ContextPool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let input = to_input(data)?;
    let sink = Sink::open(py, sink, durability)?;
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
/// object and returns None.
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
#[pyfunction]
#[pyo3(signature = (data, r#where=None, *, compression=Defaulted::Default, compression_level=None, row_group_size=None, use_dictionary=Defaulted::Default, write_statistics=Defaulted::Default, data_page_size=None, data_page_version="1.0", threads=None, fsync=false, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_table<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    r#where: Option<&Bound<'py, PyAny>>,
    compression: Defaulted<'py>,
    compression_level: Option<&Bound<'py, PyAny>>,
    row_group_size: Option<i64>,
    use_dictionary: Defaulted<'py>,
    write_statistics: Defaulted<'py>,
    data_page_size: Option<i64>,
    data_page_version: &str,
    threads: Option<i64>,
    fsync: bool,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let options = write_options(
        &compression,
        compression_level,
        row_group_size,
        &use_dictionary,
        &write_statistics,
        data_page_size,
        data_page_version,
        threads,
    )?;
    write_all(
        py,
        data,
        r#where,
        options,
        durability(fsync),
        pool_or_default(pool),
    )
}
