//! INT96 timestamps (`use_deprecated_int96_timestamps`, and pyarrow's default under
//! `flavor="spark"`), as Impala, Hive and Spark before 2.3 read them: twelve bytes, the
//! nanoseconds of the day (little-endian i64), then the Julian day (little-endian u32).
//!
//! The parquet crate has no INT96 writer, so such a column is encoded as a
//! FIXED_LEN_BYTE_ARRAY of width 12 holding exactly those bytes (PLAIN lays out both types the
//! same way: the values back to back, nothing between), and the chunk is declared INT96 in the
//! file. Like parquet-cpp, the writer keeps no statistics for it: INT96 has no defined order.
//!
//! Read, the parquet crate takes the day as a signed i32 where parquet-cpp takes a u32, so a
//! day past 2^31 (Spark writes such values for far dates) is rewritten first by [`Int96Days`].

use std::sync::Arc;

use ::parquet::basic::Encoding;
use ::parquet::column::page::Page;
use ::parquet::column::writer::ColumnCloseResult;
use ::parquet::file::metadata::ColumnChunkMetaData;
use ::parquet::schema::types::ColumnDescPtr;
use arrow_array::{make_array, Array, ArrayRef, FixedSizeBinaryArray, Int64Array};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, Schema, TimeUnit};

use super::arrow_types::map_types;
use super::body::{swap_body, Body};
use super::steps::PageStep;
use super::steps::{values_start, Levels};
use crate::error::{Error, Result};

/// The bytes of one INT96 value.
pub(crate) const WIDTH: i32 = 12;

/// The Julian day of 1970-01-01.
const JULIAN_UNIX_EPOCH: i64 = 2_440_588;

/// `dt` with every timestamp as the fixed-size binary its INT96 bytes are encoded as (a
/// dictionary of timestamps as its values' bytes).
pub(crate) fn encoded_type(dt: &DataType) -> DataType {
    map_types(dt, &|t| match t {
        DataType::Timestamp(..) => Some(DataType::FixedSizeBinary(WIDTH)),
        DataType::Dictionary(_, v) if matches!(v.as_ref(), DataType::Timestamp(..)) => {
            Some(DataType::FixedSizeBinary(WIDTH))
        }
        _ => None,
    })
}

/// `schema` with its timestamps as [`encoded_type`] makes them.
pub(crate) fn encoded_schema(schema: &Schema) -> Schema {
    Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                Arc::new(
                    f.as_ref()
                        .clone()
                        .with_data_type(encoded_type(f.data_type())),
                )
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    )
}

/// `array` with its timestamps, at any depth, as their INT96 bytes.
pub(crate) fn encode(array: &ArrayRef) -> Result<ArrayRef> {
    if encoded_type(array.data_type()) == *array.data_type() {
        return Ok(array.clone());
    }
    Ok(make_array(encode_data(array.to_data())?))
}

fn encode_data(data: ArrayData) -> Result<ArrayData> {
    let dt = data.data_type().clone();
    match &dt {
        DataType::Timestamp(unit, _) => {
            let values = Int64Array::from(data.into_builder().data_type(DataType::Int64).build()?);
            Ok(timestamps(&values, *unit)?.into_data())
        }
        DataType::Dictionary(_, v) if matches!(v.as_ref(), DataType::Timestamp(..)) => {
            let values = arrow_cast::cast(&make_array(data), v)?;
            encode_data(values.to_data())
        }
        _ => {
            let children = data
                .child_data()
                .iter()
                .cloned()
                .map(encode_data)
                .collect::<Result<Vec<_>>>()?;
            Ok(data
                .into_builder()
                .data_type(encoded_type(&dt))
                .child_data(children)
                .build()?)
        }
    }
}

/// Timestamps in `unit` as INT96 values, nulls kept. The day is the floor of the value over a
/// day's units, so that times before 1970 get the day they fall on and a positive time of
/// day, as parquet-cpp computes them.
fn timestamps(values: &Int64Array, unit: TimeUnit) -> Result<FixedSizeBinaryArray> {
    let per_second: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let per_day = 86_400 * per_second;
    let nanos_per_unit = 1_000_000_000 / per_second;
    let mut bytes: Vec<u8> = Vec::new();
    bytes.try_reserve_exact(values.len() * WIDTH as usize)?;
    for &v in values.values().iter() {
        let day = v.div_euclid(per_day) + JULIAN_UNIX_EPOCH;
        let nanos = v.rem_euclid(per_day) * nanos_per_unit;
        bytes.extend_from_slice(&nanos.to_le_bytes());
        bytes.extend_from_slice(&(day as u32).to_le_bytes());
    }
    Ok(FixedSizeBinaryArray::try_new(
        WIDTH,
        Buffer::from_vec(bytes),
        values.nulls().cloned(),
    )?)
}

/// `close`, a chunk encoded as FIXED_LEN_BYTE_ARRAY(12), declared as the file's INT96 column
/// `descr`: its sizes, offsets, encodings and level histograms kept, its statistics and
/// column index left out (the crate computed them as bytes).
pub(crate) fn declare(
    mut close: ColumnCloseResult,
    descr: ColumnDescPtr,
) -> Result<ColumnCloseResult> {
    let m = &close.metadata;
    if m.column_descr().type_length() != WIDTH {
        return Err(Error::Parquet(format!(
            "column '{}': an INT96 chunk was encoded {} bytes a value",
            descr.path(),
            m.column_descr().type_length()
        )));
    }
    let mut b = ColumnChunkMetaData::builder(descr)
        .set_encodings_mask(*m.encodings_mask())
        .set_num_values(m.num_values())
        .set_compression(m.compression())
        .set_total_compressed_size(m.compressed_size())
        .set_total_uncompressed_size(m.uncompressed_size())
        .set_data_page_offset(m.data_page_offset())
        .set_dictionary_page_offset(m.dictionary_page_offset())
        .set_index_page_offset(m.index_page_offset())
        .set_repetition_level_histogram(m.repetition_level_histogram().cloned())
        .set_definition_level_histogram(m.definition_level_histogram().cloned());
    if let Some(stats) = m.page_encoding_stats() {
        b = b.set_page_encoding_stats(stats.clone());
    }
    if let Some(path) = m.file_path() {
        b = b.set_file_path(path.to_owned());
    }
    close.metadata = b.build()?;
    close.column_index = None;
    close.bloom_filter = None;
    Ok(close)
}

/// The pages of an INT96 chunk with every PLAIN value whose day does not fit an i32 rewritten
/// as a day and nanoseconds that do, which the crate reads as the timestamp parquet-cpp reads
/// from the value in `unit` (its u32 day less the epoch's, times a day in `unit`, plus the
/// nanoseconds in `unit`, wrapping as its arithmetic does). Dictionary-encoded data pages hold
/// indices and pass untouched: their values are in the dictionary page, rewritten here.
///
/// In milliseconds or seconds such a timestamp does not wrap and lies 2^31 days or more from
/// the epoch, which no day the crate reads can say: it is refused, naming the column.
pub(crate) struct Int96Days {
    pub levels: Levels,
    pub unit: TimeUnit,
    pub column: String,
}

impl PageStep for Int96Days {
    fn apply(&mut self, page: Page) -> Result<Page> {
        let plain = match &page {
            Page::DictionaryPage { .. } => true,
            Page::DataPage { encoding, .. } => *encoding == Encoding::PLAIN,
            Page::DataPageV2 {
                encoding,
                is_compressed,
                ..
            } => *encoding == Encoding::PLAIN && !is_compressed,
        };
        if !plain {
            return Ok(page);
        }
        let start = values_start(&page, self.levels);
        let buf = match &page {
            Page::DictionaryPage { buf, .. }
            | Page::DataPage { buf, .. }
            | Page::DataPageV2 { buf, .. } => buf,
        };
        let Some(values) = buf.get(start..) else {
            // Levels longer than the page: the crate's decoder says so.
            return Ok(page);
        };
        // A day of 2^31 or more: the top bit of its last byte.
        let wide = |v: &[u8]| v[11] & 0x80 != 0;
        if !values.chunks_exact(WIDTH as usize).any(wide) {
            return Ok(page);
        }
        // Nanoseconds in one tick of the unit.
        let tick: i64 = match self.unit {
            TimeUnit::Nanosecond => 1,
            TimeUnit::Microsecond => 1_000,
            TimeUnit::Millisecond | TimeUnit::Second => {
                return Err(Error::Parquet(format!(
                    "column '{}': an INT96 value's day is 2^31 or more, past what a timestamp \
                     in {:?}s read from it can hold",
                    self.column, self.unit
                )))
            }
        };
        let per_day = 86_400 * 1_000_000_000 / tick;
        let mut out = buf.to_vec();
        for v in out[start..].chunks_exact_mut(WIDTH as usize) {
            if wide(v) {
                let nanos = i64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
                let day = u32::from_le_bytes(v[8..12].try_into().expect("4 bytes"));
                let since_epoch = (i64::from(day) - JULIAN_UNIX_EPOCH)
                    .wrapping_mul(per_day)
                    .wrapping_add(nanos / tick);
                // At most i64::MAX over a day in microseconds (about 1.1e8) days from the epoch:
                // the new day fits an i32, and its remainder in nanoseconds an i64.
                let days = since_epoch.div_euclid(per_day) + JULIAN_UNIX_EPOCH;
                let rest = since_epoch.rem_euclid(per_day) * tick;
                v[..8].copy_from_slice(&rest.to_le_bytes());
                v[8..12].copy_from_slice(&(days as u32).to_le_bytes());
            }
        }
        let out = bytes::Bytes::from(out);
        swap_body(page, |body| {
            let compressed = match body {
                Body::Whole(_) => false,
                Body::V2 { is_compressed, .. } => is_compressed,
            };
            Ok((out, compressed))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int96(v: &[u8]) -> (i64, u32) {
        (
            i64::from_le_bytes(v[..8].try_into().unwrap()),
            u32::from_le_bytes(v[8..].try_into().unwrap()),
        )
    }

    #[test]
    fn values_are_the_day_and_the_nanoseconds_into_it() {
        let ms = Int64Array::from(vec![Some(0), Some(86_400_000 + 1), Some(-1), None]);
        let out = timestamps(&ms, TimeUnit::Millisecond).unwrap();
        assert_eq!(int96(out.value(0)), (0, 2_440_588));
        assert_eq!(int96(out.value(1)), (1_000_000, 2_440_589));
        // A millisecond before 1970: the day before, its last millisecond.
        assert_eq!(
            int96(out.value(2)),
            (86_400_000_000_000 - 1_000_000, 2_440_587)
        );
        assert!(out.is_null(3));
        // The year 3000 in seconds: past what nanoseconds since 1970 hold, and still exact.
        let s = Int64Array::from(vec![32_503_680_000]);
        let out = timestamps(&s, TimeUnit::Second).unwrap();
        assert_eq!(int96(out.value(0)), (0, 2_440_588 + 376_200));
    }

    #[test]
    fn nested_timestamps_are_encoded_where_they_are() {
        use arrow_array::builder::{ListBuilder, TimestampMicrosecondBuilder};
        let mut b = ListBuilder::new(TimestampMicrosecondBuilder::new());
        b.values().append_value(1);
        b.values().append_value(2);
        b.append(true);
        b.append(false);
        b.values().append_value(86_400_000_000);
        b.append(true);
        let list: ArrayRef = Arc::new(b.finish());
        let sliced = list.slice(1, 2);
        let out = encode(&sliced).unwrap();
        assert_eq!(out.data_type(), &encoded_type(sliced.data_type()));
        let out = out
            .as_any()
            .downcast_ref::<arrow_array::ListArray>()
            .unwrap();
        assert!(out.is_null(0));
        let last = out.value(1);
        let last = last
            .as_any()
            .downcast_ref::<FixedSizeBinaryArray>()
            .unwrap();
        assert_eq!(int96(last.value(0)), (0, 2_440_589));
    }
}
