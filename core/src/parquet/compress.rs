//! The compression stage of the Parquet writer. The parquet crate creates a new zstd context
//! for every column chunk it writes and offers no hook for its codec, so zstd columns are
//! encoded uncompressed and their pages compressed here, each with a pooled context: the
//! crate's own page reader parses the pages it wrote, each page's body is compressed (a v2
//! page's levels stay as they are), the crate's page writer frames them again, and the
//! chunk's metadata and offset index are rewritten for the new sizes and offsets.

use std::io::{Read, Write as _};
use std::sync::{Arc, Mutex};

use ::parquet::arrow::arrow_writer::PageStoreFactory;
use ::parquet::arrow::arrow_writer::{ArrowColumnChunk, PageKey, PageStore, PageStoreArgs};
use ::parquet::basic::PageType;
use ::parquet::column::page::{CompressedPage, Page, PageReader, PageWriteSpec, PageWriter};
use ::parquet::column::writer::ColumnCloseResult;
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::ReaderProperties;
use ::parquet::file::reader::{ChunkReader, Length};
use ::parquet::file::serialized_reader::SerializedPageReader;
use ::parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use bytes::{Bytes, BytesMut};

use super::body::{swap_body, Body};
use super::dictionary::GivenDictionary;
use super::options::PageCodec;
use super::page_header::with_crc;
use crate::context::{CompressParams, Compressor};
use crate::error::{Error, Result};

/// The blobs (page headers and bodies, in the order written) of one column chunk.
type SharedBlobs = Arc<Mutex<Vec<Bytes>>>;

/// Gives each column writer a page store whose blobs this writer can read back: the chunk's
/// own store is private to the crate. One factory per file writer, used by one thread.
#[derive(Debug, Default)]
pub(crate) struct CaptureFactory {
    created: Mutex<Vec<SharedBlobs>>,
}

impl CaptureFactory {
    /// The stores made since the last call, in column order.
    pub(crate) fn take_created(&self) -> Vec<SharedBlobs> {
        std::mem::take(&mut *lock(&self.created))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl PageStoreFactory for CaptureFactory {
    fn create(&self, _args: &PageStoreArgs<'_>) -> ::parquet::errors::Result<Box<dyn PageStore>> {
        let blobs = SharedBlobs::default();
        lock(&self.created).push(blobs.clone());
        Ok(Box::new(CaptureStore { blobs, resident: 0 }))
    }
}

/// An in-memory page store whose blobs stay reachable through [`SharedBlobs`].
struct CaptureStore {
    blobs: SharedBlobs,
    resident: usize,
}

impl PageStore for CaptureStore {
    fn put(&mut self, value: Bytes) -> ::parquet::errors::Result<PageKey> {
        let mut blobs = lock(&self.blobs);
        self.resident += value.len();
        blobs.push(value);
        Ok(PageKey::new(blobs.len() as u64 - 1))
    }

    fn take(&mut self, key: PageKey) -> ::parquet::errors::Result<Bytes> {
        let mut blobs = lock(&self.blobs);
        let blob = blobs
            .get_mut(key.get() as usize)
            .map(std::mem::take)
            .ok_or_else(|| ParquetError::General(format!("invalid page key {}", key.get())))?;
        self.resident -= blob.len();
        Ok(blob)
    }

    fn memory_size(&self) -> usize {
        self.resident
    }
}

/// A column chunk ready to append to its row group: compressed here, or as the crate wrote it.
pub(crate) enum EncodedChunk {
    Compressed {
        bytes: Bytes,
        close: ColumnCloseResult,
    },
    Native(ArrowColumnChunk),
    /// Written by the crate's own writer into the file given (see `by_content`), where the
    /// close result's metadata says.
    Appended(Arc<Bytes>, ColumnCloseResult),
}

/// How the compression stage compresses a column's pages.
pub(crate) enum PageCompression<'a> {
    /// zstd, with a pooled context.
    Zstd(CompressParams, &'a mut Compressor),
    /// Any other codec (or none), compressed here: columns the stage rewrites (a given
    /// dictionary, page checksums) are encoded uncompressed whatever their codec.
    Other(PageCodec),
}

impl PageCompression<'_> {
    fn codec(&self) -> PageCodec {
        match self {
            PageCompression::Zstd(params, _) => PageCodec::Zstd(*params),
            PageCompression::Other(codec) => *codec,
        }
    }

    fn compress(&mut self, body: &[u8]) -> Result<Bytes> {
        Ok(match self {
            PageCompression::Zstd(_, compressor) => {
                Bytes::copy_from_slice(compressor.compress_to_scratch(body)?)
            }
            PageCompression::Other(codec) => compress_other(*codec, body)?.into(),
        })
    }
}

/// `body` compressed with a codec other than zstd, as the parquet crate compresses it.
fn compress_other(codec: PageCodec, body: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    let failed = |e: std::io::Error| Error::Compress(format!("{codec:?}: {e}"));
    Ok(match codec {
        PageCodec::None => body.to_vec(),
        PageCodec::Snappy => snap::raw::Encoder::new()
            .compress_vec(body)
            .map_err(|e| Error::Compress(format!("snappy: {e}")))?,
        PageCodec::Lz4Raw => lz4_flex::block::compress(body),
        PageCodec::Gzip(level) => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(body).map_err(failed)?;
            e.finish().map_err(failed)?
        }
        PageCodec::Brotli(level) => {
            // The window the parquet crate's brotli codec uses.
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, level, 22);
                e.write_all(body).map_err(failed)?;
                e.flush().map_err(failed)?;
            }
            out
        }
        PageCodec::Zstd(_) => {
            return Err(Error::Compress(
                "zstd pages are compressed with a pooled context".into(),
            ))
        }
    })
}

/// What the compression stage does to one column chunk besides compressing its pages.
#[derive(Default)]
pub(crate) struct Rewrites<'a> {
    /// The Arrow dictionary the chunk is written with (see `dictionary`).
    pub dictionary: Option<&'a GivenDictionary>,
    /// Whether each page header gets the CRC32 of the page's body.
    pub checksum: bool,
}

/// Compresses the pages of `chunk`, written uncompressed into `blobs`, with `compression`,
/// rewriting them first as `rewrites` asks.
pub(crate) fn compress_pages(
    chunk: ArrowColumnChunk,
    blobs: &SharedBlobs,
    compression: PageCompression<'_>,
    rewrites: Rewrites<'_>,
) -> Result<EncodedChunk> {
    let close = chunk.close().clone();
    let parts = std::mem::take(&mut *lock(blobs));
    // The chunk's store shares the blobs just taken; it has nothing more to give.
    drop(chunk);
    // Blobs arrive in the order pages were written, each page a header blob and a body blob.
    // The dictionary page is written once the dictionary is complete (at the end, or where
    // the column fell back to plain encoding) and must come first in the file; the close
    // result says where its header started.
    let dictionary_at = close.metadata.dictionary_page_offset().map(|o| o as u64);
    let (mut dictionary, mut data) = (Vec::new(), Vec::new());
    let mut at = 0u64;
    let mut parts = parts.into_iter();
    while let Some(part) = parts.next() {
        let len = part.len() as u64;
        if dictionary_at == Some(at) {
            let body = parts.next().ok_or_else(|| {
                Error::Compress("a dictionary page header without its body".into())
            })?;
            at += len + body.len() as u64;
            dictionary.extend([part, body]);
            continue;
        }
        data.push(part);
        at += len;
    }
    let dictionary_len: usize = dictionary.iter().map(Bytes::len).sum();
    let close = close.update_dictionary_location(dictionary_len)?;
    let source = Arc::new(Blobs::new(dictionary.into_iter().chain(data).collect()));
    compress_chunk(source, close, compression, rewrites)
}

/// Compresses the pages of the column chunk `close` describes, read from `source` where its
/// metadata says they are (uncompressed), with `compression`, rewriting them first as
/// `rewrites` asks.
pub(crate) fn compress_chunk<R: ChunkReader + 'static>(
    source: Arc<R>,
    close: ColumnCloseResult,
    mut compression: PageCompression<'_>,
    rewrites: Rewrites<'_>,
) -> Result<EncodedChunk> {
    let rows = close.rows_written as usize;
    let props = Arc::new(
        ReaderProperties::builder()
            .set_read_page_statistics(true)
            .build(),
    );
    let mut pages =
        SerializedPageReader::new_with_properties(source, &close.metadata, rows, None, props)?;
    let mut out = TrackedWrite::new(Vec::with_capacity(
        (close.metadata.uncompressed_size() as usize / 4).max(1024),
    ));
    let mut specs = Vec::new();
    let mut row = 0;
    while let Some(page) = pages.get_next_page()? {
        let page = match rewrites.dictionary {
            Some(d) => d.rewrite(page, &mut row)?,
            None => page,
        };
        let page = compress_page(page, &mut compression)?;
        specs.push(if rewrites.checksum {
            write_with_crc(&mut out, page)?
        } else {
            SerializedPageWriter::new(&mut out).write_page(page)?
        });
    }
    out.flush()?;
    let bytes = Bytes::from(out.into_inner()?);
    Ok(EncodedChunk::Compressed {
        close: rewrite_close(close, &specs, compression.codec())?,
        bytes,
    })
}

/// Writes `page` through `writer` with the CRC32 of its body in its header. The crate's page
/// writer writes no checksum, so the header it serializes is rewritten before it goes out.
fn write_with_crc(out: &mut TrackedWrite<Vec<u8>>, page: CompressedPage) -> Result<PageWriteSpec> {
    let mut crc = flate2::Crc::new();
    crc.update(page.data());
    let crc = crc.sum();
    let body_len = page.data().len();
    let mut scratch = TrackedWrite::new(Vec::with_capacity(body_len + 64));
    let spec = SerializedPageWriter::new(&mut scratch).write_page(page)?;
    let serialized = scratch.into_inner()?;
    let header_len = serialized.len() - body_len;
    let (header, body) = serialized.split_at(header_len);
    let header = with_crc(header, crc)?;
    let grown = header.len() - header_len;
    let start = out.bytes_written() as u64;
    out.write_all(&header)?;
    out.write_all(body)?;
    Ok(PageWriteSpec {
        offset: start,
        bytes_written: (header.len() + body.len()) as u64,
        compressed_size: spec.compressed_size + grown,
        uncompressed_size: spec.uncompressed_size + grown,
        ..spec
    })
}

/// `page` with its body compressed (a v2 page's levels are kept in front, and a v2 body that
/// would not shrink is stored as it is, as the format allows).
fn compress_page(page: Page, compression: &mut PageCompression<'_>) -> Result<CompressedPage> {
    let uncompressed_size = page.buffer().len();
    let page = swap_body(page, |body| match body {
        Body::Whole(buf) => Ok((compression.compress(buf)?, false)),
        Body::V2 { buf, levels, .. } => {
            let values = buf.get(levels..).ok_or_else(|| {
                Error::Parquet(format!(
                    "the encoder wrote a v2 page of {} bytes with {levels} bytes of levels",
                    buf.len()
                ))
            })?;
            let frame = compression.compress(values)?;
            if values.is_empty() || frame.len() >= values.len() {
                return Ok((buf.clone(), false));
            }
            let mut b = BytesMut::with_capacity(levels + frame.len());
            b.extend_from_slice(&buf[..levels]);
            b.extend_from_slice(&frame);
            Ok((b.freeze(), true))
        }
    })?;
    Ok(CompressedPage::new(page, uncompressed_size))
}

/// The close result of a chunk whose pages were written as `specs`: the codec, the sizes, the
/// page offsets and the offset index follow the new pages; the rest (statistics, encodings,
/// column index, bloom filter) describes the values and stays.
fn rewrite_close(
    mut close: ColumnCloseResult,
    specs: &[PageWriteSpec],
    codec: PageCodec,
) -> Result<ColumnCloseResult> {
    let compressed: u64 = specs.iter().map(|s| s.compressed_size as u64).sum();
    let uncompressed: u64 = specs.iter().map(|s| s.uncompressed_size as u64).sum();
    let dictionary = specs
        .iter()
        .find(|s| s.page_type == PageType::DICTIONARY_PAGE)
        .map(|s| s.offset as i64);
    let data: Vec<&PageWriteSpec> = specs
        .iter()
        .filter(|s| s.page_type != PageType::DICTIONARY_PAGE)
        .collect();
    let first_data = data.first().map_or(0, |s| s.offset as i64);
    close.metadata = close
        .metadata
        .into_builder()
        .set_compression(codec.in_file()?)
        .set_total_compressed_size(compressed as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_data_page_offset(first_data)
        .set_dictionary_page_offset(dictionary)
        .build()?;
    close.bytes_written = compressed;
    if let Some(index) = close.offset_index.as_mut() {
        if index.page_locations.len() != data.len() {
            return Err(Error::Compress(format!(
                "the offset index lists {} pages and the chunk has {}",
                index.page_locations.len(),
                data.len()
            )));
        }
        for (location, spec) in index.page_locations.iter_mut().zip(&data) {
            location.offset = spec.offset as i64;
            location.compressed_page_size = spec.compressed_size as i32;
        }
    }
    Ok(close)
}

/// A column chunk's blobs read as one byte sequence: a page's body is always a blob of its
/// own, so reading it costs no copy.
struct Blobs {
    parts: Arc<[Bytes]>,
    starts: Vec<u64>,
    len: u64,
}

impl Blobs {
    fn new(parts: Vec<Bytes>) -> Self {
        let mut starts = Vec::with_capacity(parts.len());
        let mut len = 0;
        for p in &parts {
            starts.push(len);
            len += p.len() as u64;
        }
        Blobs {
            parts: parts.into(),
            starts,
            len,
        }
    }

    /// The part holding byte `at` and the offset into it (past the end: no part).
    fn find(&self, at: u64) -> (usize, usize) {
        let i = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
        (i, (at - self.starts.get(i).copied().unwrap_or(0)) as usize)
    }
}

impl Length for Blobs {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Blobs {
    type T = BlobsRead;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<BlobsRead> {
        let (part, offset) = self.find(start);
        Ok(BlobsRead {
            parts: self.parts.clone(),
            part,
            offset,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<Bytes> {
        if start + length as u64 > self.len {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at {start} pass the end of the chunk ({} bytes)",
                self.len
            )));
        }
        let (part, offset) = self.find(start);
        if let Some(here) = self.parts.get(part) {
            if offset + length <= here.len() {
                return Ok(here.slice(offset..offset + length));
            }
        }
        let mut out = vec![0u8; length];
        self.get_read(start)?.read_exact(&mut out)?;
        Ok(Bytes::from(out))
    }
}

/// Reads the blobs from an offset on.
struct BlobsRead {
    parts: Arc<[Bytes]>,
    part: usize,
    offset: usize,
}

impl Read for BlobsRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(here) = self.parts.get(self.part) {
            if self.offset < here.len() {
                let n = buf.len().min(here.len() - self.offset);
                buf[..n].copy_from_slice(&here[self.offset..self.offset + n]);
                self.offset += n;
                return Ok(n);
            }
            self.part += 1;
            self.offset = 0;
        }
        Ok(0)
    }
}
