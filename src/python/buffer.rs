//! Byte views of Python objects with the buffer protocol, read without copying.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::prelude::*;

/// A C-contiguous buffer exported by a Python object, held for as long as this view lives.
pub struct ByteView {
    buf: PyUntypedBuffer,
}

impl ByteView {
    /// Views `obj` (bytes, bytearray, memoryview, array.array, numpy arrays...). `what` names
    /// the argument in error messages.
    pub fn new(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let buf = PyUntypedBuffer::get(obj).map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be a bytes-like object (bytes, bytearray, memoryview, a contiguous \
                 numpy array...), not '{}'",
                type_name(obj)
            ))
        })?;
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err(format!(
                "{what} must be C-contiguous; copy it first (for numpy: numpy.ascontiguousarray)"
            )));
        }
        Ok(ByteView { buf })
    }

    /// Views `obj` as a destination, which must be writable.
    pub fn new_writable(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let view = Self::new(obj, what)?;
        if view.buf.readonly() {
            return Err(PyTypeError::new_err(format!(
                "{what} must be a writable buffer (bytearray, memoryview of one, numpy array), \
                 not read-only '{}'",
                type_name(obj)
            )));
        }
        Ok(view)
    }

    /// The bytes. Valid while `self` lives; the exporter cannot resize them meanwhile.
    pub fn as_slice(&self) -> &[u8] {
        let len = self.buf.len_bytes();
        if len == 0 {
            return &[];
        }
        // SAFETY: the buffer is C-contiguous, `len_bytes` long, and stays exported (so its
        // memory stays put) for as long as `self.buf` lives.
        unsafe { std::slice::from_raw_parts(self.buf.buf_ptr() as *const u8, len) }
    }

    /// The bytes, for writing. Only for views made by `new_writable`.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.buf.len_bytes();
        if len == 0 {
            return &mut [];
        }
        // SAFETY: as in `as_slice`, and `new_writable` checked the export is writable.
        unsafe { std::slice::from_raw_parts_mut(self.buf.buf_ptr() as *mut u8, len) }
    }

    pub fn len(&self) -> usize {
        self.buf.len_bytes()
    }
}

/// The name of an object's type, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
