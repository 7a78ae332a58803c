//! The keywords every reader and every writer take, written once.
//!
//! pyo3 reads a function's keywords from its signature, so a keyword that every reader
//! shares would otherwise be spelled in every reader's `signature`, parameter list and body.
//! [`shared_keywords!`] emits a reader's or writer's `#[pyfunction]` or `#[new]` from its own
//! signature and parameters, appends the shared keywords to both, and hands the body one
//! bundle of them:
//!
//! - `source(at, 'py)`: whatever names its source (schemas and summaries too) takes
//!   `filesystem` and `storage_options`, bundled as a [`PathOptions`] named `at`;
//! - `decoding(with, 'py)`: a reader that decompresses also takes `pool`, bundled with them
//!   as a [`Decoding`] named `with`;
//! - `sink(with, 'py)`: a writer takes `fsync`, `pool`, and `filesystem` and
//!   `storage_options` for its sink, bundled as a [`Writing`] named `with`
//!   (`sink(with, 'py, "base_dir")` where the sink's argument has another name).
//!
//! A keyword every reader (or writer) shares is added here: to the signature and parameters
//! of `@located` (or of its tier), to the bundle, and to the description its tier appends to
//! the docstring (`doc_location!`, `doc_pool!`, `doc_fsync!`); for writers, to
//! [`SinkKeywords`] too, which the Parquet writers read from the `**kwargs` they take
//! pyarrow's keywords in. The stub's runs of these keywords are written from
//! `scripts/stub_keywords.py`'s table, which a test checks against the runtime.
//!
//! [`PathOptions`]: crate::store::PathOptions

use pyo3::prelude::*;
use pyo3::types::PyDict;
use zstdpool_core::path_sink::Durability;
use zstdpool_core::pool::ContextPool;

use crate::args;
use crate::pool::{pool_or_default, PyContextPool};
use crate::store::PathOptions;

/// `filesystem` and `storage_options` of a function whose argument `$arg` ("source", "sink")
/// is a path or an object store URL.
macro_rules! doc_location {
    ($arg:literal) => {
        concat!(
            "- `filesystem`: a pyarrow or fsspec filesystem that `",
            $arg,
            "` is a path on.\n- `storage_options`: options of the object store that a URL `",
            $arg,
            "` names (credentials, region, endpoint, timeouts), as `zstdpool.dataset.dataset` \
             takes them."
        )
    };
}

/// `fsync`, as every writer of a path takes it.
macro_rules! doc_fsync {
    () => {
        "- `fsync`: also sync the file and its directory before returning (paths only)."
    };
}

/// The shared keywords of a reader that decompresses: the pool it borrows contexts from, and
/// where its source is.
#[derive(Clone, Copy)]
pub struct Decoding<'a, 'py> {
    pub pool: &'a ContextPool,
    pub at: PathOptions<'a, 'py>,
}

/// Emits a reader or writer with the shared keywords appended (see the module's comment),
/// and a function's docstring with their descriptions:
///
/// ```ignore
/// shared_keywords! {
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
macro_rules! shared_keywords {
    (decoding($bundle:ident, $lt:lifetime), $($rest:tt)*) => {
        shared_keywords!(@located $lt
            [#[doc = doc_pool!()]]
            [#[doc = doc_location!("source")]]
            [pool=None,]
            [pool: Option<&pyo3::Bound<$lt, $crate::pool::PyContextPool>>,]
            at
            [let $bundle = $crate::shared_keywords::Decoding {
                pool: $crate::pool::pool_or_default(pool),
                at,
            };]
            $($rest)*);
    };
    (source($bundle:ident, $lt:lifetime), $($rest:tt)*) => {
        shared_keywords!(@located $lt [] [#[doc = doc_location!("source")]] [] [] $bundle [] $($rest)*);
    };
    (sink($bundle:ident, $lt:lifetime), $($rest:tt)*) => {
        shared_keywords!(sink($bundle, $lt, "sink"), $($rest)*);
    };
    // A writer whose sink is an argument of another name (`base_dir`).
    (sink($bundle:ident, $lt:lifetime, $arg:literal), $($rest:tt)*) => {
        shared_keywords!(@located $lt
            [#[doc = doc_fsync!()] #[doc = doc_pool!()]]
            [#[doc = doc_location!($arg)]]
            [fsync=false, pool=None,]
            [fsync: bool, pool: Option<&pyo3::Bound<$lt, $crate::pool::PyContextPool>>,]
            at
            [let $bundle = $crate::shared_keywords::Writing {
                durability: $crate::shared_keywords::durability(fsync),
                pool: $crate::pool::pool_or_default(pool),
                at,
            };]
            $($rest)*);
    };
    // What every reader and writer takes: where its source or sink is.
    (@located $lt:lifetime [$($doc:tt)*] [$($where_doc:tt)*] [$($sig:tt)*] [$($param:tt)*] $at:ident [$($bind:tt)*] $($rest:tt)*) => {
        shared_keywords!(@emit
            [$($doc)* $($where_doc)*]
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
    // A class documents its constructor's keywords itself (`doc_pool!`, `doc_location!`).
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

/// The shared keywords of a writer: how its file is made durable, the pool it borrows
/// contexts from, and where its sink is.
#[derive(Clone, Copy)]
pub struct Writing<'a, 'py> {
    pub durability: Durability,
    pub pool: &'a ContextPool,
    pub at: PathOptions<'a, 'py>,
}

/// What `fsync=` asks of a path sink (see `zstdpool_core::path_sink::Durability`).
pub fn durability(fsync: bool) -> Durability {
    if fsync {
        Durability::Sync
    } else {
        Durability::Rename
    }
}

/// The names of a writer's shared keywords, for a writer that takes its keywords in
/// `**kwargs` (the Parquet writers take pyarrow's so).
pub const SINK_KEYWORDS: &[&str] = &["fsync", "pool", "filesystem", "storage_options"];

/// A writer's shared keywords read from `**kwargs`: what [`Writing`] borrows, owned.
pub struct SinkKeywords<'py> {
    fsync: bool,
    pool: Option<Bound<'py, PyContextPool>>,
    filesystem: Option<Bound<'py, PyAny>>,
    storage_options: Option<Bound<'py, PyDict>>,
}

impl<'py> SinkKeywords<'py> {
    /// Reads [`SINK_KEYWORDS`] through `get` (a keyword given, and not None).
    pub fn read<'a>(get: impl Fn(&str) -> Option<&'a Bound<'py, PyAny>>) -> PyResult<Self>
    where
        'py: 'a,
    {
        let pool = get("pool")
            .map(|p| {
                p.cast::<PyContextPool>()
                    .cloned()
                    .map_err(|_| args::not_one_of(p, "pool", "a zstdpool.ContextPool or None"))
            })
            .transpose()?;
        let storage_options = get("storage_options")
            .map(|d| {
                d.cast::<PyDict>()
                    .cloned()
                    .map_err(|_| args::not_one_of(d, "storage_options", "a dict"))
            })
            .transpose()?;
        Ok(SinkKeywords {
            fsync: get("fsync")
                .map(|v| args::convert(v, "fsync"))
                .transpose()?
                .unwrap_or(false),
            pool,
            filesystem: get("filesystem").cloned(),
            storage_options,
        })
    }

    /// The keywords as a writer's body takes them.
    pub fn writing(&self) -> Writing<'_, 'py> {
        Writing {
            durability: durability(self.fsync),
            pool: pool_or_default(self.pool.as_ref()),
            at: PathOptions::new(self.filesystem.as_ref(), self.storage_options.as_ref()),
        }
    }
}
