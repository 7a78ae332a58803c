//! Where `write_stream(sink=None)` and `write_file(sink=None)` build their output.
//!
//! In the bytes object that is returned ([`MemoryOutput`] is `BytesOutput`), so the output
//! never exists twice: grown with CPython's `_PyBytes_Resize`, which pyo3-ffi does not export
//! and which is named here, resolved from the interpreter when the extension loads. It is
//! outside the limited API, yet exported with the same meaning by every CPython the wheels
//! serve, the stable-ABI wheel's 3.11 and later included (each is tested on it).

pub use in_place::BytesOutput as MemoryOutput;

mod in_place {
    use std::ffi::c_int;

    use pyo3::prelude::*;
    use pyo3::types::PyBytes;

    use pyo3::ffi::PyBytes_AsString;
    use zstdpool_core::memory::huge_pages::advise_huge_pages_growable;
    use zstdpool_core::output::Output;

    extern "C" {
        /// CPython's resize of a bytes object that nobody else references (documented in the C
        /// API; pyo3-ffi does not export it). A realloc: in place for large blocks. On failure the
        /// object is freed, `*pv` set to NULL and MemoryError raised.
        fn _PyBytes_Resize(
            pv: *mut *mut pyo3::ffi::PyObject,
            newsize: pyo3::ffi::Py_ssize_t,
        ) -> c_int;
    }

    /// A bytes object under construction, as an [`Output`]: a writer appends to it without the
    /// GIL, and it grows with `_PyBytes_Resize`, taking the GIL for that moment. The result is
    /// built where it ends up: no copy at the end, so the output never exists twice. Nobody else
    /// sees the object before [`BytesOutput::finish`], which is what makes writing into it and
    /// resizing it sound. Its memory is Python's (tracemalloc sees it), not `zstdpool_core::alloc`'s.
    pub struct BytesOutput {
        /// An owned reference, never shared: a count of one, or the empty-bytes singleton that
        /// CPython returns for size 0 (which `_PyBytes_Resize` replaces with a new object rather
        /// than resizing). Null after a failed resize freed it.
        obj: *mut pyo3::ffi::PyObject,
        /// The object's data, read when it is made or moved (with the GIL held), so that
        /// writers without the GIL never call into CPython for it. Dangling while `obj` is null.
        data: *mut u8,
        len: usize,
        cap: usize,
        /// Where the object was when last considered for the huge-page hint: a growth that
        /// moves it (out of the heap into a mapping of its own, say) needs it again.
        advised: *mut pyo3::ffi::PyObject,
    }

    // SAFETY: the object is reachable only through this value, which touches its reference count
    // and size with the GIL held; its bytes are plain memory that one thread at a time writes.
    unsafe impl Send for BytesOutput {}

    impl BytesOutput {
        /// An empty output with room for `capacity` bytes.
        pub fn with_capacity(py: Python<'_>, capacity: usize) -> PyResult<Self> {
            let size = pyo3::ffi::Py_ssize_t::try_from(capacity)
                .map_err(|_| crate::errors::too_large_for_bytes())?;
            // SAFETY: a new bytes object (or NULL with an exception set), referenced only here.
            let obj = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size) };
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            let mut out = BytesOutput {
                obj,
                data: std::ptr::null_mut(),
                len: 0,
                cap: capacity,
                advised: std::ptr::null_mut(),
            };
            out.data_moved();
            out.advise();
            Ok(out)
        }

        /// Resizes the object to `new_cap` bytes, keeping the first `min(len, new_cap)`.
        fn resize(&mut self, py: Python<'_>, new_cap: usize) -> PyResult<()> {
            if self.obj.is_null() {
                return Err(crate::errors::output_lost());
            }
            let size = pyo3::ffi::Py_ssize_t::try_from(new_cap)
                .map_err(|_| crate::errors::too_large_for_bytes())?;
            // SAFETY: `obj` is a bytes object nobody else references (or the empty singleton,
            // which `_PyBytes_Resize` replaces instead of resizing), as
            // `_PyBytes_Resize` requires; the GIL is held.
            let rc = unsafe { _PyBytes_Resize(&mut self.obj, size) };
            if rc != 0 {
                self.obj = std::ptr::null_mut();
                self.data_moved();
                (self.len, self.cap) = (0, 0);
                return Err(PyErr::fetch(py));
            }
            self.data_moved();
            self.cap = new_cap;
            self.len = self.len.min(new_cap);
            self.advise();
            Ok(())
        }

        /// Reads where the object's data now is (with the GIL held: after making or resizing it).
        fn data_moved(&mut self) {
            self.data = if self.obj.is_null() {
                std::ptr::NonNull::dangling().as_ptr()
            } else {
                // SAFETY: a live bytes object (PyBytes_AsString cannot fail on one).
                unsafe { PyBytes_AsString(self.obj).cast::<u8>() }
            };
        }

        /// Asks for huge pages on a large output once it sits somewhere new. An output that
        /// glibc maps on its own (always from 32 MiB) is fresh memory on each write (the last
        /// one's pages went with the caller's bytes), and filling it faults once per 4 KiB,
        /// which costs several times the copy itself (benchmarks/RESULTS.md#bytes-output-faults).
        fn advise(&mut self) {
            if self.obj != self.advised && self.cap >= zstdpool_core::memory::huge_pages::MIN_LEN {
                // The object's data is `cap` bytes plus a terminating NUL.
                let data_end = self.data as usize + self.cap + 1;
                advise_huge_pages_growable(self.obj.cast::<u8>(), data_end - self.obj as usize);
                self.advised = self.obj;
            }
        }

        /// The bytes written, as a bytes object of exactly their length. The shrink is a
        /// shrinking realloc, which glibc does in place; were it to fail, the error says so and
        /// the output is lost with the object.
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

        fn try_reserve_exact(&mut self, additional: usize) -> zstdpool_core::Result<()> {
            let new_cap = self
                .len
                .checked_add(additional)
                .ok_or_else(|| zstdpool_core::Error::Memory("output size overflows".into()))?;
            if new_cap <= self.cap {
                return Ok(());
            }
            Python::attach(|py| self.resize(py, new_cap)).map_err(|e| {
                zstdpool_core::Error::Memory(format!("growing the output to {new_cap} bytes: {e}"))
            })
        }

        fn as_ptr(&self) -> *const u8 {
            self.data
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
}
