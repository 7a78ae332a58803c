//! Freed decompressed bodies, kept for a moment so the next read reuses their pages.
//!
//! A large fresh allocation costs a page fault and a page cleared by the kernel per 4 KiB on
//! first write, a large share of reading a large body (benchmarks/RESULTS.md#huge-pages).
//! Allocators that keep freed memory (pyarrow's
//! mimalloc or jemalloc) hand it straight to the next read; glibc returns blocks this large to
//! the kernel. So a pool keeps them itself: only large ones, up to a byte cap, and for a short
//! time, after which a reaper thread frees them whether or not the pool is used again.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::memory::huge_pages::advise_huge_pages;

/// Smaller blocks come back from glibc's heap warm anyway.
pub const MIN_SPARE: usize = 1 << 20;

/// The reaper wakes at least this often, so it ends soon after its pool is dropped.
const REAPER_TICK: Duration = Duration::from_millis(100);

/// `len` uninitialized bytes from the global allocator, freed on drop.
pub struct RawBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a RawBytes owns its memory alone, like a Vec<u8>.
unsafe impl Send for RawBytes {}
unsafe impl Sync for RawBytes {}

impl RawBytes {
    /// None when the allocator refuses (the caller turns that into an error, not an abort).
    pub fn alloc(len: usize) -> Option<Self> {
        if len == 0 {
            return Some(RawBytes {
                ptr: NonNull::dangling(),
                len: 0,
            });
        }
        let layout = std::alloc::Layout::array::<u8>(len).ok()?;
        // SAFETY: the layout has a non-zero size.
        NonNull::new(unsafe { std::alloc::alloc(layout) }).map(|ptr| RawBytes { ptr, len })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for RawBytes {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `alloc` with this layout.
            unsafe {
                std::alloc::dealloc(
                    self.ptr.as_ptr(),
                    std::alloc::Layout::array::<u8>(self.len).expect("valid when allocated"),
                )
            }
        }
    }
}

/// How much a pool keeps, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpareConfig {
    /// Bytes of freed bodies kept together; 0 keeps none.
    pub max_bytes: usize,
    /// A spare unused for this long is freed.
    pub timeout: Duration,
}

impl Default for SpareConfig {
    fn default() -> Self {
        SpareConfig {
            max_bytes: 512 << 20,
            timeout: Duration::from_secs(1),
        }
    }
}

/// Counters of a pool's spares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpareStats {
    /// Spare blocks kept now.
    pub blocks: usize,
    /// Their bytes.
    pub bytes: usize,
    /// Bodies served from a spare block instead of fresh memory.
    pub reused: u64,
}

struct Spare {
    mem: RawBytes,
    since: Instant,
}

struct State {
    /// Oldest first.
    blocks: Vec<Spare>,
    bytes: usize,
    reused: u64,
    /// Whether a reaper thread runs for this store.
    reaper: bool,
    /// The process these blocks and that thread belong to: a fork's child has no reaper.
    pid: u32,
}

impl State {
    fn remove(&mut self, i: usize) -> RawBytes {
        let spare = self.blocks.remove(i);
        self.bytes -= spare.mem.len();
        spare.mem
    }

    /// Removes blocks kept since before `cutoff` into `freed`.
    fn expire(&mut self, cutoff: Instant, freed: &mut Vec<RawBytes>) {
        while self.blocks.first().is_some_and(|s| s.since <= cutoff) {
            freed.push(self.remove(0));
        }
    }
}

/// A pool's freed bodies. Shared by the pool and by every buffer that will come back to it.
pub struct Spares {
    config: SpareConfig,
    state: Mutex<State>,
}

impl Spares {
    pub fn new(config: SpareConfig) -> Arc<Self> {
        Arc::new(Spares {
            config,
            state: Mutex::new(State {
                blocks: Vec::new(),
                bytes: 0,
                reused: 0,
                reaper: false,
                pid: std::process::id(),
            }),
        })
    }

    pub fn config(&self) -> SpareConfig {
        self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing a panic interrupts leaves the list inconsistent.
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if state.pid == pid {
            return state;
        }
        // A fork's child: no reaper runs here, so the parent's blocks would stay for the
        // child's whole life. Free them (the child's copies, outside the lock) and start
        // afresh. (As with any lock, a fork while another thread holds it leaves it held.)
        state.pid = pid;
        state.reaper = false;
        state.bytes = 0;
        let inherited = std::mem::take(&mut state.blocks);
        drop(state);
        drop(inherited);
        self.lock()
    }

    /// At least `len` uninitialized bytes: a spare block of `len` to `len + len/8` bytes if
    /// one is kept (the smallest), otherwise fresh memory (with the huge-page hint); None when
    /// the allocator refuses.
    pub fn alloc(&self, len: usize) -> Option<RawBytes> {
        if len >= MIN_SPARE && self.config.max_bytes > 0 {
            let mut state = self.lock();
            let fits = len..=len.saturating_add(len / 8);
            let fit = (0..state.blocks.len())
                .filter(|&i| fits.contains(&state.blocks[i].mem.len()))
                .min_by_key(|&i| state.blocks[i].mem.len());
            if let Some(i) = fit {
                state.reused += 1;
                return Some(state.remove(i));
            }
        }
        let mem = RawBytes::alloc(len)?;
        advise_huge_pages(mem.ptr(), mem.len());
        Some(mem)
    }

    /// Keeps `mem` for the next `alloc`, freeing the oldest blocks as needed to stay under the
    /// cap; frees `mem` itself when it is small or larger than the cap.
    pub fn give_back(self: &Arc<Self>, mem: RawBytes) {
        if mem.len() < MIN_SPARE || mem.len() > self.config.max_bytes {
            return;
        }
        let mut freed = Vec::new();
        {
            let mut state = self.lock();
            while state.bytes + mem.len() > self.config.max_bytes {
                freed.push(state.remove(0));
            }
            state.bytes += mem.len();
            state.blocks.push(Spare {
                mem,
                since: Instant::now(),
            });
            self.ensure_reaper(&mut state);
        }
        // Freed outside the lock.
        drop(freed);
    }

    /// Frees every spare block; returns the bytes freed.
    pub fn clear(&self) -> usize {
        let blocks = {
            let mut state = self.lock();
            state.bytes = 0;
            std::mem::take(&mut state.blocks)
        };
        blocks.iter().map(|s| s.mem.len()).sum()
    }

    pub fn stats(&self) -> SpareStats {
        let state = self.lock();
        SpareStats {
            blocks: state.blocks.len(),
            bytes: state.bytes,
            reused: state.reused,
        }
    }

    /// Starts a thread that frees blocks as they expire and ends when none is left. It holds
    /// the store weakly and wakes every REAPER_TICK: it ends soon after its pool is dropped.
    fn ensure_reaper(self: &Arc<Self>, state: &mut State) {
        if state.reaper {
            return;
        }
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("zstdpool-spares".into())
            .spawn(move || reap(weak));
        // Without a thread (the system refused one) blocks still go at `trim()` or `clear()`,
        // or when newer ones push them out.
        state.reaper = spawned.is_ok();
    }
}

fn reap(spares: Weak<Spares>) {
    let mut wait = match spares.upgrade() {
        Some(s) => s.config.timeout.min(REAPER_TICK),
        None => return,
    };
    loop {
        std::thread::sleep(wait);
        let Some(spares) = spares.upgrade() else {
            return;
        };
        let mut freed = Vec::new();
        {
            let mut state = spares.lock();
            let now = Instant::now();
            if let Some(cutoff) = now.checked_sub(spares.config.timeout) {
                state.expire(cutoff, &mut freed);
            }
            match state.blocks.first() {
                // Sleep until the oldest block expires.
                Some(oldest) => {
                    wait = oldest
                        .since
                        .checked_add(spares.config.timeout)
                        .map_or(REAPER_TICK, |due| due.saturating_duration_since(now))
                        .min(REAPER_TICK)
                }
                None => {
                    state.reaper = false;
                    return;
                }
            }
        }
        drop(freed);
    }
}

/// A body's memory inside Arrow buffers: back to its pool's spares when the last buffer
/// using it is dropped, or freed if the pool is gone by then (arrays may outlive it).
pub struct Returning {
    mem: Option<RawBytes>,
    home: Weak<Spares>,
}

impl Returning {
    pub fn new(mem: RawBytes, home: &Arc<Spares>) -> Self {
        Returning {
            mem: Some(mem),
            home: Arc::downgrade(home),
        }
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        if let (Some(mem), Some(home)) = (self.mem.take(), self.home.upgrade()) {
            home.give_back(mem);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spares(max_bytes: usize, timeout_ms: u64) -> Arc<Spares> {
        Spares::new(SpareConfig {
            max_bytes,
            timeout: Duration::from_millis(timeout_ms),
        })
    }

    #[test]
    fn a_freed_block_serves_the_next_alloc_of_about_its_size() {
        let s = spares(16 << 20, 60_000);
        let a = s.alloc(2 << 20).unwrap();
        let ptr = a.ptr();
        s.give_back(a);
        assert_eq!(s.stats().bytes, 2 << 20);
        // Too large a block for a small request, and too small for a larger one.
        assert_ne!(s.alloc(MIN_SPARE).unwrap().ptr(), ptr);
        assert_ne!(s.alloc((2 << 20) + 1).unwrap().ptr(), ptr);
        assert_eq!(s.stats().blocks, 1);
        let b = s.alloc((2 << 20) - 1000).unwrap();
        assert_eq!(b.ptr(), ptr);
        assert_eq!(b.len(), 2 << 20);
        assert_eq!(
            s.stats(),
            SpareStats {
                blocks: 0,
                bytes: 0,
                reused: 1
            }
        );
    }

    #[test]
    fn small_blocks_and_a_zero_cap_keep_nothing() {
        let s = spares(16 << 20, 60_000);
        s.give_back(RawBytes::alloc(MIN_SPARE - 1).unwrap());
        assert_eq!(s.stats().blocks, 0);
        let off = spares(0, 60_000);
        off.give_back(RawBytes::alloc(MIN_SPARE).unwrap());
        assert_eq!(off.stats().blocks, 0);
    }

    #[test]
    fn the_byte_cap_is_never_passed() {
        let s = spares(5 << 20, 60_000);
        for mb in [2usize, 2, 3, 1, 6, 4] {
            s.give_back(RawBytes::alloc(mb << 20).unwrap());
            assert!(s.stats().bytes <= 5 << 20, "{:?}", s.stats());
        }
        // The oldest went first, and the 6 MiB block was never kept: 1 and 4 MiB are left.
        assert_eq!(s.stats().blocks, 2);
        assert_eq!(s.stats().bytes, 5 << 20);
        assert_eq!(s.clear(), 5 << 20);
        assert_eq!(s.stats().blocks, 0);
    }

    #[test]
    fn the_reaper_frees_unused_blocks_and_stops() {
        let s = spares(16 << 20, 20);
        s.give_back(RawBytes::alloc(MIN_SPARE).unwrap());
        assert_eq!(s.stats().blocks, 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.lock().reaper {
            assert!(Instant::now() < deadline, "the reaper never finished");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(s.stats().blocks, 0);
        // A later block gets a new reaper.
        s.give_back(RawBytes::alloc(MIN_SPARE).unwrap());
        assert!(s.lock().reaper);
    }

    #[test]
    fn a_returning_buffer_goes_back_when_arrow_drops_it() {
        let s = spares(16 << 20, 60_000);
        let mem = s.alloc(MIN_SPARE).unwrap();
        let ptr = NonNull::new(mem.ptr()).unwrap();
        // SAFETY: written before Arrow sees it; `Returning` keeps the memory alive.
        let buffer = unsafe {
            std::ptr::write_bytes(ptr.as_ptr(), 7, MIN_SPARE);
            arrow_buffer::Buffer::from_custom_allocation(
                ptr,
                MIN_SPARE,
                Arc::new(Returning::new(mem, &s)),
            )
        };
        let slice = buffer.slice(10);
        drop(buffer);
        assert_eq!(s.stats().blocks, 0);
        assert_eq!(slice[0], 7);
        drop(slice);
        assert_eq!(s.stats().blocks, 1);
    }

    #[test]
    fn the_smallest_fitting_block_is_taken() {
        let s = spares(64 << 20, 60_000);
        let sizes = [(4 << 20) + 4096, 4 << 20, 5 << 20, (4 << 20) + 1];
        let ptrs: Vec<*mut u8> = sizes
            .iter()
            .map(|&n| {
                let m = RawBytes::alloc(n).unwrap();
                let p = m.ptr();
                s.give_back(m);
                p
            })
            .collect();
        // 5 MiB is more than 1/8 over 4 MiB; the others fit, smallest first.
        for expect in [1, 3, 0] {
            assert_eq!(s.alloc(4 << 20).unwrap().ptr(), ptrs[expect]);
        }
        assert_ne!(s.alloc(4 << 20).unwrap().ptr(), ptrs[2]);
        assert_eq!(s.stats().blocks, 1);
    }

    #[test]
    fn arrays_that_outlive_their_pool_free_their_memory() {
        let s = spares(16 << 20, 60_000);
        let mem = s.alloc(MIN_SPARE).unwrap();
        let ptr = NonNull::new(mem.ptr()).unwrap();
        let owner = Arc::new(Returning::new(mem, &s));
        let weak = Arc::downgrade(&s);
        // SAFETY: the bytes are not read; `owner` keeps the memory alive.
        let buffer = unsafe { arrow_buffer::Buffer::from_custom_allocation(ptr, 16, owner) };
        drop(s);
        assert!(
            weak.upgrade().is_none(),
            "the buffer must not keep the pool's spares"
        );
        drop(buffer);
    }

    #[test]
    fn a_forked_child_drops_the_parents_blocks() {
        let s = spares(16 << 20, 60_000);
        s.give_back(RawBytes::alloc(MIN_SPARE).unwrap());
        // As a child sees it: another process id, the parent's reaper not running here.
        s.state.lock().unwrap().pid ^= 1;
        let stats = s.stats();
        assert_eq!((stats.blocks, stats.bytes), (0, 0));
        assert!(!s.lock().reaper);
    }
}
