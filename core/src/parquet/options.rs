//! What a Parquet write does: the codec, dictionary and statistics of each column, and the
//! file's row group and page sizes, checked once when a writer opens.

use std::collections::HashMap;

use ::parquet::basic::{
    BrotliLevel, Compression, Encoding, GzipLevel, Type as Physical, ZstdLevel,
};
use ::parquet::file::metadata::SortingColumn;
use ::parquet::file::properties::{
    BloomFilterProperties, CdcOptions, EnabledStatistics, WriterProperties, WriterVersion,
};
use ::parquet::schema::types::{ColumnPath, SchemaDescriptor};
use arrow_schema::TimeUnit;

use crate::context::CompressParams;
use crate::error::{Error, Result};

/// zstd level 1 by default, the same as pyarrow's, so that sizes compare fairly.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// Rows per row group unless the caller says otherwise: pyarrow's and arrow-rs's default.
pub const DEFAULT_ROW_GROUP_SIZE: usize = 1024 * 1024;

/// How one column's pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCodec {
    None,
    /// zstd with pooled contexts, compressed by this crate (see `compress`).
    Zstd(CompressParams),
    /// The parquet crate's own codecs: none keeps a context worth pooling.
    Lz4Raw,
    Snappy,
    Gzip(u32),
    Brotli(u32),
}

impl PageCodec {
    /// What the parquet crate's column writer is told: zstd pages leave it uncompressed and
    /// are compressed afterwards with a pooled context.
    pub(crate) fn for_encoder(&self) -> Result<Compression> {
        Ok(match self {
            PageCodec::Zstd(_) | PageCodec::None => Compression::UNCOMPRESSED,
            PageCodec::Lz4Raw => Compression::LZ4_RAW,
            PageCodec::Snappy => Compression::SNAPPY,
            PageCodec::Gzip(l) => Compression::GZIP(GzipLevel::try_new(*l)?),
            PageCodec::Brotli(l) => Compression::BROTLI(BrotliLevel::try_new(*l)?),
        })
    }

    /// What the file records for the column (Parquet stores no level; for zstd's negative
    /// levels, the nearest valid one is recorded).
    pub(crate) fn in_file(&self) -> Result<Compression> {
        Ok(match self {
            PageCodec::Zstd(params) => {
                Compression::ZSTD(ZstdLevel::try_new(params.level.clamp(1, 22))?)
            }
            other => other.for_encoder()?,
        })
    }
}

/// One setting for every column, with exceptions for some (pyarrow's `bool | list | dict`).
/// A name is a column's dotted path ("a.b.c") or a top-level column, which covers its leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct PerColumn<T> {
    pub default: T,
    pub columns: HashMap<String, T>,
}

impl<T: Clone> PerColumn<T> {
    pub fn all(default: T) -> Self {
        PerColumn {
            default,
            columns: HashMap::new(),
        }
    }

    /// The setting of the leaf column at `path`.
    pub fn get(&self, path: &ColumnPath) -> T {
        self.columns
            .get(&path.string())
            .or_else(|| path.parts().first().and_then(|top| self.columns.get(top)))
            .unwrap_or(&self.default)
            .clone()
    }

    /// Refuses names that are no column of `schema`, naming `what` the setting is.
    fn check_names(&self, what: &str, schema: &SchemaDescriptor) -> Result<()> {
        for name in self.columns.keys() {
            let known = schema.columns().iter().any(|c| {
                let path = c.path();
                path.string() == *name || path.parts().first() == Some(name)
            });
            if !known {
                return Err(Error::Parameter(format!(
                    "{what} names a column {name:?} that the schema does not have"
                )));
            }
        }
        Ok(())
    }
}

/// Parquet's data page layouts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageVersion {
    /// Levels and values compressed together (pyarrow's default).
    #[default]
    V1,
    /// Levels stored uncompressed before the values.
    V2,
}

/// pyarrow's `version`: which logical types a file may use, and the format version its
/// footer records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum FormatVersion {
    /// No unsigned 32-bit integers (stored as INT64) and no nanoseconds.
    V1_0,
    /// No nanosecond timestamps (stored in microseconds).
    V2_4,
    /// Every logical type (pyarrow's default).
    #[default]
    V2_6,
}

/// Whether `encoding` can hold values of `physical` (the parquet crate fails late, or not at
/// all, on a pairing the format does not define).
fn encoding_fits(encoding: Encoding, physical: Physical) -> bool {
    use Physical as P;
    match encoding {
        Encoding::PLAIN => true,
        Encoding::RLE => physical == P::BOOLEAN,
        Encoding::BYTE_STREAM_SPLIT => matches!(
            physical,
            P::FLOAT | P::DOUBLE | P::INT32 | P::INT64 | P::FIXED_LEN_BYTE_ARRAY
        ),
        Encoding::DELTA_BINARY_PACKED => matches!(physical, P::INT32 | P::INT64),
        Encoding::DELTA_LENGTH_BYTE_ARRAY => physical == P::BYTE_ARRAY,
        Encoding::DELTA_BYTE_ARRAY => matches!(physical, P::BYTE_ARRAY | P::FIXED_LEN_BYTE_ARRAY),
        _ => false,
    }
}

/// A column's bloom filter: its false positive probability and the distinct values it is
/// sized for (pyarrow's defaults: 0.05 and 1,048,576).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BloomFilter {
    pub fpp: f64,
    pub ndv: u64,
}

impl Default for BloomFilter {
    fn default() -> Self {
        BloomFilter {
            fpp: 0.05,
            ndv: 1 << 20,
        }
    }
}

/// How a writer writes.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOptions {
    pub compression: PerColumn<PageCodec>,
    pub dictionary: PerColumn<bool>,
    pub statistics: PerColumn<bool>,
    /// Rows per row group: a writer buffers this many before it writes a row group.
    pub row_group_size: usize,
    /// The size a data page is cut at (the crate's default, 1 MiB, when None).
    pub data_page_size: Option<usize>,
    pub page_version: PageVersion,
    /// Threads to encode and compress one row group's columns with; None chooses by size.
    pub threads: Option<usize>,
    /// Key-value metadata for the footer, beside the schema's own and `ARROW:schema`.
    pub metadata: Vec<(String, String)>,
    pub format_version: FormatVersion,
    /// Whether the footer holds `ARROW:schema`, from which readers restore the Arrow types.
    pub store_schema: bool,
    /// Whether column and offset indexes are written (page statistics readers prune with).
    pub page_index: bool,
    /// Whether each page header carries the CRC32 of its body.
    pub page_checksum: bool,
    /// The size a dictionary page may reach before the column falls back (1 MiB when None).
    pub dictionary_page_size: Option<usize>,
    /// The rows a data page may hold (20,000 when None, as in the crate and pyarrow).
    pub max_rows_per_page: Option<usize>,
    /// The values the encoder takes at a time (1,024 when None).
    pub write_batch_size: Option<usize>,
    /// The encoding of values not dictionary-encoded, by column (PLAIN when None).
    pub encoding: PerColumn<Option<Encoding>>,
    /// What the footer says the rows of each row group are sorted by.
    pub sorting_columns: Vec<SortingColumn>,
    /// The unit every timestamp is stored in (each its own when None, as the version allows).
    pub coerce_timestamps: Option<TimeUnit>,
    /// Whether storing a timestamp in a coarser unit may drop its remainder silently.
    pub allow_truncated_timestamps: bool,
    /// The `isAdjustedToUTC` flag of time-of-day columns.
    pub time_adjusted_to_utc: bool,
    /// Whether list elements are named `element`, as the format specifies (else as in Arrow).
    pub compliant_nested_types: bool,
    /// Whether decimals of precision 18 or less are stored as INT32 or INT64 (the default:
    /// the parquet crate cannot dictionary-encode FIXED_LEN_BYTE_ARRAY, pyarrow's default, so
    /// a column of few distinct decimals would be twice the size), else as
    /// FIXED_LEN_BYTE_ARRAY.
    pub decimal_as_integer: bool,
    /// Bloom filters, by column: Some to write one, None to leave the column without.
    pub bloom_filters: HashMap<String, Option<BloomFilter>>,
    /// pyarrow's `flavor="spark"`: top-level names with the characters Spark refuses get `_`.
    pub spark_names: bool,
    /// pyarrow's `use_deprecated_int96_timestamps`: timestamps stored as INT96 (see `int96`).
    pub int96_timestamps: bool,
    /// Whether a numeric column whose dictionary `dictionary` leaves on is dictionary-encoded
    /// only where a sample of its row group's values repeats (see `plain_or_dictionary`);
    /// false when the caller chose `use_dictionary` itself.
    pub sample_dictionary: bool,
    /// pyarrow's `use_content_defined_chunking`: data pages end where a rolling hash of the
    /// values says (see `by_content`).
    pub content_defined_chunking: Option<CdcOptions>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: PerColumn::all(PageCodec::Zstd(CompressParams::level(DEFAULT_ZSTD_LEVEL))),
            dictionary: PerColumn::all(true),
            statistics: PerColumn::all(true),
            row_group_size: DEFAULT_ROW_GROUP_SIZE,
            data_page_size: None,
            page_version: PageVersion::V1,
            threads: None,
            metadata: Vec::new(),
            format_version: FormatVersion::V2_6,
            store_schema: true,
            page_index: true,
            page_checksum: false,
            dictionary_page_size: None,
            max_rows_per_page: None,
            write_batch_size: None,
            encoding: PerColumn::all(None),
            sorting_columns: Vec::new(),
            coerce_timestamps: None,
            allow_truncated_timestamps: false,
            time_adjusted_to_utc: false,
            compliant_nested_types: true,
            decimal_as_integer: true,
            bloom_filters: HashMap::new(),
            spark_names: false,
            int96_timestamps: false,
            sample_dictionary: true,
            content_defined_chunking: None,
        }
    }
}

/// The parquet crate's properties of a write: the file's (footer, format version, row group
/// metadata) and the column writers' (page layout, encodings, statistics, codecs). They
/// differ in their writer version: the crate ties the format version to the page version,
/// which pyarrow sets apart.
pub(crate) struct Properties {
    pub file: WriterProperties,
    pub columns: WriterProperties,
    /// `columns` with no dictionary for the leaves `sampled` named, for the row groups whose
    /// sample says a dictionary would not pay; None when no leaf is sampled.
    pub plain: Option<WriterProperties>,
}

impl WriteOptions {
    /// The parquet crate's properties for `schema`: every per-column setting resolved for
    /// each leaf, zstd columns told to stay uncompressed.
    /// `compressed_here` says, per leaf column, whether the writer's compression stage compresses it
    /// (the crate then leaves it uncompressed).
    /// `sampled` names the leaves whose dictionary is chosen per row group.
    pub(crate) fn properties(
        &self,
        schema: &SchemaDescriptor,
        compressed_here: &[bool],
        sampled: &[bool],
        int96: &[bool],
    ) -> Result<Properties> {
        self.check(schema)?;
        self.properties_of(schema, compressed_here, sampled, int96)
    }

    /// Refuses the options that do not fit `schema`, or have a value out of their range,
    /// naming the option.
    fn check(&self, schema: &SchemaDescriptor) -> Result<()> {
        if self.row_group_size == 0 {
            return Err(Error::Parameter(
                "row_group_size must be at least 1, not 0".into(),
            ));
        }
        let at_least_one = |name: &str, v: Option<usize>| match v {
            Some(0) => Err(Error::Parameter(format!(
                "{name} must be at least 1, not 0"
            ))),
            _ => Ok(()),
        };
        at_least_one("data_page_size", self.data_page_size)?;
        at_least_one("dictionary_pagesize_limit", self.dictionary_page_size)?;
        at_least_one("max_rows_per_page", self.max_rows_per_page)?;
        at_least_one("write_batch_size", self.write_batch_size)?;
        self.compression.check_names("compression", schema)?;
        self.dictionary.check_names("use_dictionary", schema)?;
        self.statistics.check_names("write_statistics", schema)?;
        self.encoding.check_names("column_encoding", schema)?;
        let leaves = schema.num_columns();
        for s in &self.sorting_columns {
            if s.column_idx < 0 || s.column_idx as usize >= leaves {
                return Err(Error::Parameter(format!(
                    "sorting_columns names column index {}, and the schema has {leaves} leaf \
                     columns",
                    s.column_idx
                )));
            }
        }
        let bloom = PerColumn {
            default: None,
            columns: self.bloom_filters.clone(),
        };
        bloom.check_names("bloom_filter_options", schema)?;
        for (name, filter) in self.bloom_filters.iter() {
            if let Some(f) = filter {
                if !(f.fpp > 0.0 && f.fpp < 1.0) {
                    return Err(Error::Parameter(format!(
                        "bloom_filter_options: the fpp of column {name:?} must be between 0 and \
                         1, not {}",
                        f.fpp
                    )));
                }
                if f.ndv == 0 {
                    return Err(Error::Parameter(format!(
                        "bloom_filter_options: the ndv of column {name:?} must be at least 1"
                    )));
                }
            }
        }
        if let Some(cdc) = &self.content_defined_chunking {
            // The crate asserts these, and would panic.
            if cdc.min_chunk_size == 0 {
                return Err(Error::Parameter(
                    "use_content_defined_chunking: min_chunk_size must be at least 1, not 0".into(),
                ));
            }
            if cdc.max_chunk_size > i64::MAX as usize {
                return Err(Error::Parameter(format!(
                    "use_content_defined_chunking: max_chunk_size must be at most {}, not {}",
                    i64::MAX,
                    cdc.max_chunk_size
                )));
            }
            if cdc.max_chunk_size <= cdc.min_chunk_size {
                return Err(Error::Parameter(format!(
                    "use_content_defined_chunking: max_chunk_size ({}) must be greater than \
                     min_chunk_size ({})",
                    cdc.max_chunk_size, cdc.min_chunk_size
                )));
            }
        }
        Ok(())
    }

    /// [`Self::properties`] without the check of the options against `schema`: for a part of
    /// the schema they were checked against (one field's, for `by_content`).
    pub(crate) fn properties_of(
        &self,
        schema: &SchemaDescriptor,
        compressed_here: &[bool],
        sampled: &[bool],
        int96: &[bool],
    ) -> Result<Properties> {
        let bloom = PerColumn {
            default: None,
            columns: self.bloom_filters.clone(),
        };
        let statistics = |on: bool| match (on, self.page_index) {
            (false, _) => EnabledStatistics::None,
            (true, true) => EnabledStatistics::Page,
            (true, false) => EnabledStatistics::Chunk,
        };
        let mut b = WriterProperties::builder()
            .set_max_row_group_row_count(Some(self.row_group_size))
            .set_coerce_types(true)
            .set_offset_index_disabled(!self.page_index)
            .set_compression(self.compression.default.for_encoder()?)
            .set_dictionary_enabled(self.dictionary.default)
            .set_statistics_enabled(statistics(self.statistics.default));
        if let Some(size) = self.data_page_size {
            b = b.set_data_page_size_limit(size);
        }
        if let Some(size) = self.dictionary_page_size {
            b = b.set_dictionary_page_size_limit(size);
        }
        if let Some(rows) = self.max_rows_per_page {
            b = b.set_data_page_row_count_limit(rows);
        }
        // The crate checks a page's row count only between the batches it writes a column
        // in: a batch no larger than the limit makes it a bound, as pyarrow's is.
        let batch = self
            .write_batch_size
            .unwrap_or(::parquet::file::properties::DEFAULT_WRITE_BATCH_SIZE);
        b = b.set_write_batch_size(match self.max_rows_per_page {
            Some(rows) => batch.min(rows),
            None => batch,
        });
        for (i, column) in schema.columns().iter().enumerate() {
            let path = column.path().clone();
            let compression = match compressed_here.get(i) {
                Some(true) => Compression::UNCOMPRESSED,
                _ => self.compression.get(&path).for_encoder()?,
            };
            b = b
                .set_column_compression(path.clone(), compression)
                .set_column_dictionary_enabled(path.clone(), self.dictionary.get(&path))
                .set_column_statistics_enabled(
                    path.clone(),
                    statistics(self.statistics.get(&path)),
                );
            if int96.get(i) == Some(&true) {
                // Encoded as FIXED_LEN_BYTE_ARRAY(12) and declared INT96: PLAIN alone lays the
                // values out as INT96's PLAIN does, and INT96 has no order for statistics.
                if let Some(encoding) = self.encoding.get(&path).filter(|e| *e != Encoding::PLAIN) {
                    return Err(Error::Parameter(format!(
                        "column {:?} is stored as INT96 (use_deprecated_int96_timestamps) and \
                         {encoding} (from column_encoding) does not encode that type",
                        path.string()
                    )));
                }
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_statistics_enabled(path.clone(), EnabledStatistics::None)
                    .set_column_encoding(path.clone(), Encoding::PLAIN);
                continue;
            }
            if let Some(encoding) = self.encoding.get(&path) {
                if !encoding_fits(encoding, column.physical_type()) {
                    return Err(Error::Parameter(format!(
                        "column {:?} is stored as {} and {encoding} (from column_encoding or \
                         use_byte_stream_split) does not encode that type",
                        path.string(),
                        column.physical_type()
                    )));
                }
                b = b.set_column_encoding(path.clone(), encoding);
            }
            if let Some(filter) = bloom.get(&path) {
                b = b.set_column_bloom_filter_properties(
                    path.clone(),
                    BloomFilterProperties::builder()
                        .with_fpp(filter.fpp)
                        .with_max_ndv(filter.ndv)
                        .try_build()?,
                );
            }
        }
        b = b.set_content_defined_chunking(self.content_defined_chunking);
        let page_version = match self.page_version {
            PageVersion::V1 => WriterVersion::PARQUET_1_0,
            PageVersion::V2 => WriterVersion::PARQUET_2_0,
        };
        let plain = sampled.iter().any(|s| *s).then(|| {
            let mut plain = b.clone().set_writer_version(page_version);
            for (column, _) in schema.columns().iter().zip(sampled).filter(|(_, s)| **s) {
                plain = plain.set_column_dictionary_enabled(column.path().clone(), false);
            }
            plain.build()
        });
        let columns = b.set_writer_version(page_version).build();
        // The file writer reads only file-wide settings (the column writers have theirs), so
        // its properties are built without the per-column ones.
        let mut f = WriterProperties::builder()
            .set_writer_version(match self.format_version {
                FormatVersion::V1_0 => WriterVersion::PARQUET_1_0,
                _ => WriterVersion::PARQUET_2_0,
            })
            .set_offset_index_disabled(!self.page_index)
            .set_statistics_enabled(statistics(self.statistics.default));
        let mut metadata: Vec<_> = self
            .metadata
            .iter()
            .map(|(k, v)| ::parquet::file::metadata::KeyValue::new(k.clone(), v.clone()))
            .collect();
        metadata.sort_by(|a, b| a.key.cmp(&b.key));
        if !metadata.is_empty() {
            f = f.set_key_value_metadata(Some(metadata));
        }
        if !self.sorting_columns.is_empty() {
            f = f.set_sorting_columns(Some(self.sorting_columns.clone()));
        }
        let file = f.build();
        Ok(Properties {
            file,
            columns,
            plain,
        })
    }
}
