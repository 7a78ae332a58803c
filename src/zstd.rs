//! `zstdpool.zstd`'s streaming objects, `ZstdCompressor` and `ZstdDecompressor`, as
//! `compression.zstd` has them, on the pool: an object takes a context on its first call and
//! gives it back when its frame ends (and when it is collected), so that short-lived objects
//! reuse warm contexts. Each object's calls are serialized by a lock of its own, taken without
//! the GIL and never held while waiting for it, as `compression.zstd` serializes them.

use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyTuple};

use crate::buffer::{type_name, ByteView};
use crate::bytes_output::MemoryOutput;
use crate::dict::{PyZstdDict, DIGESTED, PREFIX, UNDIGESTED};
use crate::errors;
use crate::errors::OrRaise as _;
use crate::pool::{pool_or_default, PyContextPool};
use zstdpool_core::context::{
    compress_stream_room, compression_bounds, decompression_bounds, frame_header, frame_size,
    max_level, min_level, CompressParams, Compressor, DecompressParams, Decompressor, Flush,
    DEFAULT_LEVEL, PARAMETERS, STREAM_STEP,
};
use zstdpool_core::dict::ZstdDict;
use zstdpool_core::output::{Output, SliceOutput};
use zstdpool_core::pool::{ContextPool, Lease};

/// The modes of `compress` and `flush` (`compression.zstd`'s numbers).
const CONTINUE: i32 = 0;
const FLUSH_BLOCK: i32 = 1;
const FLUSH_FRAME: i32 = 2;

// zstd's numbers of the parameters `CompressParams` names itself.
const LEVEL: i32 = 100;
const WINDOW_LOG: i32 = 101;
const CHECKSUM: i32 = 201;
const DICT_ID: i32 = 202;
/// The one decompression parameter.
const WINDOW_LOG_MAX: i32 = 100;
const NB_WORKERS: i32 = 400;
const JOB_SIZE: i32 = 401;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How an object uses the dictionary it is given.
#[derive(Clone)]
enum DictUse {
    /// Loaded prepared: the digested and undigested forms both (frames decompress alike).
    Dict(Arc<ZstdDict>),
    /// The content as the prefix of each frame (`ZstdDict.as_prefix`).
    Prefix(Arc<ZstdDict>),
}

impl DictUse {
    /// Readies a compression context for the next frame.
    fn load_c(use_: Option<&DictUse>, c: &mut Compressor) -> zstdpool_core::error::Result<()> {
        match use_ {
            Some(DictUse::Prefix(d)) => c.use_prefix(d),
            Some(DictUse::Dict(d)) => c.use_dict(Some(d)),
            None => c.use_dict(None),
        }
    }

    /// Readies a decompression context for the next frame.
    fn load_d(use_: Option<&DictUse>, d: &mut Decompressor) -> zstdpool_core::error::Result<()> {
        match use_ {
            Some(DictUse::Prefix(p)) => d.use_prefix(p),
            Some(DictUse::Dict(p)) => d.use_dict(Some(p)),
            None => d.use_dict(None),
        }
    }
}

/// A `zstd_dict=` argument: a `ZstdDict`, or the pair one of its `as_*` attributes gives.
fn dict_of(zstd_dict: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DictUse>> {
    let Some(obj) = zstd_dict.filter(|d| !d.is_none()) else {
        return Ok(None);
    };
    if let Ok(d) = obj.cast::<PyZstdDict>() {
        return Ok(Some(DictUse::Dict(d.get().dict.clone())));
    }
    if let Ok(pair) = obj.cast::<PyTuple>() {
        if pair.len() == 2 {
            if let (Ok(d), Ok(kind)) = (
                pair.get_item(0)?.cast::<PyZstdDict>().cloned(),
                pair.get_item(1)?.extract::<i32>(),
            ) {
                let dict = d.get().dict.clone();
                match kind {
                    DIGESTED | UNDIGESTED => return Ok(Some(DictUse::Dict(dict))),
                    PREFIX => return Ok(Some(DictUse::Prefix(dict))),
                    _ => {}
                }
            }
        }
    }
    Err(errors::wrong_type(format!(
        "zstd_dict argument should be a ZstdDict object, not '{}'",
        type_name(obj)
    )))
}

/// The name `compression.zstd` gives compression parameter `id`.
fn compression_name(id: i32) -> Option<&'static str> {
    match id {
        LEVEL => Some("compression_level"),
        WINDOW_LOG => Some("window_log"),
        CHECKSUM => Some("checksum_flag"),
        DICT_ID => Some("dict_id_flag"),
        _ => PARAMETERS.iter().find(|(p, _)| *p == id).map(|(_, n)| *n),
    }
}

/// `compression.zstd`'s error for a parameter zstd refuses: an unknown one, or a value out of
/// its bounds.
fn parameter_error(compress: bool, id: i32, value: i32) -> PyErr {
    let (kind, name, bounds) = if compress {
        ("compression", compression_name(id), compression_bounds(id))
    } else {
        (
            "decompression",
            (id == WINDOW_LOG_MAX).then_some("window_log_max"),
            decompression_bounds(id),
        )
    };
    let name = name.map_or_else(|| format!("unknown parameter (key {id})"), String::from);
    match bounds {
        None => errors::parameter(format!("invalid {kind} parameter '{name}'")),
        Some((lo, hi)) => errors::parameter(format!(
            "{kind} parameter '{name}' received an illegal value {value}; the valid range is \
             [{lo}, {hi}]"
        )),
    }
}

/// `value` as zstd takes it for parameter `id`: 0 is each parameter's default, the number of
/// workers is clamped to zstd's bound and a job size below the smallest is raised to it (as
/// zstd's `ZSTD_CCtx_setParameter` does), and anything else out of bounds is refused.
fn checked(compress: bool, id: i32, value: i32) -> PyResult<i32> {
    let bounds = if compress {
        compression_bounds(id)
    } else {
        decompression_bounds(id)
    };
    match bounds {
        Some(_) if value == 0 => Ok(0),
        Some((lo, hi)) if (lo..=hi).contains(&value) => Ok(value),
        Some((lo, hi)) if compress && id == NB_WORKERS => Ok(value.clamp(lo, hi)),
        Some((lo, _)) if compress && id == JOB_SIZE && (1..lo).contains(&value) => Ok(lo),
        _ => Err(parameter_error(compress, id, value)),
    }
}

/// The pairs of an `options` dict as C ints, checked as `compression.zstd` checks them: a dict
/// (`owner` names the call), no key of the other kind's enum (`foreign`), and keys and values
/// that are ints (`TypeError`) fitting a C int (`OverflowError`).
fn option_pairs(
    options: &Bound<'_, PyAny>,
    owner: &str,
    foreign: &str,
    kind: &str,
) -> PyResult<Vec<(i32, i32)>> {
    let options = options.cast::<PyDict>().map_err(|_| {
        errors::wrong_type(format!(
            "{owner}() argument 'options' must be dict, not {}",
            type_name(options)
        ))
    })?;
    options
        .iter()
        .map(|(key, value)| {
            if key.get_type().name()?.to_str()? == foreign {
                return Err(errors::wrong_type(format!(
                    "{kind} options dictionary key must not be a {foreign} attribute"
                )));
            }
            Ok((key.extract::<i32>()?, value.extract::<i32>()?))
        })
        .collect()
}

/// A copy of input kept between calls, whose failed allocation is a `MemoryError` (its size is
/// the caller's input's).
fn copied(bytes: &[u8]) -> PyResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(bytes.len())
        .map_err(|e| errors::from_core(e.into()))?;
    v.extend_from_slice(bytes);
    Ok(v)
}

/// A compression level checked against zstd's range, with `compression.zstd`'s message.
fn checked_level(level: i32) -> PyResult<i32> {
    let (lo, hi) = (min_level(), max_level());
    if (lo..=hi).contains(&level) {
        Ok(level)
    } else {
        Err(errors::parameter(format!(
            "illegal compression level {level}; the valid range is [{lo}, {hi}]"
        )))
    }
}

/// The compressor's parameters from `level` or `options`.
fn compress_params(
    level: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyAny>>,
) -> PyResult<CompressParams> {
    let level = level.filter(|l| !l.is_none());
    let options = options.filter(|o| !o.is_none());
    let mut params = CompressParams::level(DEFAULT_LEVEL);
    if level.is_some() && options.is_some() {
        return Err(errors::wrong_type(
            "Only one of level or options should be used.",
        ));
    }
    if let Some(level) = level {
        if !level.is_instance_of::<PyInt>() {
            return Err(errors::wrong_type(format!(
                "invalid type for level, expected int, not '{}'",
                type_name(level)
            )));
        }
        params.level = match level.extract::<i32>() {
            Ok(v) => checked_level(v)?,
            Err(_) => {
                return Err(errors::parameter(format!(
                    "illegal compression level; the valid range is [{}, {}]",
                    min_level(),
                    max_level()
                )));
            }
        };
        return Ok(params);
    }
    let Some(options) = options else {
        return Ok(params);
    };
    for (id, v) in option_pairs(
        options,
        "ZstdCompressor",
        "DecompressionParameter",
        "compression",
    )? {
        if id == LEVEL {
            params.level = checked_level(v)?;
            continue;
        }
        let v = checked(true, id, v)?;
        match id {
            WINDOW_LOG => params.window_log = v as u32,
            CHECKSUM => params.checksum = v != 0,
            DICT_ID => params.write_dict_id = v != 0,
            other => params
                .advanced
                .set(other, v)
                .map_err(|_| parameter_error(true, other, v))?,
        }
    }
    Ok(params)
}

/// The decompressor's parameters from `options`.
fn decompress_params(options: Option<&Bound<'_, PyAny>>) -> PyResult<DecompressParams> {
    let mut params = DecompressParams::default();
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok(params);
    };
    for (id, v) in option_pairs(
        options,
        "ZstdDecompressor",
        "CompressionParameter",
        "decompression",
    )? {
        let v = checked(false, id, v)?;
        // zstd's stable API has one decompression parameter; `checked` refused any other.
        params.window_log_max = v as u32;
    }
    Ok(params)
}

/// What a compressor holds between calls.
struct CompressState {
    /// The context, while a frame is in progress.
    lease: Option<Lease<Compressor>>,
    last_mode: i32,
    /// The size pledged for the next frame.
    pledged: Option<u64>,
    /// A frame was started with the prefix: as in `compression.zstd`, a prefix serves the
    /// compressor's first frame only.
    prefix_spent: bool,
}

/// A streaming compressor (`compression.zstd.ZstdCompressor`): `compress(data, mode)` and
/// `flush(mode)` with the modes `CONTINUE`, `FLUSH_BLOCK` and `FLUSH_FRAME`. Its context
/// comes from the pool with its first call of a frame and goes back when the frame ends.
///
/// - `level`: the zstd level (default 3); not with a level in `options`.
/// - `options`: a dict of `CompressionParameter` to int, as `compression.zstd` takes it.
/// - `zstd_dict`: a `ZstdDict` (or its `as_digested_dict`, `as_undigested_dict` or
///   `as_prefix`) to compress with.
#[doc = doc_pool!()]
#[pyclass(name = "ZstdCompressor", module = "zstdpool.zstd", subclass)]
pub struct PyZstdCompressor {
    params: CompressParams,
    dict: Option<DictUse>,
    pool: ContextPool,
    state: Mutex<CompressState>,
}

impl PyZstdCompressor {
    /// Runs one call: takes `data` into the frame with `flush`, starting a frame (and taking a
    /// context) first if none is in progress; an ended frame gives its context back. The
    /// output is built in the bytes object returned, not in a Vec copied into one: allocated
    /// here, with the GIL, with the room zstd is given up front (which a call's output fits
    /// without worker threads, so that it is not grown without the GIL), and shrunk to what
    /// was written (benchmarks/RESULTS.md#compressor-output).
    fn run<'py>(&self, py: Python<'py>, data: &[u8], mode: i32) -> PyResult<Bound<'py, PyBytes>> {
        let flush = match mode {
            CONTINUE => Flush::Continue,
            FLUSH_BLOCK => Flush::Block,
            _ => Flush::Frame,
        };
        let mut out = MemoryOutput::with_capacity(py, compress_stream_room(data.len()))?;
        py.detach(|| {
            let mut state = lock(&self.state);
            if state.lease.is_none() {
                if data.is_empty() && mode == CONTINUE {
                    state.last_mode = mode;
                    return Ok(());
                }
                let mut lease = self.pool.compressor(self.params)?;
                let dict = match &self.dict {
                    Some(DictUse::Prefix(_)) if state.prefix_spent => None,
                    other => other.as_ref(),
                };
                DictUse::load_c(dict, &mut lease)?;
                state.prefix_spent = true;
                if let Some(size) = state.pledged.take() {
                    lease.pledge(Some(size))?;
                }
                state.lease = Some(lease);
            }
            let lease = state.lease.as_mut().expect("taken above");
            let result = lease.compress_stream(data, flush, &mut out);
            state.last_mode = mode;
            if result.is_err() || flush == Flush::Frame {
                // The frame ended, or failed (and was abandoned): the context goes back.
                state.lease = None;
                if result.is_err() {
                    state.last_mode = FLUSH_FRAME;
                }
            }
            result
        })
        .or_raise()?;
        out.finish(py)
    }
}

#[pymethods]
impl PyZstdCompressor {
    #[classattr]
    const CONTINUE: i32 = CONTINUE;
    #[classattr]
    const FLUSH_BLOCK: i32 = FLUSH_BLOCK;
    #[classattr]
    const FLUSH_FRAME: i32 = FLUSH_FRAME;

    #[new]
    #[pyo3(signature = (level=None, options=None, zstd_dict=None, *, pool=None))]
    fn new(
        level: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
        zstd_dict: Option<&Bound<'_, PyAny>>,
        pool: Option<&Bound<'_, PyContextPool>>,
    ) -> PyResult<Self> {
        let params = compress_params(level, options)?;
        params.validate().or_raise()?;
        Ok(PyZstdCompressor {
            params,
            dict: dict_of(zstd_dict)?,
            pool: pool_or_default(pool).clone(),
            state: Mutex::new(CompressState {
                lease: None,
                last_mode: FLUSH_FRAME,
                pledged: None,
                prefix_spent: false,
            }),
        })
    }

    /// Compresses `data`; `mode` says how much output this call must give: `CONTINUE` what
    /// zstd has ready, `FLUSH_BLOCK` all of it (the frame stays open), `FLUSH_FRAME` all of it
    /// and the frame's end.
    #[pyo3(signature = (data, mode=0))] // CONTINUE, written out for the signature Python shows
    fn compress<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        mode: i32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if !(CONTINUE..=FLUSH_FRAME).contains(&mode) {
            return Err(errors::parameter(
                "mode argument wrong value, it should be one of ZstdCompressor.CONTINUE, \
                 ZstdCompressor.FLUSH_BLOCK, ZstdCompressor.FLUSH_FRAME.",
            ));
        }
        let view = ByteView::new(data, "data")?;
        self.run(py, view.as_slice(), mode)
    }

    /// Ends the block (`mode=FLUSH_BLOCK`) or the frame (`mode=FLUSH_FRAME`, the default),
    /// returning what is left of its output.
    #[pyo3(signature = (mode=2))] // FLUSH_FRAME, as above
    fn flush<'py>(&self, py: Python<'py>, mode: i32) -> PyResult<Bound<'py, PyBytes>> {
        if mode != FLUSH_BLOCK && mode != FLUSH_FRAME {
            return Err(errors::parameter(
                "mode argument wrong value, it should be ZstdCompressor.FLUSH_FRAME or \
                 ZstdCompressor.FLUSH_BLOCK.",
            ));
        }
        let idle = mode == FLUSH_BLOCK
            && py.detach(|| {
                let mut state = lock(&self.state);
                let idle = state.lease.is_none();
                if idle {
                    // No frame in progress: no block to end. (Ending the frame writes an
                    // empty one, as zstd does.)
                    state.last_mode = mode;
                }
                idle
            });
        if idle {
            return Ok(PyBytes::new(py, b""));
        }
        self.run(py, b"", mode)
    }

    /// Pledges `size`, the size of the next frame's data, written in its header and checked
    /// (None: unknown). Only between frames (`last_mode == FLUSH_FRAME`).
    fn set_pledged_input_size(
        &self,
        py: Python<'_>,
        size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let size = match size.filter(|s| !s.is_none()) {
            None => None,
            Some(s) => Some(
                s.extract::<u64>()
                    .ok()
                    .filter(|n| *n < u64::MAX - 1)
                    .ok_or_else(|| {
                        errors::parameter(
                            "size argument should be a positive int less than 18446744073709551614",
                        )
                    })?,
            ),
        };
        let between_frames = py.detach(|| {
            let mut state = lock(&self.state);
            let between = state.last_mode == FLUSH_FRAME && state.lease.is_none();
            if between {
                state.pledged = size;
            }
            between
        });
        if !between_frames {
            return Err(errors::parameter(
                "set_pledged_input_size() method must be called when last_mode == FLUSH_FRAME",
            ));
        }
        Ok(())
    }

    /// The mode of the last call: `FLUSH_FRAME` before the first, and after a frame ended.
    #[getter]
    fn last_mode(&self, py: Python<'_>) -> i32 {
        py.detach(|| lock(&self.state).last_mode)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(errors::cannot_pickle(
            "ZstdCompressor",
            "it may hold a frame in progress in a context of this process's pool",
        ))
    }
}

/// What a decompressor holds between calls.
struct DecompressState {
    lease: Option<Lease<Decompressor>>,
    /// Input taken and not yet decompressed (a call stopped at `max_length`): the bytes of
    /// `pending` from `pending_at` on. Calls that give no new input only move `pending_at`, so
    /// draining a large input in small pieces does not copy what is left each time.
    pending: Vec<u8>,
    pending_at: usize,
    eof: bool,
    needs_input: bool,
    /// What followed the frame's end.
    unused: Vec<u8>,
}

/// A streaming decompressor of one frame (`compression.zstd.ZstdDecompressor`):
/// `decompress(data, max_length=-1)`, with `eof`, `needs_input` and `unused_data`. Its
/// context comes from the pool with its first call and goes back when the frame ends.
///
/// - `zstd_dict`: the `ZstdDict` (or its `as_prefix`) the frame was written with.
/// - `options`: a dict of `DecompressionParameter` to int, as `compression.zstd` takes it.
#[doc = doc_pool!()]
#[pyclass(name = "ZstdDecompressor", module = "zstdpool.zstd", subclass)]
pub struct PyZstdDecompressor {
    params: DecompressParams,
    dict: Option<DictUse>,
    pool: ContextPool,
    state: Mutex<DecompressState>,
}

#[pymethods]
impl PyZstdDecompressor {
    #[new]
    #[pyo3(signature = (zstd_dict=None, options=None, *, pool=None))]
    fn new(
        zstd_dict: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
        pool: Option<&Bound<'_, PyContextPool>>,
    ) -> PyResult<Self> {
        let params = decompress_params(options)?;
        params.validate().or_raise()?;
        Ok(PyZstdDecompressor {
            params,
            dict: dict_of(zstd_dict)?,
            pool: pool_or_default(pool).clone(),
            state: Mutex::new(DecompressState {
                lease: None,
                pending: Vec::new(),
                pending_at: 0,
                eof: false,
                needs_input: true,
                unused: Vec::new(),
            }),
        })
    }

    /// Decompresses `data` (after what an earlier call left), returning at most `max_length`
    /// bytes (all there is for a negative one). Past the frame's end, the rest of the input
    /// is `unused_data`, and another call raises EOFError.
    #[pyo3(signature = (data, max_length=-1), text_signature = "($self, /, data, max_length=-1)")]
    fn decompress<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        max_length: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let view = ByteView::new(data, "data")?;
        let limit = usize::try_from(max_length).ok();
        // Decompressed into the bytes object returned, not into a Vec copied into one (a copy
        // of every byte read through ZstdFile). It starts with the room zstd is first given,
        // allocated here with the GIL, and only a larger output grows it (taking the GIL back
        // for that moment); the end shrinks it to what was written
        // (benchmarks/RESULTS.md#decompressor-output).
        let first_room = limit.map_or(STREAM_STEP, |l| l.min(STREAM_STEP));
        let mut out = MemoryOutput::with_capacity(py, first_room)?;
        self.decompress_to(py, view.as_slice(), &mut out, limit)?;
        out.finish(py)
    }

    /// Decompresses `data` (after what an earlier call left) into `out`, a writable buffer,
    /// as `decompress(data, len(out))` would, and returns how many bytes it wrote there.
    /// `ZstdFile.readinto` reads through it, so that a file read into a caller's buffer is
    /// decompressed there rather than into a bytes object copied into it
    /// (benchmarks/RESULTS.md#decompressor-output).
    #[pyo3(signature = (data, out))]
    fn _decompress_into(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let (view, mut dst) = ByteView::source_and_destination(data, out)?;
        let room = dst.len();
        let mut out = SliceOutput::new(dst.as_mut_slice());
        self.decompress_to(py, view.as_slice(), &mut out, Some(room))?;
        Ok(Output::len(&out))
    }
    /// Whether the frame's end was reached.
    #[getter]
    fn eof(&self, py: Python<'_>) -> bool {
        py.detach(|| lock(&self.state).eof)
    }

    /// False when a call stopped at `max_length` with output left to give: the next call may
    /// pass no new data.
    #[getter]
    fn needs_input(&self, py: Python<'_>) -> bool {
        py.detach(|| lock(&self.state).needs_input)
    }

    /// The data that followed the frame's end (empty before it).
    #[getter]
    fn unused_data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let unused = py.detach(|| lock(&self.state).unused.clone());
        PyBytes::new(py, &unused)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(errors::cannot_pickle(
            "ZstdDecompressor",
            "it may hold a frame in progress in a context of this process's pool",
        ))
    }
}

impl PyZstdDecompressor {
    /// One call of the frame's decompression: `fresh` after what an earlier call left, into
    /// `out` until it holds `limit` bytes, without the GIL. Keeps the input left over, the
    /// frame's end and what followed it for the next call and the getters.
    fn decompress_to<O: Output + Send>(
        &self,
        py: Python<'_>,
        fresh: &[u8],
        out: &mut O,
        limit: Option<usize>,
    ) -> PyResult<()> {
        py.detach(|| -> PyResult<()> {
            let mut state = lock(&self.state);
            if state.eof {
                return Err(errors::eof("Already at the end of a Zstandard frame."));
            }
            let state = &mut *state;
            // Input left over from the last call comes first.
            let mut held = std::mem::take(&mut state.pending);
            let mut at = std::mem::take(&mut state.pending_at);
            if !held.is_empty() && !fresh.is_empty() {
                held.drain(..at);
                at = 0;
                held.try_reserve(fresh.len()).map_err(|_| {
                    errors::from_core(zstdpool_core::error::Error::Memory(format!(
                        "{} bytes of pending input",
                        held.len() + fresh.len()
                    )))
                })?;
                held.extend_from_slice(fresh);
            }
            let src: &[u8] = if held.is_empty() { fresh } else { &held[at..] };
            let mut pos = 0;
            let ended = {
                if state.lease.is_none() {
                    let mut lease = self
                        .pool
                        .decompressor(self.params)
                        .map_err(errors::from_core)?;
                    DictUse::load_d(self.dict.as_ref(), &mut lease).map_err(errors::from_core)?;
                    state.lease = Some(lease);
                }
                let lease = state.lease.as_mut().expect("taken above");
                match lease.decompress_stream(src, &mut pos, out, limit) {
                    Ok(ended) => ended,
                    Err(e) => {
                        state.lease = None;
                        state.needs_input = true;
                        return Err(errors::from_core(e));
                    }
                }
            };
            if ended {
                state.unused = copied(&src[pos..])?;
                state.eof = true;
                state.needs_input = false;
                state.lease = None;
            } else if pos == src.len() {
                state.needs_input = limit.is_none_or(|l| Output::len(out) < l);
            } else {
                state.needs_input = false;
                if held.is_empty() {
                    state.pending = copied(&fresh[pos..])?;
                } else {
                    state.pending_at = at + pos;
                    state.pending = held;
                }
            }
            Ok(())
        })
    }
}

/// zstd's bounds of the compression parameter `id`.
#[pyfunction]
pub fn _compression_bounds(id: i32) -> PyResult<(i32, i32)> {
    compression_bounds(id)
        .ok_or_else(|| errors::parameter(format!("invalid compression parameter {id}")))
}

/// zstd's bounds of the decompression parameter `id`.
#[pyfunction]
pub fn _decompression_bounds(id: i32) -> PyResult<(i32, i32)> {
    decompression_bounds(id)
        .ok_or_else(|| errors::parameter(format!("invalid decompression parameter {id}")))
}

/// The data size (None when the header has none) and dictionary id that the header of the
/// frame at the start of `frame_buffer` records.
#[pyfunction]
pub fn _frame_info(frame_buffer: &Bound<'_, PyAny>) -> PyResult<(Option<u64>, u32)> {
    let view = ByteView::new(frame_buffer, "frame_buffer")?;
    frame_header(view.as_slice()).ok_or_else(|| {
        errors::zstd(
            "Error when getting information from the header of a zstd frame. Make sure the \
             frame_buffer argument starts from the beginning of a frame, and its length not \
             less than the frame header (6~18 bytes).",
        )
    })
}

/// The size of the whole frame at the start of `frame_buffer`.
#[pyfunction]
pub fn _frame_size(frame_buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
    let view = ByteView::new(frame_buffer, "frame_buffer")?;
    frame_size(view.as_slice()).map_err(|why| {
        errors::zstd(format!(
            "Error when finding the compressed size of a zstd frame. Make sure the \
             frame_buffer argument starts from the beginning of a frame, and its length not \
             less than this complete frame. Zstd error message: {why}."
        ))
    })
}
