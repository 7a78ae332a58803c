//! Object store URLs with `storage_options`, and `filesystem=`: what the writers and readers
//! that take a path take instead, to reach S3-compatible storage or Google Cloud Storage
//! natively, or any pyarrow or fsspec filesystem through its own API.

use crate::args;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyString, PyType};

use crate::errors;
use crate::errors::OrRaise as _;
use zstdpool_core::store::blocking::{BlockingFs, BlockingWriter};
use zstdpool_core::store::{ClientOptions, Store};

/// Whether `obj` is a URL of a store opened natively.
pub fn is_store_url(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyString>()
        .ok()
        .and_then(|s| s.to_str().ok().map(is_store_str))
        .unwrap_or(false)
}

fn is_store_str(s: &str) -> bool {
    zstdpool_core::store::is_store_url(s)
}

/// `storage_options` as key-value strings: values may be str, bool (as "true"/"false"), int
/// or float, as polars and delta-rs take them.
fn options(storage_options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let Some(d) = storage_options else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| args::not_one_of(&k, "storage_options: keys", "str"))?;
        let value = if v.is_instance_of::<PyBool>() {
            if v.is_truthy()? { "true" } else { "false" }.to_string()
        } else if v.is_instance_of::<PyString>()
            || v.is_instance_of::<pyo3::types::PyInt>()
            || v.is_instance_of::<pyo3::types::PyFloat>()
        {
            v.str()?.to_string()
        } else {
            return Err(args::not_one_of(
                &v,
                &format!("storage_options[{key:?}]"),
                "a str, bool or number",
            ));
        };
        out.push((key, value));
    }
    Ok(out)
}

/// The store and prefix `url` names, with `storage_options`.
pub fn open(url: &str, storage_options: Option<&Bound<'_, PyDict>>) -> PyResult<(Store, String)> {
    Store::open(url, &options(storage_options)?).or_raise()
}

/// A path argument's `filesystem=` and `storage_options=`: where the path is.
#[derive(Clone, Copy, Default)]
pub struct PathOptions<'a, 'py> {
    pub filesystem: Option<&'a Bound<'py, PyAny>>,
    pub storage_options: Option<&'a Bound<'py, PyDict>>,
}

impl<'a, 'py> PathOptions<'a, 'py> {
    pub fn new(
        filesystem: Option<&'a Bound<'py, PyAny>>,
        storage_options: Option<&'a Bound<'py, PyDict>>,
    ) -> Self {
        PathOptions {
            filesystem: filesystem.filter(|f| !f.is_none()),
            storage_options,
        }
    }

    /// Whether either is given.
    pub fn given(&self) -> bool {
        self.filesystem.is_some() || self.storage_options.is_some()
    }
}

/// What a path argument names once `filesystem=`, its URI's scheme and `storage_options` are
/// taken into account.
pub enum Located<'py> {
    /// An object (or a prefix) of a store: an object store URL's, or a filesystem object's
    /// path.
    Store(Store, String),
    /// Objects of one store (a list of paths of a filesystem object).
    Keys(Store, Vec<String>),
    /// Anything else, as given or resolved to a local path: a path, bytes, a file object, or
    /// a list of them.
    Other(Bound<'py, PyAny>),
}

/// Whether `target` is a URI that `zstdpool._fs` resolves (file://, memory://, hdfs://, ...),
/// not a store URL opened natively.
fn is_other_uri(target: &Bound<'_, PyAny>) -> bool {
    target
        .cast::<PyString>()
        .ok()
        .and_then(|s| {
            s.to_str()
                .ok()
                .map(|s| s.contains("://") && !is_store_str(s))
        })
        .unwrap_or(false)
}

/// `zstdpool._fs.FileSystemPath`: a path of a filesystem object, resolved already.
fn filesystem_path_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TYPE.import(py, "zstdpool._fs", "FileSystemPath")
}

/// Requests a filesystem object has going at once: its calls take the GIL, and pyarrow's
/// filesystems release it while they wait.
const FILESYSTEM_IN_FLIGHT: usize = 8;

/// The store over a `FileSystemPath`'s filesystem, and its keys.
fn filesystem_store<'py>(path: &Bound<'py, PyAny>) -> PyResult<Located<'py>> {
    let adapter = path.getattr("adapter")?;
    let root: String = adapter.getattr("root")?.extract()?;
    let shown = adapter.repr()?.to_string();
    let fs = PyFs {
        adapter: adapter.unbind(),
        shown,
    };
    let options = ClientOptions {
        max_in_flight: FILESYSTEM_IN_FLIGHT,
        ..ClientOptions::default()
    };
    let store = Store::over_filesystem(Arc::new(fs), &root, options);
    let keys = path.getattr("keys")?;
    if let Ok(key) = keys.extract::<String>() {
        return Ok(Located::Store(store, key));
    }
    Ok(Located::Keys(store, keys.extract()?))
}

/// What `target` (the argument `argument`) names: a store URL's objects (with
/// `storage_options`), a filesystem object's (with `filesystem`, or a URI that pyarrow or
/// fsspec resolve), or, for anything else, `target` itself (a local path where `filesystem`
/// is a local one). `storage_options` are refused where nothing would apply them.
pub fn locate<'py>(
    argument: &str,
    target: &Bound<'py, PyAny>,
    at: PathOptions<'_, 'py>,
) -> PyResult<Located<'py>> {
    let py = target.py();
    let PathOptions {
        filesystem,
        storage_options,
    } = at;
    let resolved;
    let (target, storage_options) = if filesystem.is_some() || is_other_uri(target) {
        resolved = py.import("zstdpool._fs")?.getattr("resolve")?.call1((
            target,
            filesystem.map_or_else(|| py.None().into_bound(py), Bound::clone),
            storage_options.map_or_else(|| py.None().into_bound(py), |d| d.clone().into_any()),
            argument,
        ))?;
        let options = resolved.get_item(1)?;
        let options = if options.is_none() {
            None
        } else {
            Some(options.cast_into::<PyDict>()?)
        };
        (resolved.get_item(0)?, options)
    } else {
        (target.clone(), storage_options.cloned())
    };
    let storage_options = storage_options.as_ref();
    if is_store_url(&target) {
        let url: String = target.extract()?;
        let (store, prefix) = open(&url, storage_options)?;
        return Ok(Located::Store(store, prefix));
    }
    let filesystem_path =
        !target.is_instance_of::<PyString>() && target.is_instance(filesystem_path_type(py)?)?;
    if storage_options.is_some_and(|d| !d.is_empty()) {
        return Err(errors::parameter(format!(
            "storage_options are for object store URLs (s3://, gs://) and fsspec URIs, and \
             {argument} is {}",
            target.repr()?
        )));
    }
    if filesystem_path {
        return filesystem_store(&target);
    }
    Ok(Located::Other(target))
}

/// A pyarrow filesystem (or an fsspec one wrapped in pyarrow's handler), reached through
/// `zstdpool._fs.FileSystemAdapter`'s calls, each with the GIL.
struct PyFs {
    adapter: Py<PyAny>,
    /// The adapter's repr, for messages.
    shown: String,
}

impl std::fmt::Debug for PyFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PyFs {
    fn call<T>(&self, f: impl for<'py> FnOnce(&Bound<'py, PyAny>) -> PyResult<T>) -> io::Result<T> {
        Python::attach(|py| f(self.adapter.bind(py)).map_err(|e| errors::to_io_error(py, e)))
    }
}

/// An output stream of a filesystem object.
struct PyWriter(Py<PyAny>);

impl BlockingWriter for PyWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method1("write", (PyBytes::new(py, data),))
                .map(drop)
                .map_err(|e| errors::to_io_error(py, e))
        })
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method0("close")
                .map(drop)
                .map_err(|e| errors::to_io_error(py, e))
        })
    }
}

impl BlockingFs for PyFs {
    fn create(&self, path: &str) -> io::Result<Box<dyn BlockingWriter>> {
        self.call(|a| {
            let stream = a.call_method1("create", (path,))?;
            Ok(Box::new(PyWriter(stream.unbind())) as Box<dyn BlockingWriter>)
        })
    }

    fn read(&self, path: &str, range: Option<Range<u64>>) -> io::Result<(Bytes, u64)> {
        let (start, end) = range.map_or((None, None), |r| (Some(r.start), Some(r.end)));
        self.call(|a| {
            let got = a.call_method1("read", (path, start, end))?;
            let data = got.get_item(0)?;
            let data = data.cast::<PyBytes>()?;
            Ok((
                Bytes::copy_from_slice(data.as_bytes()),
                got.get_item(1)?.extract()?,
            ))
        })
    }

    fn size(&self, path: &str) -> io::Result<u64> {
        self.call(|a| a.call_method1("size", (path,))?.extract())
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<(String, u64)>> {
        self.call(|a| a.call_method1("list", (prefix,))?.extract())
    }

    fn delete(&self, path: &str) -> io::Result<()> {
        self.call(|a| a.call_method1("delete", (path,)).map(drop))
    }

    fn copy(&self, from: &str, to: &str) -> io::Result<()> {
        self.call(|a| a.call_method1("copy", (from, to)).map(drop))
    }
}

/// The objects below the store URL `url` (`zstdpool.dask.to_dataset` checks and tidies the
/// base it writes to with these): their URLs and sizes, sorted.
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub fn _store_list(
    py: Python<'_>,
    url: &str,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, u64)>> {
    let (store, prefix) = open(url, storage_options)?;
    let listed = py.detach(|| store.list(&prefix)).or_raise()?;
    Ok(listed
        .into_iter()
        .map(|(k, n)| (store.url(&k), n))
        .collect())
}

/// Deletes the objects `urls` (of one bucket).
#[pyfunction]
#[pyo3(signature = (urls, storage_options=None))]
pub fn _store_delete(
    py: Python<'_>,
    urls: Vec<String>,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let Some(first) = urls.first() else {
        return Ok(());
    };
    let (store, _) = open(first, storage_options)?;
    let root = store.url("");
    let keys = urls
        .iter()
        .map(|u| {
            u.strip_prefix(&root).map(str::to_string).ok_or_else(|| {
                errors::parameter(format!("urls: {u:?} is not in {root}, as the first is"))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| store.delete(&keys)).or_raise()
}
