//! The scanner on files the parquet crate's own writer makes in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use super::*;
use crate::pool::{ContextPool, PoolConfig};

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zstdpool-scan-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file of ids `from..to` and their tags, in row groups of 10 rows.
fn write(path: &Path, from: i64, to: i64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("tag", DataType::Utf8, true),
    ]));
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(from..to));
    let tag: ArrayRef = Arc::new(StringArray::from_iter(
        (from..to).map(|i| (i % 3 != 0).then(|| format!("t{}", i % 2))),
    ));
    let batch = RecordBatch::try_new(schema.clone(), vec![id, tag]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(10))
        .build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn pool() -> ContextPool {
    ContextPool::new(PoolConfig::default())
}

fn open(root: &Path) -> Dataset {
    Dataset::open(
        Sources::Directory {
            root: root.to_path_buf(),
            ignore_prefixes: vec![".".into(), "_".into()],
        },
        Format::Parquet,
        &Partitioning::Hive {
            schema: None,
            dictionary: false,
            null_fallback: None,
        },
        None,
        &pool(),
    )
    .unwrap()
}

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("id").unwrap();
            c.as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect()
}

fn cmp(column: &str, op: CmpOp, value: impl arrow_array::Array + 'static) -> Predicate {
    Predicate::Compare {
        column: column.into(),
        op,
        value: Arc::new(value),
    }
}

fn with(filter: &Predicate, threads: Option<usize>) -> ScanOptions {
    ScanOptions {
        filter: Some(filter.clone()),
        threads,
        ..Default::default()
    }
}

#[test]
fn partitions_are_read_typed_and_pruned_before_a_file_is_opened() {
    let root = tempdir("hive");
    write(&root.join("k=1/part-0.parquet"), 0, 30);
    write(&root.join("k=2/part-0.parquet"), 30, 60);
    // A pruned partition is never opened: this file would fail the read.
    std::fs::create_dir_all(root.join("k=3")).unwrap();
    std::fs::write(root.join("k=3/part-0.parquet"), b"not parquet").unwrap();
    std::fs::write(root.join("_SUCCESS"), b"").unwrap();
    let ds = open(&root);
    assert_eq!(ds.files().len(), 3);
    assert_eq!(ds.schema().field(2).name(), "k");
    assert_eq!(ds.schema().field(2).data_type(), &DataType::Int32);

    let filter = cmp("k", CmpOp::LtEq, Int64Array::from(vec![2]));
    let options = ScanOptions {
        filter: Some(filter.clone()),
        ..Default::default()
    };
    let batches = ds.read(&options).unwrap();
    assert_eq!(ids(&batches), (0..60).collect::<Vec<_>>());
    let k = batches[0].column_by_name("k").unwrap();
    assert_eq!(k.as_any().downcast_ref::<Int32Array>().unwrap().value(0), 1);
    assert_eq!(ds.count_rows(&with(&filter, None)).unwrap(), 60);

    let err = ds.read(&ScanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("k=3/part-0.parquet"), "{err}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn row_groups_are_pruned_by_their_statistics_and_rows_filtered_exactly() {
    let root = tempdir("stats");
    write(&root.join("a.parquet"), 0, 100);
    let ds = open(&root);
    let file = ds.open_parquet(&root.join("a.parquet"), 0, true).unwrap();
    let filter = Predicate::And(vec![
        cmp("id", CmpOp::GtEq, Int64Array::from(vec![42])),
        cmp("id", CmpOp::Lt, Int64Array::from(vec![57])),
    ]);
    let kept = ds.row_groups_kept(&filter, 0, &file).unwrap();
    let groups: Vec<usize> = kept.iter().map(|(g, _)| *g).collect();
    assert_eq!(groups, vec![4, 5]);
    // Row group 5 (50..60) is not all kept; neither is 4 (40..50).
    assert!(kept.iter().all(|(_, o)| !o.keeps_all()));
    let options = ScanOptions {
        filter: Some(filter.clone()),
        columns: Some(vec!["tag".into(), "id".into()]),
        ..Default::default()
    };
    let batches = ds.read(&options).unwrap();
    assert_eq!(ids(&batches), (42..57).collect::<Vec<_>>());
    assert_eq!(batches[0].schema().field(0).name(), "tag");
    assert_eq!(ds.count_rows(&with(&filter, Some(1))).unwrap(), 15);

    // Whole row groups inside the range are counted from the footer.
    let wide = cmp("id", CmpOp::Lt, Int64Array::from(vec![30]));
    let kept = ds.row_groups_kept(&wide, 0, &file).unwrap();
    assert_eq!(kept.len(), 3);
    assert!(kept.iter().all(|(_, o)| o.keeps_all()));
    assert_eq!(ds.count_rows(&with(&wide, None)).unwrap(), 30);

    // Nulls: `is null` is never pruned by a count the footer holds as zero where it is not.
    let nulls = Predicate::IsNull {
        column: "tag".into(),
    };
    assert_eq!(ds.count_rows(&with(&nulls, None)).unwrap(), 34);
    let not_in = Predicate::Not(Box::new(Predicate::In {
        column: "tag".into(),
        values: Arc::new(StringArray::from(vec!["t0"])),
    }));
    // "not in" keeps nulls, as pyarrow's does (is_in is false at a null).
    assert_eq!(ds.count_rows(&with(&not_in, None)).unwrap(), 34 + 33);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn files_lacking_a_column_read_it_as_nulls_and_streams_read_every_row() {
    let root = tempdir("schema");
    write(&root.join("a.parquet"), 0, 25);
    // A second file with one column only.
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from_iter_values(25..40))],
    )
    .unwrap();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(root.join("b.parquet")).unwrap(),
        schema,
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let ds = Arc::new(open(&root));
    let batches = ds.read(&ScanOptions::default()).unwrap();
    assert_eq!(ids(&batches), (0..40).collect::<Vec<_>>());
    let last = batches.last().unwrap();
    assert_eq!(last.column_by_name("tag").unwrap().null_count(), 15);

    let mut stream = ds.stream(&ScanOptions::default(), 1).unwrap();
    let mut seen = Vec::new();
    while let Some(b) = stream.next_batch().unwrap() {
        seen.push(b);
    }
    assert_eq!(ids(&seen), (0..40).collect::<Vec<_>>());

    let unknown = ds.read(&ScanOptions {
        columns: Some(vec!["nope".into()]),
        ..Default::default()
    });
    assert!(unknown
        .unwrap_err()
        .to_string()
        .contains("column 'nope' is not in the dataset (its columns: id, tag)"));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn outcomes_follow_kleene_logic() {
    let t = Outcomes::TRUE;
    let f = Outcomes::FALSE;
    let n = Outcomes::NULL;
    assert!(!n.negated().may_keep());
    assert!(t.or(n).keeps_all());
    assert!(!f.and(Outcomes::ANY).may_keep());
    assert!(Outcomes::ANY.negated().may_keep());
    // A null partition value: `k != 1` and `not (k = 1)` keep no row of it.
    let null = ColumnFacts::constant(Arc::new(Int32Array::from(vec![None])), 5);
    let p = Predicate::Not(Box::new(cmp("k", CmpOp::Eq, Int64Array::from(vec![1]))));
    assert!(!p.outcomes(&|_| Some(null.clone())).may_keep());
    let is_null = Predicate::IsNull { column: "k".into() };
    assert!(is_null.outcomes(&|_| Some(null.clone())).keeps_all());
}

#[test]
fn pages_the_page_index_rules_out_are_left_out_of_the_selection() {
    use parquet::file::properties::EnabledStatistics;
    let root = tempdir("pages");
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from_iter_values(0..100))],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_data_page_row_count_limit(10)
        .set_write_batch_size(10)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let path = root.join("a.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let ds = open(&root);
    let mut file = ds.open_parquet(&path, 0, true).unwrap();
    assert!(file.load_page_index());
    let filter = Predicate::And(vec![
        cmp("id", CmpOp::GtEq, Int64Array::from(vec![42])),
        cmp("id", CmpOp::Lt, Int64Array::from(vec![57])),
    ]);
    let kept = ds.row_groups_kept(&filter, 0, &file).unwrap();
    let selection =
        super::page_prune::row_selection(&filter, &file, &kept, &|_| true, &|_, _| None)
            .unwrap()
            .expect("pages pruned");
    // Pages of rows 40-49 and 50-59 only.
    assert_eq!(selection.row_count(), 20);
    assert_eq!(selection.skipped_row_count(), 80);
    let batches = ds.read(&with(&filter, Some(1))).unwrap();
    assert_eq!(ids(&batches), (42..57).collect::<Vec<_>>());
    std::fs::remove_dir_all(&root).unwrap();
}
