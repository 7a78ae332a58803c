//! lz4 frames, Arrow IPC's LZ4_FRAME body codec (lz4 keeps no context worth pooling).

use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::output::{Output, OutputWriter};

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
