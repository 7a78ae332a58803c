//! Arguments whose conversion errors name the argument.
//!
//! pyo3 reports a failed conversion with the converter's own words ("Python int too large
//! to convert to C long", "'int' object is not an instance of 'str'") and attaches the
//! argument's name only as an exception note, which `str(exc)` leaves out and Python 3.10
//! cannot hold. The numeric and text arguments of the public functions are converted here
//! instead (`#[pyo3(from_py_with = args::arg::<args::Level, _>)]`), so that the message
//! itself names the argument and the value. What is accepted is unchanged: the same
//! conversion runs, and only its error is replaced.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PySequence, PyString};

use crate::buffer::type_name;
use crate::errors::{is_overflow, parameter, wrong_type};

/// An argument's name, as a type, so that one generic converter serves every argument.
pub trait Name {
    const NAME: &'static str;
}

macro_rules! names {
    ($($ty:ident = $name:literal),* $(,)?) => {
        $(
            #[doc = concat!("The argument `", $name, "`.")]
            pub struct $ty;
            impl Name for $ty {
                const NAME: &'static str = $name;
            }
        )*
    };
}

names! {
    BasenameTemplate = "basename_template",
    BatchSize = "batch_size",
    Compression = "compression",
    DictSize = "dict_size",
    ExistingDataBehavior = "existing_data_behavior",
    Files = "files",
    FooterOffset = "footer_offset",
    Format = "format",
    I = "i",
    Level = "level",
    MaxBatchSize = "max_batch_size",
    MaxBufferSize = "max_buffer_size",
    MaxChunksize = "max_chunksize",
    MaxIdleBytes = "max_idle_bytes",
    MaxIdlePerKey = "max_idle_per_key",
    MaxOpenFiles = "max_open_files",
    MaxOutputSize = "max_output_size",
    MaxPageSize = "max_page_size",
    MaxPartitions = "max_partitions",
    MaxPendingBytes = "max_pending_bytes",
    MaxRowsPerFile = "max_rows_per_file",
    MaxRowsPerGroup = "max_rows_per_group",
    MaxScratchBytes = "max_scratch_bytes",
    MaxSpareBytes = "max_spare_bytes",
    MinRowsPerGroup = "min_rows_per_group",
    NullFallback = "null_fallback",
    PartitioningFlavor = "partitioning_flavor",
    RowGroupSize = "row_group_size",
    RowGroups = "row_groups",
    Threads = "threads",
    WindowLog = "window_log",
}

/// A value that converts with errors that name `name`. `'a` is the argument's own borrow,
/// which a `&str` keeps, as pyo3's extraction of `&str` does. `nullable` is whether None was
/// also allowed, for the message about a value of the wrong kind.
pub trait Named<'a>: Sized {
    fn convert(obj: &'a Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self>;
}

/// Converts argument `N` to `T`; the function given to `from_py_with`.
pub fn arg<'a, N: Name, T: Named<'a>>(obj: &'a Bound<'_, PyAny>) -> PyResult<T> {
    T::convert(obj, N::NAME, false)
}

/// Converts `obj`, an argument or a part of one described as `name` ("compression_level:
/// the level of column \"a\""), to `T`: for what a function takes in `**kwargs` or in a dict.
pub fn convert<'a, T: Named<'a>>(obj: &'a Bound<'_, PyAny>, name: &str) -> PyResult<T> {
    T::convert(obj, name, false)
}

/// The `TypeError` for `obj`, given as `name`, which is none of what `kind` lists ("an int,
/// a dict of column names to ints or None").
pub fn not_one_of(obj: &Bound<'_, PyAny>, name: &str, kind: &str) -> PyErr {
    not_a(obj, name, kind, false)
}

/// The `TypeError` for `obj`, given as `name`, which is not `kind` ("an int").
fn not_a(obj: &Bound<'_, PyAny>, name: &str, kind: &str, nullable: bool) -> PyErr {
    let or_none = if nullable { " or None" } else { "" };
    wrong_type(format!(
        "{name} must be {kind}{or_none}, not {}",
        type_name(obj)
    ))
}

/// The error for an integer that the argument's type cannot hold: a `TypeError` for what is
/// not an int, and for an int out of range the `ParameterError` every other out-of-range
/// value raises.
fn int_error(
    obj: &Bound<'_, PyAny>,
    name: &str,
    err: PyErr,
    unsigned: bool,
    nullable: bool,
) -> PyErr {
    if !is_overflow(obj.py(), &err) {
        return not_a(obj, name, "an int", nullable);
    }
    let shown = obj.str().map(|s| s.to_string()).unwrap_or_default();
    if unsigned && shown.starts_with('-') {
        parameter(format!("{name} must be 0 or more, not {shown}"))
    } else {
        parameter(format!("{name} is out of range: {shown}"))
    }
}

impl Named<'_> for i64 {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        obj.extract()
            .map_err(|e| int_error(obj, name, e, false, nullable))
    }
}

impl Named<'_> for usize {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        obj.extract()
            .map_err(|e| int_error(obj, name, e, true, nullable))
    }
}

impl<'a> Named<'a> for &'a str {
    fn convert(obj: &'a Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        obj.cast::<PyString>()
            .map_err(|_| not_a(obj, name, "a str", nullable))?
            .to_str()
    }
}

impl Named<'_> for String {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        <&str>::convert(obj, name, nullable).map(str::to_owned)
    }
}

/// Only a bool (pyarrow's checks accept no other truthy value).
impl Named<'_> for bool {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        match obj.cast::<PyBool>() {
            Ok(b) => Ok(b.is_true()),
            Err(_) => Err(not_a(obj, name, "a bool", nullable)),
        }
    }
}

/// Anything Python takes as a float (`__float__` or `__index__`: an int, numpy's floats).
impl Named<'_> for f64 {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        obj.extract()
            .map_err(|_| not_a(obj, name, "a float", nullable))
    }
}

impl<'a, T: Named<'a>> Named<'a> for Option<T> {
    fn convert(obj: &'a Bound<'_, PyAny>, name: &str, _: bool) -> PyResult<Self> {
        if obj.is_none() {
            return Ok(None);
        }
        T::convert(obj, name, true).map(Some)
    }
}

/// A sequence of indices (`row_groups=[0, 2]`): an element that is not one is named by its
/// position.
impl Named<'_> for Vec<usize> {
    fn convert(obj: &Bound<'_, PyAny>, name: &str, nullable: bool) -> PyResult<Self> {
        let not_ints = || not_a(obj, name, "a sequence of ints", nullable);
        // A sequence, as pyo3's own conversion of a Vec takes it (not a set, nor a str).
        if obj.is_instance_of::<PyString>() || obj.cast::<PySequence>().is_err() {
            return Err(not_ints());
        }
        let items = obj.try_iter().map_err(|_| not_ints())?;
        let mut out = Vec::new();
        for (i, item) in items.enumerate() {
            let item = item?;
            out.push(usize::convert(&item, &format!("{name}[{i}]"), false)?);
        }
        Ok(out)
    }
}
