//! The decompression stage of the Parquet reader. The parquet crate would make a new zstd
//! context for every column chunk it reads, and allocates each page's decompressed size
//! infallibly from the page's header; instead its page reader is told that every chunk is
//! uncompressed, so it parses each page header (bounds-checked by the crate) and hands over the
//! page's compressed body. The body is decompressed here: zstd with a pooled context, the
//! other codecs (snappy, gzip, brotli, lz4) with their crates, each into an allocation of the
//! size the header declares, checked against the caller's limit and reserved fallibly, so that
//! a large or hostile size fails as an error, never as an abort.

use std::sync::Arc;

use ::parquet::arrow::arrow_reader::RowGroups;
use ::parquet::basic::Compression;
use ::parquet::column::page::{Page, PageIterator, PageReader};
use ::parquet::errors::ParquetError;
use ::parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use ::parquet::file::page_index::offset_index::PageLocation;
use ::parquet::file::serialized_reader::SerializedPageReader;
use arrow_schema::TimeUnit;
use bytes::Bytes;

use super::body::{swap_body, Body};
use super::expansion::Expansion;
use super::int96::Int96Days;
use super::page_header::{PageSizes, WatchedSource};
use super::source::ParquetSource;
use super::steps::{codec_name, Failure, Levels, PageStep, Stepped};
use crate::codec::{plan_decompress, DecompressPlan};
use crate::context::DecompressParams;
use crate::error::{Error, Result};
use crate::pool::ContextPool;

/// Limits on what a Parquet reader allocates for data it has not seen yet, and the checks it
/// makes of what it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParquetLimits {
    /// The most bytes one page may hold once decompressed: checked against the size its header
    /// declares before anything is allocated.
    pub max_page_size: usize,
    /// Whether each page whose header gives a CRC is checked against it before it is
    /// decompressed (pyarrow's `page_checksum_verification`).
    pub verify_checksums: bool,
}

impl Default for ParquetLimits {
    fn default() -> Self {
        ParquetLimits {
            max_page_size: i32::MAX as usize,
            verify_checksums: false,
        }
    }
}

/// Row groups of one file whose zstd pages are decompressed with pooled contexts.
pub(crate) struct PooledRowGroups {
    pub source: ParquetSource,
    pub metadata: Arc<ParquetMetaData>,
    pub row_groups: Vec<usize>,
    pub pool: ContextPool,
    pub limits: ParquetLimits,
    pub failure: Failure,
    /// How each leaf column is read.
    pub leaves: Arc<[Leaf]>,
}

/// How one leaf column is read, as its pages' steps need to know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Whether the crate reads it into a dictionary array (which holds each value once)
    /// rather than building its values (see [`Expansion`]).
    pub as_dictionary: bool,
    /// The unit an INT96 column is read in (see [`Int96Days`]).
    pub int96_unit: Option<TimeUnit>,
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
            leaf: self.leaves.get(column).copied().unwrap_or_default(),
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
    leaf: Leaf,
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
    /// A chunk's pages, decompressed; measured first where the column holds strings or
    /// binaries (see [`Expansion`]), and with their INT96 days made the crate's (see
    /// [`Int96Days`]).
    fn open(&self, group_index: usize) -> ::parquet::errors::Result<Box<dyn PageReader>> {
        let pages = self.open_pages(group_index)?;
        let descr = self
            .metadata
            .row_group(group_index)
            .column(self.column)
            .column_descr();
        let levels = Levels {
            max_rep: descr.max_rep_level(),
            max_def: descr.max_def_level(),
        };
        Ok(match descr.physical_type() {
            ::parquet::basic::Type::BYTE_ARRAY => Box::new(Stepped {
                inner: pages,
                step: Expansion::new(levels, self.leaf.as_dictionary),
                failure: self.failure.clone(),
            }),
            ::parquet::basic::Type::INT96 => Box::new(Stepped {
                inner: pages,
                step: Int96Days {
                    levels,
                    unit: self.leaf.int96_unit.unwrap_or(TimeUnit::Nanosecond),
                    column: descr.path().string(),
                },
                failure: self.failure.clone(),
            }),
            _ => pages,
        })
    }

    fn open_pages(&self, group_index: usize) -> ::parquet::errors::Result<Box<dyn PageReader>> {
        let group = self.metadata.row_group(group_index);
        let chunk = group.column(self.column);
        let rows = usize::try_from(group.num_rows()).map_err(|_| {
            ParquetError::General(format!("negative row count {}", group.num_rows()))
        })?;
        let source = Arc::new(self.source.clone());
        let codec = chunk.compression();
        // With the file's offset index, the crate reads pages by their locations, and a page a
        // row selection skips is never read.
        let locations = self
            .metadata
            .offset_index()
            .and_then(|index| index.get(group_index)?.get(self.column))
            .map(|index| index.page_locations().clone())
            .filter(|l| tiles(l, chunk.byte_range(), rows));
        // Uncompressed chunks have nothing to allocate from a header (unless their checksums
        // are verified); LZO is refused by the crate.
        let plain_chunk = codec == Compression::UNCOMPRESSED && !self.limits.verify_checksums;
        if plain_chunk || codec == Compression::LZO {
            return Ok(Box::new(SerializedPageReader::new(
                source, chunk, rows, locations,
            )?));
        }
        let plain = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let sizes = PageSizes::default();
        let mut page_starts: Vec<u64> = locations
            .iter()
            .flatten()
            .filter_map(|l| u64::try_from(l.offset).ok())
            .collect();
        if let Some(first) = locations.as_ref().and_then(|l| l.first()) {
            // What lies before the first data page (a dictionary page) is read by location
            // too, from the chunk's start.
            let start = chunk.byte_range().0;
            if u64::try_from(first.offset).ok() != Some(start) {
                page_starts.push(start);
            }
        }
        page_starts.sort_unstable();
        let watched = Arc::new(WatchedSource {
            inner: self.source.clone(),
            watch: sizes.clone(),
            page_starts,
            checksums: self.limits.verify_checksums,
        });
        Ok(Box::new(Stepped {
            inner: Box::new(SerializedPageReader::new(watched, &plain, rows, locations)?),
            step: Decompression {
                codec,
                sizes,
                pool: self.pool.clone(),
                limits: self.limits,
            },
            failure: self.failure.clone(),
        }))
    }
}

/// Whether `locations` (a chunk's offset index) tile its data pages exactly: contiguous,
/// ending where the chunk ends, each page's first row after the previous one's, the first at
/// row 0. Locations that do not (a hostile or broken index) are not used: the chunk is then
/// read page after page from its start, as without an offset index.
fn tiles(locations: &[PageLocation], (start, len): (u64, u64), rows: usize) -> bool {
    let Some(first) = locations.first() else {
        return false;
    };
    let end = start.saturating_add(len);
    let mut at = match u64::try_from(first.offset) {
        Ok(at) if at >= start => at,
        _ => return false,
    };
    let mut previous_row: Option<i64> = None;
    for l in locations {
        let (Ok(offset), Ok(size)) = (
            u64::try_from(l.offset),
            u64::try_from(l.compressed_page_size),
        ) else {
            return false;
        };
        let row_ok = match previous_row {
            None => l.first_row_index == 0,
            Some(p) => l.first_row_index > p,
        };
        if offset != at || size == 0 || !row_ok || l.first_row_index >= rows.max(1) as i64 {
            return false;
        }
        previous_row = Some(l.first_row_index);
        at = offset.saturating_add(size);
    }
    at == end
}

/// A compressed chunk's pages decompressed, each as it is read.
struct Decompression {
    codec: Compression,
    /// The size each page's header declares, noted as the crate reads the header.
    sizes: PageSizes,
    pool: ContextPool,
    limits: ParquetLimits,
}

impl PageStep for Decompression {
    fn apply(&mut self, page: Page) -> Result<Page> {
        self.decompress(page)
    }
}

impl Decompression {
    fn decompress(&mut self, page: Page) -> Result<Page> {
        let (declared, crc) = {
            let mut watch = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
            (watch.next.take(), watch.crc.take())
        };
        let declared = declared
            .unwrap_or_else(|| Err(Error::Parquet("a page was read without its header".into())))?;
        if let Some(expected) = crc.transpose()?.flatten() {
            let mut computed = flate2::Crc::new();
            computed.update(page.buffer());
            if computed.sum() != expected {
                return Err(Error::Parquet(format!(
                    "page checksum verification failed: the page's CRC-32 is {:#010x}, its \
                     header's {expected:#010x}",
                    computed.sum()
                )));
            }
        }
        if self.codec == Compression::UNCOMPRESSED {
            // Read through this stage only to have its checksum verified.
            return Ok(page);
        }
        let limit = self.limits.max_page_size;
        if declared > limit {
            return Err(Error::Limit(format!(
                "a page header declares {declared} bytes uncompressed, more than max_page_size \
                 ({limit} bytes)"
            )));
        }
        swap_body(page, |body| match body {
            Body::Whole(buf) => Ok((self.body(buf, declared)?, false)),
            Body::V2 {
                buf,
                levels,
                is_compressed,
            } => {
                if levels > buf.len() || levels > declared {
                    return Err(Error::Parquet(format!(
                        "a v2 data page declares {levels} bytes of levels in {} bytes, {declared} \
                         uncompressed",
                        buf.len()
                    )));
                }
                if !is_compressed || declared == levels {
                    return Ok((buf.clone(), false));
                }
                let values = self.body(&buf[levels..], declared - levels)?;
                let mut out = Vec::new();
                out.try_reserve_exact(levels + values.len())?;
                out.extend_from_slice(&buf[..levels]);
                out.extend_from_slice(&values);
                Ok((Bytes::from(out), false))
            }
        })
    }

    /// A page body decompressed into `size` bytes, the size its header declares (already
    /// checked against the limit), reserved fallibly; a body that decompresses to another size
    /// is corrupt.
    fn body(&mut self, src: &[u8], size: usize) -> Result<Bytes> {
        // An empty page (no non-null values) is not decompressed, as the crate does not.
        if size == 0 {
            return Ok(Bytes::new());
        }
        let out = match self.codec {
            Compression::ZSTD(_) => self.zstd(src, size)?,
            other => decompress_other(other, src, size)?,
        };
        if out.len() != size {
            return Err(Error::Parquet(format!(
                "a page decompresses to {} bytes, its header declares {size}",
                out.len()
            )));
        }
        Ok(Bytes::from(out))
    }

    /// zstd, with a pooled context: a frame that declares its size is checked against the
    /// header's before the output is allocated; one that does not grows its output up to it.
    fn zstd(&mut self, src: &[u8], size: usize) -> Result<Vec<u8>> {
        // Leased for this page alone: a reader decodes several columns at once, each with a
        // page reader of its own, and a lease held from page to page by every one of them
        // would need as many contexts as columns, more than the pool keeps idle per key.
        let mut d = self.pool.decompressor(DecompressParams::default())?;
        let plan = plan_decompress(src, size).map_err(|e| match e {
            Error::Limit(_) => Error::Parquet(format!(
                "a page's zstd frame declares more than the {size} bytes its header declares"
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
                Ok(out)
            }
            DecompressPlan::Streaming => d.decompress_streaming(src, size).map_err(|e| match e {
                Error::Limit(_) => Error::Parquet(format!(
                    "a page decompresses to more than the {size} bytes its header declares"
                )),
                other => other,
            }),
        }
    }
}

/// `size` zero bytes, allocated fallibly. Zeroed by the allocator (calloc): a large block comes
/// from fresh pages of the kernel's, zero already, so a hostile size that decompression then
/// fails to fill is never written over.
fn zeroed(size: usize) -> Result<Vec<u8>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let cannot = || Error::Memory(format!("cannot allocate {size} bytes for a page"));
    let layout = std::alloc::Layout::array::<u8>(size).map_err(|_| cannot())?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(cannot());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `size` bytes
    // (alignment 1), every one of them initialized to zero.
    Ok(unsafe { Vec::from_raw_parts(ptr, size, size) })
}

/// A snappy, gzip, brotli, lz4 (Hadoop's framing, else an LZ4 frame, else a raw block, as the
/// parquet crate and Arrow C++ read it) or lz4_raw page body, decompressed into exactly `size`
/// bytes; more output than that is refused, not allocated.
fn decompress_other(codec: Compression, src: &[u8], size: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let corrupt = |e: &dyn std::fmt::Display| {
        Error::Parquet(format!("corrupt {} page: {e}", codec_name(&codec)))
    };
    // A stream read into `out` (`size` bytes), which must end there.
    let fill = |r: &mut dyn Read, out: &mut [u8]| -> Result<()> {
        r.read_exact(out).map_err(|e| corrupt(&e))?;
        if r.read(&mut [0u8; 1]).map_err(|e| corrupt(&e))? != 0 {
            return Err(corrupt(&format!(
                "it decompresses to more than the {size} bytes its header declares"
            )));
        }
        Ok(())
    };
    let exact = |r: &mut dyn Read| -> Result<Vec<u8>> {
        let mut out = zeroed(size)?;
        fill(r, &mut out)?;
        Ok(out)
    };
    match codec {
        Compression::SNAPPY => {
            let n = snap::raw::decompress_len(src).map_err(|e| corrupt(&e))?;
            if n != size {
                return Err(corrupt(&format!(
                    "it declares {n} bytes, its header {size}"
                )));
            }
            let mut out = zeroed(size)?;
            snap::raw::Decoder::new()
                .decompress(src, &mut out)
                .map_err(|e| corrupt(&e))?;
            Ok(out)
        }
        Compression::GZIP(_) => exact(&mut flate2::read::MultiGzDecoder::new(src)),
        Compression::BROTLI(_) => exact(&mut brotli::Decompressor::new(src, 4096)),
        Compression::LZ4_RAW => {
            let mut out = zeroed(size)?;
            let n = lz4_flex::block::decompress_into(src, &mut out).map_err(|e| corrupt(&e))?;
            out.truncate(n);
            Ok(out)
        }
        Compression::LZ4 => {
            let mut out = zeroed(size)?;
            if hadoop_lz4(src, &mut out).is_some() {
                return Ok(out);
            }
            if fill(&mut lz4_flex::frame::FrameDecoder::new(src), &mut out).is_ok() {
                return Ok(out);
            }
            let n = lz4_flex::block::decompress_into(src, &mut out).map_err(|e| corrupt(&e))?;
            out.truncate(n);
            Ok(out)
        }
        other => Err(Error::Parquet(format!(
            "{} pages cannot be read",
            codec_name(&other)
        ))),
    }
}

/// Hadoop's LZ4 framing: blocks each after two big-endian u32s, their decompressed and
/// compressed sizes, filling `out` exactly; None if `src` is not that.
fn hadoop_lz4(mut src: &[u8], out: &mut [u8]) -> Option<()> {
    let mut at = 0usize;
    while !src.is_empty() {
        let (sizes, rest) = src.split_first_chunk::<8>()?;
        let raw = u32::from_be_bytes(sizes[..4].try_into().ok()?) as usize;
        let compressed = u32::from_be_bytes(sizes[4..].try_into().ok()?) as usize;
        let block = rest.get(..compressed)?;
        let room = out.get_mut(at..at.checked_add(raw)?)?;
        if lz4_flex::block::decompress_into(block, room).ok()? != raw {
            return None;
        }
        at += raw;
        src = &rest[compressed..];
    }
    (at == out.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn lz4_is_read_in_hadoop_framing_as_a_frame_and_as_a_raw_block() {
        let raw = data();
        let (a, b) = raw.split_at(150_000);
        let mut hadoop = Vec::new();
        for part in [a, b] {
            let block = lz4_flex::block::compress(part);
            hadoop.extend((part.len() as u32).to_be_bytes());
            hadoop.extend((block.len() as u32).to_be_bytes());
            hadoop.extend(block);
        }
        let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut frame, &raw).unwrap();
        let frame = frame.finish().unwrap();
        let block = lz4_flex::block::compress(&raw);
        for src in [hadoop, frame, block] {
            assert_eq!(
                decompress_other(Compression::LZ4, &src, raw.len()).unwrap(),
                raw
            );
        }
    }

    #[test]
    fn every_codec_refuses_a_size_other_than_its_headers() {
        let raw = data();
        let snappy = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gzip, &raw).unwrap();
        let gzip = gzip.finish().unwrap();
        let mut brotli = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut brotli, 4096, 1, 22);
            std::io::Write::write_all(&mut w, &raw).unwrap();
        }
        let lz4_raw = lz4_flex::block::compress(&raw);
        for (codec, src) in [
            (Compression::SNAPPY, snappy),
            (Compression::GZIP(Default::default()), gzip),
            (Compression::BROTLI(Default::default()), brotli),
            (Compression::LZ4_RAW, lz4_raw.clone()),
            (Compression::LZ4, lz4_raw),
        ] {
            assert_eq!(decompress_other(codec, &src, raw.len()).unwrap(), raw);
            // Fewer bytes than the body holds, more, and a hostile 2 GiB that is never filled
            // (allocated zeroed by the kernel, so not written over either).
            for size in [raw.len() - 1, raw.len() + 1, i32::MAX as usize] {
                let got = decompress_other(codec, &src, size);
                assert!(
                    got.as_ref().map_or(true, |out| out.len() != size),
                    "{codec:?} {size}"
                );
            }
        }
    }
}
