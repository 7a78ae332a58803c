//! Pruning pages by the page index: within a row group the filter keeps only in part, the rows
//! are cut where any filter column's page starts, each stretch is judged from the statistics
//! of the pages that cover it, and the stretches no row of which the filter can keep are left
//! out of the read. With the offset index, the parquet crate then never reads their pages.

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

use super::predicate::{is_nan, ColumnFacts, Outcomes, Predicate};
use crate::error::{catch_panics, Result};
use crate::parquet::ParquetFile;

/// One filter column's pages in one row group: where each starts, and its statistics.
struct ColumnPages {
    name: String,
    starts: Vec<u64>,
    mins: ArrayRef,
    maxes: ArrayRef,
    nulls: UInt64Array,
}

impl ColumnPages {
    /// What the page covering rows `from..to` says of them.
    fn facts(&self, from: u64, to: u64, group_rows: u64) -> ColumnFacts {
        let p = match self.starts.binary_search(&from) {
            Ok(p) => p,
            Err(p) => p.saturating_sub(1),
        };
        let page_end = self.starts.get(p + 1).copied().unwrap_or(group_rows);
        let whole_page = self.starts.get(p) == Some(&from) && page_end == to;
        let bound = |a: &ArrayRef| {
            (p < a.len() && a.is_valid(p))
                .then(|| a.slice(p, 1))
                .filter(|b| !is_nan(b))
        };
        // A page's null count bounds a part of it only when it is zero.
        let nulls = (p < self.nulls.len() && self.nulls.is_valid(p)).then(|| self.nulls.value(p));
        ColumnFacts {
            min: bound(&self.mins),
            max: bound(&self.maxes),
            null_count: nulls.filter(|&n| n == 0 || whole_page),
            rows: to - from,
            values: None,
        }
    }
}

/// The rows of `groups` (row groups kept, with what the filter can be on each) that the page
/// index cannot rule out, or None where it rules out none. `eligible` says which columns'
/// statistics bound what the filter compares (their type is the dataset's); `constant` gives
/// a partition's facts for a number of rows.
pub(super) fn row_selection(
    filter: &Predicate,
    file: &ParquetFile,
    groups: &[(usize, Outcomes)],
    eligible: &dyn Fn(&str) -> bool,
    constant: &dyn Fn(&str, u64) -> Option<ColumnFacts>,
) -> Result<Option<RowSelection>> {
    let metadata = file.metadata().clone();
    let (Some(column_index), Some(offset_index)) =
        (metadata.column_index(), metadata.offset_index())
    else {
        return Ok(None);
    };
    let schema: SchemaRef = file.schema().clone();
    let descr = metadata.file_metadata().schema_descr();
    let mut selectors: Vec<RowSelector> = Vec::new();
    let mut pruned = false;
    for &(g, outcomes) in groups {
        let rows = metadata.row_group(g).num_rows().max(0) as u64;
        if outcomes.keeps_all() {
            selectors.push(RowSelector::select(rows as usize));
            continue;
        }
        let columns: Vec<ColumnPages> = filter
            .columns()
            .into_iter()
            .filter(|name| eligible(name))
            .filter_map(|name| {
                // A malformed index (fewer entries than columns, pages than statistics) is a
                // panic in the crate's indexing: the column is then not pruned by it.
                catch_panics("reading the page index", || {
                    Ok(page_statistics(
                        name,
                        &schema,
                        descr,
                        column_index,
                        offset_index,
                        g,
                        rows,
                    ))
                })
                .ok()
                .flatten()
            })
            .collect();
        if columns.is_empty() {
            selectors.push(RowSelector::select(rows as usize));
            continue;
        }
        let mut cuts: Vec<u64> = columns
            .iter()
            .flat_map(|c| c.starts.iter().copied())
            .filter(|&s| s < rows)
            .chain([0])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for (k, &from) in cuts.iter().enumerate() {
            let to = cuts.get(k + 1).copied().unwrap_or(rows);
            let outcomes = filter.outcomes(&|name| {
                columns
                    .iter()
                    .find(|c| c.name == name)
                    .map(|c| c.facts(from, to, rows))
                    .or_else(|| constant(name, to - from))
            });
            let n = (to - from) as usize;
            if outcomes.may_keep() {
                selectors.push(RowSelector::select(n));
            } else {
                selectors.push(RowSelector::skip(n));
                pruned = true;
            }
        }
    }
    Ok(pruned.then(|| RowSelection::from(selectors)))
}

/// Column `name`'s pages in row group `group`, where the page index has them.
fn page_statistics(
    name: &str,
    schema: &SchemaRef,
    descr: &parquet::schema::types::SchemaDescriptor,
    column_index: &parquet::file::metadata::ParquetColumnIndex,
    offset_index: &parquet::file::metadata::ParquetOffsetIndex,
    group: usize,
    group_rows: u64,
) -> Option<ColumnPages> {
    let converter = StatisticsConverter::try_new(name, schema, descr).ok()?;
    let leaf = converter.parquet_column_index()?;
    let locations = offset_index.get(group)?.get(leaf)?.page_locations();
    column_index.get(group)?.get(leaf)?;
    let starts: Vec<u64> = locations
        .iter()
        .map(|l| u64::try_from(l.first_row_index).ok())
        .collect::<Option<_>>()?;
    if starts.first() != Some(&0)
        || starts.windows(2).any(|w| w[0] >= w[1])
        || starts.last().is_some_and(|&l| l >= group_rows.max(1))
    {
        return None;
    }
    let mins = converter
        .data_page_mins(column_index, offset_index, [&group])
        .ok()?;
    let maxes = converter
        .data_page_maxes(column_index, offset_index, [&group])
        .ok()?;
    let nulls = converter
        .data_page_null_counts(column_index, offset_index, [&group])
        .ok()?;
    if mins.len() != starts.len() || maxes.len() != starts.len() || nulls.len() != starts.len() {
        return None;
    }
    Some(ColumnPages {
        name: name.to_string(),
        starts,
        mins,
        maxes,
        nulls,
    })
}
