//! The writer against the parquet crate's own reader.

use std::sync::Arc;

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ::parquet::basic::Compression;
use ::parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaDataReader};
use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;

use super::*;
use crate::context::CompressParams;
use crate::pool::ContextPool;

/// Each codec at its default level.
fn codec(name: &str) -> PageCodec {
    match name {
        "zstd" => PageCodec::Zstd(CompressParams::level(DEFAULT_ZSTD_LEVEL)),
        "lz4" => PageCodec::Lz4Raw,
        "snappy" => PageCodec::Snappy,
        "gzip" => PageCodec::Gzip(6),
        "brotli" => PageCodec::Brotli(1),
        "none" => PageCodec::None,
        other => panic!("no codec {other}"),
    }
}

fn batch(n: i32, offset: i32) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    let a: ArrayRef = Arc::new(Int32Array::from_iter_values(offset..offset + n));
    let s: ArrayRef = Arc::new(StringArray::from_iter(
        (offset..offset + n).map(|i| (i % 3 != 0).then(|| format!("v{}", i % 10))),
    ));
    RecordBatch::try_new(schema, vec![a, s]).unwrap()
}

fn write(batches: &[RecordBatch], options: WriteOptions, pool: &ContextPool) -> Vec<u8> {
    let mut w = ParquetWriter::try_new(Vec::new(), batches[0].schema(), options, pool).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap()
}

fn read(bytes: Vec<u8>) -> (Vec<RecordBatch>, Vec<Compression>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes)).unwrap();
    let codecs = builder
        .metadata()
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns().iter().map(|c| c.compression()))
        .collect();
    let batches = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (batches, codecs)
}

#[test]
fn the_crate_reads_what_we_write_with_every_codec_and_page_version() {
    let pool = ContextPool::default();
    let input = vec![batch(1000, 0), batch(5000, 1000), batch(3, 6000)];
    for name in ["zstd", "lz4", "snappy", "gzip", "none"] {
        for version in [PageVersion::V1, PageVersion::V2] {
            for dictionary in [true, false] {
                let options = WriteOptions {
                    compression: PerColumn::all(codec(name)),
                    dictionary: PerColumn::all(dictionary),
                    page_version: version,
                    row_group_size: 2500,
                    data_page_size: Some(4096),
                    ..Default::default()
                };
                let (got, codecs) = read(write(&input, options, &pool));
                let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
                let want =
                    arrow_select::concat::concat_batches(&input[0].schema(), &input).unwrap();
                assert_eq!(got, want, "{name} {version:?} dictionary={dictionary}");
                assert_eq!(codecs.len(), 3 * 2, "three row groups of two columns");
                if name == "zstd" {
                    assert!(codecs.iter().all(|c| matches!(c, Compression::ZSTD(_))));
                }
            }
        }
    }
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn zstd_files_are_byte_identical_for_any_thread_count_and_smaller_than_plain() {
    let pool = ContextPool::default();
    let input = vec![batch(200_000, 0)];
    let with = |threads, codec: &str| {
        write(
            &input,
            WriteOptions {
                compression: PerColumn::all(self::codec(codec)),
                threads: Some(threads),
                ..Default::default()
            },
            &pool,
        )
    };
    let one = with(1, "zstd");
    assert_eq!(one, with(2, "zstd"));
    assert_eq!(one, with(4, "zstd"));
    assert!(one.len() < with(1, "none").len());
    // Contexts are leased per thread and row group, never per page or column chunk.
    assert!(pool.stats().created <= 4, "{:?}", pool.stats());
}

#[test]
fn a_type_parquet_cannot_hold_is_named() {
    use arrow_array::builder::UnionBuilder;
    use arrow_array::types::Int32Type;
    let mut u = UnionBuilder::new_dense();
    u.append::<Int32Type>("i", 1).unwrap();
    let u: ArrayRef = Arc::new(u.build().unwrap());
    let ok: ArrayRef = Arc::new(Int32Array::from(vec![1]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("ok", DataType::Int32, false),
        Field::new("u", u.data_type().clone(), true),
    ]));
    let err = ParquetWriter::try_new(
        Vec::new(),
        schema,
        WriteOptions::default(),
        &ContextPool::default(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("column 'u'"), "{err}");
    drop((u, ok));
}

#[test]
fn per_column_settings_and_unknown_names() {
    let pool = ContextPool::default();
    let mut compression = PerColumn::all(PageCodec::Zstd(CompressParams::level(3)));
    compression.columns.insert("s".into(), PageCodec::Snappy);
    let (_, codecs) = read(write(
        &[batch(100, 0)],
        WriteOptions {
            compression,
            ..Default::default()
        },
        &pool,
    ));
    assert!(matches!(codecs[0], Compression::ZSTD(_)));
    assert_eq!(codecs[1], Compression::SNAPPY);
    let mut dictionary = PerColumn::all(true);
    dictionary.columns.insert("nope".into(), false);
    let err = ParquetWriter::try_new(
        Vec::new(),
        batch(1, 0).schema(),
        WriteOptions {
            dictionary,
            ..Default::default()
        },
        &pool,
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("\"nope\""), "{err}");
}

fn open(bytes: Vec<u8>, pool: &ContextPool) -> Result<ParquetFile, crate::Error> {
    ParquetFile::open(
        ParquetSource::memory(arrow_buffer::Buffer::from_vec(bytes)),
        ParquetLimits::default(),
        pool,
        None,
    )
}

fn read_all(file: &ParquetFile, columns: Option<&[String]>) -> Result<RecordBatch, crate::Error> {
    let projection = file.projection(columns)?;
    let batches = file.read(&projection, None, None)?;
    Ok(arrow_select::concat::concat_batches(projection.schema(), &batches).unwrap())
}

#[test]
fn we_read_what_we_write_and_what_the_crate_writes() {
    let pool = ContextPool::default();
    let input = vec![batch(1000, 0), batch(5000, 1000)];
    let want = arrow_select::concat::concat_batches(&input[0].schema(), &input).unwrap();
    for name in ["zstd", "lz4", "snappy", "gzip", "brotli", "none"] {
        for version in [PageVersion::V1, PageVersion::V2] {
            let options = WriteOptions {
                compression: PerColumn::all(codec(name)),
                page_version: version,
                row_group_size: 2500,
                data_page_size: Some(2048),
                threads: Some(2),
                ..Default::default()
            };
            let file = open(write(&input, options, &pool), &pool).unwrap();
            assert_eq!(file.num_row_groups(), 3);
            assert_eq!(read_all(&file, None).unwrap(), want, "{name} {version:?}");
            // In batches, in order, a projection in another order than the file's.
            let projection = file.projection(Some(&["s".into(), "a".into()])).unwrap();
            let mut batches = file.batches(&projection, Some(&[2, 0]), 700).unwrap();
            let mut got = Vec::new();
            while let Some(b) = batches.next_batch().unwrap() {
                assert!(b.num_rows() <= 700);
                got.push(b);
            }
            let got = arrow_select::concat::concat_batches(projection.schema(), &got).unwrap();
            assert_eq!(got.num_rows(), 1000 + 2500);
            assert_eq!(got.schema().field(0).name(), "s");
            assert_eq!(
                &got.column(1).slice(0, 1000),
                &want.column(0).slice(5000, 1000)
            );
            assert_eq!(
                &got.column(1).slice(1000, 2500),
                &want.column(0).slice(0, 2500)
            );
        }
    }
    // The crate's own zstd writer (a new context per column chunk) reads the same.
    let props = ::parquet::file::properties::WriterProperties::builder()
        .set_compression(Compression::ZSTD(Default::default()))
        .build();
    let mut bytes = Vec::new();
    let mut w =
        ::parquet::arrow::ArrowWriter::try_new(&mut bytes, input[0].schema(), Some(props)).unwrap();
    for b in &input {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    assert_eq!(read_all(&open(bytes, &pool).unwrap(), None).unwrap(), want);
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn projections_name_their_columns_and_row_groups_are_checked() {
    let pool = ContextPool::default();
    let file = open(
        write(&[batch(10, 0)], WriteOptions::default(), &pool),
        &pool,
    )
    .unwrap();
    let err = file
        .projection(Some(&["nope".into()]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"nope\"") && err.contains("a, s"), "{err}");
    let p = file.projection(None).unwrap();
    assert!(file
        .read(&p, Some(&[1]), None)
        .unwrap_err()
        .to_string()
        .contains("out of range"));
    assert!(file.batches(&p, None, 0).is_err());
}

#[test]
fn truncated_and_flipped_files_fail_cleanly() {
    let pool = ContextPool::default();
    let bytes = write(&[batch(300, 0)], WriteOptions::default(), &pool);
    let attempt = |data: Vec<u8>| {
        std::panic::catch_unwind(|| {
            let file = open(data, &pool)?;
            read_all(&file, None).map(drop)
        })
    };
    for cut in (0..bytes.len()).step_by(7) {
        let result = attempt(bytes[..cut].to_vec());
        assert!(matches!(result, Ok(Err(_))), "cut at {cut}: {result:?}");
    }
    for i in (0..bytes.len()).step_by(3) {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            assert!(
                attempt(bad).is_ok(),
                "a flip of byte {i} by {flip:#x} panicked"
            );
        }
    }
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn limits_encryption_and_hostile_footers_are_refused() {
    let pool = ContextPool::default();
    let bytes = write(&[batch(5000, 0)], WriteOptions::default(), &pool);
    let file = ParquetFile::open(
        ParquetSource::memory(arrow_buffer::Buffer::from_vec(bytes.clone())),
        ParquetLimits {
            max_page_size: 100,
            ..Default::default()
        },
        &pool,
        Some(1),
    )
    .unwrap();
    let err = read_all(&file, None).unwrap_err();
    assert!(matches!(err, crate::Error::Limit(_)), "{err}");
    assert!(
        err.to_string().contains("max_page_size (100 bytes)"),
        "{err}"
    );
    let mut encrypted = bytes.clone();
    let n = encrypted.len();
    encrypted[n - 4..].copy_from_slice(b"PARE");
    assert!(open(encrypted, &pool)
        .err()
        .unwrap()
        .to_string()
        .contains("encrypted"));
    // A footer declaring two billion row groups: refused, not allocated.
    let mut footer = vec![0x15, 0x02, 0x19, 0x1c, 0x48, 4];
    footer.extend_from_slice(b"root");
    footer.extend_from_slice(&[
        0x15, 0x00, 0x00, 0x16, 0x00, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07,
    ]);
    let mut file = b"PAR1".to_vec();
    file.extend_from_slice(&footer);
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    let err = open(file, &pool).err().unwrap().to_string();
    assert!(err.contains("corrupt Parquet footer"), "{err}");
    assert_eq!(pool.stats().leased, 0);
}

#[test]
fn a_dictionary_that_falls_back_to_plain_keeps_every_page() {
    // Many distinct strings in small dictionary pages: the column falls back to plain encoding
    // part way, after its dictionary page was written.
    let pool = ContextPool::default();
    let n = 150_000;
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| format!("a distinct value, number {i}")),
    ));
    let input = RecordBatch::try_new(schema, vec![s]).unwrap();
    for version in [PageVersion::V1, PageVersion::V2] {
        let bytes = write(
            std::slice::from_ref(&input),
            WriteOptions {
                data_page_size: Some(8192),
                page_version: version,
                ..Default::default()
            },
            &pool,
        );
        let (got, _) = read(bytes.clone());
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got, input, "{version:?}");
        assert_eq!(read_all(&open(bytes, &pool).unwrap(), None).unwrap(), input);
    }
}

/// `bytes` (a Parquet file) with its footer rewritten by `edit`, as another writer would have
/// written it.
fn with_footer(bytes: &[u8], edit: impl Fn(ColumnChunkMetaData) -> ColumnChunkMetaData) -> Vec<u8> {
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::from(bytes.to_vec()))
        .unwrap();
    let footer_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    let body_end = bytes.len() - 8 - footer_len as usize;
    let mut builder = metadata.into_builder();
    let groups = builder
        .take_row_groups()
        .into_iter()
        .map(|g| {
            let columns = g.columns().iter().cloned().map(&edit).collect();
            g.into_builder()
                .set_column_metadata(columns)
                .build()
                .unwrap()
        })
        .collect();
    let metadata = builder.set_row_groups(groups).build();
    let mut out = bytes[..body_end].to_vec();
    ::parquet::file::metadata::ParquetMetaDataWriter::new(&mut out, &metadata)
        .finish()
        .unwrap();
    out
}

#[test]
fn legacy_dictionary_page_offsets_are_ignored_as_parquet_cpp_ignores_them() {
    let pool = ContextPool::default();
    let input = batch(3000, 0);
    for dictionary in [false, true] {
        let options = WriteOptions {
            dictionary: PerColumn::all(dictionary),
            ..Default::default()
        };
        let bytes = write(std::slice::from_ref(&input), options, &pool);
        // PARQUET-816: a dictionary page offset of 0, with the chunk starting at its first
        // page (a dictionary page when there is one) as the data page offset; and an offset
        // past the first data page, ignored too.
        for past in [false, true] {
            let legacy = with_footer(&bytes, |c| {
                let start = c.byte_range().0 as i64;
                let offset = if past { start + 1 } else { 0 };
                c.into_builder()
                    .set_data_page_offset(start)
                    .set_dictionary_page_offset(Some(offset))
                    .build()
                    .unwrap()
            });
            let file = open(legacy, &pool).unwrap();
            assert_eq!(
                read_all(&file, None).unwrap(),
                input,
                "dictionary: {dictionary}, past: {past}"
            );
        }
    }
}

/// The pages of every column chunk of `bytes`, as the offset index lists them.
fn page_counts(bytes: &[u8]) -> Vec<usize> {
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(::parquet::file::metadata::PageIndexPolicy::Required)
        .parse_and_finish(&Bytes::copy_from_slice(bytes))
        .unwrap();
    metadata
        .offset_index()
        .unwrap()
        .iter()
        .flatten()
        .map(|index| index.page_locations().len())
        .collect()
}

#[test]
fn pages_cut_by_content_read_back_with_every_codec() {
    let pool = ContextPool::default();
    let input = vec![batch(30_000, 0), batch(50_000, 30_000)];
    let want = arrow_select::concat::concat_batches(&input[0].schema(), &input).unwrap();
    for name in ["zstd", "snappy", "none"] {
        let with = |cdc: Option<CdcOptions>| {
            let options = WriteOptions {
                compression: PerColumn::all(codec(name)),
                row_group_size: 40_000,
                content_defined_chunking: cdc,
                ..Default::default()
            };
            write(&input, options, &pool)
        };
        let small = CdcOptions {
            min_chunk_size: 4096,
            max_chunk_size: 16_384,
            norm_level: 0,
        };
        let (cut, plain) = (with(Some(small)), with(None));
        let (got, _) = read(cut.clone());
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got, want, "{name}");
        // Two row groups of two columns, each in pages of at most 16 KiB of values (40,000
        // int32s are 160 KB) where the page size alone makes one.
        let (cut, plain) = (page_counts(&cut), page_counts(&plain));
        assert_eq!(cut.len(), 4);
        assert!(
            cut.iter().zip(&plain).all(|(c, p)| c > p),
            "{cut:?} {plain:?}"
        );
        assert!(cut[0] >= 10, "{cut:?}");
    }
    assert_eq!(pool.stats().leased, 0);
}
