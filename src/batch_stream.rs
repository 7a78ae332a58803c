//! One batch-stream class for every reader that hands out batches as they are asked for (a
//! Parquet file's `iter_batches`, a dataset's `to_batches`): the core's reader boxed, its
//! batches made pyarrow's, its errors made the format's exception. Written once, as arro3
//! serves every reader through one `RecordBatchReader`.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::Format;
use crate::export::{next_batch_to_py, remaining_capsule, schema_to_py, NextBatch};
use crate::held::Held;
use crate::io::unwrap_py_error_in;
use zstdpool_core::error::Result;

impl NextBatch for Box<dyn NextBatch> {
    fn schema(&self) -> SchemaRef {
        self.as_ref().schema()
    }
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        self.as_mut().next_batch()
    }
}

/// Batches read as they are asked for; for one thread at a time. `zstdpool.parquet`'s
/// `ParquetBatches` and `zstdpool.dataset`'s `DatasetBatches` are this class.
#[pyclass(frozen, name = "BatchStream", module = "zstdpool")]
pub struct PyBatchStream {
    batches: Held<Box<dyn NextBatch>>,
    schema: SchemaRef,
    /// What the reader reads, whose exception its errors become.
    format: Format,
}

impl PyBatchStream {
    pub fn new(batches: impl NextBatch, format: Format) -> Self {
        PyBatchStream {
            schema: batches.schema(),
            batches: Held::new(Box::new(batches), "the batches"),
            format,
        }
    }
}

#[pymethods]
impl PyBatchStream {
    /// The batches' schema, as a pyarrow Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_py(py, &self.schema)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let format = self.format;
        next_batch_to_py(py, &self.batches, move |e| unwrap_py_error_in(format, e))
    }

    /// Exports the remaining batches through the Arrow C stream interface. Consumes them.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // exported with its own schema
        remaining_capsule(py, &self.batches)
    }
}
