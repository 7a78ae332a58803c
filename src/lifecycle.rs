//! The lifecycle every object shares that holds something of this process's: a leased
//! context, an open sink or an open source. `close()`, `closed`, use as a context manager, a
//! repr that says when it is closed, and a refusal to be pickled that says what to send
//! instead are written once, here: a class implements [`Lifecycle`] and names itself to
//! [`lifecycle_methods!`], which adds those Python methods (a second `#[pymethods]` block,
//! through pyo3's `multiple-pymethods`).

use pyo3::prelude::*;

use crate::held::Held;

/// Why a reader cannot be pickled.
pub const OPEN_SOURCE: &str = "it holds an open source, which another process may not reach; \
                               send its path or its bytes and open it there";

/// Why a writer cannot be pickled.
pub const UNWRITTEN: &str = "it holds an open sink and state not yet written; write where the \
                             data is, or send the data";

/// Open or closed: what a [`Held`] value (a lease, a writer, a reader) knows of itself.
pub trait State {
    fn is_closed(&self) -> bool;
    /// Ok while open, else the error a closed object raises.
    fn check_open(&self) -> PyResult<()>;
}

impl<T> State for Held<T> {
    fn is_closed(&self) -> bool {
        Held::is_closed(self)
    }

    fn check_open(&self) -> PyResult<()> {
        Held::check_open(self)
    }
}

/// What a class tells the shared methods about itself.
pub trait Lifecycle {
    /// What it is in a pickling error ("Compressor", "IPC writer").
    const WHAT: &'static str;
    /// Why it cannot be pickled, and what to send instead.
    const NOT_PICKLED: &'static str;

    /// Where it keeps what it holds, which knows whether that is closed.
    fn state(&self) -> &dyn State;
    /// Whether it is closed.
    fn is_closed(&self) -> bool {
        self.state().is_closed()
    }
    /// Ok while open, else the error a closed object raises (for `__enter__`).
    fn check_open(&self) -> PyResult<()> {
        self.state().check_open()
    }
    /// Releases what it holds (a writer completes its output first). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()>;
    /// What leaving a `with` block that raised does: the same as `close` unless the class
    /// says otherwise (writers abandon their output).
    fn close_after_error(&self, py: Python<'_>) -> PyResult<()> {
        self.close(py)
    }
    /// The repr's words: the class as Python names it and what sets this one apart
    /// ("zstdpool.Compressor level=3 checksum=false").
    fn describe(&self) -> String;
}

/// The repr of `obj`: `<words>`, with " closed" once it is.
pub fn repr<T: Lifecycle>(obj: &T) -> String {
    let closed = if obj.is_closed() { " closed" } else { "" };
    format!("<{}{closed}>", obj.describe())
}

/// Adds `close`, `closed`, `__enter__`, `__exit__`, `__repr__` and `__reduce__` to a class
/// that implements [`Lifecycle`], with `close`'s docstring given (what closing releases).
macro_rules! lifecycle_methods {
    ($class:ty, close = $close_doc:literal) => {
        #[pyo3::pymethods]
        impl $class {
            #[doc = $close_doc]
            fn close(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<()> {
                $crate::lifecycle::Lifecycle::close(self, py)
            }

            /// Whether it is closed.
            #[getter]
            fn closed(&self) -> bool {
                $crate::lifecycle::Lifecycle::is_closed(self)
            }

            fn __enter__(slf: pyo3::PyRef<'_, Self>) -> pyo3::PyResult<pyo3::PyRef<'_, Self>> {
                $crate::lifecycle::Lifecycle::check_open(&*slf)?;
                Ok(slf)
            }

            /// Closes it; if the block raised, a writer abandons its output instead.
            fn __exit__(
                &self,
                py: pyo3::Python<'_>,
                exc_type: &pyo3::Bound<'_, pyo3::PyAny>,
                exc_value: &pyo3::Bound<'_, pyo3::PyAny>,
                traceback: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<bool> {
                let _ = (exc_value, traceback);
                if exc_type.is_none() {
                    $crate::lifecycle::Lifecycle::close(self, py)?;
                } else {
                    $crate::lifecycle::Lifecycle::close_after_error(self, py)?;
                }
                Ok(false)
            }

            fn __repr__(&self) -> String {
                $crate::lifecycle::repr(self)
            }

            /// Refused: what it holds belongs to this process.
            fn __reduce__(&self) -> pyo3::PyResult<()> {
                Err($crate::errors::cannot_pickle(
                    <Self as $crate::lifecycle::Lifecycle>::WHAT,
                    <Self as $crate::lifecycle::Lifecycle>::NOT_PICKLED,
                ))
            }
        }
    };
}
pub(crate) use lifecycle_methods;
