//! The codec API: one-shot `compress`/`decompress` on the default pool, and leases
//! (`Compressor`, `Decompressor`) that keep one context for a series of calls.

use crate::args;
use pyo3::prelude::*;

use crate::errors::OrRaise as _;
use pyo3::types::{PyBytes, PyList};

use crate::buffer::{new_bytes_filled, ByteView};
use crate::dict::dict_arg;
use crate::held::Held;
use crate::lifecycle::{lifecycle_methods, Lifecycle, State};
use crate::params;
use crate::pool::{pool_or_default, PyContextPool};
use zstdpool_core::codec::{plan_decompress, DecompressPlan, DEFAULT_MAX_OUTPUT_SIZE};
use zstdpool_core::context::{
    CompressParams, Compressor, DecompressParams, Decompressor, DEFAULT_LEVEL,
};
use zstdpool_core::parallel::{for_each_parallel, resolve_threads};
use zstdpool_core::pool::Lease;

/// Why a lease cannot be pickled.
const LEASE: &str = "it holds a zstd context leased from a pool of this process; send its \
                     parameters and take a lease where it is used";

// The signatures below spell these defaults as literals so that help() shows them.
const _: () = assert!(DEFAULT_LEVEL == 3 && DEFAULT_MAX_OUTPUT_SIZE == 1 << 30);

fn compress_params(
    level: i64,
    checksum: bool,
    window_log: Option<i64>,
    write_dict_id: bool,
) -> PyResult<CompressParams> {
    let params = CompressParams {
        level: params::level(level).or_raise()?,
        checksum,
        window_log: params::window_log("window_log", window_log).or_raise()?,
        write_dict_id,
        advanced: Default::default(),
    };
    params.validate().or_raise()?;
    Ok(params)
}

fn compress_one<'py>(
    py: Python<'py>,
    c: &mut Compressor,
    data: &ByteView,
) -> PyResult<Bound<'py, PyBytes>> {
    let frame = py
        .detach(|| c.compress_to_scratch(data.as_slice()))
        .or_raise()?;
    Ok(PyBytes::new(py, frame))
}

fn decompress_one<'py>(
    py: Python<'py>,
    d: &mut Decompressor,
    src: &[u8],
    limit: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    match plan_decompress(src, limit).or_raise()? {
        DecompressPlan::Exact(n) => new_bytes_filled(py, n, |dst, len| {
            // The address crosses to the GIL-free closure as a number (raw pointers are not Send).
            let dst = dst as usize;
            // SAFETY: `new_bytes_filled` hands over `len` writable bytes that nothing else
            // sees until it returns.
            py.detach(|| unsafe { d.decompress_exact_raw(src, dst as *mut u8, len) })
                .map_err(crate::errors::from_core)
        }),
        DecompressPlan::Streaming => {
            let out = py
                .detach(|| d.decompress_streaming(src, limit))
                .or_raise()?;
            Ok(PyBytes::new(py, &out))
        }
    }
}

fn decompress_into_one(
    py: Python<'_>,
    d: &mut Decompressor,
    src: &[u8],
    out: &mut ByteView,
) -> PyResult<usize> {
    let dst = out.as_mut_slice();
    py.detach(|| d.decompress_into(src, dst)).or_raise()
}

/// Compresses `data` (any bytes-like object) into one standard zstd frame, with a warm
/// context from the pool. Returns bytes of exactly the frame's size. With `zstd_dict` (a
/// `ZstdDict`), the frame is compressed with that dictionary and records its id unless
/// `write_dict_id` is false.
///
/// - `level`: the zstd level, from `MIN_LEVEL` (negative: faster) to `MAX_LEVEL` (22);
///   0 means the default, 3.
/// - `checksum`: append a 32-bit content checksum to the frame, checked when it is read.
/// - `window_log`: the window's size as a power of two (10 to 31 on 64-bit builds); None
///   lets the level choose. A reader needs at least that much memory.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (data, level=3, *, checksum=false, window_log=None, zstd_dict=None, write_dict_id=true, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn compress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: i64,
    checksum: bool,
    #[pyo3(from_py_with = args::arg::<args::WindowLog, _>)] window_log: Option<i64>,
    zstd_dict: Option<&Bound<'py, PyAny>>,
    write_dict_id: bool,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let view = ByteView::new(data, "data")?;
    let dict = dict_arg(zstd_dict)?;
    let mut lease = pool_or_default(pool)
        .compressor(compress_params(level, checksum, window_log, write_dict_id)?)
        .or_raise()?;
    lease.use_dict(dict.as_deref()).or_raise()?;
    compress_one(py, &mut lease, &view)
}

/// Decompresses one or more zstd frames. Output larger than `max_output_size` bytes is refused
/// (a frame that declares a larger size is refused before anything is allocated). Frames
/// written with a dictionary need it as `zstd_dict`.
///
/// - `data`: the frames, any bytes-like object; concatenated frames are decompressed in turn.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (data, *, max_output_size=1073741824, zstd_dict=None, pool=None))]
pub fn decompress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::MaxOutputSize, _>)] max_output_size: i64,
    zstd_dict: Option<&Bound<'py, PyAny>>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let max_output_size = params::size("max_output_size", max_output_size).or_raise()?;
    let view = ByteView::new(data, "data")?;
    let dict = dict_arg(zstd_dict)?;
    let mut lease = pool_or_default(pool)
        .decompressor(DecompressParams::default())
        .or_raise()?;
    lease.use_dict(dict.as_deref()).or_raise()?;
    decompress_one(py, &mut lease, view.as_slice(), max_output_size)
}

/// Decompresses zstd frames into `out`, a writable buffer (bytearray, numpy array...), which
/// must not overlap `data`. Returns the number of bytes written; fails if they do not fit.
///
/// - `data`: the frames, any bytes-like object.
/// - `zstd_dict`: the `ZstdDict` the frames were written with, or None.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (data, out, *, zstd_dict=None, pool=None))]
pub fn decompress_into<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    zstd_dict: Option<&Bound<'py, PyAny>>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<usize> {
    let (view, mut dst) = ByteView::source_and_destination(data, out)?;
    let dict = dict_arg(zstd_dict)?;
    let mut lease = pool_or_default(pool)
        .decompressor(DecompressParams::default())
        .or_raise()?;
    lease.use_dict(dict.as_deref()).or_raise()?;
    decompress_into_one(py, &mut lease, view.as_slice(), &mut dst)
}

/// Borrows a compression context from the pool for a series of calls (with `zstd_dict`, all
/// of them use that dictionary). Use it as a context manager, or call `close()`; it also goes
/// back when collected.
///
/// - `level`: the zstd level, from `MIN_LEVEL` (negative: faster) to `MAX_LEVEL` (22);
///   0 means the default, 3.
/// - `checksum`: append a 32-bit content checksum to the frame, checked when it is read.
/// - `window_log`: the window's size as a power of two (10 to 31 on 64-bit builds); None
///   lets the level choose. A reader needs at least that much memory.
/// - `write_dict_id`: record the dictionary's id in each frame's header.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (level=3, *, checksum=false, window_log=None, zstd_dict=None, write_dict_id=true, pool=None))]
pub fn compressor(
    #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: i64,
    checksum: bool,
    #[pyo3(from_py_with = args::arg::<args::WindowLog, _>)] window_log: Option<i64>,
    zstd_dict: Option<&Bound<'_, PyAny>>,
    write_dict_id: bool,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyCompressor> {
    let params = compress_params(level, checksum, window_log, write_dict_id)?;
    let dict = dict_arg(zstd_dict)?;
    let mut lease = pool_or_default(pool).compressor(params).or_raise()?;
    lease.use_dict(dict.as_deref()).or_raise()?;
    Ok(PyCompressor {
        lease: Held::new(lease, "Compressor"),
        params,
        zstd_dict: zstd_dict
            .filter(|d| !d.is_none())
            .map(|d| d.clone().unbind()),
    })
}

/// Borrows a decompression context from the pool for a series of calls (with `zstd_dict`, for
/// frames written with that dictionary).
///
/// - `max_output_size`: the most bytes one call may return (default 1 GiB); a frame that
///   would exceed it raises `OutputLimitError`.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (*, max_output_size=1073741824, zstd_dict=None, pool=None))]
pub fn decompressor(
    #[pyo3(from_py_with = args::arg::<args::MaxOutputSize, _>)] max_output_size: i64,
    zstd_dict: Option<&Bound<'_, PyAny>>,
    pool: Option<&Bound<'_, PyContextPool>>,
) -> PyResult<PyDecompressor> {
    let max_output_size = params::size("max_output_size", max_output_size).or_raise()?;
    let dict = dict_arg(zstd_dict)?;
    let mut lease = pool_or_default(pool)
        .decompressor(DecompressParams::default())
        .or_raise()?;
    lease.use_dict(dict.as_deref()).or_raise()?;
    Ok(PyDecompressor {
        lease: Held::new(lease, "Decompressor"),
        max_output_size,
        zstd_dict: zstd_dict
            .filter(|d| !d.is_none())
            .map(|d| d.clone().unbind()),
    })
}

/// A compression context leased from a pool, for one thread at a time.
#[pyclass(frozen, name = "Compressor", module = "zstdpool")]
pub struct PyCompressor {
    lease: Held<Lease<Compressor>>,
    params: CompressParams,
    zstd_dict: Option<Py<PyAny>>,
}

#[pymethods]
impl PyCompressor {
    /// Compresses `data` into one zstd frame (bytes of exactly the frame's size).
    fn compress<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let view = ByteView::new(data, "data")?;
        let mut lease = self.lease.take()?;
        compress_one(py, &mut lease, &view)
    }

    /// The zstd level this compressor writes at.
    #[getter]
    fn level(&self) -> i32 {
        self.params.level
    }

    /// Whether each frame carries a content checksum.
    #[getter]
    fn checksum(&self) -> bool {
        self.params.checksum
    }

    /// The window log set for this compressor, or None for the level's own.
    #[getter]
    fn window_log(&self) -> Option<u32> {
        (self.params.window_log != 0).then_some(self.params.window_log)
    }

    /// The dictionary every frame is compressed with, or None.
    #[getter]
    fn zstd_dict(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.zstd_dict.as_ref().map(|d| d.clone_ref(py))
    }

    /// Whether frames written with a dictionary record its id.
    #[getter]
    fn write_dict_id(&self) -> bool {
        self.params.write_dict_id
    }
}

/// The two leases' lifecycle, which differs only in their name and what their repr shows.
macro_rules! lease_lifecycle {
    ($class:ty, $what:literal, |$lease:ident| $describe:expr) => {
        impl Lifecycle for $class {
            const WHAT: &'static str = $what;
            const NOT_PICKLED: &'static str = LEASE;

            fn state(&self) -> &dyn State {
                &self.lease
            }

            fn close(&self, _py: Python<'_>) -> PyResult<()> {
                drop(self.lease.close());
                Ok(())
            }

            fn describe(&self) -> String {
                let $lease = self;
                $describe
            }
        }

        lifecycle_methods!(
            $class,
            close = "Gives the context back to its pool. Idempotent."
        );
    };
}

lease_lifecycle!(PyCompressor, "Compressor", |c| format!(
    "zstdpool.Compressor level={} checksum={}",
    c.params.level, c.params.checksum
));

/// A decompression context leased from a pool, for one thread at a time.
#[pyclass(frozen, name = "Decompressor", module = "zstdpool")]
pub struct PyDecompressor {
    lease: Held<Lease<Decompressor>>,
    max_output_size: usize,
    zstd_dict: Option<Py<PyAny>>,
}

#[pymethods]
impl PyDecompressor {
    /// Decompresses one or more zstd frames in `data` (any bytes-like object), refusing output
    /// past `max_output_size` (default: the limit given when the lease was taken).
    #[pyo3(signature = (data, *, max_output_size=None))]
    fn decompress<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = args::arg::<args::MaxOutputSize, _>)] max_output_size: Option<i64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let limit = match max_output_size {
            Some(n) => params::size("max_output_size", n).or_raise()?,
            None => self.max_output_size,
        };
        let view = ByteView::new(data, "data")?;
        let mut lease = self.lease.take()?;
        decompress_one(py, &mut lease, view.as_slice(), limit)
    }

    /// Decompresses the frames in `data` into the writable buffer `out` (which must not
    /// overlap `data`); returns the number of bytes written.
    fn decompress_into(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let (view, mut dst) = ByteView::source_and_destination(data, out)?;
        let mut lease = self.lease.take()?;
        decompress_into_one(py, &mut lease, view.as_slice(), &mut dst)
    }

    /// The most one `decompress` call returns, in bytes, unless the call sets its own limit.
    #[getter]
    fn max_output_size(&self) -> usize {
        self.max_output_size
    }

    /// The dictionary frames are decompressed with, or None.
    #[getter]
    fn zstd_dict(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.zstd_dict.as_ref().map(|d| d.clone_ref(py))
    }
}

lease_lifecycle!(PyDecompressor, "Decompressor", |d| format!(
    "zstdpool.Decompressor max_output_size={}",
    d.max_output_size
));

fn views(buffers: &Bound<'_, PyAny>) -> PyResult<Vec<ByteView>> {
    buffers
        .try_iter()?
        .enumerate()
        .map(|(i, b)| ByteView::new(&b?, &format!("buffers[{i}]")))
        .collect()
}

/// Compresses many buffers in one call, in parallel on `threads` threads (default: as many
/// as help for the total size), each with its own pooled context. Returns a list of frames in
/// input order, each exactly sized.
///
/// - `buffers`: an iterable of bytes-like objects; an error names the one that failed
///   (`buffers[i]`).
/// - `level`: the zstd level, from `MIN_LEVEL` (negative: faster) to `MAX_LEVEL` (22);
///   0 means the default, 3.
/// - `checksum`: append a 32-bit content checksum to the frame, checked when it is read.
/// - `window_log`: the window's size as a power of two (10 to 31 on 64-bit builds); None
///   lets the level choose. A reader needs at least that much memory.
/// - `zstd_dict`: a `ZstdDict` to compress with, or None.
/// - `write_dict_id`: record the dictionary's id in the frame header.
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (buffers, level=3, *, checksum=false, window_log=None, zstd_dict=None, write_dict_id=true, threads=None, pool=None))]
#[allow(clippy::too_many_arguments)]
pub fn compress_many<'py>(
    py: Python<'py>,
    buffers: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: i64,
    checksum: bool,
    #[pyo3(from_py_with = args::arg::<args::WindowLog, _>)] window_log: Option<i64>,
    zstd_dict: Option<&Bound<'py, PyAny>>,
    write_dict_id: bool,
    #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Bound<'py, PyList>> {
    let threads = params::threads(threads).or_raise()?;
    let params = compress_params(level, checksum, window_log, write_dict_id)?;
    let dict = dict_arg(zstd_dict)?;
    let inputs = views(buffers)?;
    let pool = pool_or_default(pool);
    let total: usize = inputs.iter().map(ByteView::len).sum();
    let threads = resolve_threads(threads, total, inputs.len()).or_raise()?;
    let slices: Vec<&[u8]> = inputs.iter().map(ByteView::as_slice).collect();
    let frames = py
        .detach(|| {
            for_each_parallel(
                &slices,
                threads,
                None,
                |src| src.len(),
                || {
                    let mut c = pool.compressor(params)?;
                    c.use_dict(dict.as_deref())?;
                    Ok(c)
                },
                // Through the context's scratch, so each result held until the end is exact-size.
                |c, i, src| {
                    c.compress_to_scratch(src)
                        .map(<[u8]>::to_vec)
                        .map_err(|e| e.at(format_args!("buffers[{i}]")))
                },
            )
        })
        .or_raise()?;
    PyList::new(py, frames.iter().map(|f| PyBytes::new(py, f)))
}

/// Decompresses many zstd inputs in one call, in parallel, each output at most
/// `max_output_size` bytes. Returns a list of bytes in input order; an error names the input.
///
/// - `buffers`: an iterable of bytes-like objects, each one or more frames.
/// - `zstd_dict`: the `ZstdDict` the frames were written with, or None.
/// - `threads`: how many threads decompress (default: as many as help for the total size).
#[doc = doc_pool!()]
#[pyfunction]
#[pyo3(signature = (buffers, *, max_output_size=1073741824, zstd_dict=None, threads=None, pool=None))]
pub fn decompress_many<'py>(
    py: Python<'py>,
    buffers: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::MaxOutputSize, _>)] max_output_size: i64,
    zstd_dict: Option<&Bound<'py, PyAny>>,
    #[pyo3(from_py_with = args::arg::<args::Threads, _>)] threads: Option<i64>,
    pool: Option<&Bound<'py, PyContextPool>>,
) -> PyResult<Bound<'py, PyList>> {
    let max_output_size = params::size("max_output_size", max_output_size).or_raise()?;
    let dict = dict_arg(zstd_dict)?;
    let threads = params::threads(threads).or_raise()?;
    let inputs = views(buffers)?;
    let pool = pool_or_default(pool);
    let total: usize = inputs.iter().map(ByteView::len).sum();
    let threads = resolve_threads(threads, total, inputs.len()).or_raise()?;
    let slices: Vec<&[u8]> = inputs.iter().map(ByteView::as_slice).collect();
    let outputs = py
        .detach(|| {
            for_each_parallel(
                &slices,
                threads,
                None,
                |src| src.len(),
                || {
                    let mut d = pool.decompressor(DecompressParams::default())?;
                    d.use_dict(dict.as_deref())?;
                    Ok(d)
                },
                |d, i, src| {
                    let mut run = || match plan_decompress(src, max_output_size)? {
                        DecompressPlan::Exact(n) => {
                            let mut out = Vec::new();
                            out.try_reserve_exact(n)?;
                            out.resize(n, 0);
                            d.decompress_exact(src, &mut out)?;
                            Ok(out)
                        }
                        DecompressPlan::Streaming => d.decompress_streaming(src, max_output_size),
                    };
                    run().map_err(|e| e.at(format_args!("buffers[{i}]")))
                },
            )
        })
        .or_raise()?;
    PyList::new(py, outputs.iter().map(|f| PyBytes::new(py, f)))
}
