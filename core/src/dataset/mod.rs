//! Partitioned datasets: one call writes a table or a stream into partitions (Hive
//! directories, directories of values, or file name prefixes) of Parquet or Arrow IPC files,
//! every file's compression leased from one pool. `options` says how; `partition` splits
//! batches by their partition columns and names the directories; `destination` is where the
//! files go and `file` one file being written; `writer` keeps the partitions' pending rows and
//! files and writes them on the caller's threads.

mod destination;
mod file;
mod options;
mod partition;
mod writer;

pub use destination::Destination;
pub use file::WrittenFile;
pub use options::{DatasetOptions, ExistingData, FileFormat};
pub use partition::{escape, Flavor, Partitioner, NULL_PARTITION};
pub use writer::DatasetWriter;

#[cfg(test)]
mod tests;
