//! Reading some of a batch's columns: which of a message's buffers belong to the columns
//! read, so that only those are decompressed. arrow-ipc's decoder skips the other columns'
//! buffers without reading them; the count per field here follows its `skip_field`.

use std::collections::VecDeque;

use arrow_ipc::MetadataVersion;
use arrow_schema::{DataType, Field, Schema, UnionMode};

use crate::error::{Error, Result};

/// Top-level columns to read, in schema order and without repeats (as pyarrow's
/// `IpcReadOptions.included_fields` reads them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection(Vec<usize>);

impl Projection {
    /// Checks `columns` against a schema of `num_fields` fields.
    pub fn new(mut columns: Vec<usize>, num_fields: usize) -> Result<Self> {
        if let Some(&bad) = columns.iter().find(|&&i| i >= num_fields) {
            // Ipc, not Parameter: the index does not fit this data's schema (pyarrow raises
            // ArrowInvalid for it too).
            return Err(Error::Ipc(format!(
                "included_fields: field index {bad} is out of range: the schema has {num_fields} \
                 fields"
            )));
        }
        columns.sort_unstable();
        columns.dedup();
        Ok(Projection(columns))
    }

    pub fn columns(&self) -> &[usize] {
        &self.0
    }

    /// For each of a record batch's `num_buffers` buffers, whether a projected column uses it.
    pub fn buffer_mask(
        &self,
        schema: &Schema,
        variadic_counts: &[i64],
        version: MetadataVersion,
        num_buffers: usize,
    ) -> Result<Vec<bool>> {
        let mut counts: VecDeque<i64> = variadic_counts.iter().copied().collect();
        let mut mask = Vec::with_capacity(num_buffers);
        for (i, field) in schema.fields().iter().enumerate() {
            let n = buffer_count(field, &mut counts, version)?;
            let wanted = self.0.binary_search(&i).is_ok();
            mask.extend(std::iter::repeat_n(wanted, n));
        }
        if mask.len() != num_buffers {
            return Err(Error::Ipc(format!(
                "the record batch has {num_buffers} buffers, its schema's columns {}",
                mask.len()
            )));
        }
        Ok(mask)
    }
}

/// The buffers `field` takes in a record batch, its children's included.
fn buffer_count(
    field: &Field,
    variadic: &mut VecDeque<i64>,
    version: MetadataVersion,
) -> Result<usize> {
    use DataType::*;
    let children = |fields: &mut dyn Iterator<Item = &Field>, v: &mut VecDeque<i64>| {
        let mut n = 0;
        for f in fields {
            n += buffer_count(f, v, version)?;
        }
        Ok::<_, Error>(n)
    };
    Ok(match field.data_type() {
        Null => 0,
        Utf8 | Binary | LargeUtf8 | LargeBinary => 3,
        Utf8View | BinaryView => {
            let extra = variadic.pop_front().ok_or_else(|| {
                Error::Ipc(format!(
                    "the record batch has no variadic buffer count for column '{}'",
                    field.name()
                ))
            })?;
            let extra = usize::try_from(extra)
                .map_err(|_| Error::Ipc(format!("invalid variadic buffer count {extra}")))?;
            2 + extra
        }
        List(child) | LargeList(child) | Map(child, _) => {
            2 + buffer_count(child, variadic, version)?
        }
        ListView(child) | LargeListView(child) => 3 + buffer_count(child, variadic, version)?,
        FixedSizeList(child, _) => 1 + buffer_count(child, variadic, version)?,
        Struct(fields) => 1 + children(&mut fields.iter().map(|f| f.as_ref()), variadic)?,
        RunEndEncoded(run_ends, values) => {
            buffer_count(run_ends, variadic, version)? + buffer_count(values, variadic, version)?
        }
        Union(fields, mode) => {
            let own = usize::from(version < MetadataVersion::V5)
                + 1
                + usize::from(*mode == UnionMode::Dense);
            own + children(&mut fields.iter().map(|(_, f)| f.as_ref()), variadic)?
        }
        // Validity and values (for a dictionary, its indices).
        _ => 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Fields;

    #[test]
    fn buffers_are_assigned_to_their_top_level_column() {
        let schema = Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("v", DataType::Utf8View, true),
            Field::new_list("l", Field::new("x", DataType::Int64, true), true),
            Field::new_struct(
                "st",
                Fields::from(vec![
                    Field::new("a", DataType::Boolean, true),
                    Field::new("b", DataType::BinaryView, true),
                ]),
                true,
            ),
            Field::new("n", DataType::Null, true),
        ]);
        let p = Projection::new(vec![4, 1], 6).unwrap();
        assert_eq!(p.columns(), &[1, 4]);
        // i: 2, s: 3, v: 2 + 1, l: 2 + 2, st: 1 + 2 + (2 + 2), n: 0.
        let mask = p
            .buffer_mask(&schema, &[1, 2], MetadataVersion::V5, 19)
            .unwrap();
        let mut expected = vec![false; 2];
        expected.extend([true; 3]);
        expected.extend([false; 3 + 4]);
        expected.extend([true; 7]);
        assert_eq!(mask, expected);
        // A batch whose buffer list does not match its schema is refused, not misread.
        assert!(p
            .buffer_mask(&schema, &[1, 2], MetadataVersion::V5, 18)
            .is_err());
        assert!(p
            .buffer_mask(&schema, &[1], MetadataVersion::V5, 19)
            .is_err());
    }

    #[test]
    fn unions_count_their_type_ids_and_offsets() {
        let fields = arrow_schema::UnionFields::try_new(
            vec![0, 1],
            vec![
                Field::new("a", DataType::Int8, true),
                Field::new("b", DataType::Utf8, true),
            ],
        )
        .unwrap();
        let dense = Field::new("u", DataType::Union(fields.clone(), UnionMode::Dense), true);
        let sparse = Field::new("u", DataType::Union(fields, UnionMode::Sparse), true);
        let mut none = VecDeque::new();
        assert_eq!(
            buffer_count(&dense, &mut none, MetadataVersion::V5).unwrap(),
            7
        );
        assert_eq!(
            buffer_count(&sparse, &mut none, MetadataVersion::V5).unwrap(),
            6
        );
        assert_eq!(
            buffer_count(&sparse, &mut none, MetadataVersion::V4).unwrap(),
            7
        );
        let dict = Field::new_dictionary("d", DataType::Int16, DataType::Utf8, true);
        assert_eq!(
            buffer_count(&dict, &mut none, MetadataVersion::V5).unwrap(),
            2
        );
    }

    #[test]
    fn out_of_range_fields_are_refused() {
        let err = Projection::new(vec![0, 3], 3).unwrap_err().to_string();
        assert!(err.contains("field index 3 is out of range"), "{err}");
    }
}
