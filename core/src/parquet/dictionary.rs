//! The writer's two dictionary decisions the parquet crate does not make.
//!
//! Whether a numeric column chunk gets a dictionary at all: the crate tries one for every
//! column and falls back to plain encoding only once the dictionary page is full (1 MiB), so a
//! column of distinct integers pays for a dictionary as large as its values and an index per
//! row. [`dictionary_pays`] decides from a sample of the row group's values first.
//!
//! A dictionary column written with the Arrow dictionary it was given. The parquet crate
//! dictionary-encodes a dictionary array's values afresh: its dictionary page holds only the
//! values rows use, in the order rows first use them. A pandas categorical loses its unused
//! categories and its order that way, and an ordered one then compares differently after a
//! round trip. pyarrow writes the Arrow dictionary itself, and so does this stage, for a
//! top-level column of strings or binaries whose row group's batches share one dictionary: the
//! compression stage replaces the dictionary page's body with the Arrow dictionary, PLAIN-encoded,
//! and each dictionary-encoded data page's indices with the Arrow keys of its rows.

use std::ops::Range;

use ::parquet::basic::Encoding;
use ::parquet::column::page::Page;
use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use bytes::Bytes;

use super::body::{shape, with_body, Shape};
use crate::error::{Error, Result};

/// Values sampled from a row group to decide whether its column gets a dictionary.
const SAMPLE: usize = 1024;

/// Whether a numeric column of a row group (`columns`, one primitive array per batch) is worth
/// a dictionary, stored at `width` bytes a value. Up to [`SAMPLE`] values spread evenly over
/// it give the number of distinct
/// values: exactly when the sample is the whole column, else by the birthday estimate from
/// the repeats the sample holds (none: as many as rows, which is also what values in order
/// look like, and those compress best plain). The dictionary pays when its values and an
/// index per row take less than half the plain values' bytes, as on columns with few distinct
/// values in random order (dates, flags, foreign keys into small tables); a column of mostly
/// distinct values, or of sorted keys, is written plain. Row groups too small to say keep
/// their dictionary. benchmarks/RESULTS-archive.md has the sizes this was chosen from.
pub(crate) fn dictionary_pays(columns: &[&ArrayRef], width: usize) -> bool {
    let rows: usize = columns.iter().map(|c| c.len()).sum();
    let step = rows.div_ceil(SAMPLE).max(1);
    // Each sampled value's bits, counted by `distinct`.
    let mut seen: Vec<u64> = Vec::with_capacity(SAMPLE.min(rows) + 1);
    let mut start = 0;
    for column in columns {
        let data = column.to_data();
        let Some(values) = data.buffers().first() else {
            return true;
        };
        // The first sampled row of this array: the next multiple of `step` from `start`.
        let first = (step - start % step) % step;
        let sample = Sample {
            values: values.as_slice(),
            offset: data.offset(),
            len: column.len(),
            nulls: data.nulls(),
            first,
            step,
        };
        let taken = match data.data_type().primitive_width() {
            Some(1) => sample.take::<1>(&mut seen),
            Some(2) => sample.take::<2>(&mut seen),
            Some(4) => sample.take::<4>(&mut seen),
            Some(8) => sample.take::<8>(&mut seen),
            // A decimal stored as an integer holds no more than an i64: its low half is it.
            Some(16) => sample.take::<16>(&mut seen),
            _ => false,
        };
        if !taken {
            return true;
        }
        start += column.len();
    }
    let sampled = seen.len();
    if sampled < 16 {
        return true;
    }
    // A whole column counted exactly pays only with fewer distinct values than half its rows
    // (their bytes alone would be half the plain values'), so the count stops there.
    let enough = if step == 1 {
        rows.div_ceil(2)
    } else {
        usize::MAX
    };
    let found = distinct(&seen, enough);
    if found >= enough {
        return false;
    }
    let distinct = if step == 1 {
        found as f64
    } else if found == sampled {
        rows as f64
    } else {
        let repeats = (sampled - found) as f64;
        (sampled as f64 * sampled as f64 / (2.0 * repeats)).max(found as f64)
    };
    let index_bits = distinct.max(2.0).log2().ceil();
    let dictionary = distinct * width as f64 + rows as f64 * index_bits / 8.0;
    dictionary < rows as f64 * width as f64 / 2.0
}

/// How many distinct values `values` holds, or `enough` once that many are found: an
/// open-addressed table of twice as many slots as it may hold, filled once. Sorting them was
/// 8% of a 256-row file's write (benchmarks/RESULTS.md#dictionary-sample); a small table lives
/// on the stack, since allocating and zeroing one was most of what the count cost after that
/// (benchmarks/RESULTS.md#dictionary-sample-stack).
fn distinct(values: &[u64], enough: usize) -> usize {
    const ON_STACK: usize = 256;
    let slots = (values.len().min(enough) * 2).next_power_of_two().max(16);
    if slots <= ON_STACK {
        count_distinct(values, enough, &mut [0u64; ON_STACK][..slots])
    } else {
        count_distinct(values, enough, &mut vec![0u64; slots])
    }
}

/// [`distinct`]'s count, in `table`: zeroed, a power of two long, with room for twice the
/// values it may hold.
fn count_distinct(values: &[u64], enough: usize, table: &mut [u64]) -> usize {
    let slots = table.len();
    let shift = 64 - slots.trailing_zeros();
    // 0 marks an empty slot; whether 0 itself was seen is kept apart.
    let mut zero = false;
    let mut found = 0;
    for &value in values {
        if found >= enough {
            break;
        }
        if value == 0 {
            found += usize::from(!zero);
            zero = true;
            continue;
        }
        // Fibonacci hashing: the top bits of the product spread nearby values apart.
        let mut at = (value.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
        loop {
            match table[at] {
                0 => {
                    table[at] = value;
                    found += 1;
                    break;
                }
                held if held == value => break,
                _ => at = (at + 1) & (slots - 1),
            }
        }
    }
    found
}

/// Every `step`th row of one array of fixed-width values, from row `first`, for
/// [`dictionary_pays`].
struct Sample<'a> {
    values: &'a [u8],
    offset: usize,
    len: usize,
    nulls: Option<&'a NullBuffer>,
    first: usize,
    step: usize,
}

impl Sample<'_> {
    /// Pushes the low 64 bits of each sampled value of `W` bytes that is not null; false if
    /// the values buffer is shorter than the array says.
    fn take<const W: usize>(&self, seen: &mut Vec<u64>) -> bool {
        let low = W.min(8);
        let low_bits = |value: &[u8]| {
            let mut bits = [0u8; 8];
            bits[..low].copy_from_slice(&value[..low]);
            u64::from_le_bytes(bits)
        };
        if self.step == 1 && self.nulls.is_none() {
            // Every row, as one run of bytes: a small column is its own sample.
            let rows = (self.offset + self.first) * W..(self.offset + self.len) * W;
            let Some(values) = self.values.get(rows) else {
                return false;
            };
            seen.extend(values.chunks_exact(W).map(low_bits));
            return true;
        }
        let mut i = self.first;
        while i < self.len {
            if self.nulls.is_none_or(|n| n.is_valid(i)) {
                let at = (self.offset + i) * W;
                let Some(value) = self.values.get(at..at + W) else {
                    return false;
                };
                seen.push(low_bits(value));
            }
            i += self.step;
        }
        true
    }
}

/// The Arrow dictionary of one column chunk and the key of each of its rows.
pub(crate) struct GivenDictionary {
    /// The dictionary page's body: each value PLAIN-encoded (a 4-byte length, then its bytes).
    page: Bytes,
    entries: usize,
    /// Per row, its key; None for a null row.
    keys: Vec<Option<u32>>,
    /// Whether a data page's body starts with definition levels (a nullable column).
    levels: bool,
}

impl GivenDictionary {
    /// The dictionary of `columns` (one per batch of a row group, each a dictionary array of
    /// strings or binaries), or None when they do not share one without nulls, or when a
    /// value is too long for Parquet: the column is then encoded as the crate encodes it.
    pub(crate) fn of(columns: &[&ArrayRef], nullable: bool) -> Option<Self> {
        let first = columns.first()?.as_any_dictionary_opt()?;
        let values = first.values();
        if values.null_count() > 0 {
            return None;
        }
        let data = values.to_data();
        let rows = columns.iter().map(|c| c.len()).sum();
        let mut keys = Vec::with_capacity(rows);
        for column in columns {
            let dictionary = column.as_any_dictionary_opt()?;
            if !std::sync::Arc::ptr_eq(dictionary.values(), values)
                && dictionary.values().to_data() != data
            {
                return None;
            }
            let k = arrow_cast::cast(dictionary.keys(), &DataType::UInt32).ok()?;
            keys.extend(k.as_primitive::<UInt32Type>().iter());
        }
        let bytes = arrow_cast::cast(values, &DataType::LargeBinary).ok()?;
        let bytes = bytes.as_binary::<i64>();
        let mut page = Vec::with_capacity(bytes.values().len() + 4 * bytes.len());
        for value in bytes.iter().flatten() {
            page.extend_from_slice(&u32::try_from(value.len()).ok()?.to_le_bytes());
            page.extend_from_slice(value);
        }
        Some(GivenDictionary {
            page: page.into(),
            entries: values.len(),
            keys,
            levels: nullable,
        })
    }

    /// `page` rewritten to hold the given dictionary: the dictionary page's body replaced, a
    /// dictionary-encoded data page's indices replaced by its rows' keys, any other page as it
    /// is. `row` is the first row of a data page, advanced past it.
    pub(crate) fn rewrite(&self, page: Page, row: &mut usize) -> Result<Page> {
        let (rows, levels) = match shape(&page) {
            Shape::Dictionary => {
                return Ok(with_body(
                    page,
                    self.page.clone(),
                    None,
                    Some(self.entries as u32),
                ))
            }
            Shape::Data {
                encoding,
                rows,
                levels,
            } => {
                let rows = *row..*row + rows;
                *row = rows.end;
                if !is_dictionary(encoding) {
                    return Ok(page);
                }
                (rows, levels)
            }
        };
        let buf = page.buffer();
        let levels = match levels {
            Some(levels) => levels,
            // v1: the definition levels, if any, are a 4-byte length and that many bytes.
            None if self.levels => {
                let len = buf
                    .get(..4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                    .ok_or_else(|| short_page(buf.len()))?;
                4 + len
            }
            None => 0,
        };
        let buf = self.indices(buf, levels, rows)?;
        Ok(with_body(page, buf, None, None))
    }

    /// A data page's body: its first `levels` bytes (the levels) kept, then the keys of the
    /// non-null rows of `rows`, as a bit width and an RLE/bit-packed hybrid run.
    fn indices(&self, buf: &Bytes, levels: usize, rows: Range<usize>) -> Result<Bytes> {
        let prefix = buf.get(..levels).ok_or_else(|| short_page(buf.len()))?;
        let keys = self.keys.get(rows.clone()).ok_or_else(|| {
            Error::Parquet(format!(
                "a data page covers rows {rows:?} of a chunk of {}",
                self.keys.len()
            ))
        })?;
        let bit_width = match self.entries {
            0 | 1 => 0,
            n => (usize::BITS - (n - 1).leading_zeros()) as u8,
        };
        let valid: Vec<u32> = keys.iter().flatten().copied().collect();
        let mut out = Vec::with_capacity(levels + 1 + valid.len() * bit_width as usize / 8 + 16);
        out.extend_from_slice(prefix);
        out.push(bit_width);
        rle_hybrid(&valid, bit_width, &mut out);
        Ok(out.into())
    }
}

fn is_dictionary(encoding: Encoding) -> bool {
    matches!(
        encoding,
        Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
    )
}

fn short_page(len: usize) -> Error {
    Error::Parquet(format!(
        "the encoder wrote a dictionary-encoded page of {len} bytes, too short for its levels"
    ))
}

/// Literal values a bit-packed run holds at most (63 groups of 8, as Arrow C++ writes them:
/// some readers take no more).
const MAX_LITERALS: usize = 63 * 8;

/// Appends `values` as Parquet's RLE/bit-packed hybrid at `bit_width`: runs of 8 or more
/// equal values as RLE runs, the rest bit-packed in groups of 8.
fn rle_hybrid(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
    let value_bytes = (bit_width as usize).div_ceil(8);
    let mut literals: Vec<u32> = Vec::with_capacity(MAX_LITERALS);
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let run = values[i..].iter().take_while(|&&x| x == v).count();
        if run >= 8 && literals.len() % 8 == 0 {
            bit_pack(&mut literals, bit_width, out);
            push_varint(out, (run as u64) << 1);
            out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
            i += run;
        } else {
            literals.push(v);
            i += 1;
            if literals.len() == MAX_LITERALS {
                bit_pack(&mut literals, bit_width, out);
            }
        }
    }
    bit_pack(&mut literals, bit_width, out);
}

/// Appends `literals` as one bit-packed run (padded with zeros to a multiple of 8, which
/// readers ignore past the values they expect), least significant bits first, and empties it.
fn bit_pack(literals: &mut Vec<u32>, bit_width: u8, out: &mut Vec<u8>) {
    if literals.is_empty() {
        return;
    }
    let groups = literals.len().div_ceil(8);
    literals.resize(groups * 8, 0);
    push_varint(out, ((groups as u64) << 1) | 1);
    let (mut acc, mut bits) = (0u64, 0u32);
    for &v in literals.iter() {
        acc |= u64::from(v) << bits;
        bits += u32::from(bit_width);
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    literals.clear();
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes an RLE/bit-packed hybrid of `n` values at `bit_width`, as the format defines it.
    fn decode(mut buf: &[u8], bit_width: u8, n: usize) -> Vec<u32> {
        let varint = |buf: &mut &[u8]| {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let b = buf[0];
                *buf = &buf[1..];
                v |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    return v;
                }
            }
        };
        let mut out = Vec::new();
        while out.len() < n {
            let header = varint(&mut buf);
            if header & 1 == 0 {
                let bytes = (bit_width as usize).div_ceil(8);
                let mut v = [0u8; 4];
                v[..bytes].copy_from_slice(&buf[..bytes]);
                buf = &buf[bytes..];
                out.extend(std::iter::repeat_n(
                    u32::from_le_bytes(v),
                    (header >> 1) as usize,
                ));
            } else {
                let count = (header >> 1) as usize * 8;
                let (mut acc, mut bits) = (0u64, 0u32);
                for _ in 0..count {
                    while bits < u32::from(bit_width) {
                        acc |= u64::from(buf[0]) << bits;
                        buf = &buf[1..];
                        bits += 8;
                    }
                    let mask = (1u64 << bit_width) - 1;
                    out.push((acc & mask) as u32);
                    acc >>= bit_width;
                    bits -= u32::from(bit_width);
                }
            }
        }
        assert!(buf.is_empty(), "{} bytes left over", buf.len());
        out.truncate(n);
        out
    }

    fn dictionary_pays_8(columns: &[&ArrayRef]) -> bool {
        dictionary_pays(columns, 8)
    }

    fn column(values: impl IntoIterator<Item = i64>) -> ArrayRef {
        std::sync::Arc::new(arrow_array::Int64Array::from_iter_values(values))
    }

    #[test]
    fn a_dictionary_for_repeating_values_and_none_for_distinct_or_sorted_ones() {
        let rows = 200_000i64;
        // Few distinct values in random order: a dictionary.
        let scramble = |i: i64| (i * 7919 + 13) % 1_000_003;
        assert!(dictionary_pays_8(&[&column(
            (0..rows).map(|i| scramble(i) % 2_500)
        )]));
        assert!(dictionary_pays_8(&[&column((0..rows).map(|i| i % 7))]));
        // Mostly distinct, or sorted keys repeated a few times each: plain.
        assert!(!dictionary_pays_8(&[&column((0..rows).map(scramble))]));
        assert!(!dictionary_pays_8(&[&column((0..rows).map(|i| i / 4))]));
        assert!(!dictionary_pays_8(&[&column(0..256)]));
        // A small column is counted whole, across batches; too few values keep it.
        assert!(dictionary_pays_8(&[
            &column((0..128).map(|i| i % 3)),
            &column((0..128).map(|i| i % 3))
        ]));
        assert!(dictionary_pays_8(&[&column(0..10)]));
    }

    #[test]
    fn distinct_counts_as_sorting_does() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (len, range) in [
            (0, 1),
            (1, 1),
            (16, 2),
            (256, 7),
            (1024, 1024),
            (1024, u64::MAX),
        ] {
            let values: Vec<u64> = (0..len)
                .map(|i| match i % 5 {
                    0 => 0,
                    _ => next() % range,
                })
                .collect();
            let mut sorted = values.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(
                distinct(&values, usize::MAX),
                sorted.len(),
                "{len} values below {range}"
            );
            // Stopped at `enough`, or the whole count when there are fewer.
            let enough = sorted.len().div_ceil(2).max(1);
            assert_eq!(distinct(&values, enough), enough.min(sorted.len()));
        }
        // A whole sample of distinct values fills half the table, so probes pass taken slots.
        let full: Vec<u64> = (1..=1024).map(|i| i << 40).collect();
        assert_eq!(distinct(&full, usize::MAX), 1024);
        assert_eq!(distinct(&full, 512), 512);
    }

    #[test]
    fn every_width_nulls_and_slices_are_sampled() {
        let rows = 100_000i32;
        let scramble = |i: i32| ((i as i64 * 7919 + 13) % 1_000_003) as i32;
        let with_nulls = |values: &dyn Fn(i32) -> i32| -> ArrayRef {
            let array = arrow_array::Int32Array::from_iter(
                (0..rows).map(|i| (i % 5 != 0).then(|| values(i))),
            );
            std::sync::Arc::new(array.slice(3, rows as usize - 10))
        };
        assert!(dictionary_pays(&[&with_nulls(&|i| scramble(i) % 1_000)], 4));
        assert!(!dictionary_pays(&[&with_nulls(&scramble)], 4));
        let decimals = |values: &dyn Fn(i32) -> i128| -> ArrayRef {
            let array = arrow_array::Decimal128Array::from_iter_values((0..rows).map(values))
                .with_precision_and_scale(18, 2)
                .unwrap();
            std::sync::Arc::new(array)
        };
        // Negative values too: the low half tells apart what an i64 holds.
        assert!(dictionary_pays(
            &[&decimals(&|i| (scramble(i) % 1_000) as i128 - 500)],
            8
        ));
        assert!(!dictionary_pays(
            &[&decimals(&|i| scramble(i) as i128 - 500_000)],
            8
        ));
        let small: ArrayRef = std::sync::Arc::new(arrow_array::Int16Array::from_iter_values(
            (0..rows).map(|i| (scramble(i) % 30_000) as i16),
        ));
        assert!(!dictionary_pays(&[&small], 4));
        // A slice is sampled from its own first row: distinct values before it, few in it.
        let whole = column((0..rows as i64).map(|i| match i < 50_000 {
            true => i,
            false => i % 7,
        }));
        assert!(dictionary_pays_8(&[&whole.slice(50_000, 50_000)]));
        assert!(!dictionary_pays_8(&[&whole.slice(0, 50_000)]));
    }

    #[test]
    fn runs_and_literals_decode_to_the_values() {
        let cases: Vec<(Vec<u32>, u8)> = vec![
            (vec![], 3),
            (vec![5], 3),
            (vec![1, 2, 3, 4, 5, 6, 7], 3),
            (vec![7; 100], 3),
            ([vec![1, 2, 3], vec![4; 20], vec![0, 1]].concat(), 3),
            ((0..2000).map(|i| i % 1000).collect(), 10),
            ((0..3000).map(|i| (i / 9) % 2).collect(), 1),
            (vec![u32::MAX, 0, u32::MAX], 32),
            (vec![0; 17], 0),
        ];
        for (values, width) in cases {
            let mut out = Vec::new();
            rle_hybrid(&values, width, &mut out);
            assert_eq!(decode(&out, width, values.len()), values, "width {width}");
        }
    }
}
