//! `zstdpool.ContextPool`: a handle on a core pool, and the process-wide default.

use crate::args;
use pyo3::prelude::*;

use crate::errors::OrRaise as _;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::params;
use zstdpool_core::memory::spare::SpareConfig;
use zstdpool_core::pool::{ContextPool, PoolConfig, PoolKey, PoolStats};

/// A pool of zstd contexts. The module-level functions share one default pool
/// (`zstdpool.default_pool()`); a private pool keeps its own contexts and limits.
///
/// `ContextPool(*, max_idle_per_key=None, max_idle_bytes=64 MiB, max_scratch_bytes=4 MiB,
/// idle_timeout=None, max_spare_bytes=512 MiB, spare_timeout=1.0)`:
/// `max_idle_per_key`: idle contexts kept per parameter set (default: the number of CPUs);
/// `max_idle_bytes`: bytes all idle contexts may hold; `max_scratch_bytes`: output scratch a
/// context keeps when it comes back; `idle_timeout`: seconds after which an unused idle
/// context is freed (default: never). Readers' decompressed bodies of 1 MiB and more are kept
/// for reuse once the arrays using them are freed, so back-to-back reads skip the kernel's
/// page clearing: `max_spare_bytes` caps them (0 keeps none) and a background thread frees
/// each after `spare_timeout` seconds unused.
#[pyclass(frozen, name = "ContextPool", module = "zstdpool")]
pub struct PyContextPool {
    pub pool: ContextPool,
}

#[pymethods]
impl PyContextPool {
    /// Makes a private pool (parameters: see the class).
    #[new]
    #[pyo3(signature = (*, max_idle_per_key=None, max_idle_bytes=67108864, max_scratch_bytes=4194304, idle_timeout=None, max_spare_bytes=536870912, spare_timeout=1.0))]
    fn new(
        #[pyo3(from_py_with = args::arg::<args::MaxIdlePerKey, _>)] max_idle_per_key: Option<i64>,
        #[pyo3(from_py_with = args::arg::<args::MaxIdleBytes, _>)] max_idle_bytes: i64,
        #[pyo3(from_py_with = args::arg::<args::MaxScratchBytes, _>)] max_scratch_bytes: i64,
        idle_timeout: Option<f64>,
        #[pyo3(from_py_with = args::arg::<args::MaxSpareBytes, _>)] max_spare_bytes: i64,
        spare_timeout: f64,
    ) -> PyResult<Self> {
        let max_idle_per_key = max_idle_per_key
            .map(|n| params::count("max_idle_per_key", n))
            .transpose()
            .or_raise()?;
        let max_idle_bytes = params::size("max_idle_bytes", max_idle_bytes).or_raise()?;
        let max_scratch_bytes = params::size("max_scratch_bytes", max_scratch_bytes).or_raise()?;
        let defaults = PoolConfig::default();
        let idle_timeout = params::timeout("idle_timeout", idle_timeout).or_raise()?;
        let spare_timeout = params::positive_seconds("spare_timeout", spare_timeout).or_raise()?;
        Ok(PyContextPool {
            pool: ContextPool::new(PoolConfig {
                max_idle_per_key: max_idle_per_key.unwrap_or(defaults.max_idle_per_key),
                max_idle_bytes,
                max_scratch_bytes,
                idle_timeout,
                spares: SpareConfig {
                    max_bytes: params::size("max_spare_bytes", max_spare_bytes).or_raise()?,
                    timeout: spare_timeout,
                },
            }),
        })
    }

    /// The counters and byte totals now, as a dict: created, reused, returned, dropped,
    /// leased, idle, idle_bytes, scratch_bytes, peak_idle_bytes, per_key (a list of dicts
    /// with the key's parameters, its idle count and bytes), and the spare bodies kept:
    /// spare_blocks, spare_bytes (not in idle_bytes) and spare_reused (bodies served by one); and
    /// prepared_dicts / prepared_dict_bytes: the dictionaries prepared for compression levels
    /// and decompression, process-wide (each `ZstdDict` owns its own, shared by every pool, and
    /// frees them with itself; at most 8 levels each).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.pool.stats())
    }

    /// Frees contexts idle past `idle_timeout`, the scratch buffers of the others and the
    /// spare bodies. Returns the bytes freed.
    fn trim(&self) -> usize {
        self.pool.trim()
    }

    /// Frees every idle context and spare body. Returns the bytes freed. Leased contexts,
    /// and bodies arrays still use, are not affected.
    fn clear(&self) -> usize {
        self.pool.clear()
    }

    /// Idle contexts kept per parameter set.
    #[getter]
    fn max_idle_per_key(&self) -> usize {
        self.pool.config().max_idle_per_key
    }

    /// Bytes all idle contexts may hold together.
    #[getter]
    fn max_idle_bytes(&self) -> usize {
        self.pool.config().max_idle_bytes
    }

    /// Output scratch a context keeps when it comes back.
    #[getter]
    fn max_scratch_bytes(&self) -> usize {
        self.pool.config().max_scratch_bytes
    }

    /// Seconds after which an unused idle context is freed (None: never).
    #[getter]
    fn idle_timeout(&self) -> Option<f64> {
        self.pool.config().idle_timeout.map(|d| d.as_secs_f64())
    }

    /// Bytes of freed decompressed bodies kept for the next read (0: none).
    #[getter]
    fn max_spare_bytes(&self) -> usize {
        self.pool.config().spares.max_bytes
    }

    /// Seconds after which an unused spare body is freed.
    #[getter]
    fn spare_timeout(&self) -> f64 {
        self.pool.config().spares.timeout.as_secs_f64()
    }

    /// A pool is of its process: pickled, it is its settings, and unpickled it is the
    /// receiving process's pool with those settings (made once there and shared by everything
    /// unpickled with them), or its default pool for the default pool.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let restore = py.import("zstdpool._pools")?.getattr("pool_with")?;
        let settings = if self.pool.is_global() {
            py.None().into_bound(py)
        } else {
            let c = self.pool.config();
            let d = PyDict::new(py);
            d.set_item("max_idle_per_key", c.max_idle_per_key)?;
            d.set_item("max_idle_bytes", c.max_idle_bytes)?;
            d.set_item("max_scratch_bytes", c.max_scratch_bytes)?;
            d.set_item("idle_timeout", c.idle_timeout.map(|t| t.as_secs_f64()))?;
            d.set_item("max_spare_bytes", c.spares.max_bytes)?;
            d.set_item("spare_timeout", c.spares.timeout.as_secs_f64())?;
            d.into_any()
        };
        PyTuple::new(py, [restore, PyTuple::new(py, [settings])?.into_any()])
    }

    /// A pool is shared, not copied.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A pool is shared, not copied.
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __repr__(&self) -> String {
        let s = self.pool.stats();
        format!(
            "<zstdpool.ContextPool idle={} leased={} idle_bytes={}>",
            s.idle, s.leased, s.idle_bytes
        )
    }
}

/// The pool that module-level functions use when none is given.
pub fn default_pool(py: Python<'_>) -> &Py<PyContextPool> {
    static DEFAULT: pyo3::sync::PyOnceLock<Py<PyContextPool>> = pyo3::sync::PyOnceLock::new();
    DEFAULT.get_or_init(py, || {
        Py::new(
            py,
            PyContextPool {
                pool: ContextPool::global().clone(),
            },
        )
        .expect("allocating the default pool object")
    })
}

/// The core pool behind an optional `pool=` argument.
pub fn pool_or_default<'a>(pool: Option<&'a Bound<'_, PyContextPool>>) -> &'a ContextPool {
    match pool {
        Some(p) => &p.get().pool,
        None => ContextPool::global(),
    }
}

/// The process-wide pool shared by the module-level functions and IPC readers and writers.
#[pyfunction(name = "default_pool")]
pub fn py_default_pool(py: Python<'_>) -> Py<PyContextPool> {
    default_pool(py).clone_ref(py)
}

/// Counters and byte totals of the default pool (see `ContextPool.stats`).
#[pyfunction]
pub fn pool_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    stats_dict(py, &ContextPool::global().stats())
}

fn stats_dict<'py>(py: Python<'py>, s: &PoolStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("created", s.created)?;
    d.set_item("reused", s.reused)?;
    d.set_item("returned", s.returned)?;
    d.set_item("dropped", s.dropped)?;
    d.set_item("leased", s.leased)?;
    d.set_item("idle", s.idle)?;
    d.set_item("idle_bytes", s.idle_bytes)?;
    d.set_item("scratch_bytes", s.scratch_bytes)?;
    d.set_item("peak_idle_bytes", s.peak_idle_bytes)?;
    let keys = PyList::empty(py);
    for (key, idle, bytes) in &s.per_key {
        let k = PyDict::new(py);
        match key {
            PoolKey::Compress(p) => {
                k.set_item("kind", "compress")?;
                k.set_item("level", p.level)?;
                k.set_item("checksum", p.checksum)?;
                k.set_item("window_log", p.window_log)?;
                k.set_item("write_dict_id", p.write_dict_id)?;
                // zstdpool.zstd's other parameters (strategy, nb_workers, ...), where set.
                let options = PyDict::new(py);
                for (name, value) in p.advanced.named() {
                    options.set_item(name, value)?;
                }
                k.set_item("options", options)?;
            }
            PoolKey::Decompress(p) => {
                k.set_item("kind", "decompress")?;
                k.set_item("window_log_max", p.window_log_max)?;
            }
        }
        k.set_item("idle", idle)?;
        k.set_item("bytes", bytes)?;
        keys.append(k)?;
    }
    d.set_item("per_key", keys)?;
    d.set_item("spare_blocks", s.spares.blocks)?;
    d.set_item("spare_bytes", s.spares.bytes)?;
    d.set_item("spare_reused", s.spares.reused)?;
    let (dicts, dict_bytes) = zstdpool_core::dict::prepared_stats();
    d.set_item("prepared_dicts", dicts)?;
    d.set_item("prepared_dict_bytes", dict_bytes)?;
    Ok(d)
}

/// Bytes held by zstdpool's Rust side: `current_bytes` now, `peak_bytes` since the last
/// `reset_peak_memory()`, and `counting` (False when the wheel was built without the
/// `alloc-stats` feature, and then both are 0). Blocks of 4 KiB and more are counted: the
/// buffers that hold data, not each call's small bookkeeping. zstd contexts are C
/// allocations: see the pools' `idle_bytes` (zstd's own sizeof) for them. Spare bodies a pool
/// keeps for reads are Rust allocations and count here (see `stats()["spare_bytes"]`).
/// `prepared_dict_bytes`: zstd's own measure of the prepared dictionaries alive (C
/// allocations, not in `current_bytes`).
#[pyfunction]
pub fn memory_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(
        "current_bytes",
        zstdpool_core::memory::alloc::current_bytes(),
    )?;
    d.set_item("peak_bytes", zstdpool_core::memory::alloc::peak_bytes())?;
    d.set_item("counting", zstdpool_core::memory::alloc::COUNTING)?;
    d.set_item(
        "prepared_dict_bytes",
        zstdpool_core::dict::prepared_stats().1,
    )?;
    Ok(d)
}

/// The number of threads a write or read with `threads=requested` uses for `items` pieces
/// of `total_bytes` (the core's rule, for the benchmark harness's memory targets).
#[pyfunction]
#[pyo3(name = "_resolve_threads", signature = (requested, total_bytes, items))]
pub fn resolve_threads(
    requested: Option<i64>,
    total_bytes: usize,
    items: usize,
) -> PyResult<usize> {
    let requested = params::threads(requested).or_raise()?;
    zstdpool_core::parallel::resolve_threads(requested, total_bytes, items).or_raise()
}

/// Starts a new peak measurement of `memory_stats()["peak_bytes"]` from what is held now;
/// returns the previous peak.
#[pyfunction]
pub fn reset_peak_memory() -> usize {
    zstdpool_core::memory::alloc::reset_peak()
}
