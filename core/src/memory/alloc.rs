//! Counts the bytes that Rust code in this library holds on the heap, current and peak, so
//! that memory benchmarks can measure what a write keeps and what it needs at its peak.
//! Only blocks of [`COUNTED_FROM`] bytes or more are counted, with one or two relaxed atomic
//! operations each; zstd's own contexts are allocated by C code and measured by the pool with
//! zstd's sizeof functions instead.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The smallest block counted. The blocks that hold data (bodies, outputs, compressed
/// buffers, scratch) are counted; the many small ones of each call's bookkeeping (array
/// handles, flatbuffers, vectors of buffers) are not. Counting those too costs a shared atomic
/// per allocation, a visible share of a loop of small uncompressed writes
/// (benchmarks/RESULTS.md#alloc-counting), and more with two threads allocating at once, which pass
/// the counter's cache line back and forth.
pub const COUNTED_FROM: usize = 4096;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[cfg(feature = "mimalloc")]
use mimalloc::MiMalloc as Inner;
#[cfg(not(feature = "mimalloc"))]
use std::alloc::System as Inner;

/// The allocator underneath (mimalloc with the `mimalloc` feature, else the system's).
static INNER: Inner = Inner;

/// The allocator underneath, counted.
pub struct CountingAllocator;

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Relaxed) + by;
    // A plain load first: most allocations do not set a new peak, and then cost one atomic
    // read-modify-write instead of two.
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

fn shrank(by: usize) {
    CURRENT.fetch_sub(by, Relaxed);
}

/// The bytes of a block of `size` that count (see [`COUNTED_FROM`]).
#[inline]
fn counted(size: usize) -> usize {
    if size >= COUNTED_FROM {
        size
    } else {
        0
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() && layout.size() >= COUNTED_FROM {
            grew(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() && layout.size() >= COUNTED_FROM {
            grew(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { INNER.dealloc(ptr, layout) };
        if layout.size() >= COUNTED_FROM {
            shrank(layout.size());
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let (old, new) = (counted(layout.size()), counted(new_size));
            if new > old {
                grew(new - old);
            } else if old > new {
                shrank(old - new);
            }
        }
        p
    }
}

/// Whether this build counts (the `alloc-stats` feature).
pub const COUNTING: bool = cfg!(feature = "alloc-stats");

/// Bytes held now by Rust allocations in this library.
pub fn current_bytes() -> usize {
    CURRENT.load(Relaxed)
}

/// The most `current_bytes` has been since the last `reset_peak`.
pub fn peak_bytes() -> usize {
    PEAK.load(Relaxed)
}

/// Starts a new peak measurement from what is held now; returns the old peak.
pub fn reset_peak() -> usize {
    PEAK.swap(CURRENT.load(Relaxed), Relaxed)
}

#[cfg(all(test, feature = "alloc-stats"))]
mod tests {
    use super::*;

    #[test]
    fn counts_allocations_and_the_peak() {
        let before = current_bytes();
        reset_peak();
        let v: Vec<u8> = Vec::with_capacity(10 << 20);
        assert!(current_bytes() >= before + (10 << 20));
        drop(v);
        assert!(peak_bytes() >= before + (10 << 20));
        assert!(current_bytes() < before + (1 << 20));
    }

    /// Exact counts of a process-wide counter: run with `--test-threads=1`, as the README's
    /// command does.
    #[test]
    fn counts_blocks_from_the_threshold_across_reallocations() {
        let before = current_bytes();
        let small: Vec<Vec<u8>> = (0..1000).map(|_| Vec::with_capacity(100)).collect();
        assert_eq!(
            current_bytes(),
            before + 1000 * std::mem::size_of::<Vec<u8>>()
        );
        drop(small);
        assert_eq!(current_bytes(), before);
        let mut v: Vec<u8> = Vec::with_capacity(100);
        v.reserve_exact(2 * COUNTED_FROM);
        assert_eq!(current_bytes(), before + v.capacity());
        v.shrink_to(10);
        assert_eq!(current_bytes(), before);
        v.reserve_exact(COUNTED_FROM * 4);
        let grown = v.capacity();
        v.shrink_to(COUNTED_FROM * 2);
        assert_eq!(current_bytes(), before + v.capacity());
        assert!(v.capacity() < grown);
        drop(v);
        assert_eq!(current_bytes(), before);
    }
}

#[cfg(all(test, feature = "alloc-stats"))]
mod writer_peak {
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array, RecordBatch};

    use super::*;
    use crate::context::CompressParams;
    use crate::ipc::{Compression, IpcWriter, WriterOptions};
    use crate::pool::ContextPool;

    /// A write's peak is the compressed output plus one compressBound of the largest buffer
    /// per compressing thread: no copy of the uncompressed body is ever made. The counter is
    /// process-wide, so run with `--test-threads=1` (as the README's command does).
    #[test]
    fn a_write_peaks_at_compressed_plus_one_bound_per_thread() {
        let n = 2_000_000;
        let b = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..n as i64)) as _,
            ),
            (
                "c",
                Arc::new(Int32Array::from_iter_values(
                    (0..n as i32).map(|i| i.wrapping_mul(-1640531535) % 100_000),
                )) as _,
            ),
        ])
        .unwrap();
        let largest_bound = zstd_safe::compress_bound(n * 8);
        let pool = ContextPool::default();
        for threads in [1, 2] {
            let options = WriterOptions {
                compression: Compression::Zstd(CompressParams::level(1)),
                threads: Some(threads),
                ..Default::default()
            };
            let before = current_bytes();
            reset_peak();
            let mut w = IpcWriter::try_new(b.schema(), options, &pool).unwrap();
            let mut out = Vec::new();
            w.write(&b, &mut out).unwrap();
            w.finish(&mut out).unwrap();
            let peak = peak_bytes() - before;
            let budget = out.len() * 9 / 8 + threads * largest_bound + (1 << 20);
            assert!(peak <= budget, "threads {threads}: peak {peak} > {budget}");
            assert!(out.capacity() - out.len() <= out.len() / 8 + largest_bound);
        }
    }
}
