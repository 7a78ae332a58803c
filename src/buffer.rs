//! Byte views of Python objects with the buffer protocol, read without copying, and new
//! bytes objects filled in place.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyType};

use zstdpool_core::memory::huge_pages::advise_huge_pages;

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
            crate::errors::wrong_type(format!(
                "{what} must be a bytes-like object (bytes, bytearray, memoryview, a contiguous \
                 numpy array...), not '{}'",
                type_name(obj)
            ))
        })?;
        if !buf.is_c_contiguous() {
            return Err(crate::errors::unusable_buffer(format!(
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
            return Err(crate::errors::wrong_type(format!(
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

    /// Views `data` as a source and `out` as a destination (the arguments of that name),
    /// refusing an `out` that shares a byte with `data` (one buffer given as both, or two
    /// slices of one): zstd must never read what it is writing.
    pub fn source_and_destination(
        data: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<(Self, Self)> {
        let view = Self::new(data, "data")?;
        let dst = Self::new_writable(out, "out")?;
        if view.overlaps(&dst) {
            return Err(crate::errors::parameter(
                "data and out overlap: decompress into another buffer",
            ));
        }
        Ok((view, dst))
    }

    /// Whether the two views share a byte.
    fn overlaps(&self, other: &ByteView) -> bool {
        let ((a, a_len), (b, b_len)) = (self.raw(), other.raw());
        let (a, b) = (a as usize, b as usize);
        a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len
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

/// Whether `ty` was made at run time (a Python class): heap types. C and Cython extensions
/// (pyarrow's) define static ones.
pub fn is_heap_type(ty: &Bound<'_, PyType>) -> bool {
    // SAFETY: a live type object, read with the GIL.
    unsafe { pyo3::ffi::PyType_GetFlags(ty.as_type_ptr()) & pyo3::ffi::Py_TPFLAGS_HEAPTYPE != 0 }
}

/// pyarrow's classes that zstdpool recognizes by exact type (not subclasses, whose methods
/// may do anything).
#[derive(Clone, Copy)]
pub enum PyarrowClass {
    Schema,
    Table,
    RecordBatch,
    RecordBatchReader,
}

impl PyarrowClass {
    const ALL: [PyarrowClass; 4] = [
        PyarrowClass::Schema,
        PyarrowClass::Table,
        PyarrowClass::RecordBatch,
        PyarrowClass::RecordBatchReader,
    ];

    fn name(self) -> &'static str {
        match self {
            PyarrowClass::Schema => "Schema",
            PyarrowClass::Table => "Table",
            PyarrowClass::RecordBatch => "RecordBatch",
            PyarrowClass::RecordBatchReader => "RecordBatchReader",
        }
    }
}

/// The classes of `pyarrow.lib`, fetched once that module is imported. Until then no object
/// can be one of them, and nothing is imported to find out: the codec API never loads pyarrow.
/// A comparison of type pointers is what the stable ABI allows (it hides `tp_name`), and is
/// cheaper than comparing names.
static PYARROW_CLASSES: PyOnceLock<[Py<PyType>; 4]> = PyOnceLock::new();

fn pyarrow_classes(py: Python<'_>) -> Option<&[Py<PyType>; 4]> {
    if let Some(classes) = PYARROW_CLASSES.get(py) {
        return Some(classes);
    }
    let modules = py
        .import(intern!(py, "sys"))
        .ok()?
        .getattr(intern!(py, "modules"))
        .ok()?;
    let lib = modules.get_item(intern!(py, "pyarrow.lib")).ok()?;
    let mut classes = Vec::with_capacity(PyarrowClass::ALL.len());
    for class in PyarrowClass::ALL {
        classes.push(
            lib.getattr(class.name())
                .ok()?
                .cast_into::<PyType>()
                .ok()?
                .unbind(),
        );
    }
    let classes: [Py<PyType>; 4] = classes.try_into().ok()?;
    Some(PYARROW_CLASSES.get_or_init(py, || classes))
}

/// Whether `obj` is exactly pyarrow's `class` (not a subclass, nor another type of that name).
pub fn is_pyarrow_class(obj: &Bound<'_, PyAny>, class: PyarrowClass) -> bool {
    pyarrow_classes(obj.py())
        .is_some_and(|classes| obj.get_type().as_ptr() == classes[class as usize].as_ptr())
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
    let size =
        pyo3::ffi::Py_ssize_t::try_from(len).map_err(|_| crate::errors::too_large_for_bytes())?;
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
