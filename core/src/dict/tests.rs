//! Dictionaries: round trips, byte-identical reuse, mismatches named, training, accounting.

use super::*;
use crate::context::{CompressParams, Compressor, DecompressParams, Decompressor};
use crate::pool::{ContextPool, PoolConfig};

/// JSON-like log records with the repetition real ones have: the same keys and a few values.
fn record(i: usize) -> Vec<u8> {
    let levels = ["INFO", "WARN", "DEBUG", "ERROR"];
    let services = ["api-gateway", "billing", "search", "auth"];
    format!(
        r#"{{"ts":"2026-12-02T10:{:02}:{:02}.{:03}Z","level":"{}","service":"{}","host":"node-{}","request_id":"{:08x}","latency_ms":{},"status":{},"path":"/v1/items/{}","user_agent":"Mozilla/5.0 (X11; Linux x86_64)"}}"#,
        i / 60 % 60,
        i % 60,
        i * 7 % 1000,
        levels[i % 4],
        services[i * 3 % 4],
        i % 17,
        i.wrapping_mul(2_654_435_761) as u32,
        i * 13 % 500,
        [200, 200, 200, 404, 500][i % 5],
        i % 1000,
    )
    .into_bytes()
}

fn samples(range: std::ops::Range<usize>) -> Samples {
    let mut s = Samples {
        bytes: Vec::new(),
        sizes: Vec::new(),
    };
    for i in range {
        let r = record(i);
        s.sizes.push(r.len());
        s.bytes.extend_from_slice(&r);
    }
    s
}

fn trained() -> ZstdDict {
    trained_on(0..2000)
}

fn trained_on(range: std::ops::Range<usize>) -> ZstdDict {
    let content = train(&samples(range), 4096).unwrap();
    ZstdDict::new(&content, false).unwrap()
}

fn compress(c: &mut Compressor, data: &[u8]) -> Vec<u8> {
    c.compress_to_scratch(data).unwrap().to_vec()
}

fn decompress(d: &mut Decompressor, frame: &[u8], len: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    d.decompress_exact(frame, &mut out).map(|_| out)
}

#[test]
fn a_trained_dictionary_round_trips_and_compresses_small_records_smaller() {
    let dict = trained();
    assert_ne!(dict.id(), 0);
    assert!(dict.content().len() <= 4096);
    let mut c = Compressor::new(CompressParams::level(3)).unwrap();
    let mut d = Decompressor::new(DecompressParams::default()).unwrap();
    let (mut with, mut without) = (0, 0);
    for i in 5000..5100 {
        let r = record(i);
        without += compress(&mut c, &r).len();
        c.use_dict(Some(&dict)).unwrap();
        let frame = compress(&mut c, &r);
        with += frame.len();
        c.use_dict(None).unwrap();
        assert_eq!(
            zstd_safe::get_dict_id_from_frame(&frame).map(NonZeroU32::get),
            Some(dict.id())
        );
        d.use_dict(Some(&dict)).unwrap();
        assert_eq!(decompress(&mut d, &frame, r.len()).unwrap(), r);
        assert_eq!(d.decompress_streaming(&frame, 1 << 20).unwrap(), r);
        d.use_dict(None).unwrap();
    }
    assert!(with * 2 < without, "{with} bytes with, {without} without");
}

#[test]
fn reused_contexts_write_the_frames_a_fresh_one_writes() {
    let (a, b) = (
        trained(),
        ZstdDict::new(&record(1).repeat(4), true).unwrap(),
    );
    let pool = ContextPool::new(PoolConfig {
        max_idle_per_key: 1,
        ..PoolConfig::default()
    });
    let params = CompressParams::level(3);
    let r = record(9000);
    let fresh = {
        let mut c = Compressor::new(params).unwrap();
        c.use_dict(Some(&a)).unwrap();
        compress(&mut c, &r)
    };
    let plain = compress(&mut Compressor::new(params).unwrap(), &r);
    // One pooled context goes through the other dictionary, none, a large input and `a`.
    for dict in [Some(&b), None, Some(&a), Some(&b)] {
        let mut c = pool.compressor(params).unwrap();
        c.use_dict(dict).unwrap();
        compress(&mut c, &vec![b'x'; 1 << 20]);
        compress(&mut c, &r);
    }
    assert_eq!(pool.stats().created, 1);
    let mut c = pool.compressor(params).unwrap();
    assert_eq!(
        compress(&mut c, &r),
        plain,
        "a returned context forgets its dictionary"
    );
    c.use_dict(Some(&a)).unwrap();
    assert_eq!(compress(&mut c, &r), fresh);
    c.use_dict(Some(&a)).unwrap();
    assert_eq!(compress(&mut c, &r), fresh, "a dictionary set twice");
}

#[test]
fn a_frame_names_the_dictionary_it_needs() {
    let (a, b) = (trained(), trained_on(3000..5000));
    assert_ne!(a.id(), b.id());
    let raw = ZstdDict::new(&record(3).repeat(3), true).unwrap();
    let r = record(7);
    let mut c = Compressor::new(CompressParams::level(1)).unwrap();
    c.use_dict(Some(&a)).unwrap();
    let frame = compress(&mut c, &r);
    let mut d = Decompressor::new(DecompressParams::default()).unwrap();
    let id = a.id();
    let err = decompress(&mut d, &frame, r.len()).unwrap_err().to_string();
    assert!(
        err.contains(&format!("dictionary of id {id}: pass")),
        "{err}"
    );
    d.use_dict(Some(&b)).unwrap();
    let err = d
        .decompress_streaming(&frame, 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("id {id}, but zstd_dict has id {}", b.id())),
        "{err}"
    );
    d.use_dict(Some(&raw)).unwrap();
    let err = decompress(&mut d, &frame, r.len()).unwrap_err().to_string();
    assert!(err.contains("raw content"), "{err}");
    // The context still works, with the right dictionary.
    d.use_dict(Some(&a)).unwrap();
    assert_eq!(decompress(&mut d, &frame, r.len()).unwrap(), r);
    // A second frame that needs another dictionary is caught by zstd itself.
    let mut two = frame.clone();
    c.use_dict(Some(&b)).unwrap();
    two.extend(compress(&mut c, &r));
    let err = d
        .decompress_streaming(&two, 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(err.contains("Dictionary mismatch"), "{err}");
    assert_eq!(decompress(&mut d, &frame, r.len()).unwrap(), r);
}

#[test]
fn without_the_dict_id_a_frame_is_still_read_with_its_dictionary() {
    let dict = trained();
    let params = CompressParams {
        write_dict_id: false,
        ..CompressParams::level(3)
    };
    let mut c = Compressor::new(params).unwrap();
    c.use_dict(Some(&dict)).unwrap();
    let r = record(11);
    let frame = compress(&mut c, &r);
    assert_eq!(zstd_safe::get_dict_id_from_frame(&frame), None);
    let mut d = Decompressor::new(DecompressParams::default()).unwrap();
    d.use_dict(Some(&dict)).unwrap();
    assert_eq!(decompress(&mut d, &frame, r.len()).unwrap(), r);
}

#[test]
fn bad_content_is_refused_with_the_reason() {
    let err = |content: &[u8], raw: bool| ZstdDict::new(content, raw).unwrap_err().to_string();
    assert!(err(b"short", true).contains("too short: 5 bytes"));
    assert!(err(b"plain bytes, no header", false).contains("magic number"));
    let good = trained();
    let mut broken = good.content().to_vec();
    broken.truncate(12);
    assert!(
        err(&broken, false).contains("malformed zstd dictionary"),
        "{}",
        err(&broken, false)
    );
    let mut id_zero = good.content().to_vec();
    id_zero[4..8].copy_from_slice(&[0; 4]);
    assert!(err(&id_zero, false).contains("its id is 0"));
    // Content with the magic number is a full dictionary whatever `raw` says, checked as one.
    let as_raw = ZstdDict::new(good.content(), true).unwrap();
    assert!(!as_raw.is_raw() && as_raw.id() == good.id());
    assert!(err(&broken, true).contains("malformed zstd dictionary"));
}

#[test]
fn training_and_finalizing_check_their_arguments() {
    let few = samples(0..3);
    let msg = train(&few, 4096).unwrap_err().to_string();
    assert!(msg.contains("3 samples"), "{msg}");
    assert!(train(&samples(0..100), 10)
        .unwrap_err()
        .to_string()
        .contains("dict_size"));
    let none = Samples {
        bytes: Vec::new(),
        sizes: Vec::new(),
    };
    assert!(train(&none, 4096)
        .unwrap_err()
        .to_string()
        .contains("at least one sample"));
    let mut uneven = samples(0..200);
    uneven.sizes[0] += 1;
    let msg = finalize(b"content", &uneven, 4096, 3)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("do not add up"), "{msg}");
    let content: Vec<u8> = (0..200).flat_map(record).take(2000).collect();
    let made = finalize(&content, &samples(0..2000), 4096, 3).unwrap();
    let dict = ZstdDict::new(&made, false).unwrap();
    assert!(dict.id() != 0 && made.len() <= 4096);
    assert!(made.ends_with(&content), "the content is kept at the end");
    let msg = finalize(&content, &samples(0..2000), 1000, 3)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("larger than dict_size"), "{msg}");
}

#[test]
fn prepared_levels_are_bounded_and_freed_with_their_dictionary() {
    let (count0, bytes0) = prepared_stats();
    let dict = trained();
    for level in 1..=(MAX_PREPARED_LEVELS as i32 + 2) {
        dict.cdict(level).unwrap();
    }
    dict.ddict().unwrap();
    let levels = dict.prepared_levels();
    assert_eq!(levels.len(), MAX_PREPARED_LEVELS);
    assert_eq!(levels[0], 3, "the least recently used levels go first");
    // A level in use is moved to the end.
    dict.cdict(3).unwrap();
    assert_eq!(*dict.prepared_levels().last().unwrap(), 3);
    let (count, bytes) = prepared_stats();
    assert_eq!(count - count0, MAX_PREPARED_LEVELS + 1);
    assert!(bytes - bytes0 > dict.content().len());
    // A context keeps its prepared dictionary alive until it goes back.
    let mut c = Compressor::new(CompressParams::level(1)).unwrap();
    c.use_dict(Some(&dict)).unwrap();
    drop(dict);
    assert_eq!(prepared_stats().0 - count0, 1);
    assert!(c.recycle(0));
    assert_eq!(prepared_stats(), (count0, bytes0));
}

#[test]
fn sixteen_threads_share_one_dictionary_and_one_pool() {
    let dict = Arc::new(trained());
    let pool = ContextPool::default();
    std::thread::scope(|s| {
        for t in 0..16usize {
            let (dict, pool) = (&dict, &pool);
            s.spawn(move || {
                for i in 0..200 {
                    let level = [1, 3, 5][(t + i) % 3];
                    let use_dict = (t + i) % 4 != 0;
                    let r = record(t * 1000 + i);
                    let frame = {
                        let mut c = pool.compressor(CompressParams::level(level)).unwrap();
                        c.use_dict(use_dict.then_some(&**dict)).unwrap();
                        compress(&mut c, &r)
                    };
                    let mut d = pool.decompressor(DecompressParams::default()).unwrap();
                    d.use_dict(use_dict.then_some(&**dict)).unwrap();
                    assert_eq!(decompress(&mut d, &frame, r.len()).unwrap(), r);
                }
            });
        }
    });
    let s = pool.stats();
    assert_eq!(s.leased, 0);
    // Every lease came back, kept or freed (nothing idle was evicted: no timeout, room left).
    assert_eq!(s.created + s.reused, s.returned + s.dropped);
}
