//! What writers accept, made Arrow: pyarrow tables, batches and readers, pandas DataFrames
//! (through pyarrow) and any object with the Arrow PyCapsule interface. Only what needs the GIL
//! happens here; a C stream is imported by the writer, without it.

use crate::args;
use std::sync::{Mutex, OnceLock};

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::intern;
use pyo3::prelude::*;

use crate::errors::IntoPyErr as _;
use pyo3::types::{PyCapsule, PyString};
use pyo3_arrow::{PyRecordBatch, PySchema};

use crate::buffer::{is_heap_type, is_pyarrow_class, type_name, PyarrowClass};
use crate::errors;
use crate::field_names;
use zstdpool_core::error::Error;

/// What `write` was given, as Arrow: one batch (the common case, with no stream around it),
/// or a C stream taken from its capsule and not yet imported.
pub enum Input {
    Batch(RecordBatch),
    /// Imported by the detached part of the write: asking the producer for the schema and
    /// converting it need not hold the GIL.
    Exported(FFI_ArrowArrayStream),
    /// A pyarrow Table's or RecordBatchReader's stream, imported with the GIL so that its
    /// names could be checked against pyarrow's (see [`field_names`]), with the schema that
    /// restores them.
    Stream(ArrowArrayStreamReader, Option<SchemaRef>),
}

/// An [`Input`] imported, ready to be read batch by batch.
pub enum Imported {
    /// The batch's schema, and the batch until it is read.
    Batch(SchemaRef, Option<RecordBatch>),
    /// A stream, and the schema its batches are given where the C data interface cut a name.
    Stream(ArrowArrayStreamReader, Option<SchemaRef>),
}

/// Imports an exported stream's schema.
fn import_stream(stream: FFI_ArrowArrayStream) -> Result<ArrowArrayStreamReader, Failure> {
    std::panic::catch_unwind(|| ArrowArrayStreamReader::try_new(stream))
        .map_err(|_| Failure::Encode(import_failed()))?
        // A stream of something other than record batches (a ChunkedArray, a polars Series)
        // is refused here: the object cannot be written.
        .map_err(|e| Failure::Import(Error::from(e).into_py_err()))
}

/// `batch` under `schema`, which differs from its own in names only.
fn renamed(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, Failure> {
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), batch.columns().to_vec(), &options)
        .map_err(|e| Failure::Encode(Error::from(e).into_py_err()))
}

// Producer callbacks (get_schema, get_next, release) run without the GIL, on the writing
// thread, as the C stream interface allows: consumers such as DuckDB and polars call them from
// threads of their own, so producers that need the GIL take it themselves.
impl Input {
    /// Imports an exported stream's schema. Runs without the GIL.
    pub fn import(self) -> Result<Imported, Failure> {
        match self {
            Input::Batch(b) => Ok(Imported::Batch(b.schema(), Some(b))),
            Input::Exported(stream) => Ok(Imported::Stream(import_stream(stream)?, None)),
            Input::Stream(reader, names) => Ok(Imported::Stream(reader, names)),
        }
    }
}

impl Imported {
    pub fn schema(&self) -> SchemaRef {
        match self {
            Imported::Batch(schema, _) => schema.clone(),
            Imported::Stream(r, names) => names.clone().unwrap_or_else(|| r.schema()),
        }
    }

    /// The next batch, or None at the end. Runs without the GIL.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, Failure> {
        match self {
            Imported::Batch(_, b) => Ok(b.take()),
            Imported::Stream(reader, names) => {
                let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next()))
                    .map_err(|_| Failure::Encode(import_failed()))?;
                let next = next
                    .transpose()
                    .map_err(|e| Failure::Encode(Error::from(e).into_py_err()))?;
                match (next, names) {
                    (Some(batch), Some(schema)) => renamed(batch, schema).map(Some),
                    (next, _) => Ok(next),
                }
            }
        }
    }
}

/// Whether `obj` has the attribute `name`. Before Python 3.13 pyo3's `hasattr` builds and
/// formats the AttributeError of a miss before discarding it (half a microsecond per write of
/// a pyarrow Table, which has no `__arrow_c_array__`); `PyObject_HasAttr` answers a miss
/// without one, but also takes any other error for a miss, so [`to_input`] asks again through
/// `hasattr` before it refuses an object. From 3.13 `hasattr` is as cheap and is used.
fn has_attr(obj: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<bool> {
    static CHEAP_HASATTR: OnceLock<bool> = OnceLock::new();
    if *CHEAP_HASATTR.get_or_init(|| obj.py().version_info() >= (3, 13)) {
        return obj.hasattr(name);
    }
    // SAFETY: both pointers are live references held by the caller, with the GIL.
    Ok(unsafe { pyo3::ffi::PyObject_HasAttr(obj.as_ptr(), name.as_ptr()) == 1 })
}

/// Whether `obj` is a pandas object. pandas' classes are Python classes; checking that first
/// spares static types (pyarrow's) a `__module__` string built on every call.
fn is_pandas(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let ty = obj.get_type();
    Ok(is_heap_type(&ty)
        && ty
            .module()
            .is_ok_and(|m| m.to_str().is_ok_and(|m| m.starts_with("pandas")))
        && has_attr(obj, intern!(obj.py(), "to_numpy"))?)
}

/// Turns what `write` accepts into Arrow: pandas DataFrames go through pyarrow (keeping the
/// pandas metadata that restores the index), anything else through the PyCapsule interface,
/// a batch (`__arrow_c_array__`) before a stream, as pyo3-arrow orders them. A stream is only
/// taken from its capsule here; the writer imports it without the GIL.
pub fn to_input(data: &Bound<'_, PyAny>) -> PyResult<Input> {
    let py = data.py();
    let converted;
    let data = if is_pandas(data)? {
        converted = py
            .import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_pandas", (data,))?;
        &converted
    } else {
        data
    };
    let (array, stream) = (
        intern!(py, "__arrow_c_array__"),
        intern!(py, "__arrow_c_stream__"),
    );
    let exported = if has_attr(data, array)? {
        // arrow-rs's C data import panics on some valid inputs (sliced structs nested in
        // structs, apache/arrow-rs#9235); that must reach the caller as an exception.
        let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            data.extract::<PyRecordBatch>()
        }))
        .map_err(|_| import_failed())?;
        match batch {
            Ok(b) => {
                let b = b.into_inner();
                let b = match field_names::restore(data, &b.schema())? {
                    Some(schema) => renamed(b, &schema).map_err(|f| f.into_err(data))?,
                    None => b,
                };
                Ok(Input::Batch(b))
            }
            Err(e) => Err(e),
        }
    } else if has_attr(data, stream)? {
        match take_stream(data) {
            Ok(stream) if field_names::is_pyarrow(data) => {
                let reader = import_stream(stream).map_err(|f| f.into_err(data))?;
                let names = field_names::restore(data, &reader.schema())?;
                Ok(Input::Stream(reader, names))
            }
            other => other.map(Input::Exported),
        }
    } else {
        // Asked again through `hasattr`: what the object's attribute lookup raised, other than
        // AttributeError, is the better error (see `has_attr`).
        data.hasattr(array)?;
        data.hasattr(stream)?;
        return Err(cannot_write(data));
    };
    // The object offers the interface but its export failed: say why.
    exported.map_err(|cause| cannot_write_because(data, cause))
}

pub fn cannot_write(data: &Bound<'_, PyAny>) -> PyErr {
    errors::wrong_type(format!(
        "cannot write '{}': expected a pyarrow Table, RecordBatch or RecordBatchReader, a \
         pandas DataFrame, or an object with __arrow_c_stream__ or __arrow_c_array__ \
         (polars, duckdb, arro3, nanoarrow)",
        type_name(data)
    ))
}

fn cannot_write_because(data: &Bound<'_, PyAny>, cause: PyErr) -> PyErr {
    errors::with_cause(data.py(), cannot_write(data), cause)
}

/// Calls `__arrow_c_stream__` and moves the stream out of its capsule (which is left released).
fn take_stream(data: &Bound<'_, PyAny>) -> PyResult<FFI_ArrowArrayStream> {
    let capsule = data.call_method0(intern!(data.py(), "__arrow_c_stream__"))?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_array_stream"))
        .map_err(|_| {
            // SAFETY: the name is read at once, with the GIL, while the capsule is alive.
            let name = capsule
                .name()
                .ok()
                .flatten()
                .map(|n| unsafe { n.as_cstr() });
            Error::Ipc(format!(
                "__arrow_c_stream__ returned a capsule named {}, not \"arrow_array_stream\"",
                name.map_or("None".into(), |n| format!("{:?}", n.to_string_lossy()))
            ))
            .into_py_err()
        })?;
    // SAFETY: a capsule named "arrow_array_stream" holds an ArrowArrayStream (the PyCapsule
    // interface); `from_raw` moves it out and marks the capsule's copy released.
    Ok(unsafe { FFI_ArrowArrayStream::from_raw(ptr.as_ptr().cast()) })
}

pub fn import_failed() -> PyErr {
    Error::Ipc(
        "arrow-rs could not import this data through the Arrow C data interface (it fails on \
         sliced struct columns nested in structs, lists or unions: apache/arrow-rs#9235); \
         write a copy without the slice offset, e.g. table.take(list(range(table.num_rows)))"
            .into(),
    )
    .into_py_err()
}

/// Why a write failed: the input (it cannot be imported), the batch (nothing was written; the
/// writer goes on) or the sink (the output is incomplete; the writer is abandoned).
pub enum Failure {
    Import(PyErr),
    Encode(PyErr),
    Sink(PyErr),
}

impl Failure {
    /// The exception for a failed write of `data`: an input that cannot be imported is an
    /// object that cannot be written, with the reason as the cause.
    pub fn into_err(self, data: &Bound<'_, PyAny>) -> PyErr {
        match self {
            Failure::Import(cause) => cannot_write_because(data, cause),
            Failure::Encode(e) | Failure::Sink(e) => e,
        }
    }
}

/// The last pyarrow Schema a writer was opened with, and its import, matched by identity. A
/// service that keeps its schema in a variable (a module constant, a writer factory) passes
/// the same object to every writer, and importing it through `__arrow_c_schema__` is a
/// twentieth of writing a small table. (`table.schema` makes a new object on every access, so
/// it is imported each time.) pyarrow Schemas are immutable, and the reference held here,
/// one schema for the life of the process, keeps the identity from passing to another object.
static LAST_SCHEMA: Mutex<Option<(Py<PyAny>, SchemaRef)>> = Mutex::new(None);

pub fn schema_of(schema: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    let cacheable = is_pyarrow_class(schema, PyarrowClass::Schema);
    if cacheable {
        let last = LAST_SCHEMA.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((obj, imported)) = last.as_ref() {
            if obj.as_ptr() == schema.as_ptr() {
                return Ok(imported.clone());
            }
        }
    }
    let imported = schema
        .extract::<PySchema>()
        .map(|s| s.into_inner())
        .map_err(|_| {
            args::not_one_of(
                schema,
                "schema",
                "a pyarrow Schema or an object with __arrow_c_schema__",
            )
        })?;
    let imported = field_names::restore(schema, &imported)?.unwrap_or(imported);
    if cacheable {
        let entry = Some((schema.clone().unbind(), imported.clone()));
        let replaced = std::mem::replace(
            &mut *LAST_SCHEMA.lock().unwrap_or_else(|e| e.into_inner()),
            entry,
        );
        drop(replaced); // its reference is released outside the lock
    }
    Ok(imported)
}
