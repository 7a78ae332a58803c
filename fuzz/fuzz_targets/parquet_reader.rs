//! Feeds arbitrary bytes to the Parquet reader: open, every column of every row group in
//! parallel and in batches. Every input must end in batches that pass full validation or in an
//! error: never a panic, an abort (a footer declaring a huge list once made the parquet crate
//! ask for 206 GB), a hang, a leaked pooled context, or an allocation past the limits.
#![no_main]

use arrow_buffer::Buffer;
use libfuzzer_sys::fuzz_target;
use zstdpool_core::parquet::{ParquetFile, ParquetLimits, ParquetSource};
use zstdpool_core::ContextPool;

/// Small, so that a hostile declared size is refused rather than allocated.
const LIMITS: ParquetLimits = ParquetLimits {
    max_page_size: 16 << 20,
};

fn check(batch: &arrow_array::RecordBatch) {
    for column in batch.columns() {
        column.to_data().validate_full().expect("a batch the reader returned must be valid");
    }
}

fuzz_target!(|data: &[u8]| {
    let pool = ContextPool::global();
    let source = ParquetSource::memory(Buffer::from(data));
    if let Ok(file) = ParquetFile::open(source, LIMITS, pool, Some(2)) {
        if file.metadata().file_metadata().num_rows() > 1 << 20 {
            return; // a declared row count this large only times the decoder out
        }
        if let Ok(projection) = file.projection(None) {
            if let Ok(batches) = file.read(&projection, None, Some(2)) {
                batches.iter().for_each(check);
            }
            if let Ok(mut batches) = file.batches(&projection, None, 1000) {
                while let Ok(Some(batch)) = batches.next_batch() {
                    check(&batch);
                }
            }
        }
    }
    assert_eq!(pool.stats().leased, 0, "a reader kept a context after it was dropped");
});
