//! The steps a column chunk's pages go through on their way to the crate's decoder (see
//! `decompress`, `expansion` and `int96`), and what those steps share: how a step's error is
//! kept with its kind, where a v1 page's levels end, a codec's name. Below every stage of the
//! reader, so that the stages depend on it and not on one another.

use std::sync::{Arc, Mutex};

use ::parquet::basic::Encoding;
use ::parquet::column::page::{Page, PageMetadata, PageReader};
use ::parquet::errors::ParquetError;

use crate::error::{Error, Result};

/// The first error the decompression stage met, kept with its kind: the crate passes errors on
/// as strings, so the reader takes this one back after a failed read.
pub(crate) type Failure = Arc<Mutex<Option<Error>>>;

/// Keeps `e` as the read's failure (the first one stays) and gives the crate its message.
pub(crate) fn record_failure(failure: &Failure, e: Error) -> ParquetError {
    let message = e.to_string();
    let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
    slot.get_or_insert(e);
    ParquetError::General(message)
}

/// One step every page of a chunk goes through on its way to the crate's decoder.
pub(crate) trait PageStep: Send {
    fn apply(&mut self, page: Page) -> Result<Page>;
}

/// A chunk's pages, each put through `step` as the crate reads it; a step's error is kept as
/// the read's failure (see [`Failure`]).
pub(crate) struct Stepped<S> {
    pub inner: Box<dyn PageReader>,
    pub step: S,
    pub failure: Failure,
}

impl<S: PageStep> Iterator for Stepped<S> {
    type Item = ::parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<S: PageStep> PageReader for Stepped<S> {
    fn get_next_page(&mut self) -> ::parquet::errors::Result<Option<Page>> {
        let Some(page) = self.inner.get_next_page()? else {
            return Ok(None);
        };
        self.step
            .apply(page)
            .map(Some)
            .map_err(|e| record_failure(&self.failure, e))
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

/// The levels a chunk's pages carry before their values (v1 pages).
#[derive(Clone, Copy)]
pub(crate) struct Levels {
    pub max_rep: i16,
    pub max_def: i16,
}

/// The bytes a v1 page's levels take: RLE levels after their 4-byte length, bit-packed ones
/// (deprecated) `num_values` of the level's width.
pub(crate) fn levels_len(buf: &[u8], encoding: Encoding, max: i16, num_values: u32) -> usize {
    match encoding {
        Encoding::RLE => buf.first_chunk::<4>().map_or(0, |n| {
            4usize.saturating_add(u32::from_le_bytes(*n) as usize)
        }),
        _ => {
            let width = 16 - (max as u16).leading_zeros() as usize;
            (num_values as usize).saturating_mul(width).div_ceil(8)
        }
    }
}

/// pyarrow's spelling of a codec.
pub(crate) fn codec_name(c: &::parquet::basic::Compression) -> &'static str {
    use ::parquet::basic::Compression as C;
    match c {
        C::UNCOMPRESSED => "UNCOMPRESSED",
        C::SNAPPY => "SNAPPY",
        C::GZIP(_) => "GZIP",
        C::LZO => "LZO",
        C::BROTLI(_) => "BROTLI",
        C::LZ4 => "LZ4",
        C::ZSTD(_) => "ZSTD",
        C::LZ4_RAW => "LZ4_RAW",
    }
}

/// Where a page's values start in its body: after a v1 data page's levels (see
/// [`levels_len`]), after a v2 page's level bytes; 0 for a dictionary page, all values. Past
/// the body's end for levels longer than it (a hostile page the crate's decoder refuses).
pub(crate) fn values_start(page: &Page, levels: Levels) -> usize {
    match page {
        Page::DictionaryPage { .. } => 0,
        Page::DataPage {
            buf,
            num_values,
            def_level_encoding,
            rep_level_encoding,
            ..
        } => {
            let mut at = 0usize;
            for (max, encoding) in [
                (levels.max_rep, rep_level_encoding),
                (levels.max_def, def_level_encoding),
            ] {
                if max > 0 {
                    let rest = buf.get(at..).unwrap_or_default();
                    at = at.saturating_add(levels_len(rest, *encoding, max, *num_values));
                }
            }
            at
        }
        Page::DataPageV2 {
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => (*def_levels_byte_len as usize).saturating_add(*rep_levels_byte_len as usize),
    }
}
