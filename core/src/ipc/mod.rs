//! Arrow IPC with pooled compression. arrow-ipc lays out and parses the Arrow data; this
//! module adds compression as a stage over each message body's buffer list, so that every
//! buffer is compressed (or decompressed) with a pooled context, and the writer and reader
//! control threads and output sizes themselves.
//!
//! A write: `writer` has arrow-ipc encode a batch, `compress` rewrites each body, `message`
//! frames it. A read: `source` gives bytes, `reader` frames messages, `decompress` rebuilds
//! each body, arrow-ipc decodes it and `validate` checks it before anyone reads it. `schema`
//! holds the schema checks both sides share; `inspect` summarises a stream or file unread.
//! The reader never uses the writer.

use crate::error::Result;
use crate::output::Output;

pub mod compress;
pub mod decompress;
pub mod inspect;
mod lz4;
mod message;
pub mod projection;
pub mod reader;
mod schema;
pub mod source;
pub(crate) mod validate;
pub mod writer;

pub use compress::{Compression, DEFAULT_ZSTD_LEVEL};
pub use message::KeyValues;
pub use projection::Projection;
pub use reader::{FileReader, ReadLimits, ReadStats, StreamReader};
pub use source::{BytesSource, RandomSource, ReaderSource, Source};
pub use writer::{IpcWriter, WriteStats, WriterOptions};

/// Every message and body in the IPC format starts on an 8-byte boundary.
pub(crate) const ALIGNMENT: usize = 8;

/// The magic bytes that open and close an IPC file.
pub(crate) const ARROW_MAGIC: &[u8; 6] = b"ARROW1";

/// The two IPC layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpcFormat {
    /// A sequence of messages ending in an end-of-stream marker.
    Stream,
    /// Magic bytes, the stream, and a footer indexing every batch for random access.
    File,
}

pub(crate) fn padding(len: usize) -> usize {
    (ALIGNMENT - len % ALIGNMENT) % ALIGNMENT
}

/// Pads `out` with zeros to the next 8-byte boundary.
pub(crate) fn pad(out: &mut dyn Output) -> Result<()> {
    out.extend_zeros(padding(out.len()))
}
