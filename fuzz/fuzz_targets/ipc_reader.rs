//! Feeds arbitrary bytes to the IPC stream and file readers. Every input must end in a
//! batch that passes full validation or in an error: never a panic, an abort, a hang or an
//! allocation past the limits (libFuzzer's -rss_limit_mb catches the last).
#![no_main]

use arrow_buffer::Buffer;
use libfuzzer_sys::fuzz_target;
use zstdpool_core::ipc::BytesSource;
use zstdpool_core::ipc::{FileReader, ReadLimits, StreamReader};
use zstdpool_core::ContextPool;

/// Small limits, so that a hostile length is refused rather than allocated.
const LIMITS: ReadLimits = ReadLimits {
    max_buffer_size: 16 << 20,
    max_batch_size: 64 << 20,
};

fn check(batch: &arrow_array::RecordBatch) {
    for column in batch.columns() {
        column.to_data().validate_full().expect("a batch the reader returned must be valid");
    }
}

fuzz_target!(|data: &[u8]| {
    let pool = ContextPool::global();
    let bytes = Buffer::from(data);
    for threads in [Some(1), Some(2)] {
        if let Ok(mut r) = StreamReader::try_new(BytesSource::new(bytes.clone()), LIMITS, pool, threads) {
            while let Ok(Some(batch)) = r.next_batch() {
                check(&batch);
            }
        }
    }
    if let Ok(mut r) = FileReader::try_new(BytesSource::new(bytes), LIMITS, pool, None) {
        for i in 0..r.num_batches().min(64) {
            if let Ok(batch) = r.batch(i) {
                check(&batch);
            }
        }
    }
    assert_eq!(pool.stats().leased, 0, "a reader kept a context after it was dropped");
});
