//! Every check of an argument's value, in one place: integers from Python are checked here
//! rather than by a conversion, so that a negative size or an absurd level fails as a
//! `ParameterError` naming the argument, whatever function it was passed to; and options
//! named by strings ("zstd", "2.6", "delete_matching") become the core's typed values here,
//! so that the core parses no option's spelling. (Checks the core makes of typed values
//! against a schema, such as an encoding a column's type cannot hold, name the option there.)

use std::time::Duration;

use zstdpool_core::context::{max_level, min_level, WINDOW_LOG_MAX, WINDOW_LOG_MIN};
use zstdpool_core::dataset::{ExistingData, FileFormat};
use zstdpool_core::error::{Error, Result};
use zstdpool_core::ipc::{Compression, WriterOptions};
use zstdpool_core::parquet::{
    Encoding, FormatVersion, PageCodec, PageVersion, PerColumn, WriteOptions,
};
use zstdpool_core::CompressParams;

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

/// A zstd level (range-checked again by `CompressParams::validate`).
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

/// A codec's zstd parameters at `level` (`default` when not given), checked.
fn zstd_level(level: Option<i64>, default: i32) -> Result<CompressParams> {
    let level = level.map(self::level).transpose()?;
    let params = CompressParams::level(level.unwrap_or(default));
    params.validate()?;
    Ok(params)
}

/// The codec named `name` (case-insensitive: "zstd", "lz4" or "lz4_raw", "snappy", "gzip",
/// "brotli", "none" or "uncompressed"; None is none), at `level` where the codec has one.
pub fn page_codec(name: Option<&str>, level: Option<i64>) -> Result<PageCodec> {
    let lower = name.map(str::to_ascii_lowercase);
    let ranged = |lo: i64, hi: i64, default: u32| -> Result<u32> {
        match level {
            None => Ok(default),
            Some(l) if (lo..=hi).contains(&l) => Ok(l as u32),
            Some(l) => Err(Error::Parameter(format!(
                "invalid {} compression_level {l}: it must be from {lo} to {hi}",
                lower.as_deref().unwrap_or_default()
            ))),
        }
    };
    #[derive(Clone, Copy)]
    enum Named {
        Zstd,
        Lz4,
        Snappy,
        Gzip,
        Brotli,
        None,
    }
    let named = match lower.as_deref() {
        None => Named::None,
        Some(n) => choice(
            "compression",
            n,
            &[
                (&["zstd"], Named::Zstd),
                (&["lz4", "lz4_raw"], Named::Lz4),
                (&["snappy"], Named::Snappy),
                (&["gzip"], Named::Gzip),
                (&["brotli"], Named::Brotli),
                (&["none", "uncompressed"], Named::None),
            ],
            true,
        )?,
    };
    let codec = match named {
        Named::Zstd => {
            let params = zstd_level(level, zstdpool_core::parquet::DEFAULT_ZSTD_LEVEL)?;
            return Ok(PageCodec::Zstd(params));
        }
        Named::Gzip => return Ok(PageCodec::Gzip(ranged(0, 9, 6)?)),
        Named::Brotli => return Ok(PageCodec::Brotli(ranged(0, 11, 1)?)),
        Named::Lz4 => PageCodec::Lz4Raw,
        Named::Snappy => PageCodec::Snappy,
        Named::None => PageCodec::None,
    };
    if level.is_some() {
        // pyarrow's lz4 levels are LZ4 HC's, which would make smaller pages; the parquet
        // crate writes LZ4_RAW at its one level, so a level taken would change nothing.
        let why = match named {
            Named::Lz4 => {
                ": the parquet crate writes LZ4_RAW at one level (pyarrow's levels are LZ4 \
                 HC's, which zstdpool does not write); pass no level, or use zstd"
            }
            _ => "",
        };
        return Err(Error::Parameter(format!(
            "compression_level does not apply to compression={}{why}",
            name.map_or("None".to_string(), |n| format!("{n:?}"))
        )));
    }
    Ok(codec)
}

/// pyarrow's `data_page_version`: "1.0" or "2.0".
pub fn page_version(name: &str) -> Result<PageVersion> {
    choice(
        "data_page_version",
        name,
        &[(&["1.0"], PageVersion::V1), (&["2.0"], PageVersion::V2)],
        false,
    )
}

pub fn format_version(name: &str) -> Result<FormatVersion> {
    choice(
        "version",
        name,
        &[
            (&["1.0"], FormatVersion::V1_0),
            (&["2.4"], FormatVersion::V2_4),
            (&["2.6"], FormatVersion::V2_6),
        ],
        false,
    )
}

/// A column encoding named as pyarrow names it (`column_encoding`), checked against the
/// physical types it applies to when the writer opens.
pub fn column_encoding(name: &str) -> Result<Encoding> {
    let upper = name.to_ascii_uppercase();
    if matches!(upper.as_str(), "PLAIN_DICTIONARY" | "RLE_DICTIONARY") {
        return Err(Error::Parameter(format!(
            "column_encoding cannot be {name:?}: dictionary encoding is chosen with \
             use_dictionary"
        )));
    }
    choice(
        "column_encoding",
        &upper,
        &[
            (&["PLAIN"], Encoding::PLAIN),
            (&["BYTE_STREAM_SPLIT"], Encoding::BYTE_STREAM_SPLIT),
            (&["DELTA_BINARY_PACKED"], Encoding::DELTA_BINARY_PACKED),
            (
                &["DELTA_LENGTH_BYTE_ARRAY"],
                Encoding::DELTA_LENGTH_BYTE_ARRAY,
            ),
            (&["DELTA_BYTE_ARRAY"], Encoding::DELTA_BYTE_ARRAY),
            (&["RLE"], Encoding::RLE),
        ],
        false,
    )
}

/// The codec named `name` (case-insensitive: "zstd"; "lz4" or "lz4_frame"; "none",
/// "uncompressed" or None), at zstd `level` (default `zstdpool_core::ipc::DEFAULT_ZSTD_LEVEL`).
pub fn ipc_compression(name: Option<&str>, level: Option<i64>) -> Result<Compression> {
    #[derive(Clone, Copy)]
    enum Named {
        Zstd,
        Lz4,
        None,
    }
    let named = match name {
        None => Named::None,
        Some(n) => choice(
            "compression",
            &n.to_ascii_lowercase(),
            &[
                (&["zstd"], Named::Zstd),
                (&["lz4", "lz4_frame"], Named::Lz4),
                (&["none", "uncompressed"], Named::None),
            ],
            true,
        )?,
    };
    let compression = match named {
        Named::Zstd => {
            let params = zstd_level(level, zstdpool_core::ipc::DEFAULT_ZSTD_LEVEL)?;
            return Ok(Compression::Zstd(params));
        }
        Named::Lz4 => Compression::Lz4,
        Named::None => Compression::None,
    };
    if level.is_some() {
        return Err(Error::Parameter(format!(
            "level applies to zstd only, not to compression={}",
            name.map_or("None".to_string(), |n| format!("{n:?}"))
        )));
    }
    Ok(compression)
}

/// The format named `name` (case-insensitive: "parquet", or "ipc", "arrow" or "feather"
/// for Arrow IPC files), with `compression` and `level` as that format takes them.
pub fn file_format(
    name: &str,
    compression: Option<&str>,
    level: Option<i64>,
) -> Result<FileFormat> {
    #[derive(Clone, Copy)]
    enum Named {
        Parquet,
        Ipc,
        Feather,
    }
    let named = choice(
        "format",
        &name.to_ascii_lowercase(),
        &[
            (&["parquet"], Named::Parquet),
            (&["ipc", "arrow"], Named::Ipc),
            (&["feather"], Named::Feather),
        ],
        false,
    )?;
    Ok(match named {
        Named::Parquet => FileFormat::Parquet(Box::new(WriteOptions {
            compression: PerColumn::all(page_codec(compression, level)?),
            ..Default::default()
        })),
        Named::Ipc | Named::Feather => FileFormat::Ipc {
            options: WriterOptions {
                compression: ipc_compression(compression, level)?,
                ..Default::default()
            },
            feather: matches!(named, Named::Feather),
        },
    })
}

/// pyarrow's `existing_data_behavior`.
pub fn existing_data(name: &str) -> Result<ExistingData> {
    choice(
        "existing_data_behavior",
        name,
        &[
            (&["error"], ExistingData::Error),
            (&["overwrite_or_ignore"], ExistingData::OverwriteOrIgnore),
            (&["delete_matching"], ExistingData::DeleteMatching),
        ],
        false,
    )
}
