//! A batch's schema checked against a writer's, for every writer (IPC, Parquet, datasets).

use arrow_schema::{DataType, Field, FieldRef, Schema};

/// Refuses a batch whose fields differ from the writer's in name, type, nullability or
/// extension type. Other metadata, and the names of nested fields, may differ (as in pyarrow).
/// Returns the message for the writer to raise as its own format's error.
pub fn check_schema(expected: &Schema, got: &Schema) -> std::result::Result<(), String> {
    let same = expected.fields().len() == got.fields().len()
        && expected.fields().iter().zip(got.fields()).all(|(a, b)| {
            a.name() == b.name() && a.is_nullable() == b.is_nullable() && same_type(a, b)
        });
    if same {
        return Ok(());
    }
    Err(format!(
        "the batch's schema does not match the writer's schema:\nwriter: {}\nbatch:  {}",
        describe(expected),
        describe(got)
    ))
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
pub fn children(dt: &DataType) -> Vec<&FieldRef> {
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

/// `name, name, ...`: a schema's top-level column names, for messages.
pub fn column_names(schema: &Schema) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}

/// `name: type[ not null], ...` for messages.
pub fn describe(schema: &Schema) -> String {
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
