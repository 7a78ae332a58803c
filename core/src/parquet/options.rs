//! What a Parquet write does: the codec, dictionary and statistics of each column, and the
//! file's row group and page sizes, checked once when a writer opens.

use std::collections::HashMap;

use ::parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use ::parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use ::parquet::schema::types::{ColumnPath, SchemaDescriptor};

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
    /// zstd with pooled contexts, compressed by this crate (see `repage`).
    Zstd(CompressParams),
    /// The parquet crate's own codecs: none keeps a context worth pooling.
    Lz4Raw,
    Snappy,
    Gzip(u32),
    Brotli(u32),
}

impl PageCodec {
    /// The codec named `name` (case-insensitive: "zstd", "lz4" or "lz4_raw", "snappy", "gzip",
    /// "brotli", "none" or "uncompressed"; None is none), at `level` where the codec has one.
    pub fn from_name(name: Option<&str>, level: Option<i64>) -> Result<PageCodec> {
        let lower = name.map(str::to_ascii_lowercase);
        let ranged = |lo: i64, hi: i64, default: u32| -> Result<u32> {
            match level {
                None => Ok(default),
                Some(l) if (lo..=hi).contains(&l) => Ok(l as u32),
                Some(l) => Err(Error::Parameter(format!(
                    "invalid {} compression_level {l}: it must be from {lo} to {hi}",
                    lower.as_deref().unwrap_or_default()
                ))),
            }
        };
        #[derive(Clone, Copy)]
        enum Named {
            Zstd,
            Lz4,
            Snappy,
            Gzip,
            Brotli,
            None,
        }
        let named = match lower.as_deref() {
            None => Named::None,
            Some(n) => crate::params::choice(
                "compression",
                n,
                &[
                    (&["zstd"], Named::Zstd),
                    (&["lz4", "lz4_raw"], Named::Lz4),
                    (&["snappy"], Named::Snappy),
                    (&["gzip"], Named::Gzip),
                    (&["brotli"], Named::Brotli),
                    (&["none", "uncompressed"], Named::None),
                ],
                true,
            )?,
        };
        let codec = match named {
            Named::Zstd => {
                let level = level.map(crate::params::level).transpose()?;
                let params = CompressParams::level(level.unwrap_or(DEFAULT_ZSTD_LEVEL));
                params.validate()?;
                return Ok(PageCodec::Zstd(params));
            }
            Named::Gzip => return Ok(PageCodec::Gzip(ranged(0, 9, 6)?)),
            Named::Brotli => return Ok(PageCodec::Brotli(ranged(0, 11, 1)?)),
            Named::Lz4 => PageCodec::Lz4Raw,
            Named::Snappy => PageCodec::Snappy,
            Named::None => PageCodec::None,
        };
        if level.is_some() {
            return Err(Error::Parameter(format!(
                "compression_level does not apply to compression={}",
                name.map_or("None".to_string(), |n| format!("{n:?}"))
            )));
        }
        Ok(codec)
    }

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

    /// What the file records for a zstd column (Parquet stores no level; the nearest valid
    /// one is recorded for zstd's negative levels).
    pub(crate) fn zstd_in_file(params: &CompressParams) -> Result<Compression> {
        Ok(Compression::ZSTD(ZstdLevel::try_new(
            params.level.clamp(1, 22),
        )?))
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

impl PageVersion {
    /// pyarrow's `data_page_version`: "1.0" or "2.0".
    pub fn from_name(name: &str) -> Result<PageVersion> {
        crate::params::choice(
            "data_page_version",
            name,
            &[(&["1.0"], PageVersion::V1), (&["2.0"], PageVersion::V2)],
            false,
        )
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
        }
    }
}

impl WriteOptions {
    /// The parquet crate's properties for `schema`: every per-column setting resolved for
    /// each leaf, zstd columns told to stay uncompressed.
    pub(crate) fn properties(&self, schema: &SchemaDescriptor) -> Result<WriterProperties> {
        if self.row_group_size == 0 {
            return Err(Error::Parameter(
                "row_group_size must be at least 1, not 0".into(),
            ));
        }
        if self.data_page_size == Some(0) {
            return Err(Error::Parameter(
                "data_page_size must be at least 1 byte".into(),
            ));
        }
        self.compression.check_names("compression", schema)?;
        self.dictionary.check_names("use_dictionary", schema)?;
        self.statistics.check_names("write_statistics", schema)?;
        let statistics = |on: bool| {
            if on {
                EnabledStatistics::Page
            } else {
                EnabledStatistics::None
            }
        };
        let mut b = WriterProperties::builder()
            .set_writer_version(match self.page_version {
                PageVersion::V1 => WriterVersion::PARQUET_1_0,
                PageVersion::V2 => WriterVersion::PARQUET_2_0,
            })
            .set_max_row_group_row_count(Some(self.row_group_size))
            .set_coerce_types(true)
            .set_compression(self.compression.default.for_encoder()?)
            .set_dictionary_enabled(self.dictionary.default)
            .set_statistics_enabled(statistics(self.statistics.default));
        if let Some(size) = self.data_page_size {
            b = b.set_data_page_size_limit(size);
        }
        for column in schema.columns() {
            let path = column.path().clone();
            b = b
                .set_column_compression(path.clone(), self.compression.get(&path).for_encoder()?)
                .set_column_dictionary_enabled(path.clone(), self.dictionary.get(&path))
                .set_column_statistics_enabled(
                    path.clone(),
                    statistics(self.statistics.get(&path)),
                );
        }
        let mut metadata: Vec<_> = self
            .metadata
            .iter()
            .map(|(k, v)| ::parquet::file::metadata::KeyValue::new(k.clone(), v.clone()))
            .collect();
        metadata.sort_by(|a, b| a.key.cmp(&b.key));
        if !metadata.is_empty() {
            b = b.set_key_value_metadata(Some(metadata));
        }
        Ok(b.build())
    }
}
