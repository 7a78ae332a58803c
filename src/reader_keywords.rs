//! The keywords every reader takes, written once.
//!
//! pyo3 reads a function's keywords from its signature, so a keyword that every reader
//! shares would otherwise be spelled in every reader's `signature`, parameter list and body.
//! [`reader!`] emits a reader's `#[pyfunction]` or `#[new]` from its own signature and
//! parameters, appends the shared keywords to both, and hands the body one bundle of them:
//!
//! - `source(at, 'py)`: a reader of anything that names its source (schemas and summaries
//!   too) takes `filesystem` and `storage_options`, bundled as a [`PathOptions`] named `at`;
//! - `decoding(with, 'py)`: a reader that decompresses also takes `pool`, bundled with them
//!   as a [`Decoding`] named `with`.
//!
//! A keyword every reader shares is added here: to the signature and parameters of
//! `@located` (or of `decoding` for the readers that decompress), to the bundle, and to
//! `doc_source_location!`'s text (or `doc_pool!`'s). The stub's runs of these keywords are written from
//! `scripts/stub_keywords.py`'s table, which a test checks against the runtime.
//!
//! [`PathOptions`]: crate::store::PathOptions

use zstdpool_core::pool::ContextPool;

use crate::store::PathOptions;

/// `filesystem` and `storage_options` of a function that reads `source`.
macro_rules! doc_source_location {
    () => {
        "- `filesystem`: a pyarrow or fsspec filesystem that `source` is a path on.\n\
         - `storage_options`: options of the object store that a URL `source` names \
         (credentials, region, endpoint, timeouts), as `zstdpool.dataset.dataset` takes them."
    };
}

/// The shared keywords of a reader that decompresses: the pool it borrows contexts from, and
/// where its source is.
#[derive(Clone, Copy)]
pub struct Decoding<'a, 'py> {
    pub pool: &'a ContextPool,
    pub at: PathOptions<'a, 'py>,
}

/// Emits a reader with the shared keywords appended (see the module's comment), and a
/// function's docstring with their descriptions:
///
/// ```ignore
/// reader! {
///     decoding(with, 'py),
///     signature = (source, *, threads=None);
///     /// The docstring.
///     #[pyfunction]
///     pub fn read_it<'py>(py: Python<'py>, source: &Bound<'py, PyAny>, threads: Option<i64>)
///         -> PyResult<Bound<'py, PyAny>> { ... with.pool ... with.at ... }
/// }
/// ```
///
/// A class's constructor is written inside `impl Class { ... }`, with its `#[new]`, and is
/// emitted in a `#[pymethods]` block of its own.
macro_rules! reader {
    (decoding($bundle:ident, $lt:lifetime), $($rest:tt)*) => {
        reader!(@located $lt
            [#[doc = doc_pool!()]]
            [pool=None,]
            [pool: Option<&pyo3::Bound<$lt, $crate::pool::PyContextPool>>,]
            at
            [let $bundle = $crate::reader_keywords::Decoding {
                pool: $crate::pool::pool_or_default(pool),
                at,
            };]
            $($rest)*);
    };
    (source($bundle:ident, $lt:lifetime), $($rest:tt)*) => {
        reader!(@located $lt [] [] [] $bundle [] $($rest)*);
    };
    // What every reader takes: where its source is.
    (@located $lt:lifetime [$($doc:tt)*] [$($sig:tt)*] [$($param:tt)*] $at:ident [$($bind:tt)*] $($rest:tt)*) => {
        reader!(@emit
            [$($doc)* #[doc = doc_source_location!()]]
            [$($sig)* filesystem=None, storage_options=None]
            [
                $($param)*
                filesystem: Option<&pyo3::Bound<$lt, pyo3::PyAny>>,
                storage_options: Option<&pyo3::Bound<$lt, pyo3::types::PyDict>>
            ]
            [
                let $at = $crate::store::PathOptions::new(filesystem, storage_options);
                $($bind)*
            ]
            $($rest)*);
    };
    (@emit [$($doc:tt)*] [$($shared_sig:tt)*] [$($shared:tt)*] [$($bind:tt)*]
        signature = ($($sig:tt)*);
        $(#[$meta:meta])*
        $vis:vis fn $name:ident<$lt:lifetime>($($own:tt)*) -> $ret:ty $body:block
    ) => {
        $(#[$meta])*
        $($doc)*
        #[pyo3(signature = ($($sig)*, $($shared_sig)*))]
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$lt>($($own)*, $($shared)*) -> $ret {
            $($bind)*
            $body
        }
    };
    // A class documents its constructor's keywords itself (`doc_pool!`, `doc_source_location!`).
    (@emit [$($doc:tt)*] [$($shared_sig:tt)*] [$($shared:tt)*] [$($bind:tt)*]
        signature = ($($sig:tt)*);
        impl $class:ty {
            $(#[$meta:meta])*
            fn $name:ident<$lt:lifetime>($($own:tt)*) -> $ret:ty $body:block
        }
    ) => {
        #[pyo3::pymethods]
        impl $class {
            $(#[$meta])*
            #[pyo3(signature = ($($sig)*, $($shared_sig)*))]
            #[allow(clippy::too_many_arguments)]
            fn $name<$lt>($($own)*, $($shared)*) -> $ret {
                $($bind)*
                $body
            }
        }
    };
}
