//! Where a Parquet reader gets its bytes: memory (sliced, never copied), a file (read at an
//! offset, so that threads reading different columns never share a file position), or anything
//! that can read at an offset (a Python file object, through the bindings). A range past the
//! end of the input is refused before anything is allocated for it.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use ::parquet::errors::ParquetError;
use ::parquet::file::reader::{ChunkReader, Length};
use arrow_buffer::Buffer;
use bytes::Bytes;

/// Input that can be read at any offset by several threads at once.
pub trait ReadAt: Send + Sync {
    fn size(&self) -> io::Result<u64>;
    /// Fills `buf` from `offset`; fewer bytes only at the end of the input.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Says that `ranges` are about to be read: an input whose reads are requests (an
    /// object store's) fetches them now, together; others need not do anything.
    fn prefetch(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }
    /// Lets go of what [`ReadAt::prefetch`] fetched: the read that asked for it is over.
    fn forget_prefetched(&self) {}
    /// Why fetching what [`ReadAt::prefetch`] asked for failed, if it did: a read that
    /// failed for it reports this, an I/O error, rather than the decoder's account of it.
    fn prefetch_failure(&self) -> Option<io::Error> {
        None
    }
    /// Whether each read not prefetched is a request of its own (an object store's), which
    /// costs far more than its bytes.
    fn requests(&self) -> bool {
        false
    }
}

impl ReadAt for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

/// A Parquet input.
#[derive(Clone)]
pub enum ParquetSource {
    Memory(Buffer),
    At { input: Arc<dyn ReadAt>, len: u64 },
}

impl ParquetSource {
    pub fn memory(data: Buffer) -> Self {
        ParquetSource::Memory(data)
    }

    pub fn file(file: File) -> io::Result<Self> {
        Self::read_at(Arc::new(file))
    }

    /// `input`, whose size is taken now (a file that changes size while it is read fails
    /// cleanly at the bytes that are gone).
    pub fn read_at(input: Arc<dyn ReadAt>) -> io::Result<Self> {
        let len = input.size()?;
        Ok(ParquetSource::At { input, len })
    }

    /// Says that `ranges` are about to be read (see [`ReadAt::prefetch`]).
    pub fn prefetch(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        match self {
            ParquetSource::Memory(_) => Ok(()),
            ParquetSource::At { input, .. } => input.prefetch(ranges),
        }
    }

    /// Why a prefetch failed, if it did (see [`ReadAt::prefetch_failure`]).
    pub fn prefetch_failure(&self) -> Option<io::Error> {
        match self {
            ParquetSource::Memory(_) => None,
            ParquetSource::At { input, .. } => input.prefetch_failure(),
        }
    }

    /// Whether reads of this source are requests (see [`ReadAt::requests`]).
    pub fn requests(&self) -> bool {
        matches!(self, ParquetSource::At { input, .. } if input.requests())
    }

    /// Lets go of what [`ParquetSource::prefetch`] fetched.
    pub fn forget_prefetched(&self) {
        if let ParquetSource::At { input, .. } = self {
            input.forget_prefetched();
        }
    }

    fn check_range(&self, start: u64, length: usize) -> ::parquet::errors::Result<()> {
        let len = Length::len(self);
        if start.checked_add(length as u64).is_none_or(|end| end > len) {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at offset {start} pass the end of the input ({len} bytes)"
            )));
        }
        Ok(())
    }
}

impl Length for ParquetSource {
    fn len(&self) -> u64 {
        match self {
            ParquetSource::Memory(b) => b.len() as u64,
            ParquetSource::At { len, .. } => *len,
        }
    }
}

/// Lets a [`Bytes`] share an Arrow buffer's memory.
struct Shared(Buffer);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl ChunkReader for ParquetSource {
    type T = SourceRead;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<SourceRead> {
        Ok(SourceRead {
            source: self.clone(),
            pos: start,
            ahead: Vec::new(),
            taken: 0,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<Bytes> {
        self.check_range(start, length)?;
        match self {
            ParquetSource::Memory(b) => Ok(Bytes::from_owner(Shared(
                b.slice_with_length(start as usize, length),
            ))),
            ParquetSource::At { input, .. } => {
                let mut buf = Vec::new();
                buf.try_reserve_exact(length)
                    .map_err(|e| ParquetError::General(format!("{length} bytes to read: {e}")))?;
                buf.resize(length, 0);
                let mut done = 0;
                while done < length {
                    match input.read_at(start + done as u64, &mut buf[done..])? {
                        0 => {
                            return Err(ParquetError::EOF(format!(
                                "the input ended {} bytes into a {length}-byte range at {start}",
                                done
                            )))
                        }
                        n => done += n,
                    }
                }
                Ok(Bytes::from(buf))
            }
        }
    }
}

/// What a [`SourceRead`] reads at once for a small read: the crate reads a page header a few
/// bytes at a time, and each read of a file or a Python object is a call of its own.
const READ_AHEAD: usize = 4096;

/// Reads a [`ParquetSource`] from an offset on, small reads from a file served from a buffer
/// of [`READ_AHEAD`] bytes.
pub struct SourceRead {
    source: ParquetSource,
    /// Where the next byte handed out lies in the source.
    pos: u64,
    /// Bytes read ahead: `ahead[taken..]` are those at `pos` on.
    ahead: Vec<u8>,
    taken: usize,
}

impl Read for SourceRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &self.source {
            ParquetSource::Memory(b) => {
                let at = (self.pos as usize).min(b.len());
                let n = buf.len().min(b.len() - at);
                buf[..n].copy_from_slice(&b[at..at + n]);
                n
            }
            ParquetSource::At { input, len } => {
                if self.taken == self.ahead.len() {
                    if self.pos >= *len {
                        return Ok(0);
                    }
                    let room = (*len - self.pos).min(READ_AHEAD as u64) as usize;
                    if buf.len() >= room {
                        let n = input.read_at(self.pos, &mut buf[..room])?;
                        self.pos += n as u64;
                        return Ok(n);
                    }
                    self.ahead.resize(room, 0);
                    let got = input.read_at(self.pos, &mut self.ahead)?;
                    self.ahead.truncate(got);
                    self.taken = 0;
                }
                let n = buf.len().min(self.ahead.len() - self.taken);
                buf[..n].copy_from_slice(&self.ahead[self.taken..self.taken + n]);
                self.taken += n;
                n
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}
