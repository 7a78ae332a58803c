//! Spreading independent pieces of work (buffers of a batch, inputs of `compress_many`) over
//! threads, each with its own pooled context. Small jobs stay on the calling thread: a thread
//! hand-off costs more than compressing a few KiB.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Below this many bytes of input in one job, threads cost more than they gain (measured with
/// `python -m zstdpool bench`; see benchmarks/RESULTS-archive.md).
pub const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// Each thread should get at least this much input.
const MIN_BYTES_PER_THREAD: usize = 256 << 10;

/// What a helper thread is asked room for before it is started: its stack (2 MiB, Rust's
/// default), its thread-local data and its first allocations.
const THREAD_COST: u64 = 4 << 20;

/// The number of CPUs this process may use.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads to use for `items` pieces of `total_bytes`: the caller's choice, capped at the
/// number of pieces, or (for `None`) as many as the size justifies.
pub fn resolve_threads(
    requested: Option<usize>,
    total_bytes: usize,
    items: usize,
) -> Result<usize> {
    let items = items.max(1);
    match requested {
        Some(0) => Err(Error::Parameter(
            "threads must be at least 1 (or None to choose by size)".into(),
        )),
        Some(n) => Ok(n.min(items)),
        None if total_bytes < PARALLEL_MIN_BYTES => Ok(1),
        None => Ok(available_threads()
            .min(items)
            .min(total_bytes / MIN_BYTES_PER_THREAD)
            .max(1)),
    }
}

/// Runs `work(ctx, index, item)` for every item and returns the results in item order.
/// The calling thread works too, with `primary` as its context; with `threads > 1`, each of
/// the `threads - 1` helper threads makes its own context with `make`, at its first item, and
/// items are handed out by a shared counter, largest `weight` first: a large item started
/// last would leave the other threads idle while it runs. The error returned is the failing
/// item's with the lowest index; items after it are skipped.
pub fn for_each_parallel<T, C, R, M, W>(
    items: &[T],
    threads: usize,
    primary: Option<&mut C>,
    weight: impl Fn(&T) -> usize,
    make: M,
    work: W,
) -> Result<Vec<R>>
where
    T: Sync,
    C: Send,
    R: Send,
    M: Fn() -> Result<C> + Sync,
    W: Fn(&mut C, usize, &T) -> Result<R> + Sync,
{
    let mut helpers = threads.min(items.len()).saturating_sub(1);
    // A thread that cannot have its stack and its thread-local data aborts the process (the
    // C library's "cannot allocate memory for thread-local data"): where the kernel would not
    // map them now, the work runs on the calling thread alone.
    if helpers > 0
        && !crate::memory::headroom::can_map((helpers as u64).saturating_mul(THREAD_COST))
    {
        helpers = 0;
    }
    let order = hand_out_order(items, helpers > 0, weight);
    let next = AtomicUsize::new(0);
    // The lowest index that failed so far; items above it need not run.
    let first_failure = AtomicUsize::new(usize::MAX);
    let results: Mutex<Vec<(usize, Result<R>)>> = Mutex::new(Vec::with_capacity(items.len()));
    let run = |mut given: Option<&mut C>| {
        let mut own: Option<C> = None;
        let mut mine = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            if i > first_failure.load(Ordering::Relaxed) {
                continue;
            }
            let ctx = match given.as_deref_mut() {
                Some(c) => Ok(c),
                None => match own {
                    Some(ref mut c) => Ok(c),
                    None => make().map(|c| own.insert(c)),
                },
            };
            let r = ctx.and_then(|c| work(c, i, &items[i]));
            if r.is_err() {
                first_failure.fetch_min(i, Ordering::Relaxed);
            }
            mine.push((i, r));
        }
        results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(mine);
    };
    if helpers == 0 {
        run(primary);
    } else {
        std::thread::scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|| run(None));
            }
            run(primary);
        });
    }
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(i, _)| *i);
    // Every item below the first failure ran, so in index order the first error met is the
    // lowest failing index's; the skipped items all come after it.
    results.into_iter().map(|(_, r)| r).collect()
}

/// The order items are handed out in: by index on one thread, else heaviest first (stable, so
/// equal weights keep their index order).
fn hand_out_order<T>(items: &[T], parallel: bool, weight: impl Fn(&T) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    if parallel {
        order.sort_by_key(|&i| std::cmp::Reverse(weight(&items[i])));
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_order_and_errors_name_the_first() {
        let items: Vec<usize> = (0..100).collect();
        let out = for_each_parallel(
            &items,
            4,
            None,
            |x| *x,
            || Ok(0usize),
            |_, i, x| Ok(i * 1000 + x),
        )
        .unwrap();
        assert_eq!(out, (0..100).map(|i| i * 1001).collect::<Vec<_>>());
        let err = for_each_parallel(
            &items,
            1,
            None,
            |_| 1,
            || Ok(()),
            |_, i, _| {
                if i >= 7 {
                    Err(Error::Corrupt(format!("item {i}")))
                } else {
                    Ok(i)
                }
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "item 7");
    }

    #[test]
    fn heaviest_items_go_first_and_the_lowest_failure_is_reported() {
        let sizes = [5usize, 90, 5, 40, 90];
        assert_eq!(hand_out_order(&sizes, true, |s| *s), vec![1, 4, 3, 0, 2]);
        assert_eq!(hand_out_order(&sizes, false, |s| *s), vec![0, 1, 2, 3, 4]);
        // Item 90 is handed out first and fails first; item 20 fails later but comes first.
        let items: Vec<usize> = (0..100).collect();
        for threads in [1, 2, 4] {
            let err = for_each_parallel(
                &items,
                threads,
                None,
                |x| *x,
                || Ok(()),
                |_, i, _| match i {
                    20 | 90 => Err(Error::Corrupt(format!("item {i}"))),
                    _ => Ok(i),
                },
            )
            .unwrap_err();
            assert_eq!(err.to_string(), "item 20", "threads={threads}");
        }
    }

    #[test]
    fn thread_choice() {
        assert_eq!(resolve_threads(None, 1000, 10).unwrap(), 1);
        assert_eq!(resolve_threads(Some(8), 1000, 3).unwrap(), 3);
        assert!(resolve_threads(Some(0), 1000, 3).is_err());
        assert!(resolve_threads(None, 64 << 20, 64).unwrap() >= 1);
    }
}
