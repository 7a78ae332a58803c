//! What readers hand to Python: pyarrow batches and tables through the C data interface (no
//! copies), and the rest of a reader as an Arrow C stream for `__arrow_c_stream__`.

use std::ffi::CStr;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};

use crate::errors::IntoPyErr as _;
use crate::field_names;
use crate::held::Held;
use zstdpool_core::error::{catch_panics, Error, Result};

const STREAM_CAPSULE: &CStr = c"arrow_array_stream";

pub fn batch_to_py<'py>(py: Python<'py>, batch: RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    match field_names::exportable(batch.schema_ref()) {
        None => PyRecordBatch::new(batch).into_pyarrow(py),
        Some((schema, names)) => {
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let batch =
                RecordBatch::try_new_with_options(schema, batch.columns().to_vec(), &options)
                    .map_err(|e| Error::from(e).into_py_err())?;
            let out = PyRecordBatch::new(batch).into_pyarrow(py)?;
            with_names(py, &out, names, "RecordBatch")
        }
    }
}

pub fn table_to_py<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyResult<Bound<'py, PyAny>> {
    match field_names::exportable(&schema) {
        None => PyTable::try_new(batches, schema)?.into_pyarrow(py),
        Some((placeholders, names)) => {
            let batches = batches
                .into_iter()
                .map(|b| {
                    let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
                    RecordBatch::try_new_with_options(
                        placeholders.clone(),
                        b.columns().to_vec(),
                        &options,
                    )
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::from(e).into_py_err())?;
            let out = PyTable::try_new(batches, placeholders)?.into_pyarrow(py)?;
            with_names(py, &out, names, "Table")
        }
    }
}

/// `out` (a pyarrow `kind`, "Table" or "RecordBatch", under placeholder names) with its
/// columns named `names`, its schema's metadata and its fields' kept: rebuilt from its columns
/// and its schema renamed (`rename_columns` drops the schema's metadata).
fn with_names<'py>(
    py: Python<'py>,
    out: &Bound<'py, PyAny>,
    names: Vec<String>,
    kind: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let schema = renamed_schema(py, out.getattr(intern!(py, "schema"))?, names)?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("schema", schema)?;
    py.import("pyarrow")?.getattr(kind)?.call_method(
        intern!(py, "from_arrays"),
        (out.getattr(intern!(py, "columns"))?,),
        Some(&kwargs),
    )
}

/// pyarrow's `schema` with its fields named `names` (`Schema.set` keeps the metadata).
fn renamed_schema<'py>(
    py: Python<'py>,
    mut schema: Bound<'py, PyAny>,
    names: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    for (i, name) in names.into_iter().enumerate() {
        let field = schema.call_method1(intern!(py, "field"), (i,))?;
        let field = field.call_method1(intern!(py, "with_name"), (name,))?;
        schema = schema.call_method1(intern!(py, "set"), (i, field))?;
    }
    Ok(schema)
}

/// A schema as a pyarrow Schema, its top-level names whole (see [`field_names::exportable`]).
pub fn schema_to_py<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyAny>> {
    let Some((placeholders, names)) = field_names::exportable(schema) else {
        return PySchema::new(schema.clone()).into_pyarrow(py);
    };
    renamed_schema(py, PySchema::new(placeholders).into_pyarrow(py)?, names)
}

/// A source of batches that a reader can hand over whole.
pub trait NextBatch: Send + 'static {
    fn schema(&self) -> SchemaRef;
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;
}

/// The next batch of a held reader as a pyarrow RecordBatch, read without the GIL; None at
/// the end. `failed` makes the reader's error the format's exception.
pub fn next_batch_to_py<'py, T: NextBatch>(
    py: Python<'py>,
    held: &Held<T>,
    failed: impl Fn(Error) -> PyErr,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let mut reader = held.take()?;
    let next = py.detach(|| reader.next_batch()).map_err(failed)?;
    drop(reader);
    next.map(|b| batch_to_py(py, b)).transpose()
}

/// The rest of a held reader as an Arrow C stream capsule (see [`stream_capsule`]); the
/// holder is closed, its batches now the consumer's.
pub fn remaining_capsule<'py, T: NextBatch>(
    py: Python<'py>,
    held: &Held<T>,
) -> PyResult<Bound<'py, PyCapsule>> {
    stream_capsule(py, held.take()?.retire())
}

/// The rest of a reader as an Arrow C stream capsule: its consumer (pyarrow, polars, duckdb)
/// pulls batches itself, without copies. Errors reach it with their message.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: impl NextBatch,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(Box::new(Remaining(reader)));
    PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
}

struct Remaining<R>(R);

impl<R: NextBatch> Iterator for Remaining<R> {
    type Item = std::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        // The consumer calls this through the C stream interface, where a panic cannot unwind
        // (it would abort the process): one becomes the stream's error.
        catch_panics("reading a batch", || self.0.next_batch())
            .map_err(|e| ArrowError::ExternalError(Box::new(e)))
            .transpose()
    }
}

impl<R: NextBatch> RecordBatchReader for Remaining<R> {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}
