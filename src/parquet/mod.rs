//! `zstdpool.parquet`'s classes and functions: Parquet files written and read with pooled
//! contexts (the core's `parquet`), and pyarrow's writer keywords read into the core's options.

pub mod options;
pub mod reader;
pub mod writer;
