//! The one place core errors become Python exceptions. The exception classes live in
//! `zstdpool/errors.py` so that they can subclass both `ZstdError` and `ValueError`.

use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::error::Error;

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || {
        PyModule::import(py, "zstdpool.errors").map(Bound::unbind)
    })?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// A `zstdpool.errors` exception of class `name` with `msg`.
pub fn new_err(name: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match class(py, name) {
        Ok(cls) => PyErr::from_type(cls, msg),
        Err(err) => err,
    })
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::Parameter(m) => new_err("ParameterError", m),
            Error::Corrupt(m) => new_err("DecompressionError", m),
            Error::Limit(m) => new_err("OutputLimitError", m),
            Error::Memory(m) => PyMemoryError::new_err(m),
            Error::Compress(m) => new_err("CompressionError", m),
            Error::Ipc(m) => new_err("IpcError", m),
            Error::Io(io) => PyErr::from(io),
        }
    }
}
