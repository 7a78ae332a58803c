//! pyarrow's `IpcWriteOptions` and `IpcReadOptions` read into zstdpool's own settings, so that
//! code written for `pyarrow.ipc` passes them unchanged. A keyword left at its default yields
//! to the options object; one set to something else is an error, not a silent choice.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, IntoPyErr as _};
use zstdpool_core::error::Error;
use zstdpool_core::ipc::KeyValues;

fn conflict(what: &str, keyword: String, option: String) -> PyErr {
    Error::Parameter(format!(
        "{what}: the keyword says {keyword} and options says {option}; give one of them"
    ))
    .into_py_err()
}

fn require(obj: &Bound<'_, PyAny>, module: &str, class: &str, what: &str) -> PyResult<()> {
    let cls = obj.py().import(module)?.getattr(class)?;
    if !obj.is_instance(&cls)? {
        return Err(errors::wrong_type(format!(
            "{what} must be a {module}.{class}, not {}",
            obj.get_type().name()?
        )));
    }
    Ok(())
}

/// `threads` with pyarrow's `use_threads` of `options`: False means one thread.
fn with_use_threads(options: &Bound<'_, PyAny>, threads: Option<i64>) -> PyResult<Option<i64>> {
    if options.getattr("use_threads")?.extract::<bool>()? {
        return Ok(threads);
    }
    match threads {
        None | Some(1) => Ok(Some(1)),
        Some(n) => Err(conflict(
            "threads",
            format!("threads={n}"),
            "use_threads=False".into(),
        )),
    }
}

/// What a writer takes from an `IpcWriteOptions` and the keywords beside it.
pub struct WriteSettings {
    pub compression: Option<String>,
    pub threads: Option<i64>,
    pub dictionary_deltas: bool,
    /// Unify a table's dictionaries before writing it to a file, as pyarrow does.
    pub unify_dictionaries: bool,
}

impl WriteSettings {
    /// Merges `options` (a `pyarrow.ipc.IpcWriteOptions`, or None) into the keywords.
    pub fn new(
        options: Option<&Bound<'_, PyAny>>,
        compression: Option<&str>,
        threads: Option<i64>,
        dictionary_deltas: bool,
    ) -> PyResult<Self> {
        let mut settings = WriteSettings {
            compression: compression.map(str::to_owned),
            threads,
            dictionary_deltas,
            unify_dictionaries: false,
        };
        let Some(options) = options.filter(|o| !o.is_none()) else {
            return Ok(settings);
        };
        require(options, "pyarrow.ipc", "IpcWriteOptions", "options")?;
        if options.getattr("use_legacy_format")?.extract::<bool>()? {
            return Err(Error::Parameter(
                "options.use_legacy_format=True asks for the IPC format before Arrow 0.15 \
                 (no continuation marker), which zstdpool does not write; every Arrow reader \
                 since 2019 reads the current format"
                    .into(),
            )
            .into_py_err());
        }
        let version: i64 = options
            .getattr("metadata_version")?
            .getattr("value")?
            .extract()?;
        if version != 4 {
            return Err(Error::Parameter(
                "options.metadata_version: zstdpool writes metadata version V5 only; V4 (for \
                 readers older than Arrow 1.0) cannot describe compressed bodies"
                    .into(),
            )
            .into_py_err());
        }
        // pyarrow gives the codec's name only (a pa.Codec's level is not readable from the
        // options object): `level=` sets the level.
        let codec: Option<String> = options.getattr("compression")?.extract()?;
        match (&settings.compression, &codec) {
            (Some(k), Some(o)) if k == "zstd" || same_codec(k, o) => {
                settings.compression = codec.clone()
            }
            (Some(k), None) if k == "zstd" => settings.compression = None,
            (None, None) => {}
            (k, o) => return Err(conflict("compression", format!("{k:?}"), format!("{o:?}"))),
        }
        settings.threads = with_use_threads(options, settings.threads)?;
        let deltas: bool = options.getattr("emit_dictionary_deltas")?.extract()?;
        settings.dictionary_deltas |= deltas;
        settings.unify_dictionaries = options.getattr("unify_dictionaries")?.extract()?;
        // allow_64bit: zstdpool always writes 64-bit lengths, as the format allows.
        Ok(settings)
    }
}

fn same_codec(a: &str, b: &str) -> bool {
    let norm = |s: &str| match s.to_ascii_lowercase().as_str() {
        "lz4_frame" => "lz4".to_string(),
        other => other.to_string(),
    };
    norm(a) == norm(b)
}

/// What a reader takes from an `IpcReadOptions` and the keywords beside it.
pub struct ReadSettings {
    /// Top-level columns to read; None reads all.
    pub included_fields: Option<Vec<usize>>,
    pub threads: Option<i64>,
}

impl ReadSettings {
    pub fn new(
        options: Option<&Bound<'_, PyAny>>,
        memory_pool: Option<&Bound<'_, PyAny>>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        if let Some(pool) = memory_pool.filter(|p| !p.is_none()) {
            // Accepted for pyarrow's signature: zstdpool's buffers come from its own pool.
            require(pool, "pyarrow", "MemoryPool", "memory_pool")?;
        }
        let mut settings = ReadSettings {
            included_fields: None,
            threads,
        };
        let Some(options) = options.filter(|o| !o.is_none()) else {
            return Ok(settings);
        };
        require(options, "pyarrow.ipc", "IpcReadOptions", "options")?;
        let fields: Vec<i64> = options.getattr("included_fields")?.extract()?;
        if !fields.is_empty() {
            let fields = fields
                .into_iter()
                .map(|i| {
                    usize::try_from(i).map_err(|_| {
                        Error::Parameter(format!(
                            "options.included_fields: field index {i} is out of range"
                        ))
                        .into_py_err()
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            settings.included_fields = Some(fields);
        }
        settings.threads = with_use_threads(options, settings.threads)?;
        // Alignment.At64Byte (2) would ask every buffer to start on 64 bytes; decompressed
        // bodies do, but buffers of uncompressed data are used where they lie. (pyarrow
        // before 16 has no such option.)
        let alignment: i64 = match options.getattr("ensure_alignment") {
            Ok(a) => a.getattr("value")?.extract()?,
            Err(_) => 0,
        };
        if alignment > 1 {
            return Err(Error::Parameter(
                "options.ensure_alignment=At64Byte is not supported: zstdpool aligns buffers as \
                 their data types need (Alignment.DataTypeSpecific)"
                    .into(),
            )
            .into_py_err());
        }
        // ensure_native_endian: data comes back in this machine's byte order either way.
        Ok(settings)
    }
}

/// Key-value metadata given as a dict or a `pyarrow.KeyValueMetadata`, with str or bytes
/// (UTF-8) keys and values, in its order.
pub fn key_values(what: &str, metadata: &Bound<'_, PyAny>) -> PyResult<KeyValues> {
    let items = if let Ok(d) = metadata.cast::<PyDict>() {
        d.items().into_any()
    } else if metadata.hasattr("items")? {
        metadata.call_method0("items")?
    } else {
        return Err(errors::wrong_type(format!(
            "{what} must be a dict or a pyarrow.KeyValueMetadata, not {}",
            metadata.get_type().name()?
        )));
    };
    let text = |v: Bound<'_, PyAny>| -> PyResult<String> {
        if let Ok(s) = v.extract::<String>() {
            return Ok(s);
        }
        let bytes: Vec<u8> = v.extract().map_err(|_| {
            errors::wrong_type(format!("{what}: keys and values must be str or bytes"))
        })?;
        String::from_utf8(bytes).map_err(|_| {
            Error::Parameter(format!("{what}: keys and values must be UTF-8")).into_py_err()
        })
    };
    items
        .try_iter()?
        .map(|item| {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
            Ok((text(k)?, text(v)?))
        })
        .collect()
}

/// `pairs` as a `pyarrow.KeyValueMetadata`.
pub fn to_key_value_metadata<'py>(
    py: Python<'py>,
    pairs: &[(String, String)],
) -> PyResult<Bound<'py, PyAny>> {
    let list: Vec<(&[u8], &[u8])> = pairs
        .iter()
        .map(|(k, v)| (k.as_bytes(), v.as_bytes()))
        .collect();
    py.import("pyarrow")?
        .getattr("KeyValueMetadata")?
        .call1((list,))
}
