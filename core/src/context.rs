//! zstd contexts as the pool holds them: a context plus the parameters it was built with,
//! so that it can be reset and handed to the next caller with the same parameters.

use zstd_safe::{CCtx, CParameter, DCtx, DParameter, ResetDirective, WriteBuf};

use std::sync::Arc;

mod advanced;
mod stream;

pub use advanced::{compression_bounds, decompression_bounds, Advanced, PARAMETERS};
pub use stream::{compress_stream_room, Flush, STEP as STREAM_STEP};

use crate::dict::{PreparedC, PreparedD, ZstdDict};
use crate::error::{zstd_error_name, Error, Result};
use crate::output::{Output, OutputTail};

/// The default level of the codec API, the same as zstd's and python-zstandard's.
pub const DEFAULT_LEVEL: i32 = 3;

/// The lowest level zstd accepts (its fastest, negative, mode).
pub fn min_level() -> i32 {
    zstd_safe::min_c_level()
}

/// The linked zstd's version, as major * 10000 + minor * 100 + patch.
pub fn zstd_version_number() -> u32 {
    zstd_safe::version_number()
}

/// The highest level zstd accepts.
pub fn max_level() -> i32 {
    zstd_safe::max_c_level()
}

/// Everything that changes a compressor's output. Two contexts with equal params give
/// byte-identical frames for the same input, so they may stand in for each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompressParams {
    /// zstd level, from [`min_level`] to [`max_level`]; 0 means zstd's default (3).
    pub level: i32,
    /// Append a 32-bit content checksum to each frame.
    pub checksum: bool,
    /// log2 of the window size; 0 lets the level choose.
    pub window_log: u32,
    /// Record the dictionary's id in frames written with one (zstd's default), so that a
    /// reader can tell which dictionary a frame needs.
    pub write_dict_id: bool,
    /// zstd's other parameters, as `compression.zstd`'s options set them.
    pub advanced: Advanced,
}

impl CompressParams {
    /// Parameters for `level` with zstd's defaults otherwise.
    pub const fn level(level: i32) -> Self {
        CompressParams {
            level,
            checksum: false,
            window_log: 0,
            write_dict_id: true,
            advanced: Advanced::EMPTY,
        }
    }

    /// Checks the parameters against what this zstd build accepts.
    pub fn validate(&self) -> Result<()> {
        if self.level < min_level() || self.level > max_level() {
            return Err(Error::Parameter(format!(
                "invalid zstd level {}: levels run from {} to {}",
                self.level,
                min_level(),
                max_level()
            )));
        }
        if self.window_log != 0 {
            let (lo, hi) = (WINDOW_LOG_MIN, ZSTD_WINDOW_LOG_MAX);
            if self.window_log < lo || self.window_log > hi {
                return Err(Error::Parameter(format!(
                    "invalid window_log {}: it must be 0 (the level's default) or from {lo} to {hi}",
                    self.window_log
                )));
            }
        }
        Ok(())
    }
}

impl Default for CompressParams {
    fn default() -> Self {
        Self::level(DEFAULT_LEVEL)
    }
}

/// Everything that changes what a decompressor accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DecompressParams {
    /// log2 of the largest window a frame may ask for; 0 keeps zstd's default (27, 128 MiB).
    pub window_log_max: u32,
}

impl DecompressParams {
    /// Checks the parameters against what this zstd build accepts.
    pub fn validate(&self) -> Result<()> {
        if self.window_log_max != 0 {
            let (lo, hi) = (WINDOW_LOG_MIN, ZSTD_WINDOW_LOG_MAX);
            if self.window_log_max < lo || self.window_log_max > hi {
                return Err(Error::Parameter(format!(
                    "invalid window_log_max {}: it must be 0 (zstd's default) or from {lo} to {hi}",
                    self.window_log_max
                )));
            }
        }
        Ok(())
    }
}

/// The smallest window log zstd accepts.
pub const WINDOW_LOG_MIN: u32 = 10;
/// The largest window log the codec's arguments offer. zstd's limit on 64-bit targets is 31
/// (a 2 GiB window, which readers refuse unless told to accept it), which zstdpool.zstd's
/// options take, as `compression.zstd`'s do ([`ZSTD_WINDOW_LOG_MAX`]).
pub const WINDOW_LOG_MAX: u32 = 30;
/// zstd's own limit on 64-bit targets, which the parameters are checked against.
pub const ZSTD_WINDOW_LOG_MAX: u32 = 31;

fn zstd_err(what: &str, code: usize) -> Error {
    Error::Compress(format!("{what}: {}", zstd_error_name(code)))
}

/// A zstd compression context with its parameters set, and the scratch buffer it compresses
/// into when the caller needs the frame before it knows where it goes.
pub struct Compressor {
    // Declared before `dict`, so freed before the dictionary it may reference.
    cctx: CCtx<'static>,
    params: CompressParams,
    scratch: Vec<u8>,
    /// The prepared dictionary the context references, kept alive while it does.
    dict: Option<Arc<PreparedC>>,
    /// The dictionary whose content is the prefix of the frame in progress, kept alive while
    /// the context may read it.
    prefix: Option<Arc<ZstdDict>>,
    /// A streaming call failed: the context is freed rather than reused (see
    /// `compress_stream`).
    stream_failed: bool,
}

// SAFETY-free: CCtx is Send; Compressor holds nothing else that is tied to a thread.

impl Compressor {
    /// Allocates a context for `params`. Costly: this is what the pool saves.
    pub fn new(params: CompressParams) -> Result<Self> {
        params.validate()?;
        let mut cctx =
            CCtx::try_create().ok_or_else(|| Error::Memory("zstd compression context".into()))?;
        cctx.set_parameter(CParameter::CompressionLevel(params.level))
            .map_err(|c| zstd_err("setting the level", c))?;
        if params.checksum {
            cctx.set_parameter(CParameter::ChecksumFlag(true))
                .map_err(|c| zstd_err("setting the checksum flag", c))?;
        }
        if params.window_log != 0 {
            cctx.set_parameter(CParameter::WindowLog(params.window_log))
                .map_err(|c| zstd_err("setting the window log", c))?;
        }
        if !params.write_dict_id {
            cctx.set_parameter(CParameter::DictIdFlag(false))
                .map_err(|c| zstd_err("setting the dictionary id flag", c))?;
        }
        params.advanced.apply(&mut cctx)?;
        Ok(Compressor {
            cctx,
            params,
            scratch: Vec::new(),
            dict: None,
            prefix: None,
            stream_failed: false,
        })
    }

    /// Compresses the next frames with `dict` (prepared for this context's level), or with no
    /// dictionary. The reference lasts until the context goes back to its pool.
    pub fn use_dict(&mut self, dict: Option<&ZstdDict>) -> Result<()> {
        let Some(dict) = dict else {
            return self.drop_dict();
        };
        let prepared = dict.cdict(self.params.level)?;
        if self
            .dict
            .as_ref()
            .is_some_and(|d| Arc::ptr_eq(d, &prepared))
        {
            return Ok(());
        }
        // The CDict outlives the reference: `self.dict` holds it until `drop_dict`.
        self.cctx
            .ref_cdict(&prepared.dict)
            .map_err(|c| zstd_err("referencing the dictionary", c))?;
        self.dict = Some(prepared);
        Ok(())
    }

    /// Compresses the next frame with `dict`'s content as its prefix (zstd's
    /// `ZSTD_CCtx_refPrefix`): the frame records no dictionary id, and its reader must be given
    /// the same prefix. zstd forgets the prefix when the frame ends; the reference to the
    /// content is kept until the context goes back to its pool.
    pub fn use_prefix(&mut self, dict: &Arc<ZstdDict>) -> Result<()> {
        self.drop_dict()?;
        // SAFETY: `self.prefix` keeps the content alive, and `drop_dict` (on the way back to
        // the pool, or before another dictionary) makes zstd forget it before it is let go.
        let content: &'static [u8] = unsafe { &*std::ptr::from_ref(dict.content()) };
        self.cctx
            .ref_prefix(content)
            .map_err(|c| zstd_err("referencing the prefix", c))?;
        self.prefix = Some(dict.clone());
        Ok(())
    }

    /// Back to compressing without a dictionary or prefix.
    fn drop_dict(&mut self) -> Result<()> {
        if self.dict.is_some() || self.prefix.is_some() {
            self.cctx
                .disable_dictionary()
                .map_err(|c| zstd_err("dropping the dictionary", c))?;
            self.dict = None;
            self.prefix = None;
        }
        Ok(())
    }

    /// The parameters this context compresses with.
    pub fn params(&self) -> CompressParams {
        self.params
    }

    /// Whether this context was made for `params`, compared in place.
    pub fn has_params(&self, params: &CompressParams) -> bool {
        self.params == *params
    }

    /// Compresses `src` as one frame appended to `out`; returns the frame's length.
    /// `out` grows by compressBound(src), or an eighth of its length if that is more, and
    /// ends exactly at the frame.
    pub fn compress_append<O: Output + ?Sized>(
        &mut self,
        src: &[u8],
        out: &mut O,
    ) -> Result<usize> {
        out.grow_for(zstd_safe::compress_bound(src.len()))?;
        let mut tail = OutputTail::new(out);
        let result = self.cctx.compress2(&mut tail, src);
        self.finish_op(result)
    }

    /// Compresses `src` as one frame into the context's scratch buffer and returns it.
    /// The scratch is kept for the next call (up to the pool's scratch cap).
    pub fn compress_to_scratch(&mut self, src: &[u8]) -> Result<&[u8]> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let result = self.compress_append(src, &mut scratch);
        self.scratch = scratch;
        let n = result?;
        Ok(&self.scratch[..n])
    }

    /// After a failed call the context may hold a half-written frame; reset it so the next
    /// call starts clean.
    fn finish_op(&mut self, result: zstd_safe::SafeResult) -> Result<usize> {
        result.map_err(|code| {
            let _ = self.cctx.reset(ResetDirective::SessionOnly);
            zstd_err("compress", code)
        })
    }

    /// Bytes this context holds: zstd's own measure plus the scratch buffer.
    pub fn held_bytes(&self) -> usize {
        self.cctx.sizeof() + self.scratch.capacity()
    }

    /// Capacity of the scratch buffer alone.
    pub fn scratch_bytes(&self) -> usize {
        self.scratch.capacity()
    }

    /// Readies the context for its next user: ends any session (parameters are kept, so the
    /// next frame equals a fresh context's) and frees scratch above `max_scratch`.
    /// Returns false when the context cannot be reused and should be freed.
    pub fn recycle(&mut self, max_scratch: usize) -> bool {
        if self.stream_failed {
            return false;
        }
        if self.scratch.capacity() > max_scratch {
            self.scratch = Vec::new();
        } else {
            self.scratch.clear();
        }
        // The session first: zstd refuses to change dictionaries in the middle of a frame.
        self.cctx.reset(ResetDirective::SessionOnly).is_ok() && self.drop_dict().is_ok()
    }

    /// Frees the scratch buffer (kept contexts are then only zstd's own memory).
    pub fn drop_scratch(&mut self) -> usize {
        let freed = self.scratch.capacity();
        self.scratch = Vec::new();
        freed
    }
}

/// A zstd decompression context with its parameters set.
pub struct Decompressor {
    // Declared before `dict`, so freed before the dictionary it may reference.
    dctx: DCtx<'static>,
    params: DecompressParams,
    /// The dictionary the context references, kept alive while it does; its id is checked
    /// against each frame's before decompressing.
    dict: Option<(Arc<PreparedD>, u32, bool)>,
    /// The dictionary whose content is the prefix of the frame in progress, as for
    /// [`Compressor`].
    prefix: Option<Arc<ZstdDict>>,
}

impl Decompressor {
    /// Allocates a context for `params`.
    pub fn new(params: DecompressParams) -> Result<Self> {
        params.validate()?;
        let mut dctx =
            DCtx::try_create().ok_or_else(|| Error::Memory("zstd decompression context".into()))?;
        if params.window_log_max != 0 {
            dctx.set_parameter(DParameter::WindowLogMax(params.window_log_max))
                .map_err(|c| zstd_err("setting the window log limit", c))?;
        }
        Ok(Decompressor {
            dctx,
            params,
            dict: None,
            prefix: None,
        })
    }

    /// Decompresses the next frame with `dict`'s content as its prefix (see
    /// [`Compressor::use_prefix`]).
    pub fn use_prefix(&mut self, dict: &Arc<ZstdDict>) -> Result<()> {
        self.drop_dict()?;
        // SAFETY: as in `Compressor::use_prefix`.
        let content: &'static [u8] = unsafe { &*std::ptr::from_ref(dict.content()) };
        self.dctx
            .ref_prefix(content)
            .map_err(|c| zstd_err("referencing the prefix", c))?;
        self.prefix = Some(dict.clone());
        Ok(())
    }

    /// Decompresses the next frames with `dict`, or with no dictionary. The reference lasts
    /// until the context goes back to its pool.
    pub fn use_dict(&mut self, dict: Option<&ZstdDict>) -> Result<()> {
        let Some(dict) = dict else {
            return self.drop_dict();
        };
        let prepared = dict.ddict()?;
        if self
            .dict
            .as_ref()
            .is_some_and(|d| Arc::ptr_eq(&d.0, &prepared))
        {
            return Ok(());
        }
        // The DDict outlives the reference: `self.dict` holds it until `drop_dict`.
        self.dctx
            .ref_ddict(&prepared.dict)
            .map_err(|c| zstd_err("referencing the dictionary", c))?;
        self.dict = Some((prepared, dict.id(), dict.is_raw()));
        Ok(())
    }

    fn drop_dict(&mut self) -> Result<()> {
        if self.dict.is_some() || self.prefix.is_some() {
            self.dctx
                .disable_dictionary()
                .map_err(|c| zstd_err("dropping the dictionary", c))?;
            self.dict = None;
            self.prefix = None;
        }
        Ok(())
    }

    /// Fails, naming the dictionary id a frame records, when this context's dictionary is
    /// not that one.
    fn check_dict(&self, src: &[u8]) -> Result<()> {
        let Some(wanted) = zstd_safe::get_dict_id_from_frame(src).map(std::num::NonZeroU32::get)
        else {
            return Ok(());
        };
        let given = self.dict.as_ref().map(|(_, id, raw)| (*id, *raw));
        crate::dict::dict_mismatch(wanted, given)
    }

    /// The parameters of this context.
    pub fn params(&self) -> DecompressParams {
        self.params
    }

    /// Decompresses `src` (one or more whole frames) into exactly `dst`. Fails unless the
    /// frames hold exactly `dst.len()` bytes.
    pub fn decompress_exact(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.decompress_exact_to(src, dst)
    }

    /// [`Self::decompress_exact`] into `len` bytes at `dst` that need not be initialized (a
    /// new Python bytes object): no zeroing pass before zstd writes them.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes, and not read or written by anything else,
    /// for the duration of the call. After an error its contents are unspecified.
    pub unsafe fn decompress_exact_raw(
        &mut self,
        src: &[u8],
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        self.decompress_exact_to(
            src,
            &mut RawOut {
                ptr: dst,
                cap: len,
                filled: 0,
            },
        )
    }

    fn decompress_exact_to<C: WriteBuf + ?Sized>(&mut self, src: &[u8], dst: &mut C) -> Result<()> {
        if src.is_empty() {
            return Err(Error::Corrupt("empty input is not a zstd frame".into()));
        }
        self.check_dict(src)?;
        let expected = dst.capacity();
        // One byte of slack would be needed to notice a frame that is longer than `dst`; zstd
        // reports "destination buffer too small" instead, which says the same.
        let result = self.dctx.decompress(dst, src);
        let n = self.finish_op(result)?;
        if n != expected {
            return Err(Error::Corrupt(format!(
                "zstd data holds {n} bytes, {expected} were expected"
            )));
        }
        Ok(())
    }

    /// Decompresses `src` (one or more whole frames) of unknown total size into a new vector,
    /// failing once the output would pass `limit` bytes. The vector grows as output arrives,
    /// so a frame that claims much and holds little costs little.
    pub fn decompress_streaming(&mut self, src: &[u8], limit: usize) -> Result<Vec<u8>> {
        use zstd_safe::{InBuffer, OutBuffer};
        if src.is_empty() {
            return Err(Error::Corrupt("empty input is not a zstd frame".into()));
        }
        self.check_dict(src)?;
        // A session left open by an earlier failure must not leak into this one.
        let _ = self.dctx.reset(ResetDirective::SessionOnly);
        let mut out: Vec<u8> = Vec::new();
        let mut input = InBuffer::around(src);
        let mut step = 64 * 1024;
        loop {
            let in_before = input.pos();
            let out_before = out.len();
            let finished_frame = if out.len() == out.capacity() && out.len() >= limit {
                // At the limit: a one-byte probe tells whether zstd has more to give.
                let mut probe = [0u8; 1];
                let mut pout = OutBuffer::around(&mut probe[..]);
                let r = self.dctx.decompress_stream(&mut pout, &mut input);
                let r = self.finish_op(r)?;
                if pout.pos() > 0 {
                    return Err(Error::Limit(format!(
                        "decompressed data is larger than max_output_size ({limit} bytes)"
                    )));
                }
                r == 0
            } else {
                if out.len() == out.capacity() {
                    out.try_reserve_exact(step.min(limit - out.len()))?;
                    step = step.saturating_mul(2).min(64 << 20);
                }
                let mut tail = OutputTail::new(&mut out);
                let mut output = OutBuffer::around(&mut tail);
                let r = self.dctx.decompress_stream(&mut output, &mut input);
                self.finish_op(r)? == 0
            };
            let consumed_all = input.pos() == src.len();
            if finished_frame && consumed_all {
                return Ok(out);
            }
            let room_left = out.len() < out.capacity();
            let no_progress = input.pos() == in_before && out.len() == out_before;
            if no_progress || (consumed_all && room_left) {
                // zstd has all the input and room to write, and still wants more input.
                let _ = self.dctx.reset(ResetDirective::SessionOnly);
                return Err(truncated());
            }
        }
    }

    /// Decompresses `src` (one or more whole frames) into the front of `dst`; returns the
    /// number of bytes written. Bytes of `dst` past that count are left as they were (zstd
    /// would otherwise use them as scratch). Fails when the output does not fit.
    pub fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        let room = dst.len();
        if let ContentSize::Known(n) = frame_content_size(src)? {
            if is_single_frame(src) {
                if n > room as u64 {
                    return Err(Error::Limit(format!(
                        "the zstd frame holds {n} bytes and the output buffer has room for {room}"
                    )));
                }
                let n = n as usize;
                self.decompress_exact(src, &mut dst[..n])?;
                return Ok(n);
            }
        }
        // Unknown size or several frames: decompress aside (bounded by the room), then copy.
        let out = self.decompress_streaming(src, room).map_err(|e| match e {
            Error::Limit(_) => Error::Limit(format!(
                "the decompressed data does not fit the output buffer ({room} bytes)"
            )),
            other => other,
        })?;
        dst[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    fn finish_op(&mut self, result: zstd_safe::SafeResult) -> Result<usize> {
        result.map_err(|code| {
            let _ = self.dctx.reset(ResetDirective::SessionOnly);
            if is_dictionary_wrong(code) {
                // A later frame of several; the first frame's id was checked before.
                return Error::Corrupt(
                    "corrupt zstd data: a frame needs another dictionary than the one given \
                     (Dictionary mismatch)"
                        .into(),
                );
            }
            Error::Corrupt(format!("corrupt zstd data: {}", zstd_error_name(code)))
        })
    }

    /// Bytes this context holds, by zstd's own measure.
    pub fn held_bytes(&self) -> usize {
        self.dctx.sizeof()
    }

    /// Readies the context for its next user. Returns false when it should be freed.
    pub fn recycle(&mut self) -> bool {
        self.dctx.reset(ResetDirective::SessionOnly).is_ok() && self.drop_dict().is_ok()
    }
}

fn is_dictionary_wrong(code: usize) -> bool {
    // SAFETY: FFI on an error code.
    let kind = unsafe { zstd_sys::ZSTD_getErrorCode(code) };
    kind == zstd_sys::ZSTD_ErrorCode::ZSTD_error_dictionary_wrong
}

fn truncated() -> Error {
    Error::Corrupt("corrupt zstd data: the input ends inside a frame (truncated?)".into())
}

/// What a zstd frame header says about the data it holds.
pub enum ContentSize {
    /// The header records the size.
    Known(u64),
    /// The frame was written without a size (streaming writers do this).
    Unknown,
}

/// Reads the content size from the header of the frame at the start of `src`.
pub fn frame_content_size(src: &[u8]) -> Result<ContentSize> {
    match zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) => Ok(ContentSize::Known(n)),
        Ok(None) => Ok(ContentSize::Unknown),
        Err(_) if src.is_empty() => Err(Error::Corrupt("empty input is not a zstd frame".into())),
        Err(_) => Err(Error::Corrupt(
            "corrupt zstd data: the input does not start with a valid zstd frame header".into(),
        )),
    }
}

/// The data size (None when not recorded) and the dictionary id (0 for none) in the header of
/// the frame at the start of `src`; None when no whole frame header starts it.
pub fn frame_header(src: &[u8]) -> Option<(Option<u64>, u32)> {
    let size = zstd_safe::get_frame_content_size(src).ok()?;
    let id = zstd_safe::get_dict_id_from_frame(src).map_or(0, |id| id.get());
    Some((size, id))
}

/// The size of the whole frame at the start of `src`, or zstd's reason it has none.
pub fn frame_size(src: &[u8]) -> std::result::Result<usize, &'static str> {
    zstd_safe::find_frame_compressed_size(src).map_err(zstd_error_name)
}

/// Whether `src` is exactly one complete frame (and so its header's size is the whole output).
pub fn is_single_frame(src: &[u8]) -> bool {
    matches!(zstd_safe::find_frame_compressed_size(src), Ok(n) if n == src.len())
}

/// Memory zstd writes into that need not be initialized first.
struct RawOut {
    ptr: *mut u8,
    cap: usize,
    filled: usize,
}

// SAFETY: `decompress_exact_raw`'s caller guarantees `ptr` is writable for `cap` bytes;
// `as_slice` covers only the `filled` bytes zstd-safe reports as written.
unsafe impl WriteBuf for RawOut {
    fn as_slice(&self) -> &[u8] {
        if self.filled == 0 {
            return &[];
        }
        // SAFETY: the first `filled` bytes were written by zstd.
        unsafe { std::slice::from_raw_parts(self.ptr, self.filled) }
    }

    fn capacity(&self) -> usize {
        self.cap
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_exact_size() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut c = Compressor::new(CompressParams::level(3)).unwrap();
        let frame = c.compress_to_scratch(&data).unwrap().to_vec();
        assert!(frame.len() < data.len());
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let mut out = vec![0u8; data.len()];
        d.decompress_exact(&frame, &mut out).unwrap();
        assert_eq!(out, data);
        let streamed = d.decompress_streaming(&frame, data.len()).unwrap();
        assert_eq!(streamed, data);
    }

    #[test]
    fn streaming_limit_is_enforced() {
        let data = vec![7u8; 1 << 20];
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        let frame = c.compress_to_scratch(&data).unwrap().to_vec();
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        let err = d.decompress_streaming(&frame, 1000).unwrap_err();
        assert!(matches!(err, Error::Limit(_)), "{err}");
        // The exact limit is allowed.
        assert_eq!(
            d.decompress_streaming(&frame, 1 << 20).unwrap().len(),
            1 << 20
        );
    }

    #[test]
    fn truncated_and_corrupt_frames_fail_cleanly() {
        let data = vec![1u8; 10_000];
        let mut c = Compressor::new(CompressParams::level(3)).unwrap();
        let frame = c.compress_to_scratch(&data).unwrap().to_vec();
        let mut d = Decompressor::new(DecompressParams::default()).unwrap();
        for cut in 0..frame.len() {
            assert!(d.decompress_streaming(&frame[..cut], 1 << 20).is_err());
        }
        let mut out = vec![0u8; data.len() - 1];
        assert!(d.decompress_exact(&frame, &mut out).is_err());
        // The context still works after failures.
        let mut out = vec![0u8; data.len()];
        d.decompress_exact(&frame, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn invalid_params_are_refused() {
        assert!(Compressor::new(CompressParams::level(max_level() + 1)).is_err());
        assert!(Compressor::new(CompressParams::level(min_level() - 1)).is_err());
        let p = CompressParams {
            window_log: 5,
            ..CompressParams::default()
        };
        assert!(Compressor::new(p).is_err());
    }

    #[test]
    fn compress_append_keeps_prefix() {
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        let mut out = b"prefix".to_vec();
        let n = c.compress_append(b"hello hello hello", &mut out).unwrap();
        assert_eq!(out.len(), 6 + n);
        assert_eq!(&out[..6], b"prefix");
    }
}
