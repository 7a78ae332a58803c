//! Reading datasets: directories of Parquet or Arrow IPC files, partitioned or not, with
//! filters. `discover` finds the files and types their partitions; `predicate` is the filter,
//! evaluated on rows and bounded on what partitions and statistics say; `plan` resolves a read
//! against the dataset's schema, `prune` leaves out files, row groups and pages by
//! `statistics`, `bloom` and `page_prune`; `files` opens and reads each format, `fit` fits
//! their batches to the dataset's schema; `scanner` reads files in parallel and filters, and
//! `stream` reads them a window at a time, bounded by what they decode to.

mod bloom;
mod discover;
mod files;
mod fit;
mod page_prune;
mod plan;
mod predicate;
mod prune;
mod scanner;
mod statistics;
mod stream;

pub use discover::{unescape, Partitioning};
pub use predicate::{CmpOp, ColumnFacts, MayContain, Outcomes, Predicate};
pub use scanner::{Dataset, Format, ScanOptions, Sources};
pub use stream::ScanStream;

#[cfg(test)]
mod tests;
