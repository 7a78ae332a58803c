//! What a string or binary column's pages decode to, known before the parquet crate decodes
//! them. Such a page can decode to far more than its own bytes: a dictionary index repeats a
//! long dictionary value, and DELTA_BYTE_ARRAY repeats a prefix of the value before. A file
//! of a few hundred bytes can so declare terabytes, and the crate builds its values in a
//! buffer it grows infallibly, so an allocation that fails there aborts the process. Each page
//! of such a chunk is measured here first (the dictionary indices summed over the dictionary
//! values' lengths, the delta prefixes summed), and whether the chunk's running total can be
//! allocated, twice over for the crate's doubling growth, is asked (`headroom`) before the
//! crate sees the page: a read that cannot be held fails as a `MemoryError`.
//!
//! Hand-written because the parquet crate's decoders for these encodings are not public
//! (its `encodings` module needs its `experimental` feature), and because only sums are
//! needed, which take one pass with no output.

use ::parquet::basic::Encoding;
use ::parquet::column::page::Page;

use crate::error::{Error, Result};

use super::steps::{values_start, Levels, PageStep};

/// The running measure of one string or binary column chunk.
pub(crate) struct Expansion {
    levels: Levels,
    /// The chunk's dictionary values' lengths, and the longest.
    lengths: Vec<u32>,
    longest: u64,
    /// What the chunk's pages decode to so far.
    decoded: u64,
    /// Whether the crate builds this column's values (not a dictionary array, which holds each
    /// value once); a dictionary array is expanded too when a page is not dictionary-encoded.
    expands: bool,
}

impl Expansion {
    pub fn new(levels: Levels, read_as_dictionary: bool) -> Self {
        Expansion {
            levels,
            lengths: Vec::new(),
            longest: 0,
            decoded: 0,
            expands: !read_as_dictionary,
        }
    }

    /// Measures `page` and reserves what the chunk decodes to with it.
    pub fn check(&mut self, page: &Page) -> Result<()> {
        let (values, encoding, num_values) = match page {
            Page::DictionaryPage {
                buf, num_values, ..
            } => {
                self.lengths = plain_lengths(buf, *num_values)?;
                self.longest = self.lengths.iter().copied().max().map_or(0, u64::from);
                // The crate copies the dictionary into an array of its own: its values and
                // an offset each.
                let need = (buf.len() as u64)
                    .saturating_add(8u64.saturating_mul(self.lengths.len() as u64));
                return reserve(need, || {
                    Error::Memory(format!(
                        "the column's dictionary of {} bytes cannot be decoded: its copy cannot \
                         be allocated",
                        buf.len()
                    ))
                });
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                ..
            }
            | Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                ..
            } => {
                let at = values_start(page, self.levels);
                (buf.get(at..).unwrap_or_default(), *encoding, *num_values)
            }
        };
        let bytes = match encoding {
            Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY => {
                // Every index as long as the longest value bounds the page cheaply, without
                // unpacking an index; only a page whose bound cannot be had is summed exactly
                // (summing every index of every page costs a twentieth of a string column's
                // read).
                let bound = dictionary_bytes(values, &self.lengths, Some(self.longest));
                let total = self.decoded.saturating_add(bound);
                if !self.expands || crate::memory::headroom::can_map(total.saturating_mul(2)) {
                    self.decoded = total;
                    return Ok(());
                }
                dictionary_bytes(values, &self.lengths, None)
            }
            Encoding::DELTA_BYTE_ARRAY => {
                // Prefix lengths, then suffix lengths, then the suffixes.
                let prefixes = delta_lengths(values, u64::from(num_values));
                let suffixes = prefixes
                    .end
                    .and_then(|end| values.get(end..))
                    .map(|rest| delta_lengths(rest, 0));
                lengths_fit(
                    prefixes
                        .count
                        .saturating_add(suffixes.map_or(0, |s| s.count)),
                )?;
                self.expands = true;
                prefixes.sum.saturating_add(values.len() as u64)
            }
            other => {
                if other == Encoding::DELTA_LENGTH_BYTE_ARRAY {
                    lengths_fit(delta_lengths(values, 0).count)?;
                }
                // PLAIN and DELTA_LENGTH_BYTE_ARRAY decode to at most their own bytes, which
                // the reader's decode check counted; a dictionary array meeting such a page
                // expands what it held, and is checked from here on.
                self.decoded = self.decoded.saturating_add(values.len() as u64);
                let newly = !self.expands;
                self.expands = true;
                if !newly {
                    return Ok(());
                }
                0
            }
        };
        self.decoded = self.decoded.saturating_add(bytes);
        if !self.expands {
            return Ok(());
        }
        let decoded = self.decoded;
        reserve(decoded.saturating_mul(2), || {
            Error::Memory(format!(
                "the column's pages decode to {decoded} bytes of values, which cannot be allocated"
            ))
        })
    }
}

/// Whether the lengths a delta page declares can be allocated: the crate makes a 4-byte length
/// for each before it decodes one.
fn lengths_fit(count: u64) -> Result<()> {
    reserve(count.saturating_mul(4), || {
        Error::Memory(format!(
            "a page declares {count} value lengths, which cannot be allocated"
        ))
    })
}

/// Whether `need` bytes can be allocated now (see `headroom`), else the error `refused` makes.
fn reserve(need: u64, refused: impl Fn() -> Error) -> Result<()> {
    match crate::memory::headroom::can_map(need) {
        true => Ok(()),
        false => Err(refused()),
    }
}

/// The lengths of a PLAIN byte-array dictionary's values (a 4-byte length before each), as
/// many as are whole in `buf`; a shorter dictionary is the crate's to report.
fn plain_lengths(buf: &[u8], num_values: u32) -> Result<Vec<u32>> {
    let mut lengths = Vec::new();
    lengths.try_reserve_exact((num_values as usize).min(buf.len() / 4))?;
    let mut rest = buf;
    while lengths.len() < num_values as usize {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let len = u32::from_le_bytes(*len);
        let Some(tail) = tail.get(len as usize..) else {
            break;
        };
        lengths.push(len);
        rest = tail;
    }
    Ok(lengths)
}

/// A ULEB128 varint at the start of `buf`, and its length.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Calls `each` with the first `count` values of `width` bits (at most 64) packed LSB first
/// in `buf`, reading zeros past its end.
fn unpack(buf: &[u8], width: usize, count: usize, mut each: impl FnMut(u64)) {
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let (mut held, mut bits, mut at) = (0u128, 0usize, 0usize);
    for _ in 0..count {
        while bits < width {
            held |= u128::from(buf.get(at).copied().unwrap_or(0)) << bits;
            bits += 8;
            at += 1;
        }
        each(held as u64 & mask);
        held >>= width;
        bits -= width;
    }
}

/// The bytes an RLE_DICTIONARY values section decodes to: each index's dictionary value's
/// length, summed; or, with `longest`, a bound that takes each bit-packed index as that long
/// (runs of one index are still exact). Runs are counted as the crate's decoder counts them
/// (a run's length cut to 32 bits, a bit-packed run's after multiplying by eight), and an index
/// as it takes one (its low 32 bits as a signed int), so that what is measured is what the
/// crate will decode: an index it refuses (negative, or past the dictionary) counts nothing;
/// the padding of a last bit-packed run counts, an over-estimate of at most seven values.
fn dictionary_bytes(values: &[u8], lengths: &[u32], longest: Option<u64>) -> u64 {
    let Some((&width, mut rest)) = values.split_first() else {
        return 0;
    };
    let width = width as usize;
    if width > 64 {
        return 0;
    }
    let length = |i: u64| {
        usize::try_from(i as i32)
            .ok()
            .and_then(|i| lengths.get(i))
            .map_or(0, |&l| u64::from(l))
    };
    let mut total = 0u64;
    while let Some((header, n)) = varint(rest) {
        rest = &rest[n..];
        let header = header as i64;
        if header & 1 == 1 {
            // Bit-packed: groups of eight values, `width` bytes a group.
            let count = u64::from(((header >> 1).wrapping_mul(8)) as u32);
            let bytes = count.saturating_mul(width as u64) / 8;
            let take = usize::try_from(bytes).map_or(rest.len(), |b| b.min(rest.len()));
            // At width 0 every index is 0, and the run holds no bytes.
            let count = match (take * 8).checked_div(width) {
                Some(whole) => count.min(whole as u64),
                None => count,
            };
            total = match (longest, width) {
                (Some(longest), _) => total.saturating_add(count.saturating_mul(longest)),
                (None, 0) => total.saturating_add(count.saturating_mul(length(0))),
                (None, _) => {
                    let mut sum = 0u64;
                    unpack(&rest[..take], width, count as usize, |i| {
                        sum = sum.saturating_add(length(i))
                    });
                    total.saturating_add(sum)
                }
            };
            rest = &rest[take..];
        } else {
            // A run: one value, in ceil(width / 8) bytes, repeated.
            let count = u64::from((header >> 1) as u32);
            let bytes = width.div_ceil(8);
            let Some(value) = rest.get(..bytes) else {
                break;
            };
            let mut word = [0u8; 8];
            word[..bytes].copy_from_slice(value);
            let each = length(u64::from_le_bytes(word));
            total = total.saturating_add(count.saturating_mul(each));
            rest = &rest[bytes..];
        }
    }
    total
}

/// A DELTA_BINARY_PACKED stream of lengths, as the crate's decoder takes it: the count its
/// header declares (the crate allocates a length for each before decoding), the sum of the
/// first `cap` lengths (negative ones, corrupt and the crate's to refuse, count nothing), and
/// where the stream ends when it is whole. A miniblock of width 0 is summed in closed form,
/// so a hostile count costs no loop.
#[derive(Debug, Default, PartialEq)]
struct DeltaLengths {
    count: u64,
    sum: u64,
    end: Option<usize>,
}

fn delta_lengths(buf: &[u8], cap: u64) -> DeltaLengths {
    let mut at = 0usize;
    let mut next = || -> Option<u64> {
        let (v, n) = varint(buf.get(at..)?)?;
        at += n;
        Some(v)
    };
    let (Some(block), Some(miniblocks), Some(count), Some(first)) =
        (next(), next(), next(), next())
    else {
        return DeltaLengths::default();
    };
    let mut out = DeltaLengths {
        count,
        ..Default::default()
    };
    if miniblocks == 0 || block == 0 || block % miniblocks != 0 {
        return out;
    }
    let per_mini = block / miniblocks;
    let Ok(m) = usize::try_from(miniblocks) else {
        return out;
    };
    let mut last = zigzag(first);
    // Lengths summed so far (at most `cap`), and lengths walked (the first is the header's).
    let mut summed = 0u64;
    let add = |sum: &mut u64, v: i64, summed: &mut u64| {
        if *summed < cap {
            *sum = sum.saturating_add(v.max(0) as u64);
            *summed += 1;
        }
    };
    if count > 0 {
        add(&mut out.sum, last, &mut summed);
    }
    let mut left = count.saturating_sub(1);
    while left > 0 {
        let Some((min_delta, n)) = buf.get(at..).and_then(varint) else {
            return out;
        };
        at += n;
        let min_delta = zigzag(min_delta);
        let Some(widths) = buf.get(at..at.saturating_add(m)) else {
            return out;
        };
        at += m;
        for &width in widths {
            if left == 0 {
                break;
            }
            let width = width as usize;
            if width > 64 {
                return out;
            }
            let values = per_mini.min(left);
            let bytes = per_mini.saturating_mul(width as u64).div_ceil(8);
            let Some(packed) = usize::try_from(bytes)
                .ok()
                .and_then(|b| buf.get(at..at.checked_add(b)?))
            else {
                return out;
            };
            at += packed.len();
            if width == 0 {
                // last + d, last + 2d, ..., last + v·d for the v of them still summed.
                let v = values.min(cap.saturating_sub(summed)) as i128;
                let sum = v * last as i128 + (v * (v + 1) / 2) * min_delta as i128;
                out.sum = out
                    .sum
                    .saturating_add(sum.clamp(0, u64::MAX as i128) as u64);
                summed += v as u64;
                let moved = last as i128 + values as i128 * min_delta as i128;
                last = moved.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            } else {
                let take = values.min(cap.saturating_sub(summed)) as usize;
                unpack(packed, width, take, |delta| {
                    last = last.wrapping_add(min_delta).wrapping_add(delta as i64);
                    add(&mut out.sum, last, &mut summed);
                });
            }
            left -= values;
        }
    }
    out.end = Some(at);
    out
}

impl PageStep for Expansion {
    fn apply(&mut self, page: Page) -> Result<Page> {
        self.check(&page)?;
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hybrid RLE/bit-packed stream of `indices` at `width` bits: bit-packed groups of eight,
    /// then the rest as one-value runs.
    fn hybrid(indices: &[u32], width: u8) -> Vec<u8> {
        let mut out = vec![width];
        let groups = indices.len() / 8;
        if groups > 0 {
            out.push(((groups as u8) << 1) | 1);
            let mut bits = 0u128;
            let mut nbits = 0;
            for &i in &indices[..groups * 8] {
                bits |= u128::from(i) << nbits;
                nbits += width as usize;
                while nbits >= 8 {
                    out.push(bits as u8);
                    bits >>= 8;
                    nbits -= 8;
                }
            }
        }
        for &i in &indices[groups * 8..] {
            out.push(1 << 1);
            out.extend_from_slice(&i.to_le_bytes()[..(width as usize).div_ceil(8)]);
        }
        out
    }

    #[test]
    fn dictionary_pages_sum_the_lengths_their_indices_name() {
        let lengths = [3, 1000, 0, 7];
        let indices: Vec<u32> = (0..21).map(|i| (i * 7) % 4).collect();
        let want: u64 = indices
            .iter()
            .map(|&i| u64::from(lengths[i as usize]))
            .sum();
        assert_eq!(dictionary_bytes(&hybrid(&indices, 2), &lengths, None), want);
        assert_eq!(dictionary_bytes(&hybrid(&indices, 9), &lengths, None), want);
        // A run of a million repeats of the long value, in three bytes.
        let run = [2u8, 0x80, 0x89, 0x7a, 0x01];
        assert_eq!(varint(&run[1..]), Some((2_000_000, 3)));
        assert_eq!(dictionary_bytes(&run, &lengths, None), 1_000_000 * 1000);
        assert_eq!(
            dictionary_bytes(&run, &lengths, Some(1000)),
            1_000_000 * 1000
        );
        // Truncations and nonsense never panic, and count what is whole.
        let bytes = hybrid(&indices, 2);
        for cut in 0..bytes.len() {
            assert!(dictionary_bytes(&bytes[..cut], &lengths, None) <= want);
        }
        assert_eq!(dictionary_bytes(&[40, 1, 2, 3], &lengths, None), 0);
        // The bound takes every bit-packed index as the longest value.
        let bound = dictionary_bytes(&hybrid(&indices, 2), &lengths, Some(1000));
        assert!(bound >= want && bound <= 24 * 1000, "{bound}");
    }

    #[test]
    fn runs_are_counted_as_the_crate_decodes_them() {
        let lengths = [1000, 7];
        let n = 1_000_000u64;
        // Indices 40 bits wide: the crate takes the low 32 bits of each.
        let mut wide = vec![40];
        uleb(&mut wide, 2 * n);
        wide.extend_from_slice(&[0; 5]);
        assert_eq!(dictionary_bytes(&wide, &lengths, None), n * 1000);
        // A bit-packed run of 2^29 groups: the crate's count wraps to 0 and it reads what
        // follows as runs of its own.
        let mut wrapped = vec![1];
        uleb(&mut wrapped, (1 << 30) + 1);
        uleb(&mut wrapped, 2 * n);
        wrapped.push(0);
        assert!(dictionary_bytes(&wrapped, &lengths, None) >= n * 1000);
        assert!(dictionary_bytes(&wrapped, &lengths, Some(1000)) >= n * 1000);
    }

    #[test]
    fn a_delta_page_declaring_more_lengths_than_fit_is_refused() {
        let page = |encoding, declared: u64| {
            let mut buf = Vec::new();
            for v in [128, 4, declared, 0] {
                uleb(&mut buf, v);
            }
            Page::DataPage {
                buf: buf.into(),
                num_values: 1,
                encoding,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            }
        };
        let levels = Levels {
            max_rep: 0,
            max_def: 0,
        };
        for encoding in [
            Encoding::DELTA_LENGTH_BYTE_ARRAY,
            Encoding::DELTA_BYTE_ARRAY,
        ] {
            for read_as_dictionary in [false, true] {
                let mut e = Expansion::new(levels, read_as_dictionary);
                let err = e.check(&page(encoding, 1 << 60)).unwrap_err();
                assert!(matches!(err, Error::Memory(_)), "{err}");
                let mut e = Expansion::new(levels, read_as_dictionary);
                e.check(&page(encoding, 1)).unwrap();
            }
        }
    }

    #[test]
    fn plain_dictionaries_give_their_lengths() {
        let mut buf = Vec::new();
        for v in ["ab", "", "xyz"] {
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            buf.extend_from_slice(v.as_bytes());
        }
        assert_eq!(plain_lengths(&buf, 3).unwrap(), vec![2, 0, 3]);
        assert_eq!(plain_lengths(&buf[..buf.len() - 1], 3).unwrap(), vec![2, 0]);
        assert_eq!(plain_lengths(&buf, 9).unwrap(), vec![2, 0, 3]);
    }

    fn uleb(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    /// A DELTA_BINARY_PACKED stream of `values`: blocks of `block` values in one miniblock.
    fn delta(values: &[i64], block: u64) -> Vec<u8> {
        let zz = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        uleb(&mut out, block);
        uleb(&mut out, 1);
        uleb(&mut out, values.len() as u64);
        uleb(&mut out, zz(values[0]));
        for chunk in values.windows(2).collect::<Vec<_>>().chunks(block as usize) {
            let deltas: Vec<i64> = chunk.iter().map(|w| w[1] - w[0]).collect();
            let min = *deltas.iter().min().unwrap();
            uleb(&mut out, zz(min));
            let max = deltas.iter().map(|d| (d - min) as u64).max().unwrap();
            let width = 64 - max.leading_zeros() as usize;
            out.push(width as u8);
            let mut bits = 0u128;
            let mut nbits = 0;
            for i in 0..block as usize {
                let d = deltas.get(i).map_or(0, |d| (d - min) as u64);
                bits |= u128::from(d) << nbits;
                nbits += width;
                while nbits >= 8 {
                    out.push(bits as u8);
                    bits >>= 8;
                    nbits -= 8;
                }
            }
            if nbits > 0 {
                out.push(bits as u8);
            }
        }
        out
    }

    #[test]
    fn delta_prefixes_are_summed() {
        let prefixes: Vec<i64> = (0..300).map(|i| (i * 37) % 91).collect();
        let want: u64 = prefixes.iter().map(|&p| p as u64).sum();
        let stream = delta(&prefixes, 128);
        let whole = delta_lengths(&stream, 300);
        assert_eq!(
            (whole.count, whole.sum, whole.end),
            (300, want, Some(stream.len()))
        );
        // At most the page's own count.
        let first_ten: u64 = prefixes[..10].iter().map(|&p| p as u64).sum();
        assert_eq!(delta_lengths(&stream, 10).sum, first_ten);
        // Constant prefixes pack at width 0 and are summed in closed form: a billion repeats
        // of a megabyte prefix, in one miniblock of a billion values, is a petabyte, counted
        // at once.
        let mut constant = Vec::new();
        for v in [1_000_000_000, 1, 1_000_000_000, 2 << 20, 0] {
            uleb(&mut constant, v);
        }
        constant.push(0);
        let constant = delta_lengths(&constant, u64::MAX);
        assert_eq!(constant.sum, 1_000_000_000 * (1 << 20));
        assert_eq!(constant.count, 1_000_000_000);
        for cut in 0..stream.len() {
            let part = delta_lengths(&stream[..cut], 300);
            assert!(part.sum <= want && part.end.is_none(), "{cut}: {part:?}");
        }
    }
}
