//! A file's batches fitted to the dataset's schema: columns a file lacks as nulls, others
//! cast to the dataset's types, partition columns added.

use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema};

use super::plan::Plan;
use super::predicate::repeated;
use super::scanner::Dataset;
use crate::error::{Error, Result};

impl Dataset {
    /// Whether column `name` has the dataset's type in a file of schema `file` (a dictionary
    /// of it counts as it).
    pub(super) fn same_type(&self, file: &Schema, name: &str) -> bool {
        let values = |t: &DataType| match t {
            DataType::Dictionary(_, v) => v.as_ref().clone(),
            t => t.clone(),
        };
        match (
            file.field_with_name(name),
            self.schema.field_with_name(name),
        ) {
            (Ok(a), Ok(b)) => values(a.data_type()) == values(b.data_type()),
            _ => false,
        }
    }

    /// A batch of file `i` with the plan's work columns, in the dataset's types: a column the
    /// file lacks is null, a partition field one the file lacks is the partition's value.
    pub(super) fn conform(&self, plan: &Plan, i: usize, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.work.fields().len());
        for field in plan.work.fields() {
            let name = field.name();
            let column = match batch.column_by_name(name) {
                Some(c) => c.clone(),
                None => match self.found.schema.index_of(name) {
                    Ok(k) => repeated(&self.found.values[i][k], rows)?,
                    Err(_) => new_null_array(field.data_type(), rows),
                },
            };
            let column = if column.data_type() != field.data_type() {
                let options = arrow_cast::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow_cast::cast_with_options(&column, field.data_type(), &options).map_err(
                    |e| {
                        Error::Parameter(format!(
                            "column '{name}' is {} in {}, and cannot be read as the \
                             dataset's {}: {e}",
                            column.data_type(),
                            self.found.files[i].path.display(),
                            field.data_type()
                        ))
                    },
                )?
            } else {
                column
            };
            columns.push(column);
        }
        // A field declared non-nullable that a file lacks reads as nulls all the same.
        let fields: Vec<Field> = plan
            .work
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| {
                f.as_ref()
                    .clone()
                    .with_nullable(f.is_nullable() || c.null_count() > 0)
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &options,
        )?)
    }
}
