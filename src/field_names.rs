//! Field names as pyarrow holds them. The Arrow C data interface, through which every writer
//! imports its data, carries a field's name as a C string, so a name with a NUL byte arrives
//! cut there: `x\0y` would be written as `x`, and two such columns as duplicates. pyarrow's own
//! objects still hold the whole names, and they are read back from them here. Readers hand
//! such columns to pyarrow under placeholder names and rename them there.

use std::sync::Arc;

use arrow_schema::{DataType, FieldRef, Schema, SchemaRef};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use zstdpool_core::batch_schema::children;

use crate::buffer::{is_pyarrow_class, PyarrowClass};
use crate::errors;

/// pyarrow's objects that hold a schema.
const HOLDERS: [PyarrowClass; 3] = [
    PyarrowClass::Table,
    PyarrowClass::RecordBatch,
    PyarrowClass::RecordBatchReader,
];

/// Whether `data` is one of pyarrow's own objects whose names can be read back. Other
/// producers' names cannot: what they export is all there is.
pub fn is_pyarrow(data: &Bound<'_, PyAny>) -> bool {
    HOLDERS.iter().any(|&h| is_pyarrow_class(data, h))
}

/// The pyarrow Schema behind `data`, when `data` is one of pyarrow's own objects.
fn pyarrow_schema<'py>(data: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if is_pyarrow_class(data, PyarrowClass::Schema) {
        return Ok(Some(data.clone()));
    }
    if is_pyarrow(data) {
        return data.getattr(intern!(data.py(), "schema")).map(Some);
    }
    Ok(None)
}

/// `imported` with the top-level names that `data` holds where the C data interface cut them,
/// or None when none was cut. A cut name inside a nested type is refused rather than written
/// cut: renaming it would mean rebuilding the column's arrays.
///
/// The cost on a write is reading `schema.names` (under a microsecond), and for nested columns
/// a walk of their pyarrow types.
pub fn restore(data: &Bound<'_, PyAny>, imported: &Schema) -> PyResult<Option<SchemaRef>> {
    let Some(schema) = pyarrow_schema(data)? else {
        return Ok(None);
    };
    let names = schema.getattr(intern!(data.py(), "names"))?;
    let names = names.cast::<PyList>()?;
    if names.len() != imported.fields().len() {
        return Ok(None);
    }
    let mut renamed: Option<Vec<FieldRef>> = None;
    for (i, (name, field)) in names.iter().zip(imported.fields()).enumerate() {
        let name = name.cast::<PyString>()?.to_cow()?;
        if name != field.name().as_str() {
            let fields = renamed.get_or_insert_with(|| imported.fields().iter().cloned().collect());
            fields[i] = Arc::new(field.as_ref().clone().with_name(name));
        }
    }
    if imported
        .fields()
        .iter()
        .any(|f| !children(f.data_type()).is_empty())
    {
        check_nested(&schema, imported)?;
    }
    Ok(renamed.map(|fields| {
        Arc::new(Schema::new_with_metadata(
            fields,
            imported.metadata().clone(),
        ))
    }))
}

/// Refuses a nested field whose name the C data interface cut, found by walking pyarrow's
/// types beside the imported ones (`num_fields` and `field(i)` on every nested pyarrow type).
/// A walk of pyarrow's objects costs well under a microsecond for a few nested fields, a
/// fraction of what serializing the schema to read its names would.
fn check_nested(schema: &Bound<'_, PyAny>, imported: &Schema) -> PyResult<()> {
    let py = schema.py();
    for (i, field) in imported.fields().iter().enumerate() {
        if children(field.data_type()).is_empty() {
            continue;
        }
        let theirs = schema.call_method1(intern!(py, "field"), (i,))?;
        if let Some(name) = first_cut(&theirs.getattr(intern!(py, "type"))?, field.data_type())? {
            return Err(errors::parameter(format!(
                "column {i} ({:?}) holds a nested field named {name:?}, with a NUL byte: the \
                 Arrow C data interface, through which zstdpool imports data, ends a name at \
                 its first NUL, so it cannot be written whole; rename the field",
                field.name()
            )));
        }
    }
    Ok(())
}

/// The first name below pyarrow's type `theirs` that differs from its counterpart below `dt`.
/// An extension type is walked through its storage type, which is what the C data interface
/// exports; where the two still do not line up, nothing is compared.
fn first_cut(theirs: &Bound<'_, PyAny>, dt: &DataType) -> PyResult<Option<String>> {
    let py = theirs.py();
    let storage = intern!(py, "storage_type");
    let theirs = match theirs.hasattr(storage)? {
        true => theirs.getattr(storage)?,
        false => theirs.clone(),
    };
    if let DataType::Dictionary(_, values) = dt {
        return first_cut(&theirs.getattr(intern!(py, "value_type"))?, values);
    }
    let children = children(dt);
    let count: usize = theirs.getattr(intern!(py, "num_fields"))?.extract()?;
    if count != children.len() {
        return Ok(None);
    }
    for (j, child) in children.into_iter().enumerate() {
        let field = theirs.call_method1(intern!(py, "field"), (j,))?;
        let name = field.getattr(intern!(py, "name"))?;
        let name = name.cast::<PyString>()?.to_cow()?;
        if name != child.name().as_str() {
            return Ok(Some(name.into_owned()));
        }
        if let Some(cut) = first_cut(&field.getattr(intern!(py, "type"))?, child.data_type())? {
            return Ok(Some(cut));
        }
    }
    Ok(None)
}

/// For a schema with a top-level name that holds a NUL byte: the schema with placeholder names
/// that can cross the C data interface, and the real names to give the columns on the other
/// side (`rename_columns`). None, the common case, when every name can cross as it is.
pub fn exportable(schema: &SchemaRef) -> Option<(SchemaRef, Vec<String>)> {
    if !schema.fields().iter().any(|f| f.name().contains('\0')) {
        return None;
    }
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| Arc::new(f.as_ref().clone().with_name(format!("column {i}"))))
        .collect();
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    Some((
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        names,
    ))
}
