//! A Parquet bloom filter as a set of a column's values: it answers whether a row group may
//! hold a value, hashing the value as the writer hashed it (its plain encoding). Only types
//! whose plain encoding follows from the Arrow value alone are asked: integers stored in
//! INT32 or INT64 of their width, strings and binaries stored as BYTE_ARRAY. Anything else
//! (floats, whose 0.0 and -0.0 are equal but hash apart; timestamps, whose stored unit may
//! differ from the schema's; decimals) answers "maybe", which never prunes.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;
use parquet::basic::Type as Physical;
use parquet::bloom_filter::Sbbf;

use super::predicate::MayContain;

/// A column chunk's bloom filter, with the column's Arrow type and physical type.
pub struct BloomFilter {
    pub filter: Sbbf,
    pub data_type: DataType,
    pub physical: Physical,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BloomFilter({} as {})", self.data_type, self.physical)
    }
}

impl MayContain for BloomFilter {
    fn may_contain(&self, value: &ArrayRef) -> bool {
        let t = match &self.data_type {
            DataType::Dictionary(_, v) => v.as_ref(),
            t => t,
        };
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        let Ok(v) = cast_with_options(value, t, &options) else {
            return true;
        };
        if v.len() != 1 || v.is_null(0) {
            return true;
        }
        let f = &self.filter;
        match (t, self.physical) {
            (DataType::Int8, Physical::INT32) => {
                f.check(&i32::from(v.as_primitive::<Int8Type>().value(0)))
            }
            (DataType::Int16, Physical::INT32) => {
                f.check(&i32::from(v.as_primitive::<Int16Type>().value(0)))
            }
            (DataType::Int32, Physical::INT32) => f.check(&v.as_primitive::<Int32Type>().value(0)),
            (DataType::UInt8, Physical::INT32) => {
                f.check(&i32::from(v.as_primitive::<UInt8Type>().value(0)))
            }
            (DataType::UInt16, Physical::INT32) => {
                f.check(&i32::from(v.as_primitive::<UInt16Type>().value(0)))
            }
            // Unsigned values are stored as the signed integer of the same bits.
            (DataType::UInt32, Physical::INT32) => {
                f.check(&(v.as_primitive::<UInt32Type>().value(0) as i32))
            }
            (DataType::Int64, Physical::INT64) => f.check(&v.as_primitive::<Int64Type>().value(0)),
            (DataType::UInt64, Physical::INT64) => {
                f.check(&(v.as_primitive::<UInt64Type>().value(0) as i64))
            }
            (DataType::Utf8, Physical::BYTE_ARRAY) => f.check(v.as_string::<i32>().value(0)),
            (DataType::LargeUtf8, Physical::BYTE_ARRAY) => f.check(v.as_string::<i64>().value(0)),
            (DataType::Utf8View, Physical::BYTE_ARRAY) => f.check(v.as_string_view().value(0)),
            (DataType::Binary, Physical::BYTE_ARRAY) => f.check(v.as_binary::<i32>().value(0)),
            (DataType::LargeBinary, Physical::BYTE_ARRAY) => f.check(v.as_binary::<i64>().value(0)),
            (DataType::BinaryView, Physical::BYTE_ARRAY) => f.check(v.as_binary_view().value(0)),
            _ => true,
        }
    }
}
