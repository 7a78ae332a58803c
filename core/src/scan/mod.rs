//! Reading datasets: directories of Parquet or Arrow IPC files, partitioned or not, with
//! filters. `discover` finds the files and types their partitions; `predicate` is the filter,
//! evaluated on rows and bounded on what partitions and statistics say; `scanner` prunes,
//! reads files in parallel and filters; `stream` reads them a window at a time, bounded by
//! what they decode to.

mod bloom;
mod discover;
mod page_prune;
mod predicate;
mod scanner;
mod stream;

pub use discover::{unescape, Partitioning};
pub use predicate::{CmpOp, ColumnFacts, MayContain, Outcomes, Predicate};
pub use scanner::{Dataset, Format, ScanOptions, Sources};
pub use stream::ScanStream;

#[cfg(test)]
mod tests;
