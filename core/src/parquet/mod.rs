//! Parquet with pooled compression. The parquet crate lays out the file, encodes the columns,
//! parses pages and footers; this module adds zstd as a stage over each page, with pooled
//! contexts, where the crate would make a new context for every column chunk it writes or reads.
//!
//! A write: `writer` buffers a row group, has the crate encode each column uncompressed on the
//! caller's threads, and `repage` compresses the pages. A read: `reader` checks the footer
//! (`footer`) before the crate parses it, and `pages` decompresses each page the crate's page
//! reader hands it (every codec, into the size `page_header` reads from the page's header),
//! before the crate decodes the values; `source` gives the bytes.

mod body;
mod footer;
mod options;
mod page_header;
mod pages;
mod reader;
mod repage;
mod source;
mod writer;

pub use options::{
    PageCodec, PageVersion, PerColumn, WriteOptions, DEFAULT_ROW_GROUP_SIZE, DEFAULT_ZSTD_LEVEL,
};
pub use pages::ParquetLimits;
pub use reader::{Batches, ColumnSummary, FileSummary, ParquetFile, Projection, RowGroupSummary};
pub use source::{ParquetSource, ReadAt};
pub use writer::ParquetWriter;

#[cfg(test)]
mod tests;
