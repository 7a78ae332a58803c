//! A page with its body swapped for another. The one place that lists the fields of the
//! parquet crate's three page kinds, so that the writer's compression and the reader's
//! decompression each say only what happens to the bytes.

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
    Ok(match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
        } => Page::DataPage {
            buf: swap(Body::Whole(&buf))?.0,
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
        },
        Page::DictionaryPage {
            buf,
            num_values,
            encoding,
            is_sorted,
        } => Page::DictionaryPage {
            buf: swap(Body::Whole(&buf))?.0,
            num_values,
            encoding,
            is_sorted,
        },
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            num_nulls,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            statistics,
        } => {
            let (buf, is_compressed) = swap(Body::V2 {
                buf: &buf,
                levels: def_levels_byte_len as usize + rep_levels_byte_len as usize,
                is_compressed,
            })?;
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                num_rows,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                statistics,
            }
        }
    })
}
