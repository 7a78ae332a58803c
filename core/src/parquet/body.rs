//! A page with its body swapped for another. The one place that lists the fields of the
//! parquet crate's three page kinds, so that the writer's compression, the reader's
//! decompression and the writer's given dictionaries each say only what happens to the bytes.

use ::parquet::basic::Encoding;
use ::parquet::column::page::Page;
use bytes::Bytes;

use crate::error::Result;

/// The body of a page, as the stage that swaps it sees it.
pub(crate) enum Body<'a> {
    /// A v1 data page's or a dictionary page's whole body, compressed as one.
    Whole(&'a Bytes),
    /// A v2 data page's body: `levels` bytes of levels, never compressed, then the values,
    /// compressed when `is_compressed`. `levels` may exceed the body in a hostile file.
    V2 {
        buf: &'a Bytes,
        levels: usize,
        is_compressed: bool,
    },
}

/// `page` with the body `swap` makes of it; for a v2 page, `swap` also says whether the new
/// body's values are compressed (ignored for the other kinds, which do not say).
pub(crate) fn swap_body(
    page: Page,
    swap: impl FnOnce(Body<'_>) -> Result<(Bytes, bool)>,
) -> Result<Page> {
    let body = match &page {
        Page::DataPage { buf, .. } | Page::DictionaryPage { buf, .. } => Body::Whole(buf),
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => Body::V2 {
            buf,
            levels: *def_levels_byte_len as usize + *rep_levels_byte_len as usize,
            is_compressed: *is_compressed,
        },
    };
    let (buf, is_compressed) = swap(body)?;
    Ok(with_body(page, buf, Some(is_compressed), None))
}

/// What a page is, beside its body: what a stage that rewrites its values needs.
pub(crate) enum Shape {
    Dictionary,
    Data {
        encoding: Encoding,
        /// The rows the page holds (a v1 page's values, for a column that does not repeat).
        rows: usize,
        /// A v2 page's bytes of levels before its values; None for a v1 page, whose levels
        /// are in its body.
        levels: Option<usize>,
    },
}

pub(crate) fn shape(page: &Page) -> Shape {
    match page {
        Page::DictionaryPage { .. } => Shape::Dictionary,
        Page::DataPage {
            num_values,
            encoding,
            ..
        } => Shape::Data {
            encoding: *encoding,
            rows: *num_values as usize,
            levels: None,
        },
        Page::DataPageV2 {
            encoding,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => Shape::Data {
            encoding: *encoding,
            rows: *num_rows as usize,
            levels: Some(*def_levels_byte_len as usize + *rep_levels_byte_len as usize),
        },
    }
}

/// `page` with `buf` as its body; a v2 page's `is_compressed` and a dictionary page's
/// `entries` (its number of values) replaced where given.
pub(crate) fn with_body(
    page: Page,
    buf: Bytes,
    is_compressed: Option<bool>,
    entries: Option<u32>,
) -> Page {
    match page {
        Page::DataPage {
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
            ..
        } => Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
        },
        Page::DictionaryPage {
            num_values,
            encoding,
            is_sorted,
            ..
        } => Page::DictionaryPage {
            buf,
            num_values: entries.unwrap_or(num_values),
            encoding,
            is_sorted,
        },
        Page::DataPageV2 {
            num_values,
            encoding,
            num_nulls,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed: was,
            statistics,
            ..
        } => Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            num_nulls,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed: is_compressed.unwrap_or(was),
            statistics,
        },
    }
}
