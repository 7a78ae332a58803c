//! The decompression stage of the Parquet reader. The parquet crate would make a new zstd
//! context for every column chunk it reads; instead its page reader is told that zstd chunks
//! are uncompressed, so it parses each page header (bounds-checked by the crate) and hands over
//! the page's compressed body, which is decompressed here with a pooled context, its size
//! checked against the caller's limit before anything is allocated. Other codecs (snappy, lz4,
//! gzip, brotli) are the crate's.

use std::sync::{Arc, Mutex};

use ::parquet::arrow::arrow_reader::RowGroups;
use ::parquet::basic::Compression;
use ::parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use ::parquet::errors::ParquetError;
use ::parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use ::parquet::file::serialized_reader::SerializedPageReader;
use bytes::Bytes;

use super::body::{swap_body, Body};
use super::source::ParquetSource;
use crate::codec::{plan_decompress, DecompressPlan};
use crate::context::{DecompressParams, Decompressor};
use crate::error::{Error, Result};
use crate::pool::{ContextPool, Lease};

/// Limits on what a Parquet reader allocates for data it has not seen yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParquetLimits {
    /// The most bytes one page may hold once decompressed.
    pub max_page_size: usize,
}

impl Default for ParquetLimits {
    fn default() -> Self {
        ParquetLimits {
            max_page_size: i32::MAX as usize,
        }
    }
}

/// The first error the decompression stage met, kept with its kind: the crate passes errors on
/// as strings, so the reader takes this one back after a failed read.
pub(crate) type Failure = Arc<Mutex<Option<Error>>>;

/// Row groups of one file whose zstd pages are decompressed with pooled contexts.
pub(crate) struct PooledRowGroups {
    pub source: ParquetSource,
    pub metadata: Arc<ParquetMetaData>,
    pub row_groups: Vec<usize>,
    pub pool: ContextPool,
    pub limits: ParquetLimits,
    pub failure: Failure,
}

impl RowGroups for PooledRowGroups {
    fn num_rows(&self) -> usize {
        self.row_groups
            .iter()
            .map(|&i| self.metadata.row_group(i).num_rows().max(0) as usize)
            .sum()
    }

    fn column_chunks(&self, column: usize) -> ::parquet::errors::Result<Box<dyn PageIterator>> {
        Ok(Box::new(ColumnPages {
            source: self.source.clone(),
            metadata: self.metadata.clone(),
            row_groups: self.row_groups.clone().into_iter(),
            column,
            pool: self.pool.clone(),
            limits: self.limits,
            failure: self.failure.clone(),
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.row_groups.iter().map(|&i| self.metadata.row_group(i)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// One column's chunks, row group after row group.
struct ColumnPages {
    source: ParquetSource,
    metadata: Arc<ParquetMetaData>,
    row_groups: std::vec::IntoIter<usize>,
    column: usize,
    pool: ContextPool,
    limits: ParquetLimits,
    failure: Failure,
}

impl Iterator for ColumnPages {
    type Item = ::parquet::errors::Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let group = self.row_groups.next()?;
        Some(self.open(group))
    }
}

impl PageIterator for ColumnPages {}

impl ColumnPages {
    fn open(&self, group: usize) -> ::parquet::errors::Result<Box<dyn PageReader>> {
        let group = self.metadata.row_group(group);
        let chunk = group.column(self.column);
        let rows = usize::try_from(group.num_rows()).map_err(|_| {
            ParquetError::General(format!("negative row count {}", group.num_rows()))
        })?;
        let source = Arc::new(self.source.clone());
        if !matches!(chunk.compression(), Compression::ZSTD(_)) {
            return Ok(Box::new(SerializedPageReader::new(
                source, chunk, rows, None,
            )?));
        }
        let plain = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        Ok(Box::new(ZstdPages {
            inner: SerializedPageReader::new(source, &plain, rows, None)?,
            decompressor: None,
            pool: self.pool.clone(),
            limits: self.limits,
            failure: self.failure.clone(),
        }))
    }
}

/// A zstd chunk's pages, each decompressed as it is read.
struct ZstdPages {
    inner: SerializedPageReader<ParquetSource>,
    /// Leased at the first page, given back with the chunk.
    decompressor: Option<Lease<Decompressor>>,
    pool: ContextPool,
    limits: ParquetLimits,
    failure: Failure,
}

impl ZstdPages {
    fn decompress(&mut self, page: Page) -> Result<Page> {
        swap_body(page, |body| match body {
            Body::Whole(buf) => Ok((self.body(buf)?, false)),
            Body::V2 {
                buf,
                levels,
                is_compressed,
            } => {
                if levels > buf.len() {
                    return Err(Error::Parquet(format!(
                        "a v2 data page declares {levels} bytes of levels in {} bytes",
                        buf.len()
                    )));
                }
                if !is_compressed || buf.len() == levels {
                    return Ok((buf.clone(), false));
                }
                let values = self.body(&buf[levels..])?;
                let mut out = Vec::new();
                out.try_reserve_exact(levels + values.len())?;
                out.extend_from_slice(&buf[..levels]);
                out.extend_from_slice(&values);
                Ok((Bytes::from(out), false))
            }
        })
    }

    /// A page body decompressed: its frame's declared size is checked against the limit
    /// before the output is allocated; a frame without one grows its output up to the limit.
    fn body(&mut self, src: &[u8]) -> Result<Bytes> {
        let limit = self.limits.max_page_size;
        if self.decompressor.is_none() {
            self.decompressor = Some(self.pool.decompressor(DecompressParams::default())?);
        }
        let d = self.decompressor.as_mut().expect("just leased");
        let plan = plan_decompress(src, limit).map_err(|e| match e {
            Error::Limit(_) => Error::Limit(format!(
                "a page declares more than max_page_size ({limit} bytes) uncompressed"
            )),
            other => other,
        })?;
        match plan {
            DecompressPlan::Exact(n) => {
                let mut out: Vec<u8> = Vec::new();
                out.try_reserve_exact(n)?;
                // SAFETY: `out` has room for `n` bytes, written only by zstd; its length is set
                // only after every one of them was written.
                unsafe {
                    d.decompress_exact_raw(src, out.as_mut_ptr(), n)?;
                    out.set_len(n);
                }
                Ok(Bytes::from(out))
            }
            DecompressPlan::Streaming => Ok(Bytes::from(d.decompress_streaming(src, limit)?)),
        }
    }
}

impl Iterator for ZstdPages {
    type Item = ::parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for ZstdPages {
    fn get_next_page(&mut self) -> ::parquet::errors::Result<Option<Page>> {
        let Some(page) = self.inner.get_next_page()? else {
            // The chunk is done: its context goes back for the next one.
            self.decompressor = None;
            return Ok(None);
        };
        self.decompress(page).map(Some).map_err(|e| {
            let message = e.to_string();
            let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(e);
            ParquetError::General(message)
        })
    }

    fn peek_next_page(&mut self) -> ::parquet::errors::Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> ::parquet::errors::Result<()> {
        self.inner.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> ::parquet::errors::Result<bool> {
        self.inner.at_record_boundary()
    }
}
