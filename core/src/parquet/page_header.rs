//! The one field of a Parquet page header that the decompression stage needs and the parquet
//! crate does not hand over: the page's uncompressed size. The crate allocates a page's
//! decompressed size from that field, infallibly, so a hostile header (or a large page under a
//! memory limit) would abort the process. Every chunk is therefore handed to the crate as
//! uncompressed and each page decompressed here, into an allocation of the size this field
//! declares, checked against the limit and reserved fallibly first.
//!
//! The header is found where the crate reads it: [`WatchedSource`] notes where the crate starts
//! reading each header and, when it then asks for the page's body, reads the header's bytes in
//! between with the Thrift compact-protocol reader of `thrift`.

use std::sync::{Arc, Mutex};

use ::parquet::file::reader::{ChunkReader, Length};
use bytes::Bytes;

use super::source::{ParquetSource, SourceRead};
use super::thrift::{CompactReader, Why, I32};
use crate::error::{Error, Result};

/// `PageHeader.uncompressed_page_size` (field 2), from the serialized header.
pub(crate) fn uncompressed_page_size(header: &[u8]) -> Result<usize> {
    let mut r = CompactReader::new(header);
    let mut last = 0i16;
    loop {
        let (id, kind) = match r.field(&mut last).map_err(corrupted)? {
            Some(f) => f,
            None => return Err(corrupt("it has no uncompressed_page_size")),
        };
        if id == 2 {
            if kind != I32 {
                return Err(corrupt("its uncompressed_page_size is not an i32"));
            }
            let size = r.zigzag().map_err(corrupted)?;
            return usize::try_from(size)
                .map_err(|_| corrupt(&format!("it declares {size} bytes uncompressed")));
        }
        r.skip(kind, 0).map_err(corrupted)?;
    }
}

/// `PageHeader.crc` (field 4), from the serialized header: the CRC-32 of the page's bytes as
/// stored (compressed), where the writer wrote one.
pub(crate) fn page_crc(header: &[u8]) -> Result<Option<u32>> {
    let mut r = CompactReader::new(header);
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last).map_err(corrupted)? {
        if id == 4 {
            if kind != I32 {
                return Err(corrupt("its crc is not an i32"));
            }
            // The CRC's 32 bits, stored as a signed i32.
            return Ok(Some(r.zigzag().map_err(corrupted)? as i32 as u32));
        }
        if id > 4 {
            return Ok(None);
        }
        r.skip(kind, 0).map_err(corrupted)?;
    }
    Ok(None)
}

/// A serialized `BloomFilterHeader`'s `num_bytes` (field 1: the bitset's length), and the
/// header's own length: where its bitset starts. The parquet crate reads its bitset as
/// whatever bytes the column's `bloom_filter_length` leaves after the header, so a header and
/// bitset that disagree would hash values into other blocks than the writer's, and prune
/// rows the file holds; the scanner checks the two agree with this.
pub(crate) fn bloom_filter_header(header: &[u8]) -> Result<(i64, usize)> {
    let mut r = CompactReader::new(header);
    let mut last = 0i16;
    let mut num_bytes = None;
    while let Some((id, kind)) = r.field(&mut last).map_err(corrupted)? {
        if id == 1 && kind == I32 {
            num_bytes = Some(r.zigzag().map_err(corrupted)?);
        } else {
            r.skip(kind, 0).map_err(corrupted)?;
        }
    }
    let num_bytes = num_bytes.ok_or_else(|| corrupt("a bloom filter header has no num_bytes"))?;
    Ok((num_bytes, r.position()))
}

/// `header`, a serialized `PageHeader` without a CRC, with `crc` as its field 4: the
/// parquet crate's page writer has no checksums, so the writer adds them to the headers it
/// wrote. The fields after it are kept byte for byte, but for the next one's id delta.
pub(crate) fn with_crc(header: &[u8], crc: u32) -> Result<Vec<u8>> {
    let mut r = CompactReader::new(header);
    let mut last = 0i16;
    loop {
        let before = r.position();
        let prev = last;
        let next = r.field(&mut last).map_err(corrupted)?;
        if let Some((id, kind)) = next.filter(|(id, _)| *id <= 4) {
            if id == 4 {
                return Err(corrupt("it already has a crc"));
            }
            r.skip(kind, 0).map_err(corrupted)?;
            continue;
        }
        let mut out = Vec::with_capacity(header.len() + 6);
        out.extend_from_slice(&header[..before]);
        push_field_header(&mut out, prev, 4, I32);
        push_zigzag(&mut out, i64::from(crc as i32));
        match next {
            None => out.push(0),
            Some((id, kind)) => push_field_header(&mut out, 4, id, kind),
        }
        out.extend_from_slice(&header[r.position()..]);
        return Ok(out);
    }
}

fn push_field_header(out: &mut Vec<u8>, last: i16, id: i16, kind: u8) {
    match id - last {
        delta @ 1..=15 => out.push(((delta as u8) << 4) | kind),
        _ => {
            out.push(kind);
            push_zigzag(out, i64::from(id));
        }
    }
}

fn push_zigzag(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn corrupt(why: &str) -> Error {
    Error::Parquet(format!("corrupt Parquet page header: {why}"))
}

fn corrupted(why: Why) -> Error {
    corrupt(&why)
}

/// The uncompressed sizes of the pages the crate has read the headers of, in order; shared by
/// a chunk's [`WatchedSource`] and the page reader that decompresses its pages.
pub(crate) type PageSizes = Arc<Mutex<PageWatch>>;

#[derive(Default)]
pub(crate) struct PageWatch {
    /// Where the crate last started reading, and where before that: a header peeked before
    /// its page is read is followed by a read from the body's start.
    reads: [Option<u64>; 2],
    /// The size the last page body's header declares, or why it could not be read.
    pub(crate) next: Option<Result<usize>>,
    /// With checksums verified: the CRC the last page body's header gives (None where it
    /// gives none), or why it could not be read.
    pub(crate) crc: Option<Result<Option<u32>>>,
}

impl PageWatch {
    /// Notes what the header of the page about to be read says.
    fn saw(&mut self, header: Result<Bytes>, checksums: bool) {
        match header {
            Ok(header) => {
                self.next = Some(uncompressed_page_size(&header));
                self.crc = checksums.then(|| page_crc(&header));
            }
            Err(e) => {
                self.next = Some(Err(e));
                self.crc = None;
            }
        }
    }
}

/// A chunk's source that notes each page header the crate reads (see the module's comment).
pub(crate) struct WatchedSource {
    pub(crate) inner: ParquetSource,
    pub(crate) watch: PageSizes,
    /// Where the chunk's pages start, sorted, when the crate reads them by the offset index:
    /// it then asks for a page's header and body in one range, whose start is one of these.
    pub(crate) page_starts: Vec<u64>,
    /// Whether each header's CRC is noted too (`page_checksum_verification`).
    pub(crate) checksums: bool,
}

impl Length for WatchedSource {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl ChunkReader for WatchedSource {
    type T = SourceRead;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<SourceRead> {
        let mut watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        if watch.reads[0] != Some(start) {
            watch.reads = [Some(start), watch.reads[0]];
        }
        drop(watch);
        self.inner.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<Bytes> {
        if self.page_starts.binary_search(&start).is_ok() {
            // A whole page, its header first.
            let page = self.inner.get_bytes(start, length)?;
            let mut watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
            watch.saw(Ok(page.clone()), self.checksums);
            return Ok(page);
        }
        let mut watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        let header_at = watch.reads.iter().flatten().copied().find(|&at| at < start);
        let header = match header_at {
            Some(at) => self
                .inner
                .get_bytes(at, (start - at) as usize)
                .map_err(Error::from),
            None => Err(Error::Parquet("a page was read without its header".into())),
        };
        watch.saw(header, self.checksums);
        drop(watch);
        self.inner.get_bytes(start, length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as the compact protocol writes one: type, sizes, then a data page header.
    fn header(uncompressed: i32) -> Vec<u8> {
        let zigzag = |v: i64, out: &mut Vec<u8>| push_zigzag(out, v);
        let mut h = vec![0x15];
        zigzag(0, &mut h); // type: DATA_PAGE
        h.push(0x15);
        zigzag(uncompressed.into(), &mut h);
        h.push(0x15);
        zigzag(100, &mut h);
        h.push(0x2c); // field 5, a struct: the data page header
        h.extend([0x15, 0x02, 0x00]); // num_values 1, then its end
        h.push(0x00);
        h
    }

    /// The ids and i32 values of a header's top-level fields (structs skipped).
    fn fields(h: &[u8]) -> Vec<(i16, Option<i64>)> {
        let mut r = CompactReader::new(h);
        let mut last = 0;
        let mut out = Vec::new();
        while let Some((id, kind)) = r.field(&mut last).unwrap() {
            if kind == I32 {
                out.push((id, Some(r.zigzag().unwrap())));
            } else {
                r.skip(kind, 0).unwrap();
                out.push((id, None));
            }
        }
        assert_eq!(
            r.position(),
            h.len(),
            "the header ends where its stop byte is"
        );
        out
    }

    #[test]
    fn a_crc_goes_in_as_field_4_and_keeps_the_fields_around_it() {
        for crc in [0u32, 1, 0x7fff_ffff, 0x8000_0000, 0xdead_beef, u32::MAX] {
            let h = with_crc(&header(1000), crc).unwrap();
            assert_eq!(
                fields(&h),
                vec![
                    (1, Some(0)),
                    (2, Some(1000)),
                    (3, Some(100)),
                    (4, Some(i64::from(crc as i32))),
                    (5, None),
                ]
            );
            assert_eq!(uncompressed_page_size(&h).unwrap(), 1000);
            assert!(with_crc(&h, crc).is_err(), "a second crc is refused");
        }
    }

    #[test]
    fn reads_the_declared_size() {
        for n in [0, 1, 63, 64, 1 << 20, i32::MAX] {
            assert_eq!(uncompressed_page_size(&header(n)).unwrap(), n as usize);
        }
    }

    #[test]
    fn finds_the_size_after_fields_written_before_it() {
        // A crc (field 4) written first, with a long field-id delta, then field 2.
        let mut h = vec![0x45, 0x02];
        h.extend([0x05, 0x04, 0x0a, 0x00]); // delta 0: field id 2 as a zigzag i16, value 5
        assert_eq!(uncompressed_page_size(&h).unwrap(), 5);
    }

    #[test]
    fn refuses_what_is_not_a_header() {
        for bad in [
            &[][..],
            &[0x00],                   // no fields
            &[0x15],                   // ends early
            &[0x16, 0x02],             // field 2 as an i64
            &[0x25, 0x03],             // a negative size
            &[0x19, 0xf8, 0xff, 0x0f], // a list of 2047 strings in no bytes
            &[0x1d],                   // unknown type
        ] {
            assert!(uncompressed_page_size(bad).is_err(), "{bad:?}");
        }
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 100).collect();
        assert!(uncompressed_page_size(&deep).is_err());
    }

    #[test]
    fn every_truncation_is_refused() {
        let h = header(12345);
        for cut in 0..h.len() - 1 {
            // The size is found before the end in a longer prefix; a shorter one fails.
            if let Ok(n) = uncompressed_page_size(&h[..cut]) {
                assert_eq!(n, 12345);
            }
        }
    }
}
