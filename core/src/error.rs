//! The core's one error type. The bindings map each variant to a Python exception in one place.

use arrow_schema::ArrowError;

/// Every failure the core reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter outside what zstd or the format accepts (level, window log, codec name...).
    #[error("{0}")]
    Parameter(String),
    /// zstd or lz4 rejected the data being decompressed.
    #[error("{0}")]
    Corrupt(String),
    /// A declared or produced size passes a caller's limit; refused before allocating.
    #[error("{0}")]
    Limit(String),
    /// An allocation failed.
    #[error("out of memory: {0}")]
    Memory(String),
    /// zstd failed while compressing (an internal error, not bad input).
    #[error("zstd compression failed: {0}")]
    Compress(String),
    /// Malformed or unsupported Arrow IPC data, or a batch that does not fit the writer.
    #[error("{0}")]
    Ipc(String),
    /// Malformed or unsupported Parquet data, or a batch or type a Parquet writer cannot take.
    #[error("{0}")]
    Parquet(String),
    /// An I/O error from a sink or source.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The same error with `at` (where it happened: "record batch 3", "column 2 ('x')") in
    /// front of its message: the one way the core adds a location to a message. Errors that
    /// carry no message of the core's own (memory, I/O) are kept as they are.
    pub fn at(self, at: impl std::fmt::Display) -> Error {
        match self {
            Error::Corrupt(m) => Error::Corrupt(format!("{at}: {m}")),
            Error::Compress(m) => Error::Compress(format!("{at}: {m}")),
            Error::Limit(m) => Error::Limit(format!("{at}: {m}")),
            Error::Ipc(m) => Error::Ipc(format!("{at}: {m}")),
            Error::Parquet(m) => Error::Parquet(format!("{at}: {m}")),
            other => other,
        }
    }
}

/// An I/O error about a path: what could not be done, to which path, and why. Carried inside
/// a [`std::io::Error`] of the cause's kind, so the bindings can raise an `OSError` with the
/// cause's errno and the path as its filename.
#[derive(Debug)]
pub struct PathError {
    /// "cannot write", "cannot read", "cannot clean".
    pub action: &'static str,
    pub path: std::path::PathBuf,
    pub cause: std::io::Error,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.action, self.path.display(), self.cause)
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// `cause` as an I/O error of its own kind that names `path` and what could not be done.
pub fn path_error(
    action: &'static str,
    path: &std::path::Path,
    cause: std::io::Error,
) -> std::io::Error {
    if cause
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<PathError>().is_some())
    {
        return cause; // already says which path
    }
    std::io::Error::new(
        cause.kind(),
        PathError {
            action,
            path: path.to_path_buf(),
            cause,
        },
    )
}

/// Shorthand for results that fail with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<ArrowError> for Error {
    fn from(err: ArrowError) -> Self {
        match err {
            ArrowError::IoError(msg, io) => Error::Io(std::io::Error::new(io.kind(), msg)),
            ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Ipc(other.to_string()),
            },
            ArrowError::MemoryError(msg) => Error::Memory(msg),
            other => Error::Ipc(strip_arrow_prefix(other.to_string())),
        }
    }
}

impl From<::parquet::errors::ParquetError> for Error {
    fn from(err: ::parquet::errors::ParquetError) -> Self {
        use ::parquet::errors::ParquetError as P;
        match err {
            P::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(inner) => match inner.downcast::<std::io::Error>() {
                    Ok(io) => Error::Io(*io),
                    Err(inner) => match inner.downcast::<ArrowError>() {
                        Ok(arrow) => Error::from(*arrow).into_parquet(),
                        Err(other) => Error::Parquet(other.to_string()),
                    },
                },
            },
            P::EOF(m) => Error::Parquet(format!("truncated Parquet data: {m}")),
            P::NYI(m) => Error::Parquet(format!("not supported: {m}")),
            P::General(m) | P::ArrowError(m) => Error::Parquet(m),
            other => Error::Parquet(other.to_string()),
        }
    }
}

impl Error {
    /// An Arrow-side error met while reading or writing Parquet, as a Parquet error.
    pub(crate) fn into_parquet(self) -> Error {
        match self {
            Error::Ipc(m) => Error::Parquet(m),
            other => other,
        }
    }
}

impl From<std::collections::TryReserveError> for Error {
    fn from(err: std::collections::TryReserveError) -> Self {
        Error::Memory(err.to_string())
    }
}

/// Arrow's messages start with the variant name ("Invalid argument error: ..."); keep the words
/// that describe the problem.
fn strip_arrow_prefix(msg: String) -> String {
    for prefix in [
        "Invalid argument error: ",
        "Ipc error: ",
        "Parser error: ",
        "Schema error: ",
        "Compute error: ",
        "Not yet implemented: ",
    ] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            return rest.to_string();
        }
    }
    msg
}

/// The message zstd gives for an error code.
pub(crate) fn zstd_error_name(code: usize) -> &'static str {
    zstd_safe::get_error_name(code)
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs library code that may panic on malformed input (arrow-ipc's schema conversion does,
/// on unknown types): the panic becomes an [`Error::Ipc`] naming `what`, and no panic message
/// is printed for it. Other panics are reported by the previous hook as before.
pub fn catch_panics<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    result.unwrap_or_else(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no detail".into());
        Err(Error::Ipc(format!(
            "malformed input: {what} failed ({detail})"
        )))
    })
}
