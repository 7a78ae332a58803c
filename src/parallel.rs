//! Spreading independent pieces of work (buffers of a batch, inputs of `compress_many`) over
//! threads, each with its own pooled context. Small jobs stay on the calling thread: a thread
//! hand-off costs more than compressing a few KiB.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Below this many bytes of input in one job, threads cost more than they gain (measured with
/// `python -m zstdpool bench`; see benchmarks/RESULTS.md).
pub const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// Each thread should get at least this much input.
const MIN_BYTES_PER_THREAD: usize = 256 << 10;

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
/// items are handed out by a shared counter. The first failure (by item index) is returned
/// and the rest stop early.
pub fn for_each_parallel<T, C, R, M, W>(
    items: &[T],
    threads: usize,
    primary: Option<&mut C>,
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
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, Result<R>)>> = Mutex::new(Vec::with_capacity(items.len()));
    let run = |mut given: Option<&mut C>| {
        let mut own: Option<C> = None;
        let mut mine = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let ctx = match given.as_deref_mut() {
                Some(c) => Ok(c),
                None => match own {
                    Some(ref mut c) => Ok(c),
                    None => make().map(|c| own.insert(c)),
                },
            };
            let r = ctx.and_then(|c| work(c, i, item));
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            mine.push((i, r));
        }
        results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(mine);
    };
    let helpers = threads.min(items.len()).saturating_sub(1);
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
    // In index order, so the error returned is the first input's that failed.
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_order_and_errors_name_the_first() {
        let items: Vec<usize> = (0..100).collect();
        let out =
            for_each_parallel(&items, 4, None, || Ok(0usize), |_, i, x| Ok(i * 1000 + x)).unwrap();
        assert_eq!(out, (0..100).map(|i| i * 1001).collect::<Vec<_>>());
        let err = for_each_parallel(
            &items,
            1,
            None,
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
    fn thread_choice() {
        assert_eq!(resolve_threads(None, 1000, 10).unwrap(), 1);
        assert_eq!(resolve_threads(Some(8), 1000, 3).unwrap(), 3);
        assert!(resolve_threads(Some(0), 1000, 3).is_err());
        assert!(resolve_threads(None, 64 << 20, 64).unwrap() >= 1);
    }
}
