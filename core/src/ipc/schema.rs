//! Schemas: read from the wire and checked, and a batch's schema checked against a writer's.

use arrow_ipc::Message;
use arrow_schema::{
    DataType, Field, FieldRef, Schema, DECIMAL128_MAX_PRECISION, DECIMAL256_MAX_PRECISION,
    DECIMAL32_MAX_PRECISION, DECIMAL64_MAX_PRECISION,
};

use crate::error::{catch_panics, Error, Result};

pub(crate) fn schema_from_message(msg: &Message<'_>) -> Result<Schema> {
    let fb = msg.header_as_schema().ok_or_else(|| {
        Error::Ipc(format!(
            "an IPC stream must start with a schema message, found {:?}",
            msg.header_type()
        ))
    })?;
    schema_from_fb(fb)
}

pub(crate) fn schema_from_fb(fb: arrow_ipc::Schema<'_>) -> Result<Schema> {
    if fb.fields().is_none() {
        return Err(Error::Ipc("schema without a field list".into()));
    }
    if fb.endianness() != arrow_ipc::Endianness::Little {
        return Err(Error::Ipc("big-endian IPC data is not supported".into()));
    }
    let schema = catch_panics("reading the schema", || {
        Ok(arrow_ipc::convert::fb_to_schema(fb))
    })?;
    validate_schema(&schema)?;
    Ok(schema)
}

/// Refuses types that arrow-ipc accepts but no Arrow implementation can use (found by fuzzing:
/// a decimal of precision 0).
fn validate_schema(schema: &Schema) -> Result<()> {
    fn check(dt: &DataType) -> Result<()> {
        let (precision, max) = match dt {
            DataType::Decimal32(p, _) => (*p, DECIMAL32_MAX_PRECISION),
            DataType::Decimal64(p, _) => (*p, DECIMAL64_MAX_PRECISION),
            DataType::Decimal128(p, _) => (*p, DECIMAL128_MAX_PRECISION),
            DataType::Decimal256(p, _) => (*p, DECIMAL256_MAX_PRECISION),
            DataType::Dictionary(k, v) => return check(k).and(check(v)),
            _ => {
                for child in children(dt) {
                    check(child.data_type())?;
                }
                return Ok(());
            }
        };
        if precision == 0 || precision > max {
            return Err(Error::Ipc(format!(
                "invalid type {dt}: decimal precision must be from 1 to {max}"
            )));
        }
        Ok(())
    }
    schema
        .fields()
        .iter()
        .try_for_each(|f| check(f.data_type()))
}

/// Refuses a batch whose fields differ from the writer's in name, type, nullability or
/// extension type. Other metadata, and the names of nested fields, may differ (as in pyarrow).
pub(crate) fn check_schema(expected: &Schema, got: &Schema) -> Result<()> {
    let same = expected.fields().len() == got.fields().len()
        && expected.fields().iter().zip(got.fields()).all(|(a, b)| {
            a.name() == b.name() && a.is_nullable() == b.is_nullable() && same_type(a, b)
        });
    if same {
        return Ok(());
    }
    Err(Error::Ipc(format!(
        "the batch's schema does not match the writer's schema:\nwriter: {}\nbatch:  {}",
        describe(expected),
        describe(got)
    )))
}

/// Whether two fields have the same type, extension types (kept in field metadata) included.
fn same_type(a: &Field, b: &Field) -> bool {
    const EXTENSION_KEYS: [&str; 2] = ["ARROW:extension:name", "ARROW:extension:metadata"];
    let extension = |f: &Field| EXTENSION_KEYS.map(|k| f.metadata().get(k).cloned());
    if extension(a) != extension(b) || !a.data_type().equals_datatype(b.data_type()) {
        return false;
    }
    // Struct and union members are told apart by name; a list's item name is a convention.
    let named = matches!(a.data_type(), DataType::Struct(_) | DataType::Union(..));
    let (ca, cb) = (children(a.data_type()), children(b.data_type()));
    ca.len() == cb.len()
        && ca
            .iter()
            .zip(&cb)
            .all(|(x, y)| (!named || x.name() == y.name()) && same_type(x, y))
}

/// The child fields of nested types.
pub(crate) fn children(dt: &DataType) -> Vec<&FieldRef> {
    match dt {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![f],
        DataType::Struct(fields) => fields.iter().collect(),
        DataType::Union(fields, _) => fields.iter().map(|(_, f)| f).collect(),
        DataType::Dictionary(_, values) => children(values),
        DataType::RunEndEncoded(r, v) => vec![r, v],
        _ => vec![],
    }
}

fn describe(schema: &Schema) -> String {
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| {
            format!(
                "{}: {}{}",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "" } else { " not null" }
            )
        })
        .collect();
    fields.join(", ")
}
