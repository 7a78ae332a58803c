//! `zstdpool.dataset.write_dataset`.

use crate::args;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors;
use crate::errors::OrRaise as _;
use crate::input::{to_input, Failure};
use crate::io::{as_path, unwrap_py_error};
use crate::params;
use crate::parquet::options::writer_keywords;
use crate::shared_keywords::SINK_KEYWORDS;
use crate::store::{self, Located};
use zstdpool_core::dataset::{
    DatasetOptions, DatasetWriter, Destination, FileFormat, Flavor, WrittenFile,
};

/// The partition columns, a list of names (`zstdpool.dataset.write_dataset` makes pyarrow's
/// `Partitioning` objects into names and a flavor).
fn partition_columns(partitioning: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(p) = partitioning.filter(|p| !p.is_none()) else {
        return Ok(Vec::new());
    };
    p.extract::<Vec<String>>()
        .map_err(|_| args::not_one_of(p, "partitioning", "a list of column names or None"))
}

/// pyarrow's `partitioning_flavor`: None (directories of values), "hive" or "filename".
fn flavor(name: Option<&str>) -> PyResult<Flavor> {
    match name {
        None => Ok(Flavor::Directory),
        Some("hive") => Ok(Flavor::Hive),
        Some("filename") => Ok(Flavor::Filename),
        Some(other) => Err(errors::parameter(format!(
            "partitioning_flavor must be None, \"hive\" or \"filename\", not {other:?}"
        ))),
    }
}

/// Checks `write_dataset`'s format, compression, level and existing_data_behavior as
/// `write_dataset` does, and returns the format's file extension: for
/// `zstdpool.dask.to_dataset`, which checks them on the client before any worker writes.
#[pyfunction]
#[pyo3(signature = (format, existing_data_behavior, compression="zstd", level=None))]
pub fn _check_dataset_options(
    #[pyo3(from_py_with = args::arg::<args::Format, _>)] format: &str,
    #[pyo3(from_py_with = args::arg::<args::ExistingDataBehavior, _>)] existing_data_behavior: &str,
    #[pyo3(from_py_with = args::arg::<args::Compression, _>)] compression: Option<&str>,
    #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: Option<i64>,
) -> PyResult<&'static str> {
    params::existing_data(existing_data_behavior).or_raise()?;
    Ok(params::file_format(format, compression, level)
        .or_raise()?
        .extension())
}

/// The format of the files, with the Parquet writer's keywords `file_options` gives.
fn file_format(
    format: &str,
    compression: Option<&str>,
    level: Option<i64>,
    file_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<FileFormat> {
    let mut chosen = params::file_format(format, compression, level).or_raise()?;
    let Some(given) = file_options.filter(|d| !d.is_empty()) else {
        return Ok(chosen);
    };
    let FileFormat::Parquet(options) = &mut chosen else {
        return Err(errors::parameter(format!(
            "file_options take the Parquet writer's keywords, and format is {format:?}"
        )));
    };
    for own in std::iter::once(&"threads").chain(SINK_KEYWORDS) {
        if given.contains(own)? {
            return Err(errors::wrong_type(format!(
                "file_options take the Parquet writer's keywords; pass {own} to write_dataset \
                 itself"
            )));
        }
    }
    // A level without a codec is a level of write_dataset's codec.
    let given = given.copy()?;
    if given.contains("compression_level")? && !given.contains("compression")? {
        given.set_item("compression", compression)?;
    }
    let mut parsed = writer_keywords("write_dataset's file_options", Some(&given))?.options;
    if !given.contains("compression")? {
        parsed.compression = options.compression.clone();
    }
    **options = parsed;
    Ok(chosen)
}

fn files_list<'py>(py: Python<'py>, files: &[WrittenFile]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for f in files {
        let d = PyDict::new(py);
        d.set_item("path", f.path.as_os_str())?;
        d.set_item("num_rows", f.rows)?;
        d.set_item("size", f.bytes)?;
        list.append(d)?;
    }
    Ok(list)
}

shared_keywords! {
    sink(with, 'py, "base_dir"),
    signature = (data, base_dir, *, partitioning=None, partitioning_flavor="hive", format="parquet", compression="zstd", level=None, basename_template=None, existing_data_behavior="error", max_open_files=1024, max_partitions=None, null_fallback=None, max_rows_per_file=None, min_rows_per_group=0, max_rows_per_group=None, max_pending_bytes=268435456, threads=None, file_options=None);
    /// Writes `data` (a table, batch, reader, DataFrame or Arrow PyCapsule object; a reader or
    /// stream is written batch by batch, so it may be larger than memory) as a dataset under
    /// `base_dir`, partitioned into Hive directories (`key=value/`, values escaped as pyarrow
    /// escapes them, nulls as `__HIVE_DEFAULT_PARTITION__`) by the columns `partitioning` names,
    /// which the files then leave out. Returns the files written, as dicts of `path`, `num_rows`
    /// and `size`, in no particular order.
    ///
    /// `format` is "parquet" (the default) or "ipc" ("arrow" and "feather" too: Arrow IPC files);
    /// `compression` and `level` are the format's own (zstd at level 1 by default, as pyarrow's).
    /// Files are named by `basename_template` (default `part-{i}.parquet` or `part-{i}.arrow`,
    /// `{i}` counting from 0 in each directory). `existing_data_behavior` is "error" (refuse a
    /// base directory that is not empty), "overwrite_or_ignore" or "delete_matching" (empty each
    /// partition directory written), as in pyarrow. Rows of each partition wait in memory until
    /// the input ends or `max_pending_bytes` of them wait (then every partition's rows are
    /// written); at most `max_open_files` files are open; a partition of more than
    /// `max_rows_per_file` rows is written as several files. Files are written on `threads`
    /// threads (None: by the work), all leasing contexts from one pool. Rows keep their order
    /// within a partition. A Hive directory names a null value `null_fallback`
    /// (`__HIVE_DEFAULT_PARTITION__` by default).
    ///
    /// `file_options` takes the keywords of `zstdpool.parquet.write_table` for Parquet files (its
    /// `compression` and `compression_level`, when there, in place of `compression` and `level`).
    ///
    /// Each file is written under a hidden temporary name and renamed into place when complete
    /// (`fsync=True`: synced with its directory too). If the write fails, the exception has a
    /// `completed_files` attribute with the files that were whole before it; no partial file is
    /// left under a final name.
    ///
    /// `base_dir` may be an object store URL ("s3://bucket/prefix", "gs://..."), with
    /// `storage_options` as polars takes them (endpoint, region, credentials, allow_http;
    /// AWS_* / GOOGLE_* environment variables fill in the rest). Each file is then uploaded from
    /// Rust as it is completed: one PUT, or a multipart upload past `storage_options["part_size"]`
    /// (10 MiB), as many at once as `storage_options["max_in_flight"]` (32). Nothing appears under
    /// a file's key until it is whole; a failed write aborts its multipart uploads and leaves no
    /// object under a final key; `existing_data_behavior` lists and deletes keys. There are no
    /// temporary objects, no fsync and no permission bits. `filesystem` may be a pyarrow or
    /// fsspec local filesystem, or a `SubTreeFileSystem` over one.
    ///
    #[pyfunction]
    pub fn write_dataset<'py>(
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        base_dir: &Bound<'py, PyAny>,
        partitioning: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = args::arg::<args::PartitioningFlavor, _>)] partitioning_flavor: Option<&str>,
        #[pyo3(from_py_with = args::arg::<args::Format, _>)] format: &str,
        #[pyo3(from_py_with = args::arg::<args::Compression, _>)] compression: Option<&str>,
        #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::BasenameTemplate, _>)] basename_template: Option<String>,
        #[pyo3(from_py_with = args::arg::<args::ExistingDataBehavior, _>)] existing_data_behavior: &str,
        #[pyo3(from_py_with = args::arg::<args::MaxOpenFiles, _>)] max_open_files: i64,
        #[pyo3(from_py_with = args::arg::<args::MaxPartitions, _>)] max_partitions: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::NullFallback, _>)] null_fallback: Option<String>,
        #[pyo3(from_py_with = args::arg::<args::MaxRowsPerFile, _>)] max_rows_per_file: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::MinRowsPerGroup, _>)] min_rows_per_group: i64,
        #[pyo3(from_py_with = args::arg::<args::MaxRowsPerGroup, _>)] max_rows_per_group: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::MaxPendingBytes, _>)] max_pending_bytes: i64,
        #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
        file_options: Option<&Bound<'py, PyDict>>
    ) -> PyResult<Bound<'py, PyList>> {
        let destination = match store::locate(
            "base_dir",
            base_dir,
            with.at,
        )? {
            Located::Store(store, prefix) => Destination::Store { store, prefix },
            Located::Keys(..) => {
                return Err(errors::wrong_type(
                    "base_dir must be one directory, not a list",
                ))
            }
            Located::Other(base_dir) => Destination::Local(as_path(&base_dir)?.ok_or_else(|| {
                args::not_one_of(
                    &base_dir,
                    "base_dir",
                    "a str, os.PathLike or object store URL",
                )
            })?),
        };
        let options = DatasetOptions {
            partitioning: partition_columns(partitioning)?,
            flavor: flavor(partitioning_flavor)?,
            null_fallback,
            format: file_format(format, compression, level, file_options)?,
            basename_template,
            existing_data: params::existing_data(existing_data_behavior).or_raise()?,
            max_open_files: params::count("max_open_files", max_open_files).or_raise()?,
            max_partitions: max_partitions
                .map(|n| params::positive("max_partitions", n))
                .transpose()
                .or_raise()?,
            max_rows_per_file: max_rows_per_file
                .map(|n| params::count("max_rows_per_file", n))
                .transpose()
                .or_raise()?,
            min_rows_per_group: params::count("min_rows_per_group", min_rows_per_group).or_raise()?,
            max_rows_per_group: max_rows_per_group
                .map(|n| params::count("max_rows_per_group", n))
                .transpose()
                .or_raise()?,
            max_pending_bytes: params::size("max_pending_bytes", max_pending_bytes).or_raise()?,
            threads: params::threads(threads).or_raise()?,
            durability: with.durability,
        };
        let input = to_input(data)?;
        let pool = with.pool;
        let (result, written, note) = py.detach(move || {
            let mut input = match input.import() {
                Ok(input) => input,
                Err(e) => return (Err(e), Vec::new(), None),
            };
            let mut writer = match DatasetWriter::try_new_at(destination, input.schema(), options, pool)
            {
                Ok(w) => w,
                Err(e) => return (Err(Failure::Encode(unwrap_py_error(e))), Vec::new(), None),
            };
            let result = (|| -> Result<(), Failure> {
                while let Some(batch) = input.next_batch()? {
                    writer
                        .write(&batch)
                        .map_err(|e| Failure::Encode(unwrap_py_error(e)))?;
                }
                writer
                    .finish()
                    .map_err(|e| Failure::Encode(unwrap_py_error(e)))?;
                Ok(())
            })();
            let note = match result {
                Err(_) => writer.abort(),
                Ok(()) => None,
            };
            (result, writer.written().to_vec(), note)
        });
        match result {
            Ok(()) => files_list(py, &written),
            Err(failure) => {
                let err = failure.into_err(data);
                err.value(py)
                    .setattr("completed_files", files_list(py, &written)?)?;
                if let Some(note) = note {
                    add_note(py, &err, &note)?;
                }
                Err(err)
            }
        }
    }
}

/// Adds `note` to the exception `err` (PEP 678: shown under its message from Python 3.11;
/// on 3.10 kept in `__notes__`).
fn add_note(py: Python<'_>, err: &PyErr, note: &str) -> PyResult<()> {
    let value = err.value(py);
    if value.hasattr("add_note")? {
        value.call_method1("add_note", (note,))?;
    } else {
        value.setattr("__notes__", PyList::new(py, [note])?)?;
    }
    Ok(())
}
