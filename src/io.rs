//! What the I/O of every reader and writer shares: telling paths from file objects, carrying
//! a Python file object's exception through Rust I/O, and removing stale temporary files.
//! Where bytes go is `sink`, where they come from `source`.

use crate::args;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString, PyType};

use crate::errors;
use crate::errors::OrRaise as _;
use zstdpool_core::error::{path_error, Error};

/// What a path argument may be: str or os.PathLike.
pub fn as_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        let os = obj.py().import("os")?;
        let p = os.call_method1("fspath", (obj,))?;
        if p.is_instance_of::<PyBytes>() {
            let b: Vec<u8> = p.extract()?;
            return Ok(Some(PathBuf::from(
                String::from_utf8_lossy(&b).into_owned(),
            )));
        }
        return Ok(Some(p.extract::<PathBuf>()?));
    }
    Ok(None)
}

/// Whether `obj` is an instance of `io.IOBase` (what `open` and `io.BytesIO` return). The C
/// base class `_io._IOBase` answers for those, and for Python classes derived from io's, with
/// a plain subtype check; only a miss asks the `io.IOBase` ABC (for classes registered with
/// it), a check several times slower.
pub fn is_io_object(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static C_BASE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static IO_BASE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = obj.py();
    let io_type = |module: &str, name: &str| -> PyResult<Py<PyType>> {
        Ok(py
            .import(module)?
            .getattr(name)?
            .cast_into::<PyType>()?
            .unbind())
    };
    let c_base = C_BASE.get_or_try_init(py, || io_type("_io", "_IOBase"))?;
    if obj.get_type().is_subclass(c_base.bind(py))? {
        return Ok(true);
    }
    let base = IO_BASE.get_or_try_init(py, || io_type("io", "IOBase"))?;
    obj.is_instance(base.bind(py))
}

/// Carries a Python exception through Rust I/O as the error's payload.
pub fn to_io(err: PyErr) -> std::io::Error {
    std::io::Error::other(PyIoError(err))
}

#[derive(Debug)]
struct PyIoError(PyErr);

impl std::fmt::Display for PyIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for PyIoError {}

/// The Python exception behind an I/O error, if a Python file object raised it; otherwise the
/// core error mapped as usual.
pub fn unwrap_py_error(err: Error) -> PyErr {
    take_py_error(err).unwrap_or_else(errors::from_core)
}

/// As [`unwrap_py_error`], for a reader or writer of `format` (see [`errors::Format`]).
pub fn unwrap_py_error_in(format: errors::Format, err: Error) -> PyErr {
    take_py_error(err).unwrap_or_else(|err| errors::from_core_in(format, err))
}

/// As [`unwrap_py_error`], for an I/O error: the Python exception a file object raised (a
/// closed file's `ValueError`, as pyarrow gives it), else an `OSError`.
pub fn unwrap_py_io_error(err: std::io::Error) -> PyErr {
    take_py_error(Error::Io(err)).unwrap_or_else(|err| match err {
        Error::Io(io) => errors::os_error(io),
        other => errors::from_core(other),
    })
}

fn take_py_error(err: Error) -> Result<PyErr, Error> {
    match err {
        Error::Io(io) if io.get_ref().is_some_and(|e| e.is::<PyIoError>()) => {
            let inner = io.into_inner().expect("checked above");
            Ok(inner.downcast::<PyIoError>().expect("checked above").0)
        }
        other => Err(other),
    }
}

/// Removes zstdpool's temporary files left by writes that never finished (a process killed
/// mid-write): those of the file `path`, or of every file in the directory `path` and, with
/// `recursive` (the default), in the directories below it, last modified at least `min_age`
/// seconds ago (default one hour, so that writes still running are left alone). Temporary
/// files are named `.<target>.zstdpool-<pid>-<random>.tmp`; nothing else is touched, and
/// links are neither followed nor removed. Returns the paths removed.
#[pyfunction]
#[pyo3(signature = (path, *, min_age=3600.0, recursive=true))]
pub fn remove_stale_temp_files(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    min_age: f64,
    recursive: bool,
) -> PyResult<Vec<PathBuf>> {
    let Some(path) = as_path(path)? else {
        return Err(args::not_one_of(path, "path", "a str or os.PathLike"));
    };
    let min_age = crate::params::timeout("min_age", Some(min_age))
        .or_raise()?
        .unwrap_or(std::time::Duration::MAX);
    py.detach(|| zstdpool_core::path_sink::remove_stale(&path, min_age, recursive))
        .map_err(|e| errors::os_error(path_error("cannot clean", &path, e)))
}
