//! Where readers get their bytes: memory (sliced, never copied) or any `Read`, sequentially for
//! streams and at any offset for files. A hostile length costs no more memory than the input has.

use std::io::{Read, Seek, SeekFrom};

use arrow_buffer::Buffer;

use crate::error::Result;

/// Sequential input.
pub trait Source: Send {
    /// The next `n` bytes; fewer only at the end of the input.
    fn read(&mut self, n: usize) -> Result<Buffer>;
}

/// Input that can be read at any offset (for the file format's footer and blocks).
pub trait RandomSource: Send {
    fn size(&mut self) -> Result<u64>;
    /// `n` bytes at `offset`; fewer only at the end of the input.
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer>;
}

/// Input already in memory: every read is a slice of it, never a copy.
pub struct BytesSource {
    data: Buffer,
    pos: usize,
}

impl BytesSource {
    pub fn new(data: Buffer) -> Self {
        BytesSource { data, pos: 0 }
    }

    fn slice(&self, at: usize, n: usize) -> Buffer {
        let at = at.min(self.data.len());
        let n = n.min(self.data.len() - at);
        self.data.slice_with_length(at, n)
    }
}

impl Source for BytesSource {
    fn read(&mut self, n: usize) -> Result<Buffer> {
        let b = self.slice(self.pos, n);
        self.pos += b.len();
        Ok(b)
    }
}

impl RandomSource for BytesSource {
    fn size(&mut self) -> Result<u64> {
        Ok(self.data.len() as u64)
    }
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer> {
        Ok(self.slice(usize::try_from(offset).unwrap_or(usize::MAX), n))
    }
}

/// Input from a reader (a file, a socket, a Python file object through the bindings).
pub struct ReaderSource<R> {
    inner: R,
}

impl<R> ReaderSource<R> {
    pub fn new(inner: R) -> Self {
        ReaderSource { inner }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

/// Reads up to `n` bytes, growing the buffer as bytes arrive: a hostile length on a short
/// input costs no more memory than the input has.
fn read_up_to(r: &mut impl Read, n: usize) -> Result<Buffer> {
    let mut v = Vec::new();
    v.try_reserve_exact(n.min(8 << 20))?;
    r.take(n as u64).read_to_end(&mut v)?;
    Ok(Buffer::from_vec(v))
}

impl<R: Read + Send> Source for ReaderSource<R> {
    fn read(&mut self, n: usize) -> Result<Buffer> {
        read_up_to(&mut self.inner, n)
    }
}

impl<R: Read + Seek + Send> RandomSource for ReaderSource<R> {
    fn size(&mut self) -> Result<u64> {
        Ok(self.inner.seek(SeekFrom::End(0))?)
    }
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer> {
        self.inner.seek(SeekFrom::Start(offset))?;
        read_up_to(&mut self.inner, n)
    }
}
