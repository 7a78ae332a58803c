//! What a read leaves out before it decodes: files by their partitions, Parquet row groups
//! by their statistics and bloom filters, pages by the page index.

use std::sync::Arc;

use parquet::arrow::arrow_reader::RowSelection;

use super::bloom::BloomFilter;
use super::page_prune::row_selection;
use super::plan::Plan;
use super::predicate::{ColumnFacts, Outcomes, Predicate};
use super::scanner::Dataset;
use super::statistics::ColumnStatistics;
use crate::error::Result;
use crate::parquet::ParquetFile;

impl Dataset {
    /// The files a filter may keep rows of, judged by their partitions alone, with what the
    /// filter can be on each.
    pub(super) fn pruned(&self, plan: &Plan) -> Vec<(usize, Outcomes)> {
        let all: Vec<usize>;
        let files = match &plan.files {
            Some(f) => f,
            None => {
                all = (0..self.found.files.len()).collect();
                &all
            }
        };
        let filter = plan.filter.as_ref();
        files
            .iter()
            .filter_map(|&i| {
                let outcomes = match filter {
                    None => Outcomes::TRUE,
                    Some(f) => f.outcomes(&|name| self.partition_facts(i, name, 1)),
                };
                outcomes.may_keep().then_some((i, outcomes))
            })
            .collect()
    }

    pub(super) fn partition_facts(
        &self,
        file: usize,
        name: &str,
        rows: u64,
    ) -> Option<ColumnFacts> {
        let k = self.found.schema.index_of(name).ok()?;
        Some(ColumnFacts::constant(
            self.found.values[file][k].clone(),
            rows,
        ))
    }

    /// The row groups of file `i` whose statistics (and the file's partitions) say the filter
    /// may keep a row of, with what it can be on each.
    pub(super) fn row_groups_kept(
        &self,
        filter: &Predicate,
        i: usize,
        file: &ParquetFile,
    ) -> Result<Vec<(usize, Outcomes)>> {
        let metadata = file.metadata();
        let stats = ColumnStatistics::of(filter, file.schema(), metadata);
        let mut kept = Vec::new();
        for g in 0..file.num_row_groups() {
            let rows = metadata.row_group(g).num_rows().max(0) as u64;
            let facts = |name: &str, blooms: &[(&str, Arc<BloomFilter>)]| {
                self.partition_facts(i, name, rows)
                    .filter(|_| file.schema().index_of(name).is_err())
                    .or_else(|| {
                        // Statistics bound the file's values in the file's type: they say
                        // nothing of a column the dataset reads as another type.
                        self.same_type(file.schema(), name)
                            .then(|| stats.facts(name, g, rows))
                            .flatten()
                    })
                    .map(|mut f| {
                        if let Some((_, b)) = blooms.iter().find(|(n, _)| *n == name) {
                            f.values = Some(b.clone());
                        }
                        f
                    })
            };
            let mut outcomes = filter.outcomes(&|name| facts(name, &[]));
            // Bloom filters are read only for a row group the statistics keep, and only for
            // the columns an equality or `in` compares.
            if outcomes.may_keep() {
                let blooms = stats.bloom_filters(filter, file, g);
                if !blooms.is_empty() {
                    outcomes = filter.outcomes(&|name| facts(name, &blooms));
                }
            }
            if outcomes.may_keep() {
                kept.push((g, outcomes));
            }
        }
        Ok(kept)
    }

    /// The rows of the kept row groups that the page index cannot rule out, where a filter
    /// keeps some groups only in part (the index is read only then); None to read them all.
    pub(super) fn pages_kept(
        &self,
        plan: &Plan,
        i: usize,
        file: &mut ParquetFile,
        kept: &[(usize, Outcomes)],
    ) -> Result<Option<RowSelection>> {
        let Some(filter) = &plan.filter else {
            return Ok(None);
        };
        if kept.iter().all(|(_, o)| o.keeps_all()) || !file.load_page_index() {
            return Ok(None);
        }
        let schema = file.schema().clone();
        row_selection(
            filter,
            file,
            kept,
            &|name| self.same_type(&schema, name),
            &|name, rows| {
                self.partition_facts(i, name, rows)
                    .filter(|_| schema.index_of(name).is_err())
            },
        )
    }
}
