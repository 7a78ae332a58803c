//! Arrow types as the Parquet reader and writer see them: dictionaries the parquet crate
//! cannot decode as dictionaries, those written as given, and a walk over nested types.

use std::sync::Arc;

use arrow_schema::{DataType, FieldRef};

/// The values of a dictionary the parquet crate cannot decode into a dictionary (of fixed-size
/// binaries, or of booleans, which its reader refuses as an invalid physical type): written
/// and read as their values, as pyarrow reads both back.
pub(crate) fn values_only_dictionary(dt: &DataType) -> Option<&DataType> {
    match dt {
        DataType::Dictionary(_, v)
            if matches!(v.as_ref(), DataType::FixedSizeBinary(_) | DataType::Boolean) =>
        {
            Some(v)
        }
        _ => None,
    }
}

/// `dt` with `swap` applied to it and to every type nested in it, outermost first: where
/// `swap` gives a type, that type is used as it is; elsewhere the children are mapped.
pub(crate) fn map_types(dt: &DataType, swap: &dyn Fn(&DataType) -> Option<DataType>) -> DataType {
    if let Some(t) = swap(dt) {
        return t;
    }
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(map_types(f.data_type(), swap)),
        )
    };
    match dt {
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::ListView(f) => DataType::ListView(field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect()),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(map_types(v, swap))),
        other => other.clone(),
    }
}

/// Whether the dictionary of a column of type `dt` can be written as given: strings or
/// binaries, which pyarrow reads back into a dictionary (it decodes other value types).
pub(crate) fn writes_given_dictionary(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(_, v) => matches!(
            v.as_ref(),
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
        ),
        _ => false,
    }
}
