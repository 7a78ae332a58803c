//! Every argument check shared by the bindings, in one place: integers from Python are checked
//! here rather than by a conversion, so that a negative size or an absurd level fails as
//! [`Error::Parameter`] naming the argument, whatever function it was passed to.

use std::time::Duration;

use crate::context::{max_level, min_level, WINDOW_LOG_MAX, WINDOW_LOG_MIN};
use crate::error::{Error, Result};

/// A string option that takes one of a few names, each with its aliases (the first is the one
/// shown): the one parser and the one wording for every such option, `{name} must be "a", "b"
/// or "c", not "x"` (with `or None` where None is taken too, which the caller handles). Names
/// compare as given; the caller lowercases a case-insensitive option first.
pub fn choice<T: Copy>(
    name: &str,
    value: &str,
    choices: &[(&[&str], T)],
    or_none: bool,
) -> Result<T> {
    if let Some((_, chosen)) = choices.iter().find(|(names, _)| names.contains(&value)) {
        return Ok(*chosen);
    }
    let mut shown: Vec<String> = choices
        .iter()
        .filter_map(|(names, _)| names.first().map(|n| format!("{n:?}")))
        .collect();
    if or_none {
        shown.push("None".into());
    }
    let listed = match shown.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(Error::Parameter(format!(
        "{name} must be {listed}, not {value:?}"
    )))
}

/// A zstd level (range-checked again by [`crate::CompressParams::validate`]).
pub fn level(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::Parameter(format!(
            "invalid zstd level {v}: levels run from {} to {}",
            min_level(),
            max_level()
        ))
    })
}

/// A window log (None: the level's default, 0).
pub fn window_log(name: &str, v: Option<i64>) -> Result<u32> {
    match v {
        None => Ok(0),
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| (WINDOW_LOG_MIN..=WINDOW_LOG_MAX).contains(n))
            .ok_or_else(|| {
                Error::Parameter(format!(
                    "invalid {name} {n}: it must be from {WINDOW_LOG_MIN} to {WINDOW_LOG_MAX}"
                ))
            }),
    }
}

/// A size in bytes.
pub fn size(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| {
        Error::Parameter(format!(
            "{name} must be a non-negative number of bytes, not {v}"
        ))
    })
}

/// A count.
pub fn count(name: &str, v: i64) -> Result<usize> {
    usize::try_from(v)
        .map_err(|_| Error::Parameter(format!("{name} must be a non-negative count, not {v}")))
}

/// A count that must be at least 1 (rows per group, per batch).
pub fn positive(name: &str, v: i64) -> Result<usize> {
    match usize::try_from(v) {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(Error::Parameter(format!(
            "{name} must be at least 1, not {v}"
        ))),
    }
}

/// A thread count: None chooses by size, otherwise at least 1.
pub fn threads(v: Option<i64>) -> Result<Option<usize>> {
    match v {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(n) => Err(Error::Parameter(format!(
            "threads must be at least 1 (or None to choose by size), not {n}"
        ))),
    }
}

/// A timeout in seconds: `None` is never, and so is a finite one too long for a [`Duration`]
/// (centuries).
pub fn timeout(name: &str, v: Option<f64>) -> Result<Option<Duration>> {
    match v {
        None => Ok(None),
        Some(t) if t.is_finite() && t >= 0.0 => Ok(Duration::try_from_secs_f64(t).ok()),
        Some(t) => Err(Error::Parameter(format!(
            "{name} must be a non-negative number of seconds or None, not {t}"
        ))),
    }
}

/// A positive duration in seconds, at least a nanosecond and no longer than a [`Duration`]
/// holds.
pub fn positive_seconds(name: &str, v: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            Error::Parameter(format!(
                "{name} must be a positive number of seconds (at least a nanosecond), not {v}"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_argument() {
        assert!(level(1 << 40).unwrap_err().to_string().contains("level"));
        assert_eq!(
            window_log("window_log", Some(WINDOW_LOG_MIN as i64)).unwrap(),
            WINDOW_LOG_MIN
        );
        let err = window_log("window_log_max", Some(WINDOW_LOG_MAX as i64 + 1)).unwrap_err();
        assert!(err.to_string().contains("invalid window_log_max"), "{err}");
        assert!(window_log("window_log", Some(0)).is_err());
        assert!(size("max_idle_bytes", -1)
            .unwrap_err()
            .to_string()
            .contains("max_idle_bytes"));
        assert!(count("max_idle_per_key", -1).is_err());
        assert_eq!(threads(None).unwrap(), None);
        assert!(threads(Some(0)).is_err());
        assert!(timeout("idle_timeout", Some(-1.0)).is_err());
        assert!(timeout("idle_timeout", Some(f64::NAN)).is_err());
        assert!(timeout("idle_timeout", Some(f64::INFINITY)).is_err());
        assert_eq!(timeout("idle_timeout", Some(1e300)).unwrap(), None);
        for bad in [0.0, 1e-12, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert!(positive_seconds("spare_timeout", bad).is_err(), "{bad}");
        }
        assert_eq!(
            timeout("spare_timeout", Some(0.5)).unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(positive("row_group_size", 3).unwrap(), 3);
        for bad in [0, -1, i64::MIN] {
            let err = positive("row_group_size", bad).unwrap_err().to_string();
            assert_eq!(err, format!("row_group_size must be at least 1, not {bad}"));
        }
    }

    #[test]
    fn a_choice_has_one_wording_whatever_the_option() {
        let choices: &[(&[&str], u8)] = &[(&["a", "alias"], 1), (&["b"], 2), (&["c"], 3)];
        assert_eq!(choice("opt", "alias", choices, false).unwrap(), 1);
        assert_eq!(choice("opt", "c", choices, false).unwrap(), 3);
        let err = choice("opt", "d", choices, false).unwrap_err().to_string();
        assert_eq!(err, r#"opt must be "a", "b" or "c", not "d""#);
        let err = choice("compression", "lzo", choices, true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            r#"compression must be "a", "b", "c" or None, not "lzo""#
        );
        let err = choice("one", "x", &[(&["only"], ())], false)
            .unwrap_err()
            .to_string();
        assert_eq!(err, r#"one must be "only", not "x""#);
    }
}
