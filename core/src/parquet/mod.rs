//! Parquet with pooled compression. The parquet crate lays out the file, encodes the columns,
//! parses pages and footers; this module adds zstd as a stage over each page, with pooled
//! contexts, where the crate would make a new context for every column chunk it writes or reads.
//!
//! A write: `writer` buffers a row group, has the crate encode each column uncompressed on the
//! caller's threads, and `compress` compresses the pages, as IPC's `compress` stage does its
//! bodies. A read: `reader` checks the footer (`footer`) before the crate parses it, and each
//! page the crate's page reader hands it goes through the `steps` of `decompress` (every
//! codec, into the size `page_header` reads from the page's header), `expansion` (what a
//! string page decodes to, asked for first) and `int96`, before the crate decodes the
//! values; `source` gives the bytes. `steps` lies below those stages, `arrow_types` below
//! the reader and the writer.

mod arrow_types;
mod body;
mod by_content;
mod compress;
mod decompress;
mod dictionary;
mod expansion;
mod footer;
mod int96;
mod options;
mod page_header;
mod plan;
mod reader;
mod source;
mod steps;
mod stored;
mod thrift;
mod writer;

/// The parquet crate's types that writer options are made of, so that the bindings need not
/// depend on the crate.
pub use ::parquet::basic::Encoding;
pub use ::parquet::file::metadata::SortingColumn;
pub use ::parquet::file::properties::CdcOptions;
pub use decompress::ParquetLimits;
pub use options::{
    BloomFilter, FormatVersion, PageCodec, PageVersion, PerColumn, WriteOptions,
    DEFAULT_ROW_GROUP_SIZE, DEFAULT_ZSTD_LEVEL,
};
pub(crate) use reader::decode_need;
pub use reader::{Batches, ColumnSummary, FileSummary, ParquetFile, Projection, RowGroupSummary};
pub use source::{ParquetSource, ReadAt};
pub use writer::ParquetWriter;

#[cfg(test)]
mod tests;
