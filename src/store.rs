//! Object store URLs and `storage_options`: what the writers and readers that take a path
//! take instead, to reach S3-compatible storage or Google Cloud Storage natively.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use crate::buffer::type_name;
use crate::errors;
use crate::errors::OrRaise as _;
use zstdpool_core::store::Store;

/// The schemes opened natively.
const SCHEMES: &[&str] = &["s3://", "s3a://", "gs://", "gcs://"];

/// Whether `obj` is a URL of a store opened natively.
pub fn is_store_url(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyString>()
        .ok()
        .and_then(|s| s.to_str().ok().map(is_store_str))
        .unwrap_or(false)
}

fn is_store_str(s: &str) -> bool {
    SCHEMES
        .iter()
        .any(|scheme| s.len() >= scheme.len() && s[..scheme.len()].eq_ignore_ascii_case(scheme))
}

/// `storage_options` as key-value strings: values may be str, bool (as "true"/"false"), int
/// or float, as polars and delta-rs take them.
fn options(storage_options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let Some(d) = storage_options else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        let key: String = k.extract().map_err(|_| {
            errors::wrong_type(format!(
                "storage_options: keys must be str, not '{}'",
                type_name(&k)
            ))
        })?;
        let value = if v.is_instance_of::<PyBool>() {
            if v.is_truthy()? { "true" } else { "false" }.to_string()
        } else if v.is_instance_of::<PyString>()
            || v.is_instance_of::<pyo3::types::PyInt>()
            || v.is_instance_of::<pyo3::types::PyFloat>()
        {
            v.str()?.to_string()
        } else {
            return Err(errors::wrong_type(format!(
                "storage_options[{key:?}] must be a str, bool or number, not '{}'",
                type_name(&v)
            )));
        };
        out.push((key, value));
    }
    Ok(out)
}

/// The store and prefix `url` names, with `storage_options`.
pub fn open(url: &str, storage_options: Option<&Bound<'_, PyDict>>) -> PyResult<(Store, String)> {
    Store::open(url, &options(storage_options)?).or_raise()
}

/// The store a path argument names: Some for a store URL; None for a local path, where
/// `storage_options` must not be given (they would be ignored).
pub fn open_if_url(
    argument: &str,
    target: &Bound<'_, PyAny>,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<(Store, String)>> {
    if is_store_url(target) {
        let url: String = target.extract()?;
        return open(&url, storage_options).map(Some);
    }
    if storage_options.is_some_and(|d| !d.is_empty()) {
        return Err(errors::parameter(format!(
            "storage_options are for object store URLs (s3://, gs://), and {argument} is {}",
            target.repr()?
        )));
    }
    Ok(None)
}

/// `target` as `zstdpool._fs.resolve` resolves it against `filesystem` (a local filesystem's
/// path, a `file://` URI's path), or as it is when there is nothing to resolve.
pub fn resolve<'py>(
    target: &Bound<'py, PyAny>,
    filesystem: Option<&Bound<'py, PyAny>>,
    argument: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let filesystem = filesystem.filter(|f| !f.is_none());
    let uri = target
        .cast::<PyString>()
        .ok()
        .and_then(|s| s.to_str().ok().map(|s| s.contains("://")))
        .unwrap_or(false);
    if filesystem.is_none() && (!uri || is_store_url(target)) {
        return Ok(target.clone());
    }
    let py = target.py();
    let resolved = py.import("zstdpool._fs")?.getattr("resolve")?.call1((
        target,
        filesystem.map_or_else(|| py.None().into_bound(py), Bound::clone),
        py.None(),
        argument,
    ))?;
    resolved.get_item(0)
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
