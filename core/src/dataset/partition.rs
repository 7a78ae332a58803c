//! Splitting batches by the values of their partition columns, and naming each partition as
//! its flavor does: Hive directories (`key=value/`, nulls as `__HIVE_DEFAULT_PARTITION__`),
//! directories of values alone (`2026/12/`), or a file name prefix (`2026_12_`). Values are
//! escaped as pyarrow's Hive partitioning escapes them in every flavor, so that no value can
//! name another directory. Rows keep their order within a partition.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Schema, SchemaRef};
use arrow_select::take::take;

use crate::error::{Error, Result};

/// What a null partition value is called in a path, as in Hive and pyarrow.
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// How a partition's values name its files, as pyarrow's `partitioning_flavor`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flavor {
    /// `key=value/` directories.
    #[default]
    Hive,
    /// A directory per value, `value/`, in the columns' order (pyarrow's flavor None). A null
    /// is left out, so only trailing values may be null.
    Directory,
    /// The values as a file name prefix, `value_value_` (the files stay in the base
    /// directory). A null is left out, as for directories.
    Filename,
}

/// Splits batches of one schema by its partition columns.
pub struct Partitioner {
    flavor: Flavor,
    /// What a Hive directory names a null value.
    null_name: String,
    keys: Vec<usize>,
    names: Vec<String>,
    /// The columns the files hold: all but the partition columns (their values are in the
    /// path, as pyarrow writes them).
    values: Vec<usize>,
    file_schema: SchemaRef,
    converter: RowConverter,
}

/// The rows of each group of a single key column, in the order groups first appear, by the
/// column's dictionary encoding (arrow's cast hashes the native values, several times faster
/// than hashing each row's encoded bytes); None for several keys, a key that already is a
/// dictionary (its values may repeat) or a type the cast does not encode.
fn single_key_groups(keys: &[ArrayRef]) -> Option<Vec<Vec<u32>>> {
    let [key] = keys else { return None };
    if matches!(
        key.data_type(),
        DataType::Dictionary(..) | DataType::Boolean
    ) {
        return None;
    }
    let as_dictionary = DataType::Dictionary(
        Box::new(DataType::UInt32),
        Box::new(key.data_type().clone()),
    );
    let encoded = arrow_cast::cast(key, &as_dictionary).ok()?;
    let encoded = encoded.as_dictionary_opt::<UInt32Type>()?;
    let entries = encoded.values().len();
    let codes = encoded.keys();
    group_by_slot(
        entries,
        codes
            .values()
            .iter()
            .enumerate()
            .map(|(r, &code)| codes.is_valid(r).then_some(code as usize)),
    )
}

/// The rows of each group, in the order groups first appear, where each row's group is named
/// by a slot below `slots` (None for a null key, a group of its own): by a table of each
/// slot's group, no hashing. None if a slot is out of range.
fn group_by_slot(slots: usize, rows: impl Iterator<Item = Option<usize>>) -> Option<Vec<Vec<u32>>> {
    // Per slot (and one for null, last), its group; u32::MAX until it has one.
    let mut group_of = vec![u32::MAX; slots + 1];
    let mut members: Vec<Vec<u32>> = Vec::new();
    for (r, slot) in rows.enumerate() {
        let group = group_of.get_mut(slot.unwrap_or(slots))?;
        if *group == u32::MAX {
            *group = members.len() as u32;
            members.push(Vec::new());
        }
        members[*group as usize].push(r as u32);
    }
    Some(members)
}

/// The rows of each group of a single integer key column whose values span a small range, in
/// the order groups first appear, by indexing a table with each value's offset from the
/// smallest: no hashing at all, where the dictionary path hashes every value (with std's
/// SipHash inside arrow's cast: a twelfth of a 10-partition write's profile). None for
/// several keys, another type, or a range wider than the batch has rows (four times over,
/// and at most a million slots).
fn range_groups(keys: &[ArrayRef]) -> Option<Vec<Vec<u32>>> {
    let [key] = keys else { return None };
    let fits = matches!(
        key.data_type(),
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    );
    if !fits {
        return None;
    }
    let wide = arrow_cast::cast(key, &DataType::Int64).ok()?;
    let wide = wide.as_primitive_opt::<Int64Type>()?;
    let (min, max) = (
        arrow_arith::aggregate::min(wide)?,
        arrow_arith::aggregate::max(wide)?,
    );
    let span = usize::try_from(max.checked_sub(min)?)
        .ok()?
        .checked_add(1)?;
    if span > (wide.len().saturating_mul(4)).min(1 << 20) {
        return None;
    }
    group_by_slot(
        span,
        wide.values()
            .iter()
            .enumerate()
            .map(|(r, &value)| wide.is_valid(r).then(|| (value - min) as usize)),
    )
}

/// One partition's rows of a batch, and the directory they go to.
pub struct Part {
    /// `a=1/b=x`, relative to the dataset's base directory ("" without partitioning).
    pub dir: String,
    pub batch: RecordBatch,
}

impl Partitioner {
    /// The rows of each group of `keys` (several columns, or one the dictionary path does not
    /// take), in the order groups first appear, by their encoded rows.
    fn hashed_groups(&self, keys: &[ArrayRef], num_rows: usize) -> Result<Vec<Vec<u32>>> {
        let rows = self.converter.convert_columns(keys)?;
        // A row's group: the previous row's when their keys are equal (sorted or clustered
        // input looks nothing up), else found by a fast hash of the key's row bytes.
        let mut groups: HashMap<&[u8], usize, ahash::RandomState> =
            HashMap::with_hasher(ahash::RandomState::new());
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut last: Option<(&[u8], usize)> = None;
        for r in 0..num_rows {
            let key = rows.row(r).data();
            let g = match last {
                Some((k, g)) if k == key => g,
                _ => {
                    let next = members.len();
                    let g = *groups.entry(key).or_insert(next);
                    if g == next {
                        members.push(Vec::new());
                    }
                    g
                }
            };
            last = Some((key, g));
            members[g].push(r as u32);
        }
        Ok(members)
    }

    /// A partitioner of `schema` by the columns `names`, which must exist and be of a type
    /// Hive partitioning can name (integers, strings, dates, booleans, or a dictionary of
    /// them), each named once.
    pub fn try_new(schema: &Schema, names: &[String], flavor: Flavor) -> Result<Self> {
        let mut keys = Vec::with_capacity(names.len());
        for name in names {
            let i = schema.index_of(name).map_err(|_| {
                Error::Parameter(format!(
                    "partitioning names a column {name:?} that the data does not have"
                ))
            })?;
            if keys.contains(&i) {
                return Err(Error::Parameter(format!(
                    "partitioning names the column {name:?} twice"
                )));
            }
            let dt = schema.field(i).data_type();
            if !nameable(dt) {
                return Err(Error::Parameter(format!(
                    "cannot partition by column {name:?} of type {dt}: partition columns must \
                     be integers, strings, dates, booleans or a dictionary of them"
                )));
            }
            keys.push(i);
        }
        if !names.is_empty() && keys.len() == schema.fields().len() {
            return Err(Error::Parameter(
                "every column is a partition column: the files would hold no data".into(),
            ));
        }
        let values: Vec<usize> = (0..schema.fields().len())
            .filter(|i| !keys.contains(i))
            .collect();
        let file_schema = Arc::new(Schema::new_with_metadata(
            values
                .iter()
                .map(|&i| schema.field(i).clone())
                .collect::<Vec<_>>(),
            schema.metadata().clone(),
        ));
        let converter = RowConverter::new(
            keys.iter()
                .map(|&i| SortField::new(schema.field(i).data_type().clone()))
                .collect(),
        )?;
        Ok(Partitioner {
            flavor,
            null_name: NULL_PARTITION.to_string(),
            keys,
            names: names.to_vec(),
            values,
            file_schema,
            converter,
        })
    }

    /// The schema of the files: the data's without its partition columns.
    pub fn file_schema(&self) -> &SchemaRef {
        &self.file_schema
    }

    /// `batch`'s rows grouped by partition, in the order each partition first appears.
    pub fn split(&self, batch: &RecordBatch) -> Result<Vec<Part>> {
        if batch.num_rows() == 0 {
            return Ok(Vec::new());
        }
        let values: Vec<ArrayRef> = self
            .values
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        if self.keys.is_empty() {
            return Ok(vec![Part {
                dir: String::new(),
                batch: RecordBatch::try_new(self.file_schema.clone(), values)?,
            }]);
        }
        let keys: Vec<ArrayRef> = self.keys.iter().map(|&i| batch.column(i).clone()).collect();
        let members = match range_groups(&keys).or_else(|| single_key_groups(&keys)) {
            Some(members) => members,
            None => self.hashed_groups(&keys, batch.num_rows())?,
        };
        let formatters = keys
            .iter()
            .map(|k| ArrayFormatter::try_new(k.as_ref(), &FormatOptions::default()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut parts = Vec::with_capacity(members.len());
        for rows in members {
            let first = rows[0] as usize;
            let dir = self.name(&keys, &formatters, first)?;
            let batch = if rows.len() == batch.num_rows() {
                RecordBatch::try_new(self.file_schema.clone(), values.clone())?
            } else {
                let indices = UInt32Array::from(rows);
                let columns = values
                    .iter()
                    .map(|v| take(v.as_ref(), &indices, None))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                RecordBatch::try_new(self.file_schema.clone(), columns)?
            };
            parts.push(Part { dir, batch });
        }
        Ok(parts)
    }
}

impl Partitioner {
    /// This partitioner with Hive directories naming a null value `name` (pyarrow's
    /// `null_fallback`) rather than `__HIVE_DEFAULT_PARTITION__`.
    pub fn with_null_name(mut self, name: &str) -> Result<Self> {
        if name.is_empty() {
            return Err(Error::Parameter(
                "null_fallback must not be empty: a directory `key=` names no value".into(),
            ));
        }
        self.null_name = name.to_string();
        Ok(self)
    }
}

impl Partitioner {
    /// What row `row`'s partition is called: its directory (Hive, Directory), or its file
    /// name prefix (Filename).
    fn name(
        &self,
        keys: &[ArrayRef],
        formatters: &[ArrayFormatter<'_>],
        row: usize,
    ) -> Result<String> {
        let mut name = String::new();
        let mut first_null: Option<usize> = None;
        for (k, (key, formatter)) in keys.iter().zip(formatters).enumerate() {
            let value = (!key.is_null(row)).then(|| formatter.value(row).to_string());
            if self.flavor == Flavor::Hive {
                if k > 0 {
                    name.push('/');
                }
                name.push_str(&escape(&self.names[k]));
                name.push('=');
                match &value {
                    None => name.push_str(&escape(&self.null_name)),
                    Some(v) => name.push_str(&escape(v)),
                }
                continue;
            }
            let Some(value) = value else {
                first_null.get_or_insert(k);
                continue;
            };
            if let Some(null) = first_null {
                return Err(Error::Parameter(format!(
                    "partitioning: column {:?} is null where the later partition column {:?} \
                     is not; {} partitioning leaves a null out, so only the last columns may \
                     be null (the \"hive\" flavor names nulls)",
                    self.names[null],
                    self.names[k],
                    self.flavor_name()
                )));
            }
            if value.is_empty() {
                return Err(Error::Parameter(format!(
                    "partitioning: column {:?} holds an empty string, which {} partitioning \
                     cannot name (the \"hive\" flavor can)",
                    self.names[k],
                    self.flavor_name()
                )));
            }
            match self.flavor {
                Flavor::Directory => {
                    if !name.is_empty() {
                        name.push('/');
                    }
                    name.push_str(&escape_segment(&value));
                }
                _ => {
                    name.push_str(&escape_segment(&value).replace('_', "%5F"));
                    name.push('_');
                }
            }
        }
        Ok(name)
    }

    fn flavor_name(&self) -> &'static str {
        match self.flavor {
            Flavor::Hive => "hive",
            Flavor::Directory => "directory",
            Flavor::Filename => "filename",
        }
    }

    /// The flavor partitions are named in.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }
}

/// `value` escaped as a path segment of its own: as [`escape`], and `.` and `..` (which
/// would name the directory itself or its parent) escaped whole.
fn escape_segment(value: &str) -> String {
    match value {
        "." => "%2E".into(),
        ".." => "%2E%2E".into(),
        v => escape(v),
    }
}

/// Whether Hive partitioning can name a value of `dt`.
fn nameable(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(_, values) => nameable(values),
        dt => {
            dt.is_integer()
                || matches!(
                    dt,
                    DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Utf8View
                        | DataType::Boolean
                        | DataType::Date32
                        | DataType::Date64
                        | DataType::Null
                )
        }
    }
}

/// `value` as part of a path segment: every byte but the URI's unreserved ones (letters,
/// digits and `-._~`) percent-encoded, as pyarrow's Hive partitioning writes it. No value can
/// leave its directory: `/` is escaped, and a segment always starts with `name=`.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int8Type;
    use arrow_array::{DictionaryArray, Int32Array, Int64Array, StringArray};
    use arrow_schema::Field;

    #[test]
    fn values_are_escaped_as_pyarrow_escapes_them() {
        assert_eq!(escape("a/b c"), "a%2Fb%20c");
        assert_eq!(escape("x=y%z"), "x%3Dy%25z");
        assert_eq!(escape("é?#&"), "%C3%A9%3F%23%26");
        assert_eq!(escape("-2"), "-2");
        assert_eq!(escape(".."), "..");
        assert_eq!(escape("v1.5"), "v1.5");
    }

    /// Checks that `fast`, one of the ways a single key is grouped without hashing, groups
    /// `key` as the hashed path does, into more than five groups.
    fn groups_as_hashed(key: &ArrayRef, fast: Vec<Vec<u32>>) {
        let schema = Schema::new(vec![
            Field::new("k", key.data_type().clone(), true),
            Field::new("v", DataType::Int32, true),
        ]);
        let p = Partitioner::try_new(&schema, &["k".into()], Flavor::Hive).unwrap();
        let hashed = p
            .hashed_groups(std::slice::from_ref(key), key.len())
            .unwrap();
        assert_eq!(fast, hashed);
        assert!(fast.len() > 5);
    }

    #[test]
    fn one_key_groups_as_the_hashed_path_groups() {
        let ints: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..5_000).map(|i| (i % 11 != 3).then_some((i * 7919) % 13)),
        ));
        let strings: ArrayRef = Arc::new(arrow_array::StringArray::from_iter(
            (0..5_000).map(|i| (i % 17 != 0).then(|| format!("s{}", (i * 31) % 9))),
        ));
        for key in [ints, strings] {
            groups_as_hashed(
                &key,
                single_key_groups(std::slice::from_ref(&key)).expect("one key"),
            );
        }
    }

    #[test]
    fn small_integer_ranges_group_as_the_hashed_path_groups() {
        let negative: ArrayRef =
            Arc::new(Int64Array::from_iter((0..5_000).map(|i| {
                (i % 11 != 3).then_some(-((i * 7919) % 13) - 1_000_000)
            })));
        let small: ArrayRef = Arc::new(arrow_array::UInt8Array::from_iter(
            (0..5_000).map(|i| (i % 7 != 0).then_some(((i * 31) % 200) as u8)),
        ));
        for key in [negative, small] {
            groups_as_hashed(
                &key,
                range_groups(std::slice::from_ref(&key)).expect("a small range"),
            );
        }
        // Wide ranges, all nulls, several keys and other types go another way.
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![0, i64::MAX]));
        let nulls: ArrayRef = Arc::new(Int32Array::from(vec![None, None]));
        let huge: ArrayRef = Arc::new(arrow_array::UInt64Array::from(vec![1, 2]));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        for keys in [vec![wide], vec![nulls], vec![huge], vec![text]] {
            assert!(range_groups(&keys).is_none());
        }
        let two: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        assert!(range_groups(&[two.clone(), two]).is_none());
    }

    #[test]
    fn rows_are_split_in_order_with_nulls_and_dictionaries() {
        let k: DictionaryArray<Int8Type> = vec![Some("a"), None, Some("b/c"), Some("a")]
            .into_iter()
            .collect();
        let schema = Schema::new(vec![
            Field::new("k", k.data_type().clone(), true),
            Field::new("n", DataType::Int32, true),
            Field::new("v", DataType::Int64, false),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![
                Arc::new(k),
                Arc::new(Int32Array::from(vec![Some(1), Some(1), None, Some(1)])),
                Arc::new(Int64Array::from(vec![10, 20, 30, 40])),
            ],
        )
        .unwrap();
        let p = Partitioner::try_new(&schema, &["k".into(), "n".into()], Flavor::Hive).unwrap();
        let parts = p.split(&batch).unwrap();
        let dirs: Vec<&str> = parts.iter().map(|p| p.dir.as_str()).collect();
        assert_eq!(
            dirs,
            [
                "k=a/n=1",
                "k=__HIVE_DEFAULT_PARTITION__/n=1",
                "k=b%2Fc/n=__HIVE_DEFAULT_PARTITION__"
            ]
        );
        let v = parts[0]
            .batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(v.values(), &[10, 40]);
        assert_eq!(parts[0].batch.schema().fields().len(), 1);
        assert!(Partitioner::try_new(&schema, &["nope".into()], Flavor::Hive).is_err());
        assert!(Partitioner::try_new(&schema, &["k".into(), "k".into()], Flavor::Hive).is_err());
        let floats = Schema::new(vec![
            Field::new("f", DataType::Float64, false),
            Field::new("s", DataType::Utf8, false),
        ]);
        let err = Partitioner::try_new(&floats, &["f".into()], Flavor::Hive)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("Float64"), "{err}");
        let _ = StringArray::from(vec!["unused"]);
    }
}
