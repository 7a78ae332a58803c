//! Parquet with pooled compression. The parquet crate lays out the file, encodes the columns,
//! parses pages and footers; this module adds zstd as a stage over each page, with pooled
//! contexts, where the crate would make a new context for every column chunk it writes or reads.
//!
//! A write: `writer` buffers a row group, has the crate encode each column uncompressed on the
//! caller's threads, and `repage` compresses the pages. A read: `reader` checks the footer
//! (`footer`) before the crate parses it, and `pages` decompresses each page the crate's page
//! reader hands it (every codec, into the size `page_header` reads from the page's header),
//! before the crate decodes the values; `source` gives the bytes.

use std::sync::Arc;

use arrow_schema::{DataType, FieldRef};

mod body;
mod by_content;
mod dictionary;
mod expansion;
mod footer;
mod int96;
mod options;
mod page_header;
mod pages;
mod plan;
mod reader;
mod repage;
mod source;
mod stored;
mod writer;

/// The parquet crate's types that writer options are made of, so that the bindings need not
/// depend on the crate.
pub use ::parquet::basic::Encoding;
pub use ::parquet::file::metadata::SortingColumn;
pub use ::parquet::file::properties::CdcOptions;
pub use options::{
    encoding_from_name, BloomFilter, FormatVersion, PageCodec, PageVersion, PerColumn,
    WriteOptions, DEFAULT_ROW_GROUP_SIZE, DEFAULT_ZSTD_LEVEL,
};
pub use pages::ParquetLimits;
pub(crate) use reader::decode_need;
pub use reader::{Batches, ColumnSummary, FileSummary, ParquetFile, Projection, RowGroupSummary};
pub use source::{ParquetSource, ReadAt};
pub use writer::ParquetWriter;

/// The values of a dictionary the parquet crate cannot decode into a dictionary (of fixed-size
/// binaries, or of booleans, which its reader refuses as an invalid physical type): written
/// and read as their values, as pyarrow reads both back.
pub(crate) fn values_only_dictionary(dt: &DataType) -> Option<&DataType> {
    match dt {
        DataType::Dictionary(_, v)
            if matches!(v.as_ref(), DataType::FixedSizeBinary(_) | DataType::Boolean) =>
        {
            Some(v)
        }
        _ => None,
    }
}

/// `dt` with `swap` applied to it and to every type nested in it, outermost first: where
/// `swap` gives a type, that type is used as it is; elsewhere the children are mapped.
pub(crate) fn map_types(dt: &DataType, swap: &dyn Fn(&DataType) -> Option<DataType>) -> DataType {
    if let Some(t) = swap(dt) {
        return t;
    }
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(map_types(f.data_type(), swap)),
        )
    };
    match dt {
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::ListView(f) => DataType::ListView(field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect()),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(map_types(v, swap))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
