//! A read resolved against a dataset's schema before any file is opened: the columns it
//! returns, what each file is read into, its filter and its files.

use std::sync::Arc;

use arrow_schema::{FieldRef, Schema, SchemaRef};

use super::predicate::{Outcomes, Predicate};
use super::scanner::{Dataset, ScanOptions};
use crate::batch_schema::column_names;
use crate::error::{Error, Result};

/// A read resolved against the dataset's schema.
pub(super) struct Plan {
    /// What the read returns.
    pub(super) output: SchemaRef,
    /// What each file is read into before it is filtered: the output's columns and the
    /// filter's, partition fields included.
    pub(super) work: SchemaRef,
    pub(super) filter: Option<Predicate>,
    pub(super) files: Option<Vec<usize>>,
}

impl Dataset {
    pub(super) fn plan(&self, options: &ScanOptions) -> Result<Plan> {
        let field = |name: &str| -> Result<FieldRef> {
            self.schema
                .field_with_name(name)
                .map(|f| Arc::new(f.clone()))
                .map_err(|_| {
                    Error::Parameter(format!(
                        "column '{name}' is not in the dataset (its columns: {})",
                        column_names(&self.schema)
                    ))
                })
        };
        let output: Vec<FieldRef> = match &options.columns {
            Some(names) => names.iter().map(|n| field(n)).collect::<Result<_>>()?,
            None => self.schema.fields().iter().cloned().collect(),
        };
        let mut work = output.clone();
        if let Some(filter) = &options.filter {
            for name in filter.columns() {
                let f = field(name).map_err(|e| match e {
                    Error::Parameter(m) => Error::Parameter(format!("filter: {m}")),
                    other => other,
                })?;
                if !work.iter().any(|w| w.name() == name) {
                    work.push(f);
                }
            }
        }
        Ok(Plan {
            output: Arc::new(Schema::new_with_metadata(
                output,
                self.schema.metadata().clone(),
            )),
            work: Arc::new(Schema::new(work)),
            filter: options.filter.clone(),
            files: match &options.files {
                Some(files) => {
                    let n = self.found.files.len();
                    if let Some(bad) = files.iter().find(|&&i| i >= n) {
                        return Err(Error::Parameter(format!(
                            "file index {bad} is out of range: the dataset has {n} files"
                        )));
                    }
                    Some(files.clone())
                }
                None => None,
            },
        })
    }

    /// The plan and the files a read of `options` reads, in order, for a stream.
    pub(super) fn planned(&self, options: &ScanOptions) -> Result<(Plan, Vec<(usize, Outcomes)>)> {
        let plan = self.plan(options)?;
        let files = self.pruned(&plan);
        Ok((plan, files))
    }

    /// The columns of the plan's work schema that file `i` holds, by name.
    pub(super) fn file_columns<'a>(&self, plan: &'a Plan, file: &Schema) -> Vec<&'a str> {
        plan.work
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| file.index_of(n).is_ok())
            .collect()
    }
}
