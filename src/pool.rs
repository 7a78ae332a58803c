//! A thread-safe pool of zstd contexts keyed by their parameters.
//!
//! A context costs its window and match tables before it compresses a byte; the pool keeps
//! contexts warm between callers. The lock guards only the idle lists: no caller holds it
//! while compressing.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::context::{CompressParams, Compressor, DecompressParams, Decompressor};
use crate::error::Result;
use crate::spare::{SpareConfig, SpareStats, Spares};

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

/// What the pool can hold. Implemented by the two context kinds.
pub trait Pooled: Sized + Send + 'static {
    fn key(&self) -> PoolKey;
    fn held_bytes(&self) -> usize;
    fn scratch_bytes(&self) -> usize;
    /// Resets for the next user; false means the context must be freed instead.
    fn recycle(&mut self, max_scratch: usize) -> bool;
    fn drop_scratch(&mut self) -> usize;
    fn into_slot(self) -> Slot;
    fn from_slot(slot: Slot) -> Option<Self>;
}

/// An idle context of either kind.
pub enum Slot {
    Compressor(Compressor),
    Decompressor(Decompressor),
}

impl Slot {
    fn drop_scratch(&mut self) -> usize {
        match self {
            Slot::Compressor(c) => c.drop_scratch(),
            Slot::Decompressor(_) => 0,
        }
    }
}

impl Pooled for Compressor {
    fn key(&self) -> PoolKey {
        PoolKey::Compress(self.params())
    }
    fn held_bytes(&self) -> usize {
        Compressor::held_bytes(self)
    }
    fn scratch_bytes(&self) -> usize {
        Compressor::scratch_bytes(self)
    }
    fn recycle(&mut self, max_scratch: usize) -> bool {
        Compressor::recycle(self, max_scratch)
    }
    fn drop_scratch(&mut self) -> usize {
        Compressor::drop_scratch(self)
    }
    fn into_slot(self) -> Slot {
        Slot::Compressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Self> {
        match slot {
            Slot::Compressor(c) => Some(c),
            Slot::Decompressor(_) => None,
        }
    }
}

impl Pooled for Decompressor {
    fn key(&self) -> PoolKey {
        PoolKey::Decompress(self.params())
    }
    fn held_bytes(&self) -> usize {
        Decompressor::held_bytes(self)
    }
    fn scratch_bytes(&self) -> usize {
        0
    }
    fn recycle(&mut self, _max_scratch: usize) -> bool {
        Decompressor::recycle(self)
    }
    fn drop_scratch(&mut self) -> usize {
        0
    }
    fn into_slot(self) -> Slot {
        Slot::Decompressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Self> {
        match slot {
            Slot::Decompressor(d) => Some(d),
            Slot::Compressor(_) => None,
        }
    }
}

struct Idle {
    slot: Slot,
    bytes: usize,
    scratch: usize,
    /// When it came back, in pool operations: orders eviction without reading a clock.
    seq: u64,
    /// When it came back, in time: read only when the pool has an idle timeout.
    at: Option<Instant>,
    /// The thread that gave it back (see [`thread_tag`]).
    thread: u64,
}

/// A number for the calling thread, so that a context goes back to the thread that used it
/// last when that thread asks again: its tables are still in that core's cache, where a
/// context handed to another thread's core is read from afar (two Python threads writing
/// 4096-row tables, each with a pool of its own, were 1-3% faster than sharing one before
/// this). Threads are numbered on first use; a plain `Cell` has no destructor to register.
fn thread_tag() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static TAG: Cell<u64> = const { Cell::new(0) });
    TAG.with(|tag| {
        if tag.get() == 0 {
            tag.set(NEXT.fetch_add(1, Relaxed));
        }
        tag.get()
    })
}

/// The idle contexts and the counters, under one lock: a lease or a return takes the lock
/// once and touches no other shared memory.
#[derive(Default)]
struct IdleLists {
    /// Per key, a stack in the order contexts came back: a thread gets the context it returned
    /// last if that is still idle, else the top one, so contexts no thread asks for again sink
    /// to the bottom, where expiry and eviction find them. Threads that keep using the pool each
    /// keep their own context warm (up to `max_idle_per_key` of them), where a plain stack would
    /// let threads that take turns share one. A pool sees a handful of keys, so a scan beats
    /// hashing.
    by_key: Vec<(PoolKey, Vec<Idle>)>,
    count: usize,
    bytes: usize,
    scratch: usize,
    peak_bytes: usize,
    seq: u64,
    next_sweep: Option<Instant>,
    created: u64,
    reused: u64,
    returned: u64,
    dropped: u64,
    leased: usize,
}

impl IdleLists {
    fn list(&self, key: &PoolKey) -> Option<usize> {
        self.by_key.iter().position(|(k, _)| k == key)
    }

    fn remove_at(&mut self, list: usize, index: usize) -> Idle {
        let idle = self.by_key[list].1.remove(index);
        if self.by_key[list].1.is_empty() {
            self.by_key.swap_remove(list);
        }
        self.count -= 1;
        self.bytes -= idle.bytes;
        self.scratch -= idle.scratch;
        idle
    }

    /// The context `thread` gave back last if it is idle, else the most recently returned.
    fn pop(&mut self, key: &PoolKey, thread: u64) -> Option<Idle> {
        let list = self.list(key)?;
        let idle = &self.by_key[list].1;
        let index = idle
            .iter()
            .rposition(|i| i.thread == thread)
            .unwrap_or(idle.len() - 1);
        Some(self.remove_at(list, index))
    }

    fn push(&mut self, key: PoolKey, idle: Idle) {
        self.count += 1;
        self.bytes += idle.bytes;
        self.scratch += idle.scratch;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        match self.list(&key) {
            Some(list) => self.by_key[list].1.push(idle),
            None => self.by_key.push((key, vec![idle])),
        }
    }

    fn len_of(&self, key: &PoolKey) -> usize {
        self.list(key).map_or(0, |l| self.by_key[l].1.len())
    }

    /// The list whose bottom (oldest) context came back longest ago.
    fn oldest(&self) -> Option<usize> {
        (0..self.by_key.len()).min_by_key(|&l| self.by_key[l].1[0].seq)
    }

    /// Removes contexts idle since before `cutoff`.
    fn expire(&mut self, cutoff: Instant, freed: &mut Vec<Idle>) {
        while let Some(list) = self.oldest() {
            let is_old = self.by_key[list].1[0].at.is_some_and(|at| at < cutoff);
            if !is_old {
                break;
            }
            freed.push(self.remove_at(list, 0));
        }
    }
}

struct Shared {
    config: PoolConfig,
    idle: Mutex<IdleLists>,
    /// Behind its own lock: bodies come and go on other threads than leases.
    spares: Arc<Spares>,
}

impl Shared {
    fn new(config: PoolConfig) -> Self {
        Shared {
            idle: Mutex::new(IdleLists::default()),
            spares: Spares::new(config.spares),
            config,
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, IdleLists> {
        // A panic while holding the lock leaves only counters behind; the lists stay usable.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Frees expired contexts, at most once per half timeout, so the check costs nothing
    /// on the hot path.
    fn sweep_if_due(&self, lists: &mut IdleLists, now: Instant, freed: &mut Vec<Idle>) {
        let Some(timeout) = self.config.idle_timeout else {
            return;
        };
        if lists.next_sweep.is_some_and(|t| now < t) {
            return;
        }
        if let Some(cutoff) = now.checked_sub(timeout) {
            lists.expire(cutoff, freed);
        }
        lists.next_sweep = Some(now + timeout / 2);
    }

    /// Pops an idle context for `key` and counts the lease; None on a miss (nothing counted).
    fn take(&self, key: &PoolKey) -> Option<Slot> {
        let thread = thread_tag();
        let mut freed = Vec::new();
        let found = {
            let mut lists = self.lock();
            if self.config.idle_timeout.is_some() {
                self.sweep_if_due(&mut lists, Instant::now(), &mut freed);
            }
            lists.dropped += freed.len() as u64;
            let found = lists.pop(key, thread);
            if found.is_some() {
                lists.reused += 1;
                lists.leased += 1;
            }
            found
        };
        // Contexts are freed after the lock is released.
        drop(freed);
        found.map(|idle| idle.slot)
    }

    /// Counts a context made on a miss as leased.
    fn count_created(&self) {
        let mut lists = self.lock();
        lists.created += 1;
        lists.leased += 1;
    }

    /// Counts a leased context that is freed instead of coming back.
    fn count_discarded(&self) {
        let mut lists = self.lock();
        lists.leased -= 1;
        lists.dropped += 1;
    }

    fn give_back<T: Pooled>(&self, mut ctx: T) {
        if !ctx.recycle(self.config.max_scratch_bytes) {
            self.count_discarded();
            return;
        }
        let key = ctx.key();
        let bytes = ctx.held_bytes();
        let scratch = ctx.scratch_bytes();
        let now = self.config.idle_timeout.map(|_| Instant::now());
        let thread = thread_tag();
        let mut freed = Vec::new();
        let rejected = {
            let mut lists = self.lock();
            lists.leased -= 1;
            if let Some(now) = now {
                self.sweep_if_due(&mut lists, now, &mut freed);
            }
            let full = lists.len_of(&key) >= self.config.max_idle_per_key;
            let rejected = if full || bytes > self.config.max_idle_bytes {
                lists.dropped += 1;
                Some(ctx)
            } else {
                // Make room under the byte cap by freeing the longest-idle contexts.
                while lists.bytes + bytes > self.config.max_idle_bytes {
                    let Some(oldest) = lists.oldest() else { break };
                    freed.push(lists.remove_at(oldest, 0));
                }
                lists.seq += 1;
                let seq = lists.seq;
                lists.push(
                    key,
                    Idle {
                        slot: ctx.into_slot(),
                        bytes,
                        scratch,
                        seq,
                        at: now,
                        thread,
                    },
                );
                lists.returned += 1;
                None
            };
            lists.dropped += freed.len() as u64;
            rejected
        };
        // Freed outside the lock.
        drop((rejected, freed));
    }
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

    /// The pool's limits.
    pub fn config(&self) -> &PoolConfig {
        &self.shared.config
    }

    fn lease<T: Pooled>(&self, key: PoolKey, make: impl FnOnce() -> Result<T>) -> Result<Lease<T>> {
        // A key names one kind of context, so a slot of the other kind cannot be found.
        let ctx = match self.shared.take(&key).and_then(T::from_slot) {
            Some(ctx) => ctx,
            None => {
                let ctx = make()?;
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

    /// Frees contexts idle past the timeout, the scratch buffers of the rest, and the spare
    /// bodies. Returns the bytes freed.
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
    ctx: Option<T>,
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
            .as_ref()
            .expect("lease holds its context until dropped")
    }
}

impl<T: Pooled> DerefMut for Lease<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.ctx
            .as_mut()
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
mod tests {
    use super::*;
    use crate::context::DEFAULT_LEVEL;

    fn small_pool() -> ContextPool {
        ContextPool::new(PoolConfig {
            max_idle_per_key: 2,
            ..PoolConfig::default()
        })
    }

    #[test]
    fn lease_returns_and_is_reused() {
        let pool = small_pool();
        let params = CompressParams::level(DEFAULT_LEVEL);
        {
            let mut c = pool.compressor(params).unwrap();
            c.compress_to_scratch(b"abc").unwrap();
            assert_eq!(pool.stats().leased, 1);
        }
        let s = pool.stats();
        assert_eq!((s.created, s.returned, s.leased, s.idle), (1, 1, 0, 1));
        let _c = pool.compressor(params).unwrap();
        let s = pool.stats();
        assert_eq!((s.created, s.reused, s.idle), (1, 1, 0));
    }

    #[test]
    fn a_thread_gets_back_the_context_it_returned() {
        let pool = small_pool();
        let params = CompressParams::level(1);
        // Two contexts out at once; the other thread's is marked by a scratch buffer.
        let mine = pool.compressor(params).unwrap();
        let mut theirs = pool.compressor(params).unwrap();
        theirs.compress_to_scratch(&[7u8; 64 << 10]).unwrap();
        let (go_back, back) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                drop(theirs);
                go_back.wait();
                back.wait();
                // Returned after this thread's, mine sits on top; this thread still gets its own.
                assert!(pool.compressor(params).unwrap().scratch_bytes() > 0);
            });
            go_back.wait();
            drop(mine);
            back.wait();
        });
        // A thread that returned nothing gets the most recently returned: the other thread's.
        std::thread::scope(|s| {
            s.spawn(|| assert!(pool.compressor(params).unwrap().scratch_bytes() > 0));
        });
        // This thread gets its own back, though the other's came back after it.
        assert_eq!(pool.compressor(params).unwrap().scratch_bytes(), 0);
        assert_eq!(pool.stats().created, 2);
    }

    #[test]
    fn keys_do_not_mix() {
        let pool = small_pool();
        drop(pool.compressor(CompressParams::level(1)).unwrap());
        let c = pool.compressor(CompressParams::level(2)).unwrap();
        assert_eq!(c.params().level, 2);
        assert_eq!(pool.stats().created, 2);
        drop(c);
        drop(pool.decompressor(DecompressParams::default()).unwrap());
        let s = pool.stats();
        assert_eq!((s.idle, s.per_key.len()), (3, 3));
    }

    #[test]
    fn per_key_cap_frees_extras() {
        let pool = small_pool();
        let p = CompressParams::level(1);
        let leases: Vec<_> = (0..5).map(|_| pool.compressor(p).unwrap()).collect();
        drop(leases);
        let s = pool.stats();
        assert_eq!((s.idle, s.returned, s.dropped, s.leased), (2, 2, 3, 0));
    }

    #[test]
    fn byte_cap_is_never_passed() {
        let pool = ContextPool::new(PoolConfig {
            max_idle_bytes: 8 << 20,
            ..PoolConfig::default()
        });
        let data = vec![3u8; 1 << 16];
        for level in 1..=22 {
            let mut c = pool.compressor(CompressParams::level(level)).unwrap();
            c.compress_to_scratch(&data).unwrap();
            drop(c);
            let s = pool.stats();
            assert!(s.idle_bytes <= 8 << 20, "level {level}: {}", s.idle_bytes);
            assert!(s.peak_idle_bytes <= 8 << 20);
        }
        assert!(pool.stats().dropped > 0);
    }

    #[test]
    fn reused_output_is_identical_to_fresh() {
        let pool = small_pool();
        let p = CompressParams::level(5);
        let small: Vec<u8> = (0..4000u32).map(|i| (i * 7 % 13) as u8).collect();
        let big: Vec<u8> = (0..4_000_000u32).map(|i| (i % 97) as u8).collect();
        let first = pool
            .compressor(p)
            .unwrap()
            .compress_to_scratch(&small)
            .unwrap()
            .to_vec();
        pool.compressor(p)
            .unwrap()
            .compress_to_scratch(&big)
            .unwrap();
        let again = pool
            .compressor(p)
            .unwrap()
            .compress_to_scratch(&small)
            .unwrap()
            .to_vec();
        let fresh = Compressor::new(p)
            .unwrap()
            .compress_to_scratch(&small)
            .unwrap()
            .to_vec();
        assert_eq!(first, again);
        assert_eq!(first, fresh);
        assert_eq!(pool.stats().created, 1);
    }

    #[test]
    fn scratch_above_cap_is_freed_on_return() {
        let pool = ContextPool::new(PoolConfig {
            max_scratch_bytes: 1 << 16,
            ..PoolConfig::default()
        });
        let p = CompressParams::level(1);
        let mut c = pool.compressor(p).unwrap();
        c.compress_to_scratch(&vec![1u8; 1 << 10]).unwrap();
        drop(c);
        let kept = pool.stats().scratch_bytes;
        assert!(kept > 0 && kept <= 1 << 16, "{kept}");
        let mut c = pool.compressor(p).unwrap();
        let noise: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
            .collect();
        c.compress_to_scratch(&noise).unwrap();
        assert!(c.scratch_bytes() > 1 << 16);
        drop(c);
        assert_eq!(pool.stats().scratch_bytes, 0);
        assert!(pool.trim() == 0);
    }

    #[test]
    fn idle_timeout_expires_contexts() {
        let pool = ContextPool::new(PoolConfig {
            idle_timeout: Some(Duration::from_millis(20)),
            ..PoolConfig::default()
        });
        drop(pool.compressor(CompressParams::level(1)).unwrap());
        assert_eq!(pool.stats().idle, 1);
        std::thread::sleep(Duration::from_millis(40));
        assert!(pool.trim() > 0);
        let s = pool.stats();
        assert_eq!((s.idle, s.idle_bytes, s.dropped), (0, 0, 1));
    }

    #[test]
    fn clear_frees_everything_and_discard_counts() {
        let pool = small_pool();
        drop(pool.compressor(CompressParams::level(1)).unwrap());
        drop(pool.decompressor(DecompressParams::default()).unwrap());
        pool.compressor(CompressParams::level(1)).unwrap().discard();
        assert!(pool.clear() > 0);
        let s = pool.stats();
        assert_eq!((s.idle, s.idle_bytes, s.leased), (0, 0, 0));
        assert_eq!(s.dropped, 2);
    }

    #[test]
    fn threads_share_one_pool() {
        let pool = ContextPool::default();
        std::thread::scope(|scope| {
            for t in 0..16 {
                let pool = pool.clone();
                scope.spawn(move || {
                    for i in 0..50 {
                        let level = (t + i) % 9 + 1;
                        let data: Vec<u8> =
                            (0..(i * 997 + t * 31)).map(|x| (x % 31) as u8).collect();
                        let frame = pool
                            .compressor(CompressParams::level(level))
                            .unwrap()
                            .compress_to_scratch(&data)
                            .unwrap()
                            .to_vec();
                        let mut out = vec![0u8; data.len()];
                        if !data.is_empty() {
                            pool.decompressor(DecompressParams::default())
                                .unwrap()
                                .decompress_exact(&frame, &mut out)
                                .unwrap();
                        }
                        assert_eq!(out, data);
                    }
                });
            }
        });
        let s = pool.stats();
        assert_eq!(s.leased, 0);
        assert_eq!(s.created + s.reused, 16 * 50 * 2 - count_empty());
        // Every context made is either freed, out on lease, or idle.
        assert_eq!(s.created, s.dropped + s.leased as u64 + s.idle as u64);
    }

    fn count_empty() -> u64 {
        // Inputs of zero length (t == 0, i == 0) skip the decompressor lease.
        1
    }
}
