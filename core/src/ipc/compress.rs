//! The compression stage of the writer: each buffer of a message body becomes an 8-byte
//! uncompressed length and a zstd or lz4 frame (or -1 and the raw bytes when compressing would
//! not shrink it), as the IPC format's BUFFER body compression prescribes.

use arrow_ipc::CompressionType;

use super::lz4::lz4_compress_append;
use super::{pad, ALIGNMENT};
use crate::context::{CompressParams, Compressor};
use crate::error::{Error, Result};
use crate::output::{exact_or_as_is, Output};
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::pool::{ContextPool, Lease};

/// How a writer compresses message bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Zstd(CompressParams),
    Lz4,
}

/// zstd level 1 by default, the same as pyarrow's, so that sizes compare fairly.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

impl Compression {
    pub(crate) fn wire_codec(&self) -> Option<CompressionType> {
        match self {
            Compression::None => None,
            Compression::Zstd(_) => Some(CompressionType::ZSTD),
            Compression::Lz4 => Some(CompressionType::LZ4_FRAME),
        }
    }
}

/// The prefix that marks a buffer stored uncompressed inside a compressed body.
pub(super) const UNCOMPRESSED: i64 = -1;

/// Appends `src` to `out` as one body buffer: prefix and frame, or -1 and the raw bytes when
/// the frame would not be smaller. An empty buffer stays empty (no prefix), as in Arrow C++.
fn encode_buffer(
    src: &[u8],
    compression: Compression,
    compressor: Option<&mut Compressor>,
    out: &mut dyn Output,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let start = out.len();
    let frame_len = match (compression, compressor) {
        (Compression::None, _) => return out.extend_from_slice(src),
        (Compression::Zstd(_), Some(c)) => {
            out.extend_from_slice(&(src.len() as i64).to_le_bytes())?;
            c.compress_append(src, out)?
        }
        (Compression::Zstd(_), None) => {
            return Err(Error::Compress("no compressor for a zstd body".into()))
        }
        (Compression::Lz4, _) => {
            out.extend_from_slice(&(src.len() as i64).to_le_bytes())?;
            lz4_compress_append(src, out)?
        }
    };
    if frame_len >= src.len() {
        out.truncate(start);
        out.extend_from_slice(&UNCOMPRESSED.to_le_bytes())?;
        out.extend_from_slice(src)?;
    }
    Ok(())
}

/// Compresses `buffers` and appends them to `out` as a message body (each buffer padded to 8
/// bytes); returns each buffer's (offset, length) relative to where the body starts.
/// `threads` (None: by size) spreads the buffers over threads, each with its own context from
/// `pool`; `primary` serves the calling thread. Output bytes are the same whatever the thread
/// count: each buffer is its own frame. Memory: `out` grows by the compressed size plus at most
/// one compressBound of a buffer (serially) or one per thread, never by the uncompressed size.
pub fn compress_buffers(
    buffers: &[&[u8]],
    compression: Compression,
    primary: Option<&mut Lease<Compressor>>,
    pool: &ContextPool,
    threads: Option<usize>,
    out: &mut dyn Output,
) -> Result<Vec<(usize, usize)>> {
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    let nonempty = buffers.iter().filter(|b| !b.is_empty()).count();
    let threads = match compression {
        Compression::None => 1,
        _ => resolve_threads(threads, total, nonempty)?,
    };
    let base = out.len();
    let mut spans = Vec::with_capacity(buffers.len());
    if threads <= 1 {
        let mut primary = primary;
        for src in buffers {
            let start = out.len();
            encode_buffer(
                src,
                compression,
                primary.as_deref_mut().map(|l| &mut **l),
                out,
            )?;
            spans.push((start - base, out.len() - start));
            pad(out)?;
        }
        return Ok(spans);
    }
    let piece = |src: &[u8], c: Option<&mut Compressor>| {
        let mut piece = Vec::new();
        encode_buffer(src, compression, c, &mut piece)?;
        // Held until assembly: keep the frame, not its compressBound-sized allocation.
        Ok(exact_or_as_is(piece))
    };
    // The calling thread compresses too, with the writer's own context.
    let encoded = match compression {
        Compression::Zstd(params) => for_each_parallel(
            buffers,
            threads,
            primary,
            |src| src.len(),
            || pool.compressor(params),
            |c, _, src| piece(src, Some(c)),
        )?,
        _ => for_each_parallel(
            buffers,
            threads,
            None,
            |src| src.len(),
            || Ok(()),
            |_, _, src| piece(src, None),
        )?,
    };
    // Room for all the frames at once, one growth per batch rather than one per frame: in a
    // heap, each growth may move the output, copying it into fresh memory that faults page by
    // page (22 moves for a 40 MB single-batch write); grown at once, a large output gets a
    // mapping of its own, which later growths extend without copying. The cost: until the
    // frames are copied (each is freed as soon as it is), the output's room and the frames
    // are both allocated, up to twice the batch's compressed size on top of the output so far
    // (the room is touched only as it is filled; a moving growth briefly held two copies of
    // the whole output instead).
    out.grow_for(encoded.iter().map(|p| p.len() + ALIGNMENT).sum())?;
    for piece in encoded {
        let start = out.len();
        out.extend_from_slice(&piece)?;
        spans.push((start - base, piece.len()));
        pad(out)?;
    }
    Ok(spans)
}
