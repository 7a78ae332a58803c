//! `zstdpool.dataset`'s reader: the compiled half of `zstdpool.dataset.Dataset`. The Python
//! half turns pyarrow's spellings (a `Partitioning`, `filters` in their list forms, an
//! `Expression`) into what this takes: a source, a partitioning by name and schema, and a
//! filter as nested tuples.

use crate::args;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3_arrow::PyArray;

use crate::batch_stream::PyBatchStream;
use crate::errors;
use crate::errors::Format;
use crate::errors::OrRaise as _;
use crate::export::{schema_to_py, table_to_py, NextBatch};
use crate::input::schema_of;
use crate::io::{as_path, unwrap_py_error_in};
use crate::params;
use crate::store::{self, Located, PathOptions};
use zstdpool_core::error::{Error, Result};
use zstdpool_core::scan::{
    CmpOp, Dataset, Format as FileFormat, Partitioning, Predicate, ScanOptions, ScanStream, Sources,
};

/// The exception for a failed read of a dataset of `format`'s files: a corrupt body is that
/// format's decompression error.
fn failed(format: Format) -> impl Fn(Error) -> PyErr {
    move |err| unwrap_py_error_in(format, err)
}

/// One value or several, as an Arrow array (anything with `__arrow_c_array__`).
fn array_of(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    Ok(obj.extract::<PyArray>()?.into_inner().0)
}

/// A filter in the bindings' form: `("cmp", column, op, value)`, `("in", column, values)`,
/// `("is_null", column)`, `("not", f)`, `("and", [f, ...])`, `("or", [f, ...])`, each value
/// an Arrow array.
fn predicate(obj: &Bound<'_, PyAny>) -> PyResult<Predicate> {
    let t = obj.cast::<PyTuple>().map_err(|_| {
        errors::wrong_type(format!(
            "filter: expected a tuple of the filter's form, not {}",
            crate::buffer::type_name(obj)
        ))
    })?;
    let kind: String = t.get_item(0)?.extract()?;
    let list = |i: usize| -> PyResult<Vec<Predicate>> {
        t.get_item(i)?.try_iter()?.map(|p| predicate(&p?)).collect()
    };
    Ok(match kind.as_str() {
        "cmp" => {
            let op: String = t.get_item(2)?.extract()?;
            let op = CmpOp::from_name(&op).ok_or_else(|| {
                errors::parameter(format!(
                    "filter: unknown operator {op:?} (expected one of =, ==, !=, <, <=, >, >=, \
                     in, not in)"
                ))
            })?;
            Predicate::Compare {
                column: t.get_item(1)?.extract()?,
                op,
                value: array_of(&t.get_item(3)?)?,
            }
        }
        "in" => Predicate::In {
            column: t.get_item(1)?.extract()?,
            values: array_of(&t.get_item(2)?)?,
        },
        "is_null" => Predicate::IsNull {
            column: t.get_item(1)?.extract()?,
        },
        "not" => Predicate::Not(Box::new(predicate(&t.get_item(1)?)?)),
        "and" => Predicate::And(list(1)?),
        "or" => Predicate::Or(list(1)?),
        other => return Err(errors::parameter(format!("filter: unknown node {other:?}"))),
    })
}

fn options(
    columns: Option<Vec<String>>,
    filter: Option<&Bound<'_, PyAny>>,
    threads: Option<i64>,
    files: Option<Vec<usize>>,
) -> PyResult<ScanOptions> {
    Ok(ScanOptions {
        columns,
        filter: filter.map(predicate).transpose()?,
        threads: params::threads(threads).or_raise()?,
        files,
    })
}

/// The sources of a store: a URL (or a filesystem object's path) is a prefix or one object,
/// a list of URLs (of one bucket) or of a filesystem object's paths those objects. Anything
/// else names local files: the error is `source` as `at` resolves it (a local filesystem's
/// path as a local path).
fn store_sources<'py>(
    source: &Bound<'py, PyAny>,
    at: PathOptions<'_, 'py>,
    ignore_prefixes: &[String],
) -> PyResult<std::result::Result<Sources, Bound<'py, PyAny>>> {
    if let Ok(list) = source.cast::<PyList>() {
        // A list of URLs is the store's keys; with `filesystem=` too, `locate` refuses it.
        let first = match list.get_item(0) {
            Ok(first) if store::is_store_url(&first) && at.filesystem.is_none() => first,
            _ => {
                return match store::locate("source", source, at)? {
                    Located::Keys(store, keys) => Ok(Ok(Sources::StoreKeys { store, keys })),
                    Located::Store(store, prefix) => Ok(Ok(Sources::StorePrefix {
                        store,
                        prefix,
                        ignore_prefixes: ignore_prefixes.to_vec(),
                    })),
                    Located::Other(local) => Ok(Err(local)),
                }
            }
        };
        let (store, _) = store::open(&first.extract::<String>()?, at.storage_options)?;
        let root = store.url("");
        let mut keys = Vec::with_capacity(list.len());
        for item in list.iter() {
            let url: String = item.extract().map_err(|_| {
                errors::wrong_type(
                    "source: every item of the list must be a URL of the same bucket",
                )
            })?;
            let key = url
                .get(root.len()..)
                .filter(|_| url[..root.len()].eq_ignore_ascii_case(&root))
                .ok_or_else(|| {
                    errors::parameter(format!(
                        "source: every URL of the list must be in {root}, and {url:?} is not"
                    ))
                })?;
            keys.push(key.to_string());
        }
        return Ok(Ok(Sources::StoreKeys { store, keys }));
    }
    Ok(match store::locate("source", source, at)? {
        Located::Store(store, prefix) => Ok(Sources::StorePrefix {
            store,
            prefix,
            ignore_prefixes: ignore_prefixes.to_vec(),
        }),
        Located::Keys(store, keys) => Ok(Sources::StoreKeys { store, keys }),
        Located::Other(local) => Err(local),
    })
}

/// The files of a dataset, found at open: their partitions typed and the schema read from
/// the first file (or given). Reads take no lock; several threads may read at once.
///
#[doc = doc_pool!()]
#[doc = doc_location!("source")]
#[pyclass(frozen, name = "DatasetScanner", module = "zstdpool.dataset")]
pub struct PyDatasetScanner {
    dataset: Arc<Dataset>,
    format: Format,
}

shared_keywords! {
    decoding(with, 'py),
    signature = (source, *, format="parquet", partitioning=None, partition_schema=None, infer_partition_types=true, infer_dictionary=false, schema=None, ignore_prefixes=None, page_checksum_verification=false, null_fallback=None);
    impl PyDatasetScanner {
        /// `source`: a directory, or a list of files. `partitioning`: None, "hive", "directory"
        /// or "filename"; `partition_schema` the partition fields (for "directory" and
        /// "filename", their names and, unless `infer_partition_types`, their types; for "hive",
        /// given types); inferred
        /// types are dictionaries with `infer_dictionary`. With `page_checksum_verification`,
        /// Parquet pages whose headers give a CRC are checked against it. A Hive value named
        /// `null_fallback` (`__HIVE_DEFAULT_PARTITION__` by default) is null.
        #[new]
        fn new<'py>(
            py: Python<'py>,
            source: &Bound<'py, PyAny>,
            #[pyo3(from_py_with = args::arg::<args::Format, _>)] format: &str,
            partitioning: Option<&str>,
            partition_schema: Option<&Bound<'py, PyAny>>,
            infer_partition_types: bool,
            infer_dictionary: bool,
            schema: Option<&Bound<'py, PyAny>>,
            ignore_prefixes: Option<Vec<String>>,
            page_checksum_verification: bool,
            null_fallback: Option<String>
        ) -> PyResult<Self> {
            let (format, errors_format) = match format.to_ascii_lowercase().as_str() {
                "parquet" => (FileFormat::Parquet, Format::Parquet),
                "ipc" | "arrow" | "feather" => (FileFormat::Ipc, Format::Ipc),
                _ => {
                    return Err(errors::parameter(format!(
                        "format must be \"parquet\", or \"ipc\", \"arrow\" or \"feather\", not \
                         {format:?}"
                    )))
                }
            };
            let partition_schema = partition_schema.map(schema_of).transpose()?;
            let partitioning = match (partitioning, partition_schema) {
                (None, _) => Partitioning::None,
                (Some("hive"), schema) => Partitioning::Hive {
                    schema,
                    dictionary: infer_dictionary,
                    null_fallback,
                },
                (Some("directory"), Some(schema)) => Partitioning::Directory {
                    schema,
                    infer: infer_partition_types,
                    dictionary: infer_dictionary,
                },
                (Some("filename"), Some(schema)) => Partitioning::Filename {
                    schema,
                    infer: infer_partition_types,
                    dictionary: infer_dictionary,
                },
                (Some(other), _) => {
                    return Err(errors::parameter(format!(
                        "partitioning must be None, \"hive\", or \"directory\" or \"filename\" \
                         with the fields' names, not {other:?}"
                    )))
                }
            };
            let ignore_prefixes = ignore_prefixes.unwrap_or_else(|| vec![".".into(), "_".into()]);
            let sources = match store_sources(source, with.at, &ignore_prefixes)? {
                Ok(sources) => sources,
                Err(source) => match as_path(&source)? {
                    Some(root) if root.is_dir() => Sources::Directory {
                        root,
                        ignore_prefixes,
                    },
                    Some(file) => Sources::Files(vec![file]),
                    None => {
                        let list = source.cast::<PyList>().map_err(|_| {
                            args::not_one_of(
                                &source,
                                "source",
                                "a directory, a file path, or a list of file paths",
                            )
                        })?;
                        let mut paths: Vec<PathBuf> = Vec::with_capacity(list.len());
                        for item in list.iter() {
                            paths.push(as_path(&item)?.ok_or_else(|| {
                                errors::wrong_type("source: every item of the list must be a path")
                            })?);
                        }
                        Sources::Files(paths)
                    }
                },
            };
            let schema = schema.map(schema_of).transpose()?;
            let pool = with.pool;
            let dataset = py
                .detach(|| Dataset::open(sources, format, &partitioning, schema, pool))
                .map_err(failed(errors_format))?
                .verifying_checksums(page_checksum_verification);
            Ok(PyDatasetScanner {
                dataset: Arc::new(dataset),
                format: errors_format,
            })
        }
    }
}

#[pymethods]
impl PyDatasetScanner {
    /// The dataset's schema: the files' columns, then the partition fields.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, self.dataset.schema())
    }

    /// The partition fields, typed.
    #[getter]
    fn partition_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, self.dataset.partition_schema())
    }

    /// The files, sorted by path.
    #[getter]
    fn files(&self) -> Vec<String> {
        self.dataset
            .files()
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }

    /// Each file's partition values, as a pyarrow Table of one row per file.
    fn partition_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = self
            .dataset
            .partition_table()
            .map_err(failed(self.format))?;
        table_to_py(py, vec![batch], self.dataset.partition_schema().clone())
    }

    /// Every row the filter keeps, as one pyarrow Table.
    #[pyo3(signature = (columns=None, filter=None, threads=None, files=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        filter: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::Files, _>)] files: Option<Vec<usize>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = options(columns, filter, threads, files)?;
        let schema = self
            .dataset
            .output_schema(&options)
            .map_err(failed(self.format))?;
        let batches = py
            .detach(|| self.dataset.read(&options))
            .map_err(failed(self.format))?;
        table_to_py(py, batches, schema)
    }

    /// The rows the filter keeps, in batches read a window of files at a time: files that
    /// decode to at most `readahead` bytes (or one file, when it decodes to more) ahead of
    /// the consumer.
    #[pyo3(signature = (columns=None, filter=None, threads=None, files=None, readahead=64 << 20))]
    fn stream(
        &self,
        columns: Option<Vec<String>>,
        filter: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::Files, _>)] files: Option<Vec<usize>>,
        readahead: i64,
    ) -> PyResult<PyBatchStream> {
        let options = options(columns, filter, threads, files)?;
        let readahead = params::size("readahead", readahead).or_raise()?;
        let stream = self
            .dataset
            .stream(&options, readahead)
            .map_err(failed(self.format))?;
        Ok(PyBatchStream::new(stream, self.format))
    }

    /// The rows the filter keeps, from footers where partitions and statistics answer.
    #[pyo3(signature = (filter=None, threads=None, files=None))]
    fn count_rows(
        &self,
        py: Python<'_>,
        filter: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::Files, _>)] files: Option<Vec<usize>>,
    ) -> PyResult<u64> {
        let options = options(None, filter, threads, files)?;
        py.detach(|| self.dataset.count_rows(&options))
            .map_err(failed(self.format))
    }
}

impl NextBatch for ScanStream {
    fn schema(&self) -> SchemaRef {
        ScanStream::schema(self).clone()
    }
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        ScanStream::next_batch(self)
    }
}
