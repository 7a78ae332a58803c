//! Schemas read from the wire, and checked for types no Arrow implementation can use.

use arrow_ipc::Message;
use arrow_schema::{
    DataType, Schema, DECIMAL128_MAX_PRECISION, DECIMAL256_MAX_PRECISION, DECIMAL32_MAX_PRECISION,
    DECIMAL64_MAX_PRECISION,
};

use crate::batch_schema::children;
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
