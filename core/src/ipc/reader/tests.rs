//! Readers against arrow-rs, truncations and byte flips.

use std::sync::Arc;

use arrow_array::{Int32Array, StringArray};
use arrow_schema::{DataType, Field};

use super::*;
use crate::context::CompressParams;
use crate::ipc::source::BytesSource;
use crate::ipc::{Compression, IpcFormat, IpcWriter, WriterOptions};

fn batch(n: i32) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter(
                (0..n).map(|i| (i % 3 != 0).then(|| format!("v{}", i % 10))),
            )),
        ],
    )
    .unwrap()
}

fn write(format: IpcFormat, compression: Compression, batches: &[RecordBatch]) -> Vec<u8> {
    let pool = ContextPool::default();
    let mut out = Vec::new();
    let options = WriterOptions {
        format,
        compression,
        ..Default::default()
    };
    let mut w = IpcWriter::try_new(batches[0].schema(), options, &pool).unwrap();
    for b in batches {
        w.write(b, &mut out).unwrap();
    }
    w.finish(&mut out).unwrap();
    out
}

const CODECS: [Compression; 3] = [
    Compression::None,
    Compression::Zstd(CompressParams {
        level: 1,
        checksum: false,
        window_log: 0,
    }),
    Compression::Lz4,
];

#[test]
fn arrow_rs_reads_what_we_write() {
    // The last batch is over a MiB, so its body is compressed straight into the output.
    let batches = vec![batch(1000), batch(0), batch(7), batch(300_000)];
    for compression in CODECS {
        let stream = write(IpcFormat::Stream, compression, &batches);
        let r =
            arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(&stream), None).unwrap();
        let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
        assert_eq!(got, batches, "{compression:?}");
        let file = write(IpcFormat::File, compression, &batches);
        let r = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(&file), None).unwrap();
        let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
        assert_eq!(got, batches, "{compression:?}");
    }
}

#[test]
fn we_read_what_arrow_rs_writes() {
    let batches = vec![batch(500), batch(3)];
    for codec in [
        None,
        Some(arrow_ipc::CompressionType::ZSTD),
        Some(arrow_ipc::CompressionType::LZ4_FRAME),
    ] {
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(codec)
            .unwrap();
        let mut bytes = Vec::new();
        let mut w = arrow_ipc::writer::StreamWriter::try_new_with_options(
            &mut bytes,
            &batches[0].schema(),
            options,
        )
        .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        let pool = ContextPool::default();
        let mut r = StreamReader::try_new(
            BytesSource::new(Buffer::from_vec(bytes)),
            ReadLimits::default(),
            &pool,
            None,
        )
        .unwrap();
        let mut got = Vec::new();
        while let Some(b) = r.next_batch().unwrap() {
            got.push(b);
        }
        assert_eq!(got, batches);
        assert_eq!(pool.stats().leased, 0);
    }
}

#[test]
fn file_reader_reads_any_batch() {
    let batches = vec![batch(10), batch(20), batch(30)];
    let file = write(IpcFormat::File, CODECS[1], &batches);
    let pool = ContextPool::default();
    let mut r = FileReader::try_new(
        BytesSource::new(Buffer::from_vec(file)),
        ReadLimits::default(),
        &pool,
        None,
    )
    .unwrap();
    assert_eq!(r.num_batches(), 3);
    assert_eq!(r.batch(2).unwrap(), batches[2]);
    assert_eq!(r.batch(0).unwrap(), batches[0]);
    assert!(r.batch(3).is_err());
    r.release();
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn every_truncation_fails_cleanly() {
    let stream = write(IpcFormat::Stream, CODECS[1], &[batch(50), batch(5)]);
    let pool = ContextPool::default();
    for cut in 0..stream.len() {
        let source = BytesSource::new(Buffer::from(&stream[..cut]));
        let result =
            StreamReader::try_new(source, ReadLimits::default(), &pool, None).and_then(|mut r| {
                let mut n = 0;
                while r.next_batch()?.is_some() {
                    n += 1;
                }
                Ok(n)
            });
        // A cut between messages is a shorter valid stream; anything else is an error.
        if let Ok(n) = result {
            assert!(n <= 2);
        }
    }
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn byte_flips_never_panic() {
    let stream = write(IpcFormat::Stream, CODECS[1], &[batch(50)]);
    let pool = ContextPool::default();
    for i in 0..stream.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = stream.clone();
            bad[i] ^= flip;
            let run = std::panic::catch_unwind(|| {
                let source = BytesSource::new(Buffer::from_vec(bad));
                StreamReader::try_new(source, ReadLimits::default(), &pool, None).and_then(
                    |mut r| {
                        while r.next_batch()?.is_some() {}
                        Ok(())
                    },
                )
            });
            assert!(run.is_ok(), "a flip of byte {i} by {flip:#x} panicked");
        }
    }
}
