//! A thread-safe pool of zstd contexts keyed by their parameters.
//!
//! A context costs its window and match tables before it compresses a byte; the pool keeps
//! contexts warm between callers. The lock guards only the idle lists: no caller holds it
//! while compressing.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::context::{CompressParams, Compressor, DecompressParams, Decompressor};
use crate::error::Result;
use crate::memory::spare::{SpareConfig, SpareStats, Spares};

mod idle;
mod pooled;

use idle::Shared;
pub use pooled::{Pooled, Slot};

/// Identifies contexts that may stand in for each other: only a context built with the same
/// parameters is reused for a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKey {
    Compress(CompressParams),
    Decompress(DecompressParams),
}

/// Limits on what the pool keeps idle.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Idle contexts kept per key; more are freed when they come back.
    pub max_idle_per_key: usize,
    /// Bytes all idle contexts may hold together (zstd's sizeof plus scratch).
    pub max_idle_bytes: usize,
    /// Scratch a context keeps when it comes back; a larger scratch buffer is freed.
    pub max_scratch_bytes: usize,
    /// Idle contexts unused for this long are freed by the next pool operation or `trim`.
    pub idle_timeout: Option<Duration>,
    /// Freed decompressed bodies kept for the next read (see `spare`).
    pub spares: SpareConfig,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_idle_per_key: std::thread::available_parallelism().map_or(4, |n| n.get()),
            max_idle_bytes: 64 << 20,
            max_scratch_bytes: 4 << 20,
            idle_timeout: None,
            spares: SpareConfig::default(),
        }
    }
}

/// A snapshot of the pool's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Contexts allocated because none was idle for the key.
    pub created: u64,
    /// Leases served by an idle context.
    pub reused: u64,
    /// Contexts that came back and were kept.
    pub returned: u64,
    /// Contexts freed: over a cap, expired, failed to reset, discarded, trimmed or cleared.
    pub dropped: u64,
    /// Contexts out on lease now.
    pub leased: usize,
    /// Contexts idle now.
    pub idle: usize,
    /// Bytes idle contexts hold now (zstd's sizeof plus scratch).
    pub idle_bytes: usize,
    /// Of `idle_bytes`, the scratch buffers.
    pub scratch_bytes: usize,
    /// The most `idle_bytes` has been.
    pub peak_idle_bytes: usize,
    /// Idle contexts and bytes per key.
    pub per_key: Vec<(PoolKey, usize, usize)>,
    /// Freed decompressed bodies kept for reuse (not in `idle_bytes`).
    pub spares: SpareStats,
}

/// How a pool or lease reaches the pool's state: the process-wide pool lives in a static,
/// so its leases skip the reference count (two atomic operations per call).
#[derive(Clone)]
enum SharedRef {
    Global(&'static Shared),
    Private(Arc<Shared>),
}

impl Deref for SharedRef {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        match self {
            SharedRef::Global(s) => s,
            SharedRef::Private(s) => s,
        }
    }
}

/// A pool of zstd contexts. Cloning gives another handle to the same pool.
#[derive(Clone)]
pub struct ContextPool {
    shared: SharedRef,
}

impl Default for ContextPool {
    fn default() -> Self {
        Self::new(PoolConfig::default())
    }
}

impl ContextPool {
    /// A private pool with its own limits.
    pub fn new(config: PoolConfig) -> Self {
        ContextPool {
            shared: SharedRef::Private(Arc::new(Shared::new(config))),
        }
    }

    /// The process-wide pool that the module-level functions use.
    pub fn global() -> &'static ContextPool {
        static SHARED: OnceLock<Shared> = OnceLock::new();
        static GLOBAL: OnceLock<ContextPool> = OnceLock::new();
        GLOBAL.get_or_init(|| ContextPool {
            shared: SharedRef::Global(SHARED.get_or_init(|| Shared::new(PoolConfig::default()))),
        })
    }

    /// Whether this is the process-wide pool.
    pub fn is_global(&self) -> bool {
        matches!(self.shared, SharedRef::Global(_))
    }

    /// The pool's limits.
    pub fn config(&self) -> &PoolConfig {
        &self.shared.config
    }

    fn lease<T: Pooled>(&self, key: PoolKey, make: impl FnOnce() -> Result<T>) -> Result<Lease<T>> {
        // A key names one kind of context, so a slot of the other kind cannot be found.
        let ctx = match self.shared.take(&key).and_then(T::from_slot) {
            Some(ctx) => ctx,
            None => {
                let ctx = Box::new(make()?);
                self.shared.count_created();
                ctx
            }
        };
        Ok(Lease {
            ctx: Some(ctx),
            pool: self.shared.clone(),
        })
    }

    /// Borrows a compressor for `params`, warm if one is idle.
    pub fn compressor(&self, params: CompressParams) -> Result<Lease<Compressor>> {
        params.validate()?;
        self.lease(PoolKey::Compress(params), || Compressor::new(params))
    }

    /// Borrows a decompressor for `params`, warm if one is idle.
    pub fn decompressor(&self, params: DecompressParams) -> Result<Lease<Decompressor>> {
        params.validate()?;
        self.lease(PoolKey::Decompress(params), || Decompressor::new(params))
    }

    /// Where freed decompressed bodies wait for the next read.
    pub fn spares(&self) -> &Arc<Spares> {
        &self.shared.spares
    }

    /// Frees contexts idle past the timeout, the scratch buffers of the rest, the spare bodies,
    /// and the lists of keys with no idle context. Returns the bytes freed.
    pub fn trim(&self) -> usize {
        self.shared.spares.clear() + self.trim_contexts()
    }

    fn trim_contexts(&self) -> usize {
        let mut freed = Vec::new();
        let scratch_freed = {
            let mut lists = self.shared.lock();
            if let Some(timeout) = self.shared.config.idle_timeout {
                if let Some(cutoff) = Instant::now().checked_sub(timeout) {
                    lists.expire(cutoff, &mut freed);
                }
            }
            let mut scratch_freed = 0;
            for (_, list) in lists.by_key.iter_mut() {
                for idle in list.iter_mut() {
                    let n = idle.slot.drop_scratch();
                    idle.bytes -= n;
                    idle.scratch -= n;
                    scratch_freed += n;
                }
            }
            lists.bytes -= scratch_freed;
            lists.scratch -= scratch_freed;
            lists.dropped += freed.len() as u64;
            lists.drop_empty_lists();
            scratch_freed
        };
        scratch_freed + freed.iter().map(|i| i.bytes).sum::<usize>()
    }

    /// Frees every idle context and spare body. Returns the bytes freed.
    pub fn clear(&self) -> usize {
        let spares = self.shared.spares.clear();
        let by_key = {
            let mut lists = self.shared.lock();
            lists.dropped += lists.count as u64;
            (lists.count, lists.bytes, lists.scratch) = (0, 0, 0);
            // The peak and the counters stay: they describe the pool's history.
            std::mem::take(&mut lists.by_key)
        };
        spares
            + by_key
                .iter()
                .flat_map(|(_, l)| l)
                .map(|i| i.bytes)
                .sum::<usize>()
    }

    /// The counters now.
    pub fn stats(&self) -> PoolStats {
        let s = &self.shared;
        // One lock at a time: the spares' first, outside the idle lists'.
        let spares = s.spares.stats();
        let lists = s.lock();
        let mut per_key: Vec<(PoolKey, usize, usize)> = lists
            .by_key
            .iter()
            .filter(|(_, l)| !l.is_empty())
            .map(|(k, l)| (*k, l.len(), l.iter().map(|i| i.bytes).sum()))
            .collect();
        per_key.sort_by_key(|(k, _, _)| format!("{k:?}"));
        PoolStats {
            created: lists.created,
            reused: lists.reused,
            returned: lists.returned,
            dropped: lists.dropped,
            leased: lists.leased,
            idle: lists.count,
            idle_bytes: lists.bytes,
            scratch_bytes: lists.scratch,
            peak_idle_bytes: lists.peak_bytes,
            per_key,
            spares,
        }
    }
}

/// A borrowed context. Dropping the lease gives the context back to its pool, reset.
pub struct Lease<T: Pooled> {
    ctx: Option<Box<T>>,
    pool: SharedRef,
}

impl<T: Pooled> Lease<T> {
    /// Frees the context instead of returning it (after an error that may have left it in a
    /// state no reset clears).
    pub fn discard(mut self) {
        if self.ctx.take().is_some() {
            self.pool.count_discarded();
        }
    }
}

impl<T: Pooled> Deref for Lease<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Present from construction until drop or discard, both of which consume the lease.
        self.ctx
            .as_deref()
            .expect("lease holds its context until dropped")
    }
}

impl<T: Pooled> DerefMut for Lease<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.ctx
            .as_deref_mut()
            .expect("lease holds its context until dropped")
    }
}

impl<T: Pooled> Drop for Lease<T> {
    fn drop(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            self.pool.give_back(ctx);
        }
    }
}

#[cfg(test)]
mod tests;
