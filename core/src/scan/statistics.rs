//! What a Parquet file's row groups say of their columns, read once per file and only where
//! they can be trusted: min and max, null counts, and bloom filters, as the filter asks.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::metadata::ParquetMetaData;

use super::bloom::BloomFilter;
use super::predicate::{ColumnFacts, Predicate};
use crate::parquet::ParquetFile;

/// Whether the minimum and maximum of leaf `leaf` in `group` order values as the column's type
/// does. The deprecated `min` and `max` fields (written where `min_value` and `max_value` are
/// not) were ordered as signed bytes by old writers: wrong for strings, binaries and unsigned
/// or decimal values, which pyarrow ignores them for too.
pub(super) fn min_max_trusted(
    group: &parquet::file::metadata::RowGroupMetaData,
    leaf: usize,
) -> bool {
    use parquet::basic::{LogicalType, Type};
    let chunk = group.column(leaf);
    let Some(stats) = chunk.statistics() else {
        return true;
    };
    if !stats.is_min_max_deprecated() {
        return true;
    }
    let descr = chunk.column_descr();
    let unsigned = match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => !int.is_signed,
        Some(LogicalType::Decimal { .. }) => true,
        _ => false,
    };
    !(unsigned
        || matches!(
            chunk.column_type(),
            Type::BYTE_ARRAY | Type::FIXED_LEN_BYTE_ARRAY
        ))
}

/// The statistics of the filter's columns, for every row group of a file: arrays of minima,
/// maxima and null counts by row group, read from the footer by the parquet crate.
pub(super) struct ColumnStatistics {
    /// By column name: minima and maxima by row group, and null counts where the footer
    /// has them; None where the crate cannot read the column's statistics.
    columns: Vec<(String, Option<GroupStatistics>)>,
}

pub(super) struct GroupStatistics {
    mins: ArrayRef,
    maxes: ArrayRef,
    nulls: Option<arrow_array::UInt64Array>,
    /// By row group, whether its minimum and maximum can be trusted.
    trusted: Vec<bool>,
    /// The column's leaf, Arrow type and physical type (what its bloom filter hashes).
    leaf: usize,
    data_type: arrow_schema::DataType,
    physical: parquet::basic::Type,
}

impl ColumnStatistics {
    pub(super) fn of(
        filter: &Predicate,
        schema: &SchemaRef,
        metadata: &Arc<ParquetMetaData>,
    ) -> Self {
        let descr = metadata.file_metadata().schema_descr();
        let groups = metadata.row_groups();
        let columns = filter
            .columns()
            .into_iter()
            .map(|name| {
                // A null count the footer lacks is unknown, not zero: `is null` must not prune.
                let stats = StatisticsConverter::try_new(name, schema, descr)
                    .ok()
                    .map(|c| c.with_missing_null_counts_as_zero(false))
                    .filter(|c| c.parquet_column_index().is_some())
                    .and_then(|c| {
                        let mins = c.row_group_mins(groups.iter()).ok()?;
                        let maxes = c.row_group_maxes(groups.iter()).ok()?;
                        let nulls = c.row_group_null_counts(groups.iter()).ok();
                        let leaf = c.parquet_column_index()?;
                        let trusted = groups.iter().map(|g| min_max_trusted(g, leaf)).collect();
                        Some(GroupStatistics {
                            mins,
                            maxes,
                            nulls,
                            trusted,
                            leaf,
                            data_type: c.arrow_field().data_type().clone(),
                            physical: descr.column(leaf).physical_type(),
                        })
                    });
                (name.to_string(), stats)
            })
            .collect();
        ColumnStatistics { columns }
    }

    pub(super) fn facts(&self, name: &str, group: usize, rows: u64) -> Option<ColumnFacts> {
        let (_, stats) = self.columns.iter().find(|(n, _)| n == name)?;
        let GroupStatistics {
            mins, maxes, nulls, ..
        } = stats.as_ref()?;
        let trusted = stats.as_ref()?.trusted.get(group).copied().unwrap_or(false);
        // A NaN bound (a writer that let NaN into its statistics) bounds nothing.
        let bound = |a: &ArrayRef| {
            (trusted && group < a.len() && a.is_valid(group))
                .then(|| a.slice(group, 1))
                .filter(|b| !super::predicate::is_nan(b))
        };
        Some(ColumnFacts {
            min: bound(mins),
            max: bound(maxes),
            null_count: nulls
                .as_ref()
                .filter(|n| group < n.len() && n.is_valid(group))
                .map(|n| n.value(group)),
            rows,
            values: None,
        })
    }

    /// The bloom filters of row group `group` for the columns `filter` compares for equality
    /// (or `in`), where the file has them.
    /// A bloom filter that cannot be read prunes nothing (it is only an index: pyarrow reads
    /// such a file too).
    pub(super) fn bloom_filters<'a>(
        &self,
        filter: &'a Predicate,
        file: &ParquetFile,
        group: usize,
    ) -> Vec<(&'a str, Arc<BloomFilter>)> {
        let mut out = Vec::new();
        for name in filter.equality_columns() {
            let Some((_, Some(stats))) = self.columns.iter().find(|(n, _)| n == name) else {
                continue;
            };
            if let Ok(Some(bloom)) = file.bloom_filter(group, stats.leaf) {
                out.push((
                    name,
                    Arc::new(BloomFilter {
                        filter: bloom,
                        data_type: stats.data_type.clone(),
                        physical: stats.physical,
                    }),
                ));
            }
        }
        out
    }
}
