//! Datasets written and read back file by file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::ipc::{Compression, WriterOptions};
use crate::parquet::{ParquetFile, ParquetLimits, ParquetSource};
use crate::pool::{ContextPool, PoolConfig};

fn table(rows: i32, partitions: i32) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("key", DataType::Int32, false),
        Field::new("tag", DataType::Utf8, true),
    ]));
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values((0..rows).map(i64::from)));
    let key: ArrayRef = Arc::new(Int32Array::from_iter_values(
        (0..rows).map(|i| i % partitions),
    ));
    let tag: ArrayRef = Arc::new(StringArray::from_iter(
        (0..rows).map(|i| (i % 3 != 0).then(|| format!("t{}", i % 2))),
    ));
    RecordBatch::try_new(schema, vec![id, key, tag]).unwrap()
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zstdpool-dataset-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn parquet_rows(path: &Path, pool: &ContextPool) -> usize {
    let file = ParquetFile::open(
        ParquetSource::file(std::fs::File::open(path).unwrap()).unwrap(),
        ParquetLimits::default(),
        pool,
        Some(1),
    )
    .unwrap();
    let p = file.projection(None).unwrap();
    file.read(&p, None, None)
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum()
}

#[test]
fn a_thousand_partitions_on_few_contexts() {
    let pool = ContextPool::new(PoolConfig::default());
    let dir = tempdir("thousand");
    let options = DatasetOptions {
        partitioning: vec!["key".into()],
        threads: Some(2),
        ..Default::default()
    };
    let mut w = DatasetWriter::try_new(&dir, table(20_000, 1000).schema(), options, &pool).unwrap();
    w.write(&table(20_000, 1000)).unwrap();
    let written = w.finish().unwrap();
    assert_eq!(written.len(), 1000);
    assert_eq!(written.iter().map(|f| f.rows).sum::<u64>(), 20_000);
    let on_disk = files(&dir);
    assert_eq!(on_disk.len(), 1000, "no temporary file left");
    assert!(
        on_disk[0].ends_with("key=0/part-0.parquet"),
        "{:?}",
        on_disk[0]
    );
    assert_eq!(parquet_rows(&dir.join("key=7/part-0.parquet"), &pool), 20);
    let s = pool.stats();
    assert!(
        s.created <= 3 + 1,
        "one context per thread, not per file: {s:?}"
    );
    assert_eq!(s.leased, 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ipc_files_rows_per_file_and_existing_data() {
    let pool = ContextPool::default();
    let dir = tempdir("ipc");
    let options = || DatasetOptions {
        partitioning: vec!["key".into(), "tag".into()],
        format: FileFormat::Ipc {
            options: WriterOptions {
                compression: Compression::Zstd(crate::context::CompressParams::level(3)),
                ..Default::default()
            },
            feather: false,
        },
        max_rows_per_file: Some(40),
        ..Default::default()
    };
    let batch = table(600, 2);
    let mut w = DatasetWriter::try_new(&dir, batch.schema(), options(), &pool).unwrap();
    w.write(&batch.slice(0, 300)).unwrap();
    w.write(&batch.slice(300, 300)).unwrap();
    let written = w.finish().unwrap();
    assert_eq!(written.iter().map(|f| f.rows).sum::<u64>(), 600);
    assert!(written.iter().all(|f| f.rows <= 40));
    assert!(dir
        .join("key=0/tag=__HIVE_DEFAULT_PARTITION__/part-0.arrow")
        .exists());
    assert!(dir.join("key=1/tag=t1/part-2.arrow").exists());
    let data = std::fs::read(dir.join("key=1/tag=t1/part-0.arrow")).unwrap();
    let r = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(data), None).unwrap();
    assert_eq!(
        r.schema().fields().len(),
        1,
        "only the id column: keys are in the path"
    );
    // The directory is not empty now.
    let err = DatasetWriter::try_new(&dir, batch.schema(), options(), &pool)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not empty"), "{err}");
    // Deleting the partitions written replaces them.
    let mut opts = options();
    opts.existing_data = ExistingData::DeleteMatching;
    opts.max_rows_per_file = None;
    let mut w = DatasetWriter::try_new(&dir, batch.schema(), opts, &pool).unwrap();
    w.write(&batch.slice(0, 10)).unwrap();
    w.finish().unwrap();
    assert_eq!(files(&dir.join("key=1/tag=t1")).len(), 1);
    assert_eq!(pool.stats().leased, 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pending_rows_are_bounded_and_open_files_capped() {
    let pool = ContextPool::default();
    let dir = tempdir("bounded");
    let options = DatasetOptions {
        partitioning: vec!["key".into()],
        max_pending_bytes: 64 << 10,
        max_open_files: 3,
        format: FileFormat::Parquet(Box::default()),
        ..Default::default()
    };
    let batch = table(100_000, 10);
    let mut w = DatasetWriter::try_new(&dir, batch.schema(), options, &pool).unwrap();
    for i in 0..20 {
        w.write(&batch.slice(i * 5000, 5000)).unwrap();
        assert!(w.pending_bytes() <= (64 << 10) + batch.slice(0, 5000).get_array_memory_size());
    }
    let written = w.finish().unwrap();
    assert!(
        written.len() > 10,
        "files were completed to keep 3 open: {}",
        written.len()
    );
    let rows: usize = written.iter().map(|f| parquet_rows(&f.path, &pool)).sum();
    assert_eq!(rows, 100_000);
    assert_eq!(pool.stats().leased, 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failure_leaves_only_whole_files_and_reports_them() {
    let pool = ContextPool::default();
    let dir = tempdir("failure");
    let batch = table(100, 4);
    let mut w = DatasetWriter::try_new(
        &dir,
        batch.schema(),
        DatasetOptions {
            partitioning: vec!["key".into()],
            ..Default::default()
        },
        &pool,
    )
    .unwrap();
    w.write(&batch).unwrap();
    // A directory where a partition's file would go makes that partition fail.
    std::fs::create_dir_all(dir.join("key=2/part-0.parquet")).unwrap();
    let err = w.finish().unwrap_err();
    assert!(err.to_string().contains("key=2"), "{err}");
    assert_eq!(w.written().len(), 3);
    let left: Vec<_> = files(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(pool.stats().leased, 0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A dataset in a store: files appear only whole, the partitions read back through the
/// scanner, and the existing-data behaviors list and delete keys.
#[test]
fn a_dataset_goes_to_a_store_and_reads_back() {
    use crate::scan::{Dataset, Format, Partitioning, ScanOptions, Sources};
    use crate::store::{ClientOptions, Store};
    let store = Store::in_memory(ClientOptions {
        max_in_flight: 3,
        ..Default::default()
    });
    let pool = ContextPool::new(PoolConfig::default());
    let batch = table(1000, 7);
    let options = || DatasetOptions {
        partitioning: vec!["key".into()],
        ..Default::default()
    };
    let at = || Destination::Store {
        store: store.clone(),
        prefix: "data/set".into(),
    };
    let mut w = DatasetWriter::try_new_at(at(), batch.schema(), options(), &pool).unwrap();
    w.write(&batch).unwrap();
    let written = w.finish().unwrap();
    assert_eq!(written.len(), 7);
    assert!(written.iter().all(|f| f.bytes > 0));
    assert_eq!(written.iter().map(|f| f.rows).sum::<u64>(), 1000);
    let listed = store.list("data/set").unwrap();
    assert_eq!(listed.len(), 7);
    assert!(listed[0].0.starts_with("data/set/key=0/part-0.parquet"));

    let ds = Dataset::open(
        Sources::StorePrefix {
            store: store.clone(),
            prefix: "data/set".into(),
            ignore_prefixes: vec![".".into(), "_".into()],
        },
        Format::Parquet,
        &Partitioning::Hive {
            schema: None,
            dictionary: false,
            null_fallback: None,
        },
        None,
        &pool,
    )
    .unwrap();
    assert_eq!(ds.files().len(), 7);
    let back = ds.read(&ScanOptions::default()).unwrap();
    assert_eq!(back.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
    assert_eq!(ds.count_rows(&ScanOptions::default()).unwrap(), 1000);

    // "error" refuses a prefix with objects; "delete_matching" replaces the partitions.
    let e = DatasetWriter::try_new_at(at(), batch.schema(), options(), &pool)
        .err()
        .unwrap();
    assert!(e.to_string().contains("memory:///data/set"), "{e}");
    let mut w = DatasetWriter::try_new_at(
        at(),
        batch.schema(),
        DatasetOptions {
            existing_data: ExistingData::DeleteMatching,
            basename_template: Some("again-{i}.parquet".into()),
            ..options()
        },
        &pool,
    )
    .unwrap();
    w.write(&batch.slice(0, 3)).unwrap();
    w.finish().unwrap();
    let keys: Vec<String> = store
        .list("data/set")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys.len(), 7 - 3 + 3, "{keys:?}");
    assert!(keys.contains(&"data/set/key=0/again-0.parquet".to_string()));
    assert!(!keys.contains(&"data/set/key=0/part-0.parquet".to_string()));
    assert!(keys.contains(&"data/set/key=5/part-0.parquet".to_string()));
}
