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

/// Every batch of a stream, read with a pool of its own.
fn read_all(stream: Vec<u8>) -> Result<Vec<RecordBatch>> {
    let pool = ContextPool::default();
    let mut r = StreamReader::try_new(
        BytesSource::new(Buffer::from_vec(stream)),
        ReadLimits::default(),
        &pool,
        None,
    )?;
    let mut got = Vec::new();
    while let Some(b) = r.next_batch()? {
        got.push(b);
    }
    // Given back at the end of the stream, with the reader still open.
    assert_eq!(pool.stats().leased, 0);
    Ok(got)
}

const CODECS: [Compression; 3] = [
    Compression::None,
    Compression::Zstd(CompressParams::level(1)),
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
        assert_eq!(read_all(bytes).unwrap(), batches);
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

fn zstd() -> Compression {
    CODECS[1]
}

fn stream_reader(data: Vec<u8>) -> StreamReader<BytesSource> {
    let source = BytesSource::new(Buffer::from_vec(data));
    StreamReader::try_new(source, ReadLimits::default(), &ContextPool::default(), None).unwrap()
}

fn file_reader(data: Vec<u8>, end: Option<u64>) -> Result<FileReader<BytesSource>> {
    let source = BytesSource::new(Buffer::from_vec(data));
    FileReader::try_new_ending_at(
        source,
        end,
        ReadLimits::default(),
        &ContextPool::default(),
        None,
    )
}

#[test]
fn batch_metadata_is_written_and_read_back_per_batch() {
    let pool = ContextPool::default();
    let pairs = vec![
        ("z".to_string(), "1".to_string()),
        ("a".to_string(), "2".to_string()),
    ];
    for format in [IpcFormat::Stream, IpcFormat::File] {
        let options = WriterOptions {
            format,
            compression: zstd(),
            ..Default::default()
        };
        let mut out = Vec::new();
        let mut w = IpcWriter::try_new(batch(1).schema(), options, &pool).unwrap();
        w.write(&batch(3000), &mut out).unwrap();
        w.write_with_metadata(&batch(4000), &pairs, &mut out)
            .unwrap();
        w.finish(&mut out).unwrap();
        let stats = w.stats();
        assert_eq!((stats.num_messages, stats.num_record_batches), (3, 2));
        assert!(stats.total_serialized_body_size < stats.total_raw_body_size);
        let got: Vec<BatchWithMetadata> = match format {
            IpcFormat::Stream => {
                let mut r = stream_reader(out);
                std::iter::from_fn(|| r.next_batch_with_metadata().unwrap()).collect()
            }
            IpcFormat::File => {
                let mut r = file_reader(out, None).unwrap();
                assert!(r.metadata().is_none());
                (0..2).map(|i| r.batch_with_metadata(i).unwrap()).collect()
            }
        };
        assert_eq!(got[0], (batch(3000), None));
        // In the order given, not sorted.
        assert_eq!(got[1], (batch(4000), Some(pairs.clone())));
    }
}

#[test]
fn a_projection_decompresses_only_its_columns() {
    let data = write(IpcFormat::Stream, zstd(), &[batch(2000)]);
    // Corrupt the last buffer (the string values of column "s"): reading column "a" alone
    // never decompresses it.
    let mut bad = data.clone();
    let end = bad.len() - 8 - 16;
    bad[end - 8..end].fill(0xff);
    let mut whole = stream_reader(bad.clone());
    assert!(whole.next_batch().is_err());
    let mut some = stream_reader(bad);
    some.project(vec![0]).unwrap();
    assert_eq!(some.schema().fields().len(), 1);
    let got = some.next_batch().unwrap().unwrap();
    assert_eq!(got, batch(2000).project(&[0]).unwrap());
    let stats = some.stats();
    assert_eq!((stats.num_messages, stats.num_record_batches), (2, 1));
    // Uncompressed data is projected as well.
    let mut plain = stream_reader(write(IpcFormat::Stream, Compression::None, &[batch(10)]));
    plain.project(vec![1, 1]).unwrap();
    assert_eq!(
        plain.next_batch().unwrap().unwrap(),
        batch(10).project(&[1]).unwrap()
    );
    assert!(stream_reader(data).project(vec![2]).is_err());
}

#[test]
fn rows_are_counted_from_headers() {
    let batches = [batch(5), batch(0), batch(70_000)];
    let mut stream = stream_reader(write(IpcFormat::Stream, zstd(), &batches));
    assert_eq!(stream.count_rows().unwrap(), 70_005);
    assert!(stream.next_batch().unwrap().is_none());
    let mut file = file_reader(write(IpcFormat::File, zstd(), &batches), None).unwrap();
    assert_eq!(file.count_rows().unwrap(), 70_005);
    assert_eq!(file.batch(2).unwrap(), batch(70_000));
}

#[test]
fn a_file_can_end_before_its_source() {
    let data = write(IpcFormat::File, zstd(), &[batch(9)]);
    let len = data.len() as u64;
    let mut longer = data.clone();
    longer.extend_from_slice(b"trailing bytes of something else");
    let mut r = file_reader(longer.clone(), Some(len)).unwrap();
    assert_eq!(r.batch(0).unwrap(), batch(9));
    assert!(file_reader(longer.clone(), None).is_err());
    let err = file_reader(data, Some(len + 1)).err().unwrap().to_string();
    assert!(err.contains("beyond the end of the input"), "{err}");
    assert!(file_reader(longer, Some(len - 1)).is_err());
}

#[test]
fn dictionary_replacements_and_deltas_are_counted_both_ways() {
    use arrow_array::{types::Int32Type, DictionaryArray};
    let dict = |values: &[&str]| -> RecordBatch {
        let array: DictionaryArray<Int32Type> = values.iter().copied().collect();
        RecordBatch::try_from_iter([("d", Arc::new(array) as ArrayRef)]).unwrap()
    };
    let pool = ContextPool::default();
    for (deltas, expected) in [(false, (2, 0, 1)), (true, (2, 1, 0))] {
        let options = WriterOptions {
            compression: zstd(),
            dictionary_deltas: deltas,
            ..Default::default()
        };
        let mut out = Vec::new();
        let first = dict(&["a", "b"]);
        let mut w = IpcWriter::try_new(first.schema(), options, &pool).unwrap();
        w.write(&first, &mut out).unwrap();
        w.write(&dict(&["a", "b", "c"]), &mut out).unwrap();
        w.finish(&mut out).unwrap();
        let s = w.stats();
        let counts = (
            s.num_dictionary_batches,
            s.num_dictionary_deltas,
            s.num_replaced_dictionaries,
        );
        assert_eq!(counts, expected);
        let mut r = stream_reader(out);
        while r.next_batch().unwrap().is_some() {}
        let s = r.stats();
        let read = (
            s.num_dictionary_batches,
            s.num_dictionary_deltas,
            s.num_replaced_dictionaries,
        );
        assert_eq!(read, expected);
        assert_eq!(r.stats().num_messages, 5);
    }
}

/// `stream` rewritten as Arrow 0.17 wrote compressed streams: every batch's `BodyCompression`
/// removed, and the codec named in the message's custom metadata by `legacy_name` (None: not
/// named there).
fn as_legacy_compression(stream: &[u8], legacy_name: Option<&str>) -> Vec<u8> {
    let mut source = BytesSource::new(Buffer::from(stream));
    let limits = ReadLimits::default();
    let mut out = Vec::new();
    while let Some(meta) = read_message_meta(&mut source, &limits).unwrap() {
        let msg = message::parse(&meta).unwrap();
        let body = read_body(&mut source, &msg, &limits).unwrap();
        if msg.header_type() == MessageHeader::Schema {
            message::frame(&meta, body.as_slice(), &mut out).unwrap();
            continue;
        }
        let (rb, _) = batch_header(&msg).unwrap();
        assert!(rb.compression().is_some());
        let spans: Vec<(usize, usize)> = buffer_spans(&rb)
            .unwrap()
            .iter()
            .map(|&(o, l)| (o as usize, l as usize))
            .collect();
        let named: Vec<(String, String)> = legacy_name
            .map(|n| (LEGACY_CODEC_KEY.to_string(), n.to_string()))
            .into_iter()
            .collect();
        let rebuilt = message::rebuild(&msg, &spans, body.len(), None, &named).unwrap();
        message::frame(&rebuilt, body.as_slice(), &mut out).unwrap();
    }
    message::end_of_stream(&mut out).unwrap();
    out
}

#[test]
fn bodies_compressed_as_arrow_0_17_compressed_them_are_decompressed() {
    let batches = vec![batch(1000), batch(3)];
    for (compression, name) in [
        (CODECS[1], "ZSTD"),
        (CODECS[2], "LZ4"),
        (CODECS[2], "lz4_frame"),
    ] {
        let stream = write(IpcFormat::Stream, compression, &batches);
        let legacy = as_legacy_compression(&stream, Some(name));
        assert_eq!(read_all(legacy).unwrap(), batches, "{name}");
    }
}

#[test]
fn the_legacy_codec_named_by_the_schema_is_decompressed_too() {
    let plain = batch(500);
    let schema = Arc::new(
        plain
            .schema()
            .as_ref()
            .clone()
            .with_metadata([(LEGACY_CODEC_KEY.to_string(), "zstd".to_string())].into()),
    );
    let b = RecordBatch::try_new(schema, plain.columns().to_vec()).unwrap();
    let stream = write(IpcFormat::Stream, CODECS[1], std::slice::from_ref(&b));
    let legacy = as_legacy_compression(&stream, None);
    assert_eq!(read_all(legacy).unwrap(), vec![b]);
}

#[test]
fn a_legacy_codec_that_cannot_be_read_is_refused_not_returned_as_values() {
    let stream = write(IpcFormat::Stream, CODECS[1], &[batch(100)]);
    let err = read_all(as_legacy_compression(&stream, Some("SNAPPY"))).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("\"SNAPPY\"") && message.contains(LEGACY_CODEC_KEY),
        "{message}"
    );
}
