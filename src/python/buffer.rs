//! Byte views of Python objects with the buffer protocol, read without copying, and new
//! bytes objects filled or built in place.

use std::ffi::c_int;

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::output::Output;
use crate::pages::advise_huge_pages;

/// A C-contiguous buffer exported by a Python object, held for as long as this view lives.
pub struct ByteView {
    buf: Source,
}

enum Source {
    /// bytes are immutable and need no export: holding a reference keeps them in place, and
    /// skips the buffer protocol's allocation on the codec's small-input path.
    Bytes {
        _owner: Py<PyBytes>,
        ptr: *const u8,
        len: usize,
    },
    Buffer(PyUntypedBuffer),
}

// SAFETY: `ptr` points into the immutable bytes object that `_owner` keeps alive.
unsafe impl Send for Source {}
unsafe impl Sync for Source {}

impl ByteView {
    /// Views `obj` (bytes, bytearray, memoryview, array.array, numpy arrays...). `what` names
    /// the argument in error messages.
    pub fn new(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        if let Ok(bytes) = obj.cast_exact::<PyBytes>() {
            let slice = bytes.as_bytes();
            return Ok(ByteView {
                buf: Source::Bytes {
                    _owner: bytes.clone().unbind(),
                    ptr: slice.as_ptr(),
                    len: slice.len(),
                },
            });
        }
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
        Ok(ByteView {
            buf: Source::Buffer(buf),
        })
    }

    /// Views `obj` as a destination, which must be writable.
    pub fn new_writable(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let view = Self::new(obj, what)?;
        let readonly = match &view.buf {
            Source::Bytes { .. } => true,
            Source::Buffer(buf) => buf.readonly(),
        };
        if readonly {
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
        let (ptr, len) = self.raw();
        if len == 0 {
            return &[];
        }
        // SAFETY: the memory is C-contiguous, `len` long, and stays put (exported, or an
        // immutable bytes object we hold) for as long as `self.buf` lives.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }

    fn raw(&self) -> (*const u8, usize) {
        match &self.buf {
            Source::Bytes { ptr, len, .. } => (*ptr, *len),
            Source::Buffer(buf) => (buf.buf_ptr() as *const u8, buf.len_bytes()),
        }
    }

    /// The bytes, for writing. Only for views made by `new_writable`.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let (ptr, len) = self.raw();
        if len == 0 {
            return &mut [];
        }
        // SAFETY: as in `as_slice`, and `new_writable` checked the export is writable (so
        // this is never a bytes object).
        unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) }
    }

    pub fn len(&self) -> usize {
        self.raw().1
    }
}

/// The name of an object's type, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A new bytes object of `len` bytes that `fill` writes in full before anyone sees it: no
/// zeroing pass first (pyo3's `PyBytes::new_with` zeroes, a few percent of a large
/// decompression). `fill` gets the object's memory, uninitialized, and its length; on an error
/// the object is freed unseen.
pub fn new_bytes_filled<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(*mut u8, usize) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("output too large for bytes"))?;
    // SAFETY: PyBytes_FromStringAndSize(NULL, size) returns a new bytes object (or NULL with an
    // exception set) whose `len` bytes are ours to write until it is shared; `fill` writes all
    // of them or fails, and then the object is dropped without being shared.
    unsafe {
        let ptr = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size);
        let bytes = Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyBytes>();
        let buf = pyo3::ffi::PyBytes_AsString(ptr).cast::<u8>();
        advise_huge_pages(buf, len);
        fill(buf, len)?;
        Ok(bytes)
    }
}

extern "C" {
    /// CPython's resize of a bytes object that nobody else references (documented in the C
    /// API; pyo3-ffi does not export it). A realloc: in place for large blocks. On failure the
    /// object is freed, `*pv` set to NULL and MemoryError raised.
    fn _PyBytes_Resize(pv: *mut *mut pyo3::ffi::PyObject, newsize: pyo3::ffi::Py_ssize_t) -> c_int;
}

/// A bytes object under construction, as an [`Output`]: a writer appends to it without the
/// GIL, and it grows with `_PyBytes_Resize`, taking the GIL for that moment. The result is
/// built where it ends up: no copy at the end, so the output never exists twice. Nobody else
/// sees the object before [`BytesOutput::finish`], which is what makes writing into it and
/// resizing it sound. Its memory is Python's (tracemalloc sees it), not `crate::alloc`'s.
pub struct BytesOutput {
    /// An owned reference with a count of one; null after a failed resize freed it.
    obj: *mut pyo3::ffi::PyObject,
    len: usize,
    cap: usize,
}

// SAFETY: the object is reachable only through this value, which touches its reference count
// and size with the GIL held; its bytes are plain memory that one thread at a time writes.
unsafe impl Send for BytesOutput {}

impl BytesOutput {
    /// An empty output with room for `capacity` bytes.
    pub fn with_capacity(py: Python<'_>, capacity: usize) -> PyResult<Self> {
        let size = pyo3::ffi::Py_ssize_t::try_from(capacity)
            .map_err(|_| PyOverflowError::new_err("output too large for bytes"))?;
        // SAFETY: a new bytes object (or NULL with an exception set), referenced only here.
        let obj = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size) };
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(BytesOutput {
            obj,
            len: 0,
            cap: capacity,
        })
    }

    /// Resizes the object to `new_cap` bytes, keeping the first `min(len, new_cap)`.
    fn resize(&mut self, py: Python<'_>, new_cap: usize) -> PyResult<()> {
        if self.obj.is_null() {
            return Err(PyMemoryError::new_err(
                "the output was lost when an earlier allocation failed",
            ));
        }
        let size = pyo3::ffi::Py_ssize_t::try_from(new_cap)
            .map_err(|_| PyOverflowError::new_err("output too large for bytes"))?;
        // SAFETY: `obj` is a bytes object with a reference count of one (never shared), as
        // `_PyBytes_Resize` requires; the GIL is held.
        let rc = unsafe { _PyBytes_Resize(&mut self.obj, size) };
        if rc != 0 {
            self.obj = std::ptr::null_mut();
            (self.len, self.cap) = (0, 0);
            return Err(PyErr::fetch(py));
        }
        self.cap = new_cap;
        self.len = self.len.min(new_cap);
        Ok(())
    }

    /// The bytes written, as a bytes object of exactly their length. The shrink is a
    /// shrinking realloc, which glibc does in place and never fails.
    pub fn finish(mut self, py: Python<'_>) -> PyResult<Bound<'_, PyBytes>> {
        if self.len != self.cap {
            self.resize(py, self.len)?;
        }
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        self.cap = 0;
        // SAFETY: an owned reference to a bytes object, handed to the caller.
        Ok(unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyBytes>() })
    }
}

impl Output for BytesOutput {
    fn len(&self) -> usize {
        self.len
    }

    fn capacity(&self) -> usize {
        self.cap
    }

    fn try_reserve_exact(&mut self, additional: usize) -> crate::Result<()> {
        let new_cap = self
            .len
            .checked_add(additional)
            .ok_or_else(|| crate::Error::Memory("output size overflows".into()))?;
        if new_cap <= self.cap {
            return Ok(());
        }
        Python::attach(|py| self.resize(py, new_cap)).map_err(|e| {
            crate::Error::Memory(format!("growing the output to {new_cap} bytes: {e}"))
        })
    }

    fn as_ptr(&self) -> *const u8 {
        if self.obj.is_null() {
            return std::ptr::NonNull::dangling().as_ptr();
        }
        // SAFETY: a live bytes object; its data pointer is valid for `cap` bytes.
        unsafe { pyo3::ffi::PyBytes_AS_STRING(self.obj).cast::<u8>() }
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_ptr().cast_mut()
    }

    unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap);
        self.len = len;
    }
}

impl Drop for BytesOutput {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            let obj = self.obj;
            // SAFETY: the reference this value owns, released with the GIL held.
            Python::attach(|_| unsafe { pyo3::ffi::Py_DECREF(obj) });
        }
    }
}
