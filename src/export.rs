//! What readers hand to Python: pyarrow batches and tables through the C data interface (no
//! copies), and the rest of a reader as an Arrow C stream for `__arrow_c_stream__`.

use std::ffi::CStr;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::{PyRecordBatch, PyTable};

use crate::held::Held;
use zstdpool_core::error::{catch_panics, Error, Result};

const STREAM_CAPSULE: &CStr = c"arrow_array_stream";

pub fn batch_to_py<'py>(py: Python<'py>, batch: RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    PyRecordBatch::new(batch).into_pyarrow(py)
}

pub fn table_to_py<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyResult<Bound<'py, PyAny>> {
    PyTable::try_new(batches, schema)?.into_pyarrow(py)
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
