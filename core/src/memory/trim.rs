//! Gives back to the system the memory a large write has freed. glibc keeps what a process
//! frees in its arenas (one for each thread that allocated, a write's workers among them),
//! and after the first large block is freed it raises the size from which blocks are mapped on
//! their own, so that later buffers come from those arenas too. A write's encoded pages,
//! compressed buffers and scratch are freed when it ends, yet stay resident: a process that
//! wrote a million rows held its peak after the write returned, and grew with each further
//! write (benchmarks/RESULTS.md#held-after-write). `malloc_trim` returns the free pages inside
//! every arena and the top of the main one (glibc gives back the top of a worker's arena only
//! itself, past a threshold), which took a few milliseconds at most after writes of hundreds.
//! What costs more is after: the next write faults in again every page it reuses, a few
//! percent of a write that follows at once. So a trim follows a large write only when none
//! has run for [`TRIM_EVERY`]: a process that writes now and then gives its memory back after
//! each write, one that writes in a loop keeps what one write needs and pays for a trim a
//! second. The callers are the bindings' single-file writers, once their buffers are freed and
//! without the GIL, and the dataset writer once for all its files.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Bytes written below which a write leaves the allocator as it is: a small write frees little,
/// and a loop of them would pay for a trim each time. Counted in output, which a very
/// compressible write keeps small whatever it encoded.
pub const TRIM_FROM: u64 = 4 << 20;

/// The least time between two trims.
pub const TRIM_EVERY: Duration = Duration::from_secs(1);

/// After a write of `bytes_written` bytes has freed its buffers: returns the free memory of
/// every allocator arena to the system if the write was large and no trim has run for
/// [`TRIM_EVERY`]. Returns whether it asked for a trim (where glibc is not the allocator,
/// asking does nothing).
pub fn after_write(bytes_written: u64) -> bool {
    bytes_written >= TRIM_FROM && due(Instant::now()) && {
        give_back();
        true
    }
}

/// Whether a trim may run at `now`, claiming it if so (see [`claim`]).
fn due(now: Instant) -> bool {
    static START: OnceLock<Instant> = OnceLock::new();
    static LAST: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| now);
    let at = now.saturating_duration_since(start).as_millis() as u64 + 1;
    claim(&LAST, at, TRIM_EVERY.as_millis() as u64)
}

/// Whether `at` (milliseconds from a start, plus one) is `every` or more after the time in
/// `last` (0: never), setting `last` to `at` if so. Of threads finishing at once, one wins and
/// the others leave the trim to it.
fn claim(last: &AtomicU64, at: u64, every: u64) -> bool {
    let before = last.load(Relaxed);
    (before == 0 || at >= before.saturating_add(every))
        && last.compare_exchange(before, at, Relaxed, Relaxed).is_ok()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn give_back() {
    // SAFETY: malloc_trim takes no pointer and locks each arena itself; any thread may call it
    // at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators (musl's, macOS's) give freed pages back on their own terms.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_is_claimed_once_an_interval_and_by_one_thread() {
        let last = AtomicU64::new(0);
        assert!(claim(&last, 1, 1000), "the first trim");
        assert!(!claim(&last, 999, 1000));
        assert!(!claim(&last, 1000, 1000));
        assert!(claim(&last, 1001, 1000));
        assert_eq!(last.load(Relaxed), 1001);
        // Eight threads at one instant: one claims it.
        let last = AtomicU64::new(5);
        let won: usize = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| s.spawn(|| claim(&last, 5000, 1000)))
                .collect();
            threads
                .into_iter()
                .map(|t| usize::from(t.join().unwrap()))
                .sum()
        });
        assert_eq!(won, 1);
    }

    #[test]
    fn a_small_write_never_trims() {
        assert!(!after_write(0));
        assert!(!after_write(TRIM_FROM - 1));
    }
}
