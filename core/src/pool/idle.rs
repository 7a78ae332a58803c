//! The pool's shared state: the idle lists and counters under one lock, and the rules for
//! taking, returning, expiring and evicting contexts.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::pooled::{Pooled, Slot};
use super::{PoolConfig, PoolKey};
use crate::memory::spare::Spares;

pub(super) struct Idle {
    pub(super) slot: Slot,
    pub(super) bytes: usize,
    pub(super) scratch: usize,
    /// When it came back, in pool operations: orders eviction without reading a clock.
    pub(super) seq: u64,
    /// When it came back, in time: read only when the pool has an idle timeout.
    pub(super) at: Option<Instant>,
    /// The thread that gave it back (see [`thread_tag`]).
    pub(super) thread: u64,
}

/// A number for the calling thread, so that a context goes back to the thread that used it
/// last when that thread asks again: its tables are still in that core's cache, where a
/// context handed to another thread's core is read from afar
/// (benchmarks/RESULTS.md#pool-per-thread). Threads are numbered on first use; a plain `Cell`
/// has no destructor to register.
pub(super) fn thread_tag() -> u64 {
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
pub(super) struct IdleLists {
    /// Per key, a stack in the order contexts came back: a thread gets the context it returned
    /// last if that is still idle, else the top one, so contexts no thread asks for again sink
    /// to the bottom, where expiry and eviction find them. Threads that keep using the pool each
    /// keep their own context warm (up to `max_idle_per_key` of them), where a plain stack would
    /// let threads that take turns share one. A pool sees a handful of keys, so a scan beats
    /// hashing. A list stays when its last context is leased (while fewer than
    /// [`EMPTY_LISTS_KEPT`] lists are empty), so that the lease and return of a key's only
    /// context allocate nothing; a list emptied by expiry or eviction goes.
    pub(super) by_key: Vec<(PoolKey, Vec<Idle>)>,
    pub(super) count: usize,
    pub(super) bytes: usize,
    pub(super) scratch: usize,
    pub(super) peak_bytes: usize,
    pub(super) seq: u64,
    pub(super) next_sweep: Option<Instant>,
    pub(super) created: u64,
    pub(super) reused: u64,
    pub(super) returned: u64,
    pub(super) dropped: u64,
    pub(super) leased: usize,
}

/// The most empty lists kept for keys whose contexts are all leased: a lease that would empty
/// one more drops it, so that a process that has used many keys does not scan them all.
const EMPTY_LISTS_KEPT: usize = 16;

impl IdleLists {
    pub(super) fn list(&self, key: &PoolKey) -> Option<usize> {
        self.by_key.iter().position(|(k, _)| k == key)
    }

    /// Removes the context at `index` of `list`. An emptied list is kept only for a lease
    /// (`for_lease`: its context comes back soon) and while few are empty; one emptied by
    /// expiry or eviction is dropped with the key, which may never be used again.
    pub(super) fn remove_at(&mut self, list: usize, index: usize, for_lease: bool) -> Idle {
        let idle = self.by_key[list].1.remove(index);
        if self.by_key[list].1.is_empty() {
            let keep = for_lease && self.empty_lists() <= EMPTY_LISTS_KEPT;
            if !keep {
                self.by_key.swap_remove(list);
            }
        }
        self.count -= 1;
        self.bytes -= idle.bytes;
        self.scratch -= idle.scratch;
        idle
    }

    /// The context `thread` gave back last if it is idle, else the most recently returned.
    pub(super) fn pop(&mut self, key: &PoolKey, thread: u64) -> Option<Idle> {
        let list = self.list(key)?;
        let idle = &self.by_key[list].1;
        if idle.is_empty() {
            return None;
        }
        let index = idle
            .iter()
            .rposition(|i| i.thread == thread)
            .unwrap_or(idle.len() - 1);
        Some(self.remove_at(list, index, true))
    }

    /// Adds `idle` to its key's list, made (with a copy of the key) if it has none.
    pub(super) fn push(&mut self, idle: Idle) {
        self.count += 1;
        self.bytes += idle.bytes;
        self.scratch += idle.scratch;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        match self.by_key.iter().position(|(k, _)| idle.slot.has_key(k)) {
            Some(list) => self.by_key[list].1.push(idle),
            None => self.by_key.push((idle.slot.key(), vec![idle])),
        }
    }

    /// Lists with no idle context (their keys' contexts are all leased).
    pub(super) fn empty_lists(&self) -> usize {
        self.by_key.iter().filter(|(_, l)| l.is_empty()).count()
    }

    /// Drops the lists with no idle context.
    pub(super) fn drop_empty_lists(&mut self) {
        self.by_key.retain(|(_, l)| !l.is_empty());
    }

    /// How many contexts are idle under the key that `has_key` recognizes.
    pub(super) fn len_where(&self, has_key: impl Fn(&PoolKey) -> bool) -> usize {
        self.by_key
            .iter()
            .find(|(k, _)| has_key(k))
            .map_or(0, |(_, list)| list.len())
    }

    /// The list whose bottom (oldest) context came back longest ago.
    pub(super) fn oldest(&self) -> Option<usize> {
        (0..self.by_key.len())
            .filter(|&l| !self.by_key[l].1.is_empty())
            .min_by_key(|&l| self.by_key[l].1[0].seq)
    }

    /// Removes contexts idle since before `cutoff`.
    pub(super) fn expire(&mut self, cutoff: Instant, freed: &mut Vec<Idle>) {
        while let Some(list) = self.oldest() {
            let is_old = self.by_key[list].1[0].at.is_some_and(|at| at < cutoff);
            if !is_old {
                break;
            }
            freed.push(self.remove_at(list, 0, false));
        }
    }
}

pub(super) struct Shared {
    pub(super) config: PoolConfig,
    pub(super) idle: Mutex<IdleLists>,
    /// Behind its own lock: bodies come and go on other threads than leases.
    pub(super) spares: Arc<Spares>,
}

impl Shared {
    pub(super) fn new(config: PoolConfig) -> Self {
        Shared {
            idle: Mutex::new(IdleLists::default()),
            spares: Spares::new(config.spares),
            config,
        }
    }
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, IdleLists> {
        // A panic while holding the lock leaves only counters behind; the lists stay usable.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Frees expired contexts, at most once per half timeout, so the check costs nothing
    /// on the hot path.
    pub(super) fn sweep_if_due(&self, lists: &mut IdleLists, now: Instant, freed: &mut Vec<Idle>) {
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
    pub(super) fn take(&self, key: &PoolKey) -> Option<Slot> {
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
    pub(super) fn count_created(&self) {
        let mut lists = self.lock();
        lists.created += 1;
        lists.leased += 1;
    }

    /// Counts a leased context that is freed instead of coming back.
    pub(super) fn count_discarded(&self) {
        let mut lists = self.lock();
        lists.leased -= 1;
        lists.dropped += 1;
    }

    pub(super) fn give_back<T: Pooled>(&self, mut ctx: Box<T>) {
        if !ctx.recycle(self.config.max_scratch_bytes) {
            self.count_discarded();
            return;
        }
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
            let full = lists.len_where(|k| ctx.has_key(k)) >= self.config.max_idle_per_key;
            let rejected = if full || bytes > self.config.max_idle_bytes {
                lists.dropped += 1;
                Some(ctx)
            } else {
                // Make room under the byte cap by freeing the longest-idle contexts.
                while lists.bytes + bytes > self.config.max_idle_bytes {
                    let Some(oldest) = lists.oldest() else { break };
                    freed.push(lists.remove_at(oldest, 0, false));
                }
                lists.seq += 1;
                let seq = lists.seq;
                lists.push(Idle {
                    slot: ctx.into_slot(),
                    bytes,
                    scratch,
                    seq,
                    at: now,
                    thread,
                });
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
