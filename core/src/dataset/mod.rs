//! Partitioned datasets: one call writes a table or a stream into partitions (Hive
//! directories, directories of values, or file name prefixes) of Parquet or Arrow IPC files, every file's compression leased from one pool. `partition`
//! splits batches by their partition columns and names the directories; `writer` keeps the
//! partitions' pending rows and files and writes them on the caller's threads.

mod partition;
mod writer;

pub use partition::{escape, Flavor, Partitioner, NULL_PARTITION};
pub use writer::{
    DatasetOptions, DatasetWriter, Destination, ExistingData, FileFormat, WrittenFile,
};

#[cfg(test)]
mod tests;
