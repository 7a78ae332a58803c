//! What a Parquet writer stores for the Arrow schema it is given: the Arrow types coerced to
//! what the file can hold under the writer's options (the `ARROW:schema` readers restore),
//! and the Parquet schema of those types with pyarrow's choices where the parquet crate makes
//! others (decimals, time zones of times, list element names).

use std::sync::Arc;

use ::parquet::arrow::ArrowSchemaConverter;
use ::parquet::basic::{LogicalType, Repetition, Type as Physical};
use ::parquet::schema::types::{SchemaDescriptor, Type, TypePtr};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, FieldRef, IntervalUnit, Schema, TimeUnit};

use super::arrow_types::{map_types, values_only_dictionary};
use super::options::{FormatVersion, WriteOptions};
use crate::error::{catch_panics, Error, Result};

/// The characters Spark refuses in a column name, replaced by `_` under `flavor="spark"`.
const SPARK_REFUSES: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// The schema stored for `schema`: each field's type as `coerce` makes it, and under the Spark
/// flavor each top-level name with the characters Spark refuses replaced, as pyarrow does.
pub(crate) fn stored_schema(schema: &Schema, options: &WriteOptions) -> Schema {
    coerced_schema(schema, options, false)
}

/// The schema `ARROW:schema` declares: the stored one, but with list views as the list views
/// they were, which readers restore from it (pyarrow's and zstdpool's read pyarrow's files so).
pub(crate) fn declared_schema(schema: &Schema, options: &WriteOptions) -> Schema {
    coerced_schema(schema, options, true)
}

fn coerced_schema(schema: &Schema, options: &WriteOptions, views: bool) -> Schema {
    Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                let mut f =
                    f.as_ref()
                        .clone()
                        .with_data_type(coerce(f.data_type(), options, views));
                if options.spark_names {
                    let name = f.name().replace(SPARK_REFUSES, "_");
                    f = f.with_name(name);
                }
                Arc::new(f)
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    )
}

/// `dt` as stored. Parquet has no seconds unit for timestamps or times, so they are stored in
/// milliseconds, as pyarrow stores them (readers then see milliseconds, as after pyarrow);
/// `coerce_timestamps` and the format version may coarsen timestamps further, and version 1.0
/// has no unsigned 32-bit integers. There are no list views; a fixed-size binary dictionary
/// is stored as its values, as is a boolean one. With `views`, list views are kept (what
/// `ARROW:schema` declares; the column writers are given lists).
fn coerce(dt: &DataType, options: &WriteOptions, views: bool) -> DataType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(coerce(f.data_type(), options, views)),
        )
    };
    map_types(dt, &|t| match t {
        DataType::Timestamp(unit, tz) => {
            let unit = timestamp_unit(*unit, options);
            (unit != unit_of(t)).then(|| DataType::Timestamp(unit, tz.clone()))
        }
        DataType::Time32(TimeUnit::Second) => Some(DataType::Time32(TimeUnit::Millisecond)),
        DataType::UInt32 if options.format_version == FormatVersion::V1_0 => Some(DataType::Int64),
        // Parquet has no list views: their values are stored as the lists they are.
        DataType::ListView(f) if views => Some(DataType::ListView(field(f))),
        DataType::LargeListView(f) if views => Some(DataType::LargeListView(field(f))),
        DataType::ListView(f) => Some(DataType::List(field(f))),
        DataType::LargeListView(f) => Some(DataType::LargeList(field(f))),
        // A fixed-size binary or boolean dictionary as its values (Parquet's own dictionary
        // encoding still applies): pyarrow cannot read a fixed-size binary one that
        // `ARROW:schema` declares a dictionary when arrow-rs wrote it ("Unencoded byte array
        // data bytes does not support FIXED_LEN_BYTE_ARRAY"), and the crate's reader cannot
        // read a boolean one.
        t => values_only_dictionary(t).map(|v| coerce(v, options, views)),
    })
}

fn unit_of(dt: &DataType) -> TimeUnit {
    match dt {
        DataType::Timestamp(unit, _) => *unit,
        _ => TimeUnit::Nanosecond,
    }
}

/// The unit a timestamp in `unit` is stored in: `coerce_timestamps` when given; else its own,
/// but seconds as milliseconds, and nanoseconds as microseconds before version 2.6. As INT96,
/// which holds nanoseconds, every unit is kept (its values exactly), as pyarrow keeps it.
fn timestamp_unit(unit: TimeUnit, options: &WriteOptions) -> TimeUnit {
    if options.int96_timestamps {
        return unit;
    }
    if let Some(to) = options.coerce_timestamps {
        return to;
    }
    match unit {
        TimeUnit::Second => TimeUnit::Millisecond,
        TimeUnit::Nanosecond if options.format_version < FormatVersion::V2_6 => {
            TimeUnit::Microsecond
        }
        u => u,
    }
}

fn per_second(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

/// Whether storing a value of type `from` as `to` puts a timestamp in a coarser unit.
pub(crate) fn coarsens(from: &DataType, to: &DataType) -> bool {
    use DataType as D;
    match (from, to) {
        (D::Timestamp(a, _), D::Timestamp(b, _)) => per_second(*a) > per_second(*b),
        (
            D::List(f) | D::LargeList(f) | D::ListView(f) | D::LargeListView(f) | D::Map(f, _),
            D::List(g) | D::LargeList(g) | D::ListView(g) | D::LargeListView(g) | D::Map(g, _),
        )
        | (D::FixedSizeList(f, _), D::FixedSizeList(g, _)) => {
            coarsens(f.data_type(), g.data_type())
        }
        (D::Struct(fs), D::Struct(gs)) => fs
            .iter()
            .zip(gs.iter())
            .any(|(f, g)| coarsens(f.data_type(), g.data_type())),
        (D::Dictionary(_, v), D::Dictionary(_, w)) => coarsens(v, w),
        (D::Dictionary(_, v), w) => coarsens(v, w),
        _ => false,
    }
}

/// Refuses `column`, whose timestamps `stored` holds in a coarser unit, when that dropped a
/// remainder, as pyarrow refuses it unless `allow_truncated_timestamps`: "Casting from
/// timestamp[ns] to timestamp[us] would lose data: 1001", naming the column. The stored
/// values are cast back and compared with the given ones, so that only values the column
/// holds count (not those beyond a slice of a list's values, nor unused dictionary entries).
pub(crate) fn check_truncation(name: &str, column: &ArrayRef, stored: &ArrayRef) -> Result<()> {
    let back = arrow_cast::cast(stored, column.data_type())?;
    if back.to_data() == column.to_data() {
        return Ok(());
    }
    let value = match (
        column.as_primitive_opt::<TimestampNanosecondType>(),
        column.as_primitive_opt::<TimestampMicrosecondType>(),
        column.as_primitive_opt::<TimestampMillisecondType>(),
    ) {
        (Some(a), _, _) => first_change(
            a.iter(),
            back.as_primitive::<TimestampNanosecondType>().iter(),
        ),
        (_, Some(a), _) => first_change(
            a.iter(),
            back.as_primitive::<TimestampMicrosecondType>().iter(),
        ),
        (_, _, Some(a)) => first_change(
            a.iter(),
            back.as_primitive::<TimestampMillisecondType>().iter(),
        ),
        _ => None,
    };
    let value = value.map_or_else(String::new, |v| format!(": {v}"));
    Err(Error::Parquet(format!(
        "column '{name}': casting from {} to {} would lose data{value} (pass \
         allow_truncated_timestamps=True to truncate)",
        column.data_type(),
        stored.data_type()
    )))
}

/// The first given value that the round trip changed.
fn first_change(
    given: impl Iterator<Item = Option<i64>>,
    back: impl Iterator<Item = Option<i64>>,
) -> Option<i64> {
    given.zip(back).find(|(a, b)| a != b).and_then(|(a, _)| a)
}

/// The Parquet schema of `schema` (the stored one), or an error naming the first column
/// Parquet cannot hold.
pub(crate) fn parquet_schema(schema: &Schema, options: &WriteOptions) -> Result<SchemaDescriptor> {
    parquet_schema_as(schema, schema, options)
}

/// The Parquet schema of `schema`, what the column writers encode, with its leaves declared
/// as the types of `stored` ask: a timestamp encoded as INT96 bytes (see `int96`) is an INT96
/// leaf in the file.
pub(crate) fn parquet_schema_as(
    schema: &Schema,
    stored: &Schema,
    options: &WriteOptions,
) -> Result<SchemaDescriptor> {
    // Refused before anything is written, rows or none: the crate converts both types to a
    // Parquet schema, then panics (width 0) or fails (intervals) at the first value.
    for field in schema.fields() {
        let why = std::cell::Cell::new(None);
        map_types(field.data_type(), &|t| {
            match t {
                DataType::FixedSizeBinary(0) => why.set(Some(
                    "a fixed-size binary of width 0 has no FIXED_LEN_BYTE_ARRAY, whose length is \
                     at least 1",
                )),
                DataType::Interval(IntervalUnit::MonthDayNano) => why.set(Some(
                    "Parquet's INTERVAL holds milliseconds, not a month-day-nanosecond interval",
                )),
                _ => {}
            }
            None
        });
        if let Some(why) = why.get() {
            return Err(Error::Parquet(format!(
                "column '{}' ({}) cannot be written to Parquet: {why}",
                field.name(),
                field.data_type()
            )));
        }
    }
    let convert = |s: &Schema| {
        catch_panics("converting the schema", || {
            Ok(ArrowSchemaConverter::new()
                .with_coerce_types(true)
                .convert(s)?)
        })
    };
    let converted = match convert(schema) {
        Ok(s) => s,
        Err(whole) => {
            for field in schema.fields() {
                let one = Schema::new(vec![field.clone()]);
                if let Err(e) = convert(&one) {
                    return Err(Error::Parquet(format!(
                        "column '{}' ({}) cannot be written to Parquet: {e}",
                        field.name(),
                        field.data_type()
                    )));
                }
            }
            return Err(whole);
        }
    };
    if options.decimal_as_integer
        && !options.time_adjusted_to_utc
        && options.compliant_nested_types
        && !options.int96_timestamps
    {
        return Ok(converted);
    }
    let root = converted.root_schema();
    let fields = root
        .get_fields()
        .iter()
        .zip(stored.fields())
        .map(|(t, f)| adjust(f.data_type(), t, options, None).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    let root = Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()?;
    Ok(SchemaDescriptor::new(Arc::new(root)))
}

/// `t`, the crate's Parquet type for a value of Arrow type `dt`, with pyarrow's choices where
/// the options ask for them: decimals as FIXED_LEN_BYTE_ARRAY, times adjusted to UTC or not,
/// and list elements under their Arrow names when not compliant; named `name` when given.
fn adjust(dt: &DataType, t: &TypePtr, options: &WriteOptions, name: Option<&str>) -> Result<Type> {
    let info = t.get_basic_info();
    let name = name.unwrap_or(info.name());
    let id = info.has_id().then(|| info.id());
    if t.is_primitive() {
        let (mut physical, mut length) = (t.get_physical_type(), -1);
        let mut logical = info.logical_type_ref().cloned();
        let (mut precision, mut scale) = (-1, -1);
        if let Type::PrimitiveType {
            type_length,
            precision: p,
            scale: s,
            ..
        } = t.as_ref()
        {
            length = *type_length;
            precision = *p;
            scale = *s;
        }
        let timestamp = |t: &DataType| matches!(t, DataType::Timestamp(..));
        let int96 = match dt {
            DataType::Dictionary(_, v) => timestamp(v),
            t => timestamp(t),
        };
        if options.int96_timestamps && int96 {
            return Ok(Type::primitive_type_builder(name, Physical::INT96)
                .with_repetition(info.repetition())
                .with_id(id)
                .build()?);
        }
        match &mut logical {
            Some(LogicalType::Decimal(d))
                if !options.decimal_as_integer
                    && matches!(physical, Physical::INT32 | Physical::INT64) =>
            {
                physical = Physical::FIXED_LEN_BYTE_ARRAY;
                length = decimal_bytes(d.precision);
            }
            Some(LogicalType::Time(time)) => {
                time.is_adjusted_to_u_t_c = options.time_adjusted_to_utc
            }
            _ => {}
        }
        let mut b = Type::primitive_type_builder(name, physical)
            .with_repetition(info.repetition())
            .with_logical_type(logical)
            .with_length(length)
            .with_precision(precision)
            .with_scale(scale)
            .with_id(id);
        if !matches!(info.logical_type_ref(), Some(LogicalType::Time(_))) {
            b = b.with_converted_type(info.converted_type());
        }
        return Ok(b.build()?);
    }
    let children = t.get_fields();
    let list_child = match dt {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Some(f),
        _ => None,
    };
    let fields: Vec<TypePtr> = match (dt, list_child) {
        // LIST: a repeated group holding the element.
        (_, Some(element)) if children.len() == 1 && !children[0].is_primitive() => {
            let repeated = &children[0];
            let inner = repeated.get_fields();
            let renamed = (!options.compliant_nested_types).then(|| element.name().as_str());
            let element_type = adjust(element.data_type(), &inner[0], options, renamed)?;
            let group = Type::group_type_builder(repeated.name())
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![Arc::new(element_type)])
                .build()?;
            vec![Arc::new(group)]
        }
        (DataType::Struct(fs), _) => children
            .iter()
            .zip(fs.iter())
            .map(|(c, f)| adjust(f.data_type(), c, options, None).map(Arc::new))
            .collect::<Result<_>>()?,
        (DataType::Map(entries, _), _) if children.len() == 1 => match entries.data_type() {
            DataType::Struct(kf) => {
                let kv = &children[0];
                let inner = kv
                    .get_fields()
                    .iter()
                    .zip(kf.iter())
                    .map(|(c, f)| adjust(f.data_type(), c, options, None).map(Arc::new))
                    .collect::<Result<Vec<_>>>()?;
                let group = Type::group_type_builder(kv.name())
                    .with_repetition(kv.get_basic_info().repetition())
                    .with_fields(inner)
                    .build()?;
                vec![Arc::new(group)]
            }
            _ => children.to_vec(),
        },
        (DataType::Dictionary(_, v), _) => return adjust(v, t, options, Some(name)),
        _ => children.to_vec(),
    };
    let mut b = Type::group_type_builder(name)
        .with_fields(fields)
        .with_logical_type(info.logical_type_ref().cloned())
        .with_converted_type(info.converted_type())
        .with_id(id);
    if info.has_repetition() {
        b = b.with_repetition(info.repetition());
    }
    Ok(b.build()?)
}

/// The bytes of the shortest two's complement integer that holds every decimal of
/// `precision` digits: what a FIXED_LEN_BYTE_ARRAY decimal is stored in.
fn decimal_bytes(precision: i32) -> i32 {
    let bits = (precision as f64 * std::f64::consts::LOG2_10).ceil() as i32 + 1;
    (bits + 7) / 8
}
