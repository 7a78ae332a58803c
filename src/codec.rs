//! One-shot codec operations shared by the Python API and the IPC stages: deciding how to
//! decompress a frame safely, and lz4 frames for Arrow's LZ4_FRAME codec.

use std::io::{Read, Write};

use crate::context::{frame_content_size, is_single_frame, ContentSize};
use crate::error::{Error, Result};
use crate::output::{Output, OutputWriter};

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

/// Compresses `src` as one lz4 frame appended to `out`; returns the frame's length.
pub fn lz4_compress_append<O: Output + ?Sized>(src: &[u8], out: &mut O) -> Result<usize> {
    let start = out.len();
    out.grow_for(lz4_flex::block::get_maximum_output_size(src.len()) + 32)?;
    let mut encoder = lz4_flex::frame::FrameEncoder::new(OutputWriter(&mut *out));
    encoder.write_all(src)?;
    encoder
        .finish()
        .map_err(|e| Error::Compress(format!("lz4: {e}")))?;
    Ok(out.len() - start)
}

/// Decompresses one lz4 frame that must hold exactly `dst.len()` bytes.
pub fn lz4_decompress_exact(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let corrupt = |e: std::io::Error| Error::Corrupt(format!("corrupt lz4 data: {e}"));
    let mut decoder = lz4_flex::frame::FrameDecoder::new(src);
    decoder.read_exact(dst).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::Corrupt(format!(
                "lz4 data holds fewer bytes than the {} declared",
                dst.len()
            ))
        } else {
            corrupt(e)
        }
    })?;
    let mut extra = [0u8; 1];
    match decoder.read(&mut extra) {
        Ok(0) => Ok(()),
        Ok(_) => Err(Error::Corrupt(format!(
            "lz4 data holds more bytes than the {} declared",
            dst.len()
        ))),
        Err(e) => Err(corrupt(e)),
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

    #[test]
    fn lz4_round_trip_and_length_checks() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 17) as u8).collect();
        let mut out = b"xx".to_vec();
        let n = lz4_compress_append(&data, &mut out).unwrap();
        assert_eq!(out.len(), n + 2);
        let frame = &out[2..];
        let mut dst = vec![0u8; data.len()];
        lz4_decompress_exact(frame, &mut dst).unwrap();
        assert_eq!(dst, data);
        let mut short = vec![0u8; data.len() - 1];
        assert!(lz4_decompress_exact(frame, &mut short).is_err());
        let mut long = vec![0u8; data.len() + 1];
        assert!(lz4_decompress_exact(frame, &mut long).is_err());
        // Cuts inside the header or the data (lz4_flex tolerates a missing end mark, which loses
        // nothing).
        for cut in [0, 1, 5, frame.len() / 2, frame.len() - 5] {
            assert!(lz4_decompress_exact(&frame[..cut], &mut dst).is_err());
        }
    }
}
