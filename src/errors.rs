//! The one place the extension builds Python exceptions. Core errors become exceptions in
//! [`from_core`] (and [`from_core_in`], for errors met inside a data format); every other
//! exception the bindings raise is made by one of the functions below, so that the same kind
//! of problem raises the same class everywhere.
//! The package's own classes live in `zstdpool/errors.py` (they subclass both `ZstdError` and
//! a built-in) and are imported once, on first use.

use pyo3::exceptions::{
    PyBufferError, PyIndexError, PyMemoryError, PyNotImplementedError, PyOSError, PyOverflowError,
    PyStopIteration, PyTypeError,
};
use pyo3::prelude::*;

use zstdpool_core::error::{Error, PathError};

pyo3::import_exception!(zstdpool.errors, BusyError);
pyo3::import_exception!(zstdpool.errors, ClosedError);
pyo3::import_exception!(zstdpool.errors, CompressionError);
pyo3::import_exception!(zstdpool.errors, DecompressionError);
pyo3::import_exception!(zstdpool.errors, IpcDecompressionError);
pyo3::import_exception!(zstdpool.errors, IpcError);
pyo3::import_exception!(zstdpool.errors, IpcOutputLimitError);
pyo3::import_exception!(zstdpool.errors, OutputLimitError);
pyo3::import_exception!(zstdpool.errors, ParameterError);
pyo3::import_exception!(zstdpool.errors, ParquetDecompressionError);
pyo3::import_exception!(zstdpool.errors, ParquetError);
pyo3::import_exception!(zstdpool.errors, ParquetOutputLimitError);
pyo3::import_exception!(zstdpool.errors, ZstdError);

/// The exception for a core error.
pub fn from_core(err: Error) -> PyErr {
    {
        match err {
            Error::Parameter(m) => ParameterError::new_err(m),
            Error::Corrupt(m) => DecompressionError::new_err(m),
            Error::Limit(m) => OutputLimitError::new_err(m),
            Error::Memory(m) => PyMemoryError::new_err(m),
            Error::Compress(m) => CompressionError::new_err(m),
            Error::Ipc(m) => IpcError::new_err(m),
            Error::Parquet(m) => ParquetError::new_err(m),
            Error::Io(io) => os_error(io),
        }
    }
}

/// The data format a reader or writer works in. A corrupt or oversized compressed body inside
/// Arrow IPC or Parquet data raises that format's error class as well as the codec's
/// (`IpcDecompressionError` is an `IpcError` and a `DecompressionError`), so that code written
/// for pyarrow, which catches `pa.ArrowInvalid`, catches it.
#[derive(Clone, Copy, Debug)]
pub enum Format {
    Ipc,
    Parquet,
}

/// The exception for a core error met reading or writing `format`.
pub fn from_core_in(format: Format, err: Error) -> PyErr {
    match (format, err) {
        (Format::Ipc, Error::Corrupt(m)) => IpcDecompressionError::new_err(m),
        (Format::Ipc, Error::Limit(m)) => IpcOutputLimitError::new_err(m),
        (Format::Parquet, Error::Corrupt(m)) => ParquetDecompressionError::new_err(m),
        (Format::Parquet, Error::Limit(m)) => ParquetOutputLimitError::new_err(m),
        (_, err) => from_core(err),
    }
}

/// An I/O error as Python raises one: `OSError(errno, strerror, filename)`, which Python makes
/// the errno's subclass (`FileNotFoundError`, `PermissionError`...), with the path of a
/// [`PathError`] as the filename.
pub fn os_error(err: std::io::Error) -> PyErr {
    let (cause, path, action) = match err.get_ref().and_then(|e| e.downcast_ref::<PathError>()) {
        Some(p) => (
            &p.cause,
            Some(p.path.clone().into_os_string()),
            Some(p.action),
        ),
        None => (&err, None, None),
    };
    let Some(errno) = cause.raw_os_error().or_else(|| kind_errno(cause.kind())) else {
        return PyErr::from(err);
    };
    // The cause's words without Rust's " (os error N)", which the errno says already.
    let words = cause.to_string();
    let words = match words.rfind(" (os error ") {
        Some(at) if words.ends_with(')') => words[..at].to_string(),
        _ => words,
    };
    let strerror = match action {
        Some(action) => format!("{action}: {words}"),
        None => words,
    };
    match path {
        Some(path) => PyOSError::new_err((errno, strerror, path)),
        None => PyOSError::new_err((errno, strerror)),
    }
}

/// A Python exception as an I/O error of the kind its class says (`FileNotFoundError` is
/// `NotFound`, ...), with its class and message as the error's words: what a filesystem
/// object's failure is to the core.
pub fn to_io_error(py: Python<'_>, err: PyErr) -> std::io::Error {
    use pyo3::exceptions::{
        PyFileExistsError, PyFileNotFoundError, PyMemoryError, PyPermissionError,
    };
    use std::io::ErrorKind;
    let kind = if err.is_instance_of::<PyFileNotFoundError>(py) {
        ErrorKind::NotFound
    } else if err.is_instance_of::<PyPermissionError>(py) {
        ErrorKind::PermissionDenied
    } else if err.is_instance_of::<PyFileExistsError>(py) {
        ErrorKind::AlreadyExists
    } else if err.is_instance_of::<PyMemoryError>(py) {
        ErrorKind::OutOfMemory
    } else {
        ErrorKind::Other
    };
    std::io::Error::new(kind, err.to_string().replace(['\r', '\n'], " "))
}

/// The errno Python's `OSError` picks a subclass by, for errors made without one.
fn kind_errno(kind: std::io::ErrorKind) -> Option<i32> {
    use std::io::ErrorKind::*;
    Some(match kind {
        NotFound => 2,          // ENOENT
        PermissionDenied => 13, // EACCES
        AlreadyExists => 17,    // EEXIST
        NotADirectory => 20,    // ENOTDIR
        IsADirectory => 21,     // EISDIR
        InvalidInput => 22,     // EINVAL
        StorageFull => 28,      // ENOSPC
        _ => return None,
    })
}

/// A lease, writer or reader used after `close()`.
pub fn closed(what: &str) -> PyErr {
    ClosedError::new_err(format!("I/O operation on a closed {what}"))
}

/// A lease, writer or reader used by a second thread while a call of the first runs.
pub fn busy(what: &str, advice: &str) -> PyErr {
    BusyError::new_err(format!("this {what} is in use by another thread; {advice}"))
}

/// `pickle` (or `copy`) of an object that holds what only this process has: a leased
/// context, an open sink or source. `why` says what, and what to send instead.
pub fn cannot_pickle(what: &str, why: &str) -> PyErr {
    PyTypeError::new_err(format!("cannot pickle a zstdpool {what}: {why}"))
}

/// An argument of a kind the function does not take (the one built-in class the bindings raise
/// for bad arguments: values of the right kind that are out of range are `ParameterError`s).
pub fn wrong_type(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}

/// zstd's own refusal, where `compression.zstd` raises its `ZstdError` (a parameter's value
/// out of zstd's bounds).
pub fn zstd(msg: impl Into<String>) -> PyErr {
    ZstdError::new_err(msg.into())
}

/// A streaming decompressor called again after the end of its frame.
pub fn eof(msg: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyEOFError::new_err(msg.into())
}

/// A value of the right kind that is out of range, or that contradicts another argument.
pub fn parameter(msg: impl Into<String>) -> PyErr {
    ParameterError::new_err(msg.into())
}

/// An option that zstdpool's counterpart of a pyarrow function accepts by name but cannot
/// carry out; the message says why and what to do instead.
pub fn unsupported(msg: impl Into<String>) -> PyErr {
    PyNotImplementedError::new_err(msg.into())
}

/// A buffer that cannot be used as it is (not contiguous).
pub fn unusable_buffer(msg: impl Into<String>) -> PyErr {
    PyBufferError::new_err(msg.into())
}

/// A sink or source that cannot be used (closed, not writable, accepted nothing).
pub fn io(msg: impl Into<String>) -> PyErr {
    PyOSError::new_err(msg.into())
}

/// An index past the end of a sequence (a file's batches).
pub fn index(msg: impl Into<String>) -> PyErr {
    PyIndexError::new_err(msg.into())
}

/// Whether `err` is an `OverflowError` (an int out of a conversion's range).
pub fn is_overflow(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<PyOverflowError>(py)
}

/// An output larger than a Python bytes object can be.
pub fn too_large_for_bytes() -> PyErr {
    PyOverflowError::new_err("output too large for bytes")
}

/// An output that an earlier failed allocation lost.
pub fn output_lost() -> PyErr {
    PyMemoryError::new_err("the output was lost when an earlier allocation failed")
}

/// The end of an iteration, for methods that signal it as pyarrow's do.
pub fn stop_iteration() -> PyErr {
    PyStopIteration::new_err(())
}

/// `err` with `cause` as its `__cause__`.
pub fn with_cause(py: Python<'_>, err: PyErr, cause: PyErr) -> PyErr {
    err.set_cause(py, Some(cause));
    err
}

/// Core results as Python results: `core_call().or_raise()?` raises the error's exception.
pub trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(from_core)
    }
}

/// A core error as its Python exception, where a value rather than a result is needed.
pub trait IntoPyErr {
    fn into_py_err(self) -> PyErr;
}

impl IntoPyErr for Error {
    fn into_py_err(self) -> PyErr {
        from_core(self)
    }
}
