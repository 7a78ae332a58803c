//! One-shot zstd decompression planned safely: a frame's declared size is checked against the
//! caller's limit before anything is allocated.

use crate::context::{frame_content_size, is_single_frame, ContentSize};
use crate::error::{Error, Result};

/// The default `max_output_size` of one-shot decompression: large enough for real data,
/// small enough that a hostile header cannot make the process allocate without bound.
pub const DEFAULT_MAX_OUTPUT_SIZE: usize = 1 << 30;

/// How to decompress a zstd input within a size limit.
#[derive(Debug, PartialEq, Eq)]
pub enum DecompressPlan {
    /// One frame whose header gives its size: allocate exactly that and decompress into it.
    Exact(usize),
    /// No size in the header, or several frames: decompress growing the output, up to the limit.
    Streaming,
}

/// Reads the frame header and decides, refusing sizes over `limit` before anything is allocated.
pub fn plan_decompress(src: &[u8], limit: usize) -> Result<DecompressPlan> {
    match frame_content_size(src)? {
        ContentSize::Known(n) if n > limit as u64 => Err(Error::Limit(format!(
            "the zstd frame declares {n} bytes of content, more than max_output_size ({limit} bytes)"
        ))),
        ContentSize::Known(n) if is_single_frame(src) => Ok(DecompressPlan::Exact(n as usize)),
        _ => Ok(DecompressPlan::Streaming),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{CompressParams, Compressor};

    #[test]
    fn plan_refuses_huge_declared_sizes() {
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        let frame = c.compress_to_scratch(&vec![0u8; 5000]).unwrap().to_vec();
        assert_eq!(
            plan_decompress(&frame, 5000).unwrap(),
            DecompressPlan::Exact(5000)
        );
        let err = plan_decompress(&frame, 4999).unwrap_err();
        assert!(
            err.to_string().contains("max_output_size (4999 bytes)"),
            "{err}"
        );
        let mut two = frame.clone();
        two.extend_from_slice(&frame);
        assert_eq!(
            plan_decompress(&two, 1 << 20).unwrap(),
            DecompressPlan::Streaming
        );
        assert!(plan_decompress(b"", 10).is_err());
        assert!(plan_decompress(b"not zstd", 10).is_err());
    }
}
