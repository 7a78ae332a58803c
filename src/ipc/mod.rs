//! Arrow IPC with pooled compression. arrow-ipc lays out and parses the Arrow data; this
//! module adds compression as a stage over each message body's buffer list, so that every
//! buffer is compressed (or decompressed) with a pooled context, and the writer and reader
//! control threads and output sizes themselves.

use crate::error::Result;
use crate::output::Output;

mod body;
pub mod inspect;
mod message;
pub mod reader;
mod validate;
pub mod writer;

pub use body::Compression;
pub use reader::{FileReader, ReadLimits, StreamReader};
pub use writer::{IpcFormat, IpcWriter, WriterOptions};

/// Every message and body in the IPC format starts on an 8-byte boundary.
pub(crate) const ALIGNMENT: usize = 8;

/// The magic bytes that open and close an IPC file.
pub(crate) const ARROW_MAGIC: &[u8; 6] = b"ARROW1";

pub(crate) fn padding(len: usize) -> usize {
    (ALIGNMENT - len % ALIGNMENT) % ALIGNMENT
}

/// Pads `out` with zeros to the next 8-byte boundary.
pub(crate) fn pad(out: &mut dyn Output) -> Result<()> {
    out.extend_zeros(padding(out.len()))
}
