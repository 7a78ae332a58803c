//! Where encoded bytes are appended. A `Vec<u8>` is one [`Output`]; the bindings provide
//! another over a Python bytes object, so that the writer builds its result where it ends up
//! instead of copying it there at the end (which would hold the output twice).

use crate::error::{Error, Result};

/// An append-only byte buffer: written bytes, then spare room that writers fill in place.
pub trait Output {
    /// Bytes written so far.
    fn len(&self) -> usize;

    /// Bytes that fit before the storage must grow.
    fn capacity(&self) -> usize;

    /// Grows the capacity to at least `len() + additional`, no more than that where the
    /// storage allows. On error nothing changed, except in the bindings' bytes output, whose
    /// contents CPython frees when growing it fails (its write fails whole anyway).
    fn try_reserve_exact(&mut self, additional: usize) -> Result<()>;

    /// The start of the storage: `len()` written bytes, then `capacity() - len()` spare ones.
    fn as_ptr(&self) -> *const u8;

    /// As [`Output::as_ptr`], for writing.
    fn as_mut_ptr(&mut self) -> *mut u8;

    /// Sets the written length.
    ///
    /// # Safety
    /// `len <= capacity()` and the first `len` bytes are initialized.
    unsafe fn set_len(&mut self, len: usize);

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: the first `len()` bytes of the storage are initialized (see `set_len`).
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len()) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len();
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), len) }
    }

    /// Drops the bytes after `len` (nothing if `len >= len()`).
    fn truncate(&mut self, len: usize) {
        if len < self.len() {
            // SAFETY: shorter than what is written, so initialized and within capacity.
            unsafe { self.set_len(len) }
        }
    }

    /// Makes room for `additional` bytes, growing by at least an eighth of the length so that
    /// appending stays cheap while the spare capacity stays small (a doubling vector could
    /// hold as much unused memory as it holds data).
    fn grow_for(&mut self, additional: usize) -> Result<()> {
        if self.capacity() - self.len() < additional {
            self.try_reserve_exact(additional.max(self.len() / 8))?;
        }
        Ok(())
    }

    fn extend_from_slice(&mut self, data: &[u8]) -> Result<()> {
        self.grow_for(data.len())?;
        let len = self.len();
        // SAFETY: grow_for made room for `data` after the written bytes; the regions are
        // distinct (`data` is borrowed elsewhere, the spare room is ours).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.as_mut_ptr().add(len), data.len());
            self.set_len(len + data.len());
        }
        Ok(())
    }

    /// Appends `n` zero bytes.
    fn extend_zeros(&mut self, n: usize) -> Result<()> {
        self.grow_for(n)?;
        let len = self.len();
        // SAFETY: grow_for made room for `n` bytes after the written ones.
        unsafe {
            std::ptr::write_bytes(self.as_mut_ptr().add(len), 0, n);
            self.set_len(len + n);
        }
        Ok(())
    }

    /// Inserts `n` zero bytes at `at`, moving what follows.
    fn insert_zeros(&mut self, at: usize, n: usize) -> Result<()> {
        let len = self.len();
        assert!(at <= len, "insert_zeros at {at} past the end ({len})");
        self.extend_zeros(n)?;
        let bytes = self.as_mut_slice();
        bytes.copy_within(at..len, at + n);
        bytes[at..at + n].fill(0);
        Ok(())
    }
}

impl Output for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn capacity(&self) -> usize {
        Vec::capacity(self)
    }
    fn try_reserve_exact(&mut self, additional: usize) -> Result<()> {
        Vec::try_reserve_exact(self, additional).map_err(Error::from)
    }
    fn as_ptr(&self) -> *const u8 {
        Vec::as_ptr(self)
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }
    unsafe fn set_len(&mut self, len: usize) {
        // SAFETY: the caller upholds Vec::set_len's contract, which is this trait's.
        unsafe { Vec::set_len(self, len) }
    }
}

/// A caller's buffer as an [`Output`] of fixed capacity, written from its start and never
/// grown: decompression straight into the buffer a file reader was given, rather than into a
/// new object copied there.
pub struct SliceOutput<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceOutput<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceOutput { buf, len: 0 }
    }
}

impl Output for SliceOutput<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn capacity(&self) -> usize {
        self.buf.len()
    }
    fn try_reserve_exact(&mut self, additional: usize) -> Result<()> {
        let room = self.buf.len() - self.len;
        if additional <= room {
            return Ok(());
        }
        Err(Error::Limit(format!(
            "the output buffer has room for {room} more bytes, not {additional}"
        )))
    }
    fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }
    unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.buf.len());
        self.len = len;
    }
}

/// An [`Output`] as a `std::io::Write` (for encoders that write through one).
pub struct OutputWriter<'a, O: Output + ?Sized>(pub &'a mut O);

impl<O: Output + ?Sized> std::io::Write for OutputWriter<'_, O> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .extend_from_slice(buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The spare room of an output, as the destination zstd writes into: whatever zstd writes is
/// appended after the output's current contents.
pub struct OutputTail<'a, O: Output + ?Sized> {
    out: &'a mut O,
    start: usize,
}

impl<'a, O: Output + ?Sized> OutputTail<'a, O> {
    pub fn new(out: &'a mut O) -> Self {
        let start = out.len();
        OutputTail { out, start }
    }
}

// SAFETY: `capacity` and `as_mut_ptr` describe the output's spare room exactly, and
// `filled_until(n)` is only called by zstd-safe after zstd wrote `n` bytes there.
unsafe impl<O: Output + ?Sized> zstd_safe::WriteBuf for OutputTail<'_, O> {
    fn as_slice(&self) -> &[u8] {
        &self.out.as_slice()[self.start..]
    }

    fn capacity(&self) -> usize {
        self.out.capacity() - self.start
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: start <= len <= capacity, so the pointer stays inside the storage.
        unsafe { self.out.as_mut_ptr().add(self.start) }
    }

    unsafe fn filled_until(&mut self, n: usize) {
        // SAFETY: the caller guarantees that n bytes after `start` are initialized.
        unsafe { self.out.set_len(self.start + n) }
    }
}

/// `v` shrunk to exactly its length in place, or `v` as it is when the allocator cannot: the
/// data is complete either way, and a failed shrink must not fail a write (Rust's own
/// `shrink_to_fit` aborts the process when its reallocation fails). A shrinking `realloc`
/// neither copies nor touches new memory, unlike a move into a new exact-size vector.
pub fn exact_or_as_is(v: Vec<u8>) -> Vec<u8> {
    // SAFETY: forwards to the global allocator, with the layout and size `shrink_with` gives.
    shrink_with(v, |ptr, layout, len| unsafe {
        std::alloc::realloc(ptr, layout, len)
    })
}

/// [`exact_or_as_is`] with the reallocation replaceable in tests. `realloc` gets the vector's
/// pointer, its allocation's layout and the new, smaller, non-zero size, and returns the new
/// pointer or null.
fn shrink_with(
    v: Vec<u8>,
    realloc: impl FnOnce(*mut u8, std::alloc::Layout, usize) -> *mut u8,
) -> Vec<u8> {
    let (len, cap) = (v.len(), v.capacity());
    if len == cap {
        return v;
    }
    if len == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<u8>(cap) else {
        return v;
    };
    let mut v = std::mem::ManuallyDrop::new(v);
    let ptr = v.as_mut_ptr();
    let shrunk = realloc(ptr, layout, len);
    // SAFETY: a Vec<u8> owns `cap` bytes at `ptr` allocated with `layout`. A null result
    // leaves that allocation untouched and it goes back into a vector as it was; otherwise
    // the allocation is now `len` bytes at `shrunk`, holding the same first `len` bytes.
    unsafe {
        if shrunk.is_null() {
            Vec::from_raw_parts(ptr, len, cap)
        } else {
            Vec::from_raw_parts(shrunk, len, len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_an_eighth_or_what_is_asked() {
        let mut out = Vec::new();
        for _ in 0..1000 {
            out.grow_for(1000).unwrap();
            Output::extend_from_slice(&mut out, &[1u8; 1000]).unwrap();
            // Never more than an eighth of the data (or one request) unused.
            assert!(out.capacity() - out.len() <= (out.len() / 8).max(1000));
        }
    }

    #[test]
    fn appends_pads_and_inserts() {
        let mut out: Vec<u8> = b"abc".to_vec();
        let o: &mut dyn Output = &mut out;
        o.extend_zeros(2).unwrap();
        o.extend_from_slice(b"de").unwrap();
        o.insert_zeros(1, 3).unwrap();
        assert_eq!(o.as_slice(), b"a\0\0\0bc\0\0de");
        o.truncate(4);
        assert_eq!(o.as_slice(), b"a\0\0\0");
        o.truncate(10);
        assert_eq!(o.len(), 4);
    }

    #[test]
    fn a_slice_output_fills_its_buffer_and_never_grows() {
        let mut buf = [0u8; 6];
        let mut out = SliceOutput::new(&mut buf);
        out.extend_from_slice(b"abcd").unwrap();
        let err = out.extend_from_slice(b"efg").unwrap_err();
        assert!(
            err.to_string().contains("room for 2 more bytes, not 3"),
            "{err}"
        );
        out.extend_from_slice(b"ef").unwrap();
        assert_eq!((out.len(), out.capacity()), (6, 6));
        assert_eq!(buf, *b"abcdef");
    }

    #[test]
    fn io_writer_appends() {
        use std::io::Write;
        let mut out = b"x".to_vec();
        OutputWriter(&mut out).write_all(b"yz").unwrap();
        assert_eq!(out, b"xyz");
    }
    #[test]
    fn exact_outputs_and_a_failed_shrink_keeps_the_data() {
        let spare = || {
            let mut v = Vec::with_capacity(1000);
            v.extend_from_slice(b"compressed");
            v
        };
        let exact = exact_or_as_is(spare());
        assert_eq!(
            (exact.as_slice(), exact.capacity()),
            (&b"compressed"[..], 10)
        );
        let v = spare();
        // A reallocation that fails leaves the larger buffer, data intact.
        let kept = shrink_with(v, |_, _, _| std::ptr::null_mut());
        assert_eq!(
            (kept.as_slice(), kept.capacity()),
            (&b"compressed"[..], 1000)
        );
        assert_eq!(exact_or_as_is(Vec::with_capacity(64)).capacity(), 0);
    }
}
