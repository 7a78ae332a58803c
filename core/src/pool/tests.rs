//! The pool's accounting, caps, thread affinity and byte-identical reuse.

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
                    let data: Vec<u8> = (0..(i * 997 + t * 31)).map(|x| (x % 31) as u8).collect();
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

#[test]
fn a_key_whose_contexts_are_all_leased_keeps_its_list() {
    let pool = small_pool();
    let params = CompressParams::level(2);
    drop(pool.compressor(params).unwrap());
    let lease = pool.compressor(params).unwrap();
    // Leased, the key's list is empty but kept (its return allocates nothing), and the stats
    // list only keys with idle contexts.
    assert_eq!(pool.shared.lock().by_key.len(), 1);
    assert!(pool.stats().per_key.is_empty());
    drop(lease);
    let s = pool.stats();
    assert_eq!((s.created, s.reused, s.idle, s.per_key.len()), (1, 1, 1, 1));
}

#[test]
fn empty_lists_beyond_the_kept_few_are_dropped() {
    let pool = small_pool();
    let levels: Vec<i32> = (1..=20).collect();
    let lease_all = || {
        levels
            .iter()
            .map(|&l| pool.compressor(CompressParams::level(l)).unwrap())
            .collect::<Vec<_>>()
    };
    drop(lease_all());
    assert_eq!(pool.stats().idle, 20);
    let leases = lease_all();
    assert_eq!(pool.stats().reused, 20);
    // Every list is empty now: no more than the kept few remain, and none is scanned as idle.
    assert!(pool.shared.lock().by_key.len() <= 16);
    assert_eq!(pool.shared.lock().oldest(), None);
    drop(leases);
    let s = pool.stats();
    assert_eq!((s.idle, s.per_key.len()), (20, 20));
}

#[test]
fn lists_emptied_by_expiry_go_and_the_live_key_keeps_its_own() {
    let pool = ContextPool::new(PoolConfig {
        idle_timeout: Some(std::time::Duration::from_millis(1)),
        ..PoolConfig::default()
    });
    // 16 keys used once, whose contexts then expire: their lists go with them.
    for level in 1..=16 {
        drop(pool.compressor(CompressParams::level(level)).unwrap());
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
    pool.trim();
    assert_eq!(pool.shared.lock().by_key.len(), 0);
    // A 17th key, leased and returned twice: its list is kept while it is out.
    let live = CompressParams::level(17);
    drop(pool.compressor(live).unwrap());
    let lease = pool.compressor(live).unwrap();
    assert_eq!(pool.shared.lock().by_key.len(), 1);
    drop(lease);
    assert_eq!(pool.stats().reused, 1);
}

#[test]
fn trim_drops_the_lists_of_keys_with_nothing_idle() {
    let pool = small_pool();
    drop(pool.compressor(CompressParams::level(3)).unwrap());
    let lease = pool.compressor(CompressParams::level(3)).unwrap();
    assert_eq!(pool.shared.lock().by_key.len(), 1);
    pool.trim();
    assert_eq!(pool.shared.lock().by_key.len(), 0);
    drop(lease);
    assert_eq!(pool.stats().idle, 1);
}

#[test]
fn params_show_only_the_advanced_parameters_set() {
    let mut params = CompressParams::level(3);
    assert!(!format!("{params:?}").contains("2147483648"));
    params.advanced.set(102, 17).unwrap();
    assert!(
        format!("{params:?}").contains("\"hash_log\": 17"),
        "{params:?}"
    );
}
