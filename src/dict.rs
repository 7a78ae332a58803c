//! `zstdpool.ZstdDict`, `train_dict` and `finalize_dict`: zstd dictionaries that every thread
//! and every pooled context share (the core's `dict` module prepares them).

use crate::args;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::buffer::{type_name, ByteView};
use crate::errors::OrRaise as _;
use crate::params;
use zstdpool_core::dict::{self, Samples, ZstdDict};

/// A zstd dictionary, immutable and shared by every thread: `ZstdDict(content, /, *,
/// is_raw=False)`. `content` is a zstd dictionary (as `train_dict`, `zstd --train`,
/// python-zstandard and `compression.zstd` make them; their dictionary objects are accepted
/// too), or with `is_raw=True` any bytes used as raw content. It is prepared for each level
/// on first use (and once for decompression), and the prepared forms are shared by every
/// pooled context and freed with the dictionary. Pickles as its content.
#[pyclass(frozen, name = "ZstdDict", module = "zstdpool")]
pub struct PyZstdDict {
    pub dict: Arc<ZstdDict>,
    /// `dict_content`, made on first access.
    content: PyOnceLock<Py<PyBytes>>,
}

impl PyZstdDict {
    fn wrap(dict: ZstdDict) -> Self {
        PyZstdDict {
            dict: Arc::new(dict),
            content: PyOnceLock::new(),
        }
    }
}

/// How a `zstd_dict=` pair says to use its dictionary (`compression.zstd`'s numbers, the second
/// item of `as_digested_dict`, `as_undigested_dict` and `as_prefix`).
pub const DIGESTED: i32 = 0;
pub const UNDIGESTED: i32 = 1;
pub const PREFIX: i32 = 2;

/// The bytes of a dictionary given as bytes-like content, or as a dictionary object of
/// `compression.zstd` (`dict_content`) or python-zstandard (`as_bytes()`).
fn content_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if obj.cast::<PyZstdDict>().is_ok() {
        // As `compression.zstd` refuses it (the two types are one): there is nothing to make.
        return Err(crate::errors::wrong_type(
            "content is a ZstdDict already: use it as it is, or pass its dict_content",
        ));
    }
    if ByteView::new(obj, "content").is_ok() {
        return Ok(obj.clone());
    }
    if let Ok(content) = obj.getattr("dict_content") {
        return Ok(content);
    }
    if let Ok(as_bytes) = obj.getattr("as_bytes") {
        return as_bytes.call0();
    }
    Err(crate::errors::wrong_type(format!(
        "content must be a bytes-like object or a zstd dictionary object \
         (compression.zstd.ZstdDict, zstandard.ZstdCompressionDict), not '{}'",
        type_name(obj)
    )))
}

#[pymethods]
impl PyZstdDict {
    #[new]
    #[pyo3(signature = (content, /, *, is_raw=false))]
    fn new(py: Python<'_>, content: &Bound<'_, PyAny>, is_raw: bool) -> PyResult<Self> {
        let view = ByteView::new(&content_of(content)?, "content")?;
        let dict = py
            .detach(|| ZstdDict::new(view.as_slice(), is_raw))
            .or_raise()?;
        Ok(Self::wrap(dict))
    }

    /// The id that frames written with this dictionary record; 0 for raw content.
    #[getter]
    fn dict_id(&self) -> u32 {
        self.dict.id()
    }

    /// The dictionary's content, as given.
    #[getter]
    fn dict_content<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.content
            .get_or_init(py, || PyBytes::new(py, self.dict.content()).unbind())
            .bind(py)
            .clone()
    }

    /// Whether the content is raw (no header, no id).
    #[getter]
    fn is_raw(&self) -> bool {
        self.dict.is_raw()
    }

    fn __len__(&self) -> usize {
        self.dict.content().len()
    }

    /// `(self, 0)`: the dictionary, loaded prepared (`compression.zstd`'s form for a
    /// `zstd_dict=` argument; zstdpool loads every form so).
    #[getter]
    fn as_digested_dict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        (slf.clone(), DIGESTED).into_pyobject(slf.py())
    }

    /// `(self, 1)`: the dictionary loaded as its content (`compression.zstd`'s form).
    #[getter]
    fn as_undigested_dict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        (slf.clone(), UNDIGESTED).into_pyobject(slf.py())
    }

    /// `(self, 2)`: the dictionary's content as the prefix of one frame (`compression.zstd`'s
    /// form): a compressor's first frame, or a decompressor's frame.
    #[getter]
    fn as_prefix<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        (slf.clone(), PREFIX).into_pyobject(slf.py())
    }

    /// `ZstdDict(content)` or, for raw content, `functools.partial(ZstdDict,
    /// is_raw=True)(content)`: the prepared forms are made again where it is unpickled.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let cls = slf.get_type().into_any();
        let make = if slf.get().dict.is_raw() {
            let kwargs = PyDict::new(py);
            kwargs.set_item("is_raw", true)?;
            py.import("functools")?
                .getattr("partial")?
                .call((cls,), Some(&kwargs))?
        } else {
            cls
        };
        let args = PyTuple::new(py, [slf.get().dict_content(py)])?;
        PyTuple::new(py, [make, args.into_any()])
    }

    fn __repr__(&self) -> String {
        // `compression.zstd`'s form, as the two are one type.
        format!(
            "<ZstdDict dict_id={} dict_size={}>",
            self.dict.id(),
            self.dict.content().len()
        )
    }
}

/// The core dictionary behind an optional `zstd_dict=` argument, refusing other objects with
/// the way to make one.
pub fn dict_arg(zstd_dict: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<ZstdDict>>> {
    let Some(obj) = zstd_dict else {
        return Ok(None);
    };
    if obj.is_none() {
        return Ok(None);
    }
    match obj.cast::<PyZstdDict>() {
        Ok(d) => Ok(Some(d.get().dict.clone())),
        Err(_) => Err(crate::errors::wrong_type(format!(
            "zstd_dict must be a zstdpool.ZstdDict (made once and reused: it is prepared on first \
             use), not '{}'; wrap the content in zstdpool.ZstdDict(...)",
            type_name(obj)
        ))),
    }
}

/// The samples of `train_dict` and `finalize_dict`, laid end to end (copied with the GIL, so
/// that zstd can train without it).
fn samples_of(samples: &Bound<'_, PyAny>) -> PyResult<Samples> {
    let mut laid = Samples {
        bytes: Vec::new(),
        sizes: Vec::new(),
    };
    for (i, sample) in samples.try_iter()?.enumerate() {
        let view = ByteView::new(&sample?, &format!("samples[{i}]"))?;
        laid.bytes.extend_from_slice(view.as_slice());
        laid.sizes.push(view.len());
    }
    Ok(laid)
}

/// Trains a zstd dictionary of at most `dict_size` bytes on `samples` (an iterable of
/// bytes-like records like those it will compress; zstd wants many, about 100 times
/// `dict_size` in all). Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (samples, dict_size))]
pub fn train_dict(
    py: Python<'_>,
    samples: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::DictSize, _>)] dict_size: i64,
) -> PyResult<PyZstdDict> {
    let dict_size = params::size("dict_size", dict_size).or_raise()?;
    let samples = samples_of(samples)?;
    let dict = py
        .detach(|| dict::train(&samples, dict_size).and_then(|c| ZstdDict::new(&c, false)))
        .or_raise()?;
    Ok(PyZstdDict::wrap(dict))
}

/// Makes a zstd dictionary of at most `dict_size` bytes from the content of `zstd_dict` (raw
/// content, or a dictionary whose content is reused), with a header and entropy tables fitted
/// to `samples` at `level`, the level it will be used at. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (zstd_dict, /, samples, dict_size, level))]
pub fn finalize_dict(
    py: Python<'_>,
    zstd_dict: &Bound<'_, PyZstdDict>,
    samples: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = args::arg::<args::DictSize, _>)] dict_size: i64,
    #[pyo3(from_py_with = args::arg::<args::Level, _>)] level: i64,
) -> PyResult<PyZstdDict> {
    let dict_size = params::size("dict_size", dict_size).or_raise()?;
    let level = params::level(level).or_raise()?;
    zstdpool_core::CompressParams::level(level)
        .validate()
        .or_raise()?;
    let samples = samples_of(samples)?;
    let content = zstd_dict.get().dict.clone();
    let dict = py
        .detach(|| {
            dict::finalize(content.content(), &samples, dict_size, level)
                .and_then(|c| ZstdDict::new(&c, false))
        })
        .or_raise()?;
    Ok(PyZstdDict::wrap(dict))
}
