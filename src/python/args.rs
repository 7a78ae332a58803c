//! Integer arguments checked here rather than by PyO3's conversion, so that a negative size
//! or an absurd level raises ParameterError (a ValueError) naming the argument, not
//! OverflowError.

use crate::context::{max_level, min_level};
use crate::error::{Error, Result};

/// A zstd level.
pub fn level_arg(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::Parameter(format!(
            "invalid zstd level {v}: levels run from {} to {}",
            min_level(),
            max_level()
        ))
    })
}

/// A window log (None: the level's default).
pub fn window_log_arg(v: Option<i64>) -> Result<u32> {
    match v {
        None => Ok(0),
        Some(n) => u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
            Error::Parameter(format!("invalid window_log {n}: it must be from 10 to 30"))
        }),
    }
}

/// A size in bytes.
pub fn size_arg(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| {
        Error::Parameter(format!(
            "{name} must be a non-negative number of bytes, not {v}"
        ))
    })
}

/// A count.
pub fn count_arg(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v)
        .map_err(|_| Error::Parameter(format!("{name} must be a non-negative count, not {v}")))
}

/// A thread count: None chooses by size, otherwise at least 1.
pub fn threads_arg(v: Option<i64>) -> Result<Option<usize>> {
    match v {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(n) => Err(Error::Parameter(format!(
            "threads must be at least 1 (or None to choose by size), not {n}"
        ))),
    }
}
