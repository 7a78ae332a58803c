//! Streaming: a frame compressed a piece at a time, and decompressed a piece at a time with a
//! bound on what each call returns, as `compression.zstd`'s compressor and decompressor
//! objects (and the file object over them) work. The contexts are the pool's: a frame in
//! progress holds its lease, and the context can go back between frames.

use zstd_safe::{InBuffer, OutBuffer, ResetDirective};
use zstd_sys::ZSTD_EndDirective;

use super::{zstd_err, Compressor, Decompressor, RawOut};
use crate::error::{Error, Result};
use crate::output::{Output, OutputTail};

/// How much room a streaming call gives zstd at a time: zstd's own recommended output size
/// (`ZSTD_CStreamOutSize`, a block and its header).
pub const STEP: usize = (128 << 10) + 512;

/// The most a streaming compression call reserves before zstd writes (its input's bound,
/// up to this).
const MAX_UPFRONT: usize = 64 << 20;

/// The room a streaming compression call of `len` input bytes is given before zstd writes:
/// zstd's bound for the input (up to a cap), and a block's bound more for what the context
/// holds from earlier calls (a partial block this input completes, or what a flush emits).
/// Without worker threads a call's output fits in it, so an output allocated with it up front
/// is not grown; with workers, a call can emit jobs compressed during earlier calls, and the
/// output grows.
pub fn compress_stream_room(len: usize) -> usize {
    zstd_safe::compress_bound(len).min(MAX_UPFRONT) + STEP
}

/// How a streaming compressor's call ends (zstd's end directives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Emit what zstd is ready to; keep the rest for later calls.
    Continue,
    /// Emit everything taken so far as complete blocks; the frame stays open.
    Block,
    /// End the frame.
    Frame,
}

impl Compressor {
    /// The size of the next frame, written in its header and checked against what it is
    /// given (None: unknown). Only before a frame's first byte.
    pub fn pledge(&mut self, size: Option<u64>) -> Result<()> {
        self.cctx
            .set_pledged_src_size(size)
            .map(|_| ())
            .map_err(|c| zstd_err("setting the pledged input size", c))
    }

    /// Takes `src` into the frame in progress (starting one if none is), appending what zstd
    /// emits to `out` (a Vec, or the bindings' bytes object, written where it is returned);
    /// `flush` says how much must be emitted before this returns. A failed call abandons the
    /// frame, and the context is not reused: after a failure with worker threads, zstd (up to
    /// 1.5.7) can keep a stale job that crashes the next multi-threaded frame, so zstd-safe
    /// refuses every later frame on it (and a failure without workers is too rare to be worth
    /// telling apart).
    pub fn compress_stream<O: Output + ?Sized>(
        &mut self,
        src: &[u8],
        flush: Flush,
        out: &mut O,
    ) -> Result<()> {
        let result = self.compress_stream_once(src, flush, out);
        if result.is_err() {
            self.stream_failed = true;
        }
        result
    }

    fn compress_stream_once<O: Output + ?Sized>(
        &mut self,
        src: &[u8],
        flush: Flush,
        out: &mut O,
    ) -> Result<()> {
        let directive = match flush {
            Flush::Continue => ZSTD_EndDirective::ZSTD_e_continue,
            Flush::Block => ZSTD_EndDirective::ZSTD_e_flush,
            Flush::Frame => ZSTD_EndDirective::ZSTD_e_end,
        };
        let mut input = InBuffer::around(src);
        // Room for all of this call's output at once, so that a large piece's output is not
        // moved by growth on the way, nor a bytes output grown (which takes the GIL back).
        // The memory is only touched as zstd writes.
        out.grow_for(compress_stream_room(src.len())).map_err(|_| {
            Error::Memory(format!(
                "room for the compressed output of {} bytes",
                src.len()
            ))
        })?;
        loop {
            // Every call gets at least a block's bound, which zstd writes into directly (with
            // less it compresses into its own buffer and copies out).
            out.grow_for(STEP).map_err(|_| {
                Error::Memory(format!(
                    "room for compressed output past {} bytes",
                    out.len()
                ))
            })?;
            let remaining = {
                let mut tail = OutputTail::new(out);
                let mut output = OutBuffer::around(&mut tail);
                let r = self
                    .cctx
                    .compress_stream2(&mut output, &mut input, directive);
                self.finish_op(r)?
            };
            let taken = input.pos() == src.len();
            let done = match flush {
                Flush::Continue => taken,
                Flush::Block | Flush::Frame => taken && remaining == 0,
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Abandons the frame in progress, if any: the next call starts a new one.
    pub fn abandon_frame(&mut self) {
        let _ = self.cctx.reset(ResetDirective::SessionOnly);
    }
}

impl Decompressor {
    /// Decompresses from `src[*pos..]`, advancing `*pos` past what zstd took, and appends to
    /// `out` (a Vec, or the bindings' bytes object, written where it is returned) until it
    /// holds `limit` bytes (None: no bound), the input runs out, or the frame ends. Returns
    /// whether the frame ended. A failed call abandons the frame.
    pub fn decompress_stream<O: Output + ?Sized>(
        &mut self,
        src: &[u8],
        pos: &mut usize,
        out: &mut O,
        limit: Option<usize>,
    ) -> Result<bool> {
        let mut step = STEP;
        let mut first = true;
        loop {
            let room = limit.map_or(usize::MAX, |l| l.saturating_sub(out.len()));
            // With no room zstd is still called once: it reads a header, or a whole skippable
            // frame, without writing a byte.
            if room == 0 && !first {
                return Ok(false);
            }
            first = false;
            let want = room.min(step);
            if out.capacity() - out.len() < want {
                // The room doubles with each step, so that exact growth stays amortized.
                out.try_reserve_exact(want).map_err(|_| {
                    Error::Memory(format!("{want} more bytes of decompressed output"))
                })?;
            }
            let spare = (out.capacity() - out.len()).min(room);
            let before = *pos;
            let (frame_ended, filled) = {
                // SAFETY: the spare capacity after `out.len()` is writable for `spare` bytes.
                let mut raw = RawOut {
                    ptr: unsafe { out.as_mut_ptr().add(out.len()) },
                    cap: spare,
                    filled: 0,
                };
                let mut output = OutBuffer::around(&mut raw);
                let mut input = InBuffer::around(&src[*pos..]);
                let r = self.dctx.decompress_stream(&mut output, &mut input);
                *pos += input.pos();
                let r = self.finish_op(r)?;
                (r == 0, output.pos())
            };
            // SAFETY: zstd wrote the first `filled` bytes of the spare room.
            unsafe { out.set_len(out.len() + filled) };
            if frame_ended {
                return Ok(true);
            }
            if spare == 0 {
                return Ok(false);
            }
            let took_all = *pos == src.len();
            if took_all && filled < spare {
                // zstd has room left and wants more input.
                return Ok(false);
            }
            if filled == 0 && *pos == before {
                return Err(Error::Corrupt(
                    "corrupt zstd data: the decompressor made no progress".into(),
                ));
            }
            step = step.saturating_mul(2).min(64 << 20);
        }
    }

    /// Abandons the frame in progress, if any.
    pub fn abandon_frame(&mut self) {
        let _ = self.dctx.reset(ResetDirective::SessionOnly);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::context::{CompressParams, DecompressParams};
    use crate::dict::ZstdDict;

    fn data() -> Vec<u8> {
        (0..60_000u32)
            .flat_map(|i| format!("row {} of {}\n", i % 700, i % 13).into_bytes())
            .collect()
    }

    /// Decompresses the frame `frame` in one call on `d`.
    fn read_back_with(d: &mut Decompressor, frame: &[u8]) -> Vec<u8> {
        let (mut pos, mut out) = (0, Vec::new());
        assert!(d
            .decompress_stream(frame, &mut pos, &mut out, None)
            .unwrap());
        out
    }

    /// Decompresses `frame` giving zstd `piece` input bytes and at most `limit` output bytes a
    /// call; returns the data and what followed the frame.
    fn read_back(frame: &[u8], piece: usize, limit: Option<usize>) -> (Vec<u8>, Vec<u8>) {
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let end = (at + piece).min(frame.len());
            let mut pos = 0;
            let mut chunk = Vec::new();
            let ended = d
                .decompress_stream(&frame[at..end], &mut pos, &mut chunk, limit)
                .unwrap();
            if let Some(l) = limit {
                assert!(chunk.len() <= l);
            }
            out.extend_from_slice(&chunk);
            at += pos;
            if ended {
                return (out, frame[at..].to_vec());
            }
            assert!(at < frame.len() || !chunk.is_empty(), "no progress at {at}");
        }
    }

    #[test]
    fn every_flush_mode_makes_one_readable_frame() {
        let data = data();
        let mut c = Compressor::new(CompressParams::level(3)).unwrap();
        let mut frame = Vec::new();
        for (i, piece) in data.chunks(7_000).enumerate() {
            let flush = if i % 3 == 1 {
                Flush::Block
            } else {
                Flush::Continue
            };
            let before = frame.len();
            c.compress_stream(piece, flush, &mut frame).unwrap();
            if flush == Flush::Block {
                // A flushed block is complete: what came so far reads back on its own.
                assert!(frame.len() > before);
            }
        }
        c.compress_stream(b"", Flush::Frame, &mut frame).unwrap();
        frame.extend_from_slice(b"tail");
        for (piece, limit) in [(frame.len(), None), (333, Some(1000)), (1, Some(1))] {
            let (out, rest) = read_back(&frame, piece, limit);
            assert_eq!(out, data);
            assert_eq!(rest, b"tail");
        }
    }

    #[test]
    fn a_fixed_buffer_is_filled_in_place_and_never_past_its_end() {
        use crate::output::SliceOutput;
        let data = data();
        let mut frame = Vec::new();
        Compressor::new(CompressParams::level(3))
            .unwrap()
            .compress_stream(&data, Flush::Frame, &mut frame)
            .unwrap();
        // Buffers smaller than, around and larger than zstd's step, each filled whole until
        // the last; the byte past each buffer's room is never written.
        for size in [
            1,
            4_096,
            STEP - 1,
            STEP,
            STEP + 1,
            3 * STEP,
            data.len() + 10,
        ] {
            let mut d = Decompressor::new(DecompressParams::default()).unwrap();
            let (mut read, mut pos, mut ended) = (Vec::new(), 0, false);
            let mut buf = vec![0xA5u8; size + 1];
            while !ended {
                let (room, guard) = buf.split_at_mut(size);
                let mut out = SliceOutput::new(room);
                ended = d
                    .decompress_stream(&frame, &mut pos, &mut out, Some(size))
                    .unwrap();
                let n = out.len();
                assert!(ended || n == size, "{n} of {size} before the end");
                assert_eq!(guard, [0xA5]);
                read.extend_from_slice(&buf[..n]);
            }
            assert_eq!(read, data, "buffer of {size}");
            assert_eq!(pos, frame.len());
        }
        // Without a limit, the buffer's end fails the call rather than being written past.
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let mut buf = vec![0u8; 10];
        let mut out = SliceOutput::new(&mut buf);
        let mut pos = 0;
        assert!(d
            .decompress_stream(&frame, &mut pos, &mut out, None)
            .is_err());
    }

    #[test]
    fn a_zero_limit_reads_a_skippable_frame_whole() {
        // Magic 0x184D2A50, 4 bytes of content.
        let skippable = [0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let (mut pos, mut out) = (0, Vec::new());
        assert!(d
            .decompress_stream(&skippable, &mut pos, &mut out, Some(0))
            .unwrap());
        assert_eq!((pos, out.len()), (skippable.len(), 0));
    }

    #[test]
    fn a_broken_pledge_abandons_the_frame_and_the_next_one_is_whole() {
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        c.pledge(Some(10)).unwrap();
        let mut out = Vec::new();
        assert!(c
            .compress_stream(&[b'x'; 11], Flush::Continue, &mut out)
            .is_err());
        let mut frame = Vec::new();
        c.compress_stream(b"fine", Flush::Frame, &mut frame)
            .unwrap();
        assert_eq!(read_back(&frame, frame.len(), None).0, b"fine");
    }

    #[test]
    fn a_prefix_serves_one_frame_and_is_forgotten_with_the_context() {
        let content: Vec<u8> = data()[..20_000].to_vec();
        let prefix = Arc::new(ZstdDict::new(&content, true).unwrap());
        let data = data();
        let mut c = Compressor::new(CompressParams::level(3)).unwrap();
        c.use_prefix(&prefix).unwrap();
        let mut with = Vec::new();
        c.compress_stream(&data, Flush::Frame, &mut with).unwrap();
        // Back in the pool: the next frame is written without the prefix.
        assert!(c.recycle(usize::MAX));
        let mut without = Vec::new();
        c.compress_stream(&data, Flush::Frame, &mut without)
            .unwrap();
        assert!(with.len() < without.len());
        assert_eq!(read_back(&without, without.len(), None).0, data);

        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let (mut pos, mut out) = (0, Vec::new());
        assert!(d
            .decompress_stream(&with, &mut pos, &mut out, None)
            .is_err());
        d.use_prefix(&prefix).unwrap();
        let (mut pos, mut out) = (0, Vec::new());
        assert!(d
            .decompress_stream(&with, &mut pos, &mut out, None)
            .unwrap());
        assert_eq!(out, data);
    }

    #[test]
    fn a_prefix_referenced_but_not_used_is_dropped_on_the_way_back() {
        let content: Vec<u8> = data()[..20_000].to_vec();
        let prefix = Arc::new(ZstdDict::new(&content, true).unwrap());
        let data = data();
        let mut without = Vec::new();
        Compressor::new(CompressParams::level(3))
            .unwrap()
            .compress_stream(&data, Flush::Frame, &mut without)
            .unwrap();
        // Referenced, then the user goes away before a frame starts.
        let mut c = Compressor::new(CompressParams::level(3)).unwrap();
        c.use_prefix(&prefix).unwrap();
        assert!(c.recycle(usize::MAX));
        let mut next = Vec::new();
        c.compress_stream(&data, Flush::Frame, &mut next).unwrap();
        assert_eq!(next, without);
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        d.use_prefix(&prefix).unwrap();
        assert!(d.recycle());
        assert_eq!(read_back_with(&mut d, &next), data);
    }

    #[test]
    fn a_failed_stream_is_not_reused() {
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        assert!(c.recycle(usize::MAX));
        // Three bytes pledged, four given in two pieces (a single whole call's size would be
        // taken over the pledge).
        c.pledge(Some(3)).unwrap();
        let mut out = Vec::new();
        c.compress_stream(b"fo", Flush::Continue, &mut out).unwrap();
        assert!(c.compress_stream(b"ur", Flush::Frame, &mut out).is_err());
        assert!(!c.recycle(usize::MAX));
    }

    #[test]
    fn advanced_parameters_are_applied_and_bounded() {
        use crate::context::{compression_bounds, decompression_bounds, Advanced};
        let (lo, hi) = compression_bounds(400).unwrap();
        assert_eq!(lo, 0);
        assert!(hi >= 2, "zstd is built with worker threads");
        assert_eq!(compression_bounds(12345), None);
        assert!(decompression_bounds(100).is_some());
        assert_eq!(decompression_bounds(101), None);

        let data = data();
        let mut plain = Vec::new();
        Compressor::new(CompressParams::level(3))
            .unwrap()
            .compress_stream(&data, Flush::Frame, &mut plain)
            .unwrap();
        for (id, value) in [(107, 1), (400, 2), (200, 0), (160, 1)] {
            let mut advanced = Advanced::EMPTY;
            advanced.set(id, value).unwrap();
            let params = CompressParams {
                advanced,
                ..CompressParams::level(3)
            };
            let mut frame = Vec::new();
            Compressor::new(params)
                .unwrap()
                .compress_stream(&data, Flush::Frame, &mut frame)
                .unwrap();
            assert_eq!(read_back(&frame, frame.len(), None).0, data, "{id}={value}");
            if id == 107 {
                // The fastest strategy writes a larger frame than level 3's own.
                assert!(frame.len() > plain.len());
            }
            if id == 200 {
                assert_eq!(crate::context::frame_header(&frame), Some((None, 0)));
            }
        }
        let mut named_elsewhere = Advanced::EMPTY;
        assert!(named_elsewhere.set(101, 20).is_err());
    }
}
