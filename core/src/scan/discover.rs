//! Finding a dataset's files and their partitions. A directory is walked (sorted, as pyarrow
//! lists it), leaving out names that start with one of the ignored prefixes at any depth, and
//! without following links to directories (a directory others can write to may hold a link
//! to anywhere, or to itself); a link to a file is read as the file. Each file's partition
//! values come from its directories: `key=value` segments (Hive), or the segments in order
//! (a list of names), values unescaped as pyarrow escapes them and
//! `__HIVE_DEFAULT_PARTITION__` read as null. Their types are inferred as pyarrow infers
//! them (int32 where every value is one, else string) unless given.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::dataset::NULL_PARTITION;
use crate::error::{path_error, Error, Result};
use crate::store::Store;

/// How directories name partitions.
#[derive(Clone, Debug)]
pub enum Partitioning {
    /// No partitions: directories are only where files are.
    None,
    /// `key=value` directories; the keys are discovered, or given with their types.
    /// Inferred types are dictionaries of them with `dictionary` (as `pyarrow.parquet`
    /// infers them).
    /// A value named `null_fallback` (`__HIVE_DEFAULT_PARTITION__` when None) is null.
    Hive {
        schema: Option<SchemaRef>,
        dictionary: bool,
        null_fallback: Option<String>,
    },
    /// The first directories below the root hold the values of these fields, in order; their
    /// types are inferred with `infer`, as for Hive.
    Directory {
        schema: SchemaRef,
        infer: bool,
        dictionary: bool,
    },
    /// The file name holds the values of these fields, in order, each followed by `_`
    /// (`2026_12_part-0.parquet`, pyarrow's `FilenamePartitioning`); types as for Directory.
    Filename {
        schema: SchemaRef,
        infer: bool,
        dictionary: bool,
    },
}

/// A file of a dataset: its path and, by partition field, the value its directories give
/// (None: null), as written.
#[derive(Clone, Debug)]
pub struct DatasetFile {
    pub path: PathBuf,
    pub size: u64,
    pub values: Vec<Option<String>>,
}

/// A dataset's files with their partitions typed: `schema` has a field per partition key, and
/// each file an array of one value per field.
#[derive(Clone, Debug)]
pub struct Discovered {
    pub files: Vec<DatasetFile>,
    pub schema: SchemaRef,
    pub values: Vec<Vec<ArrayRef>>,
}

/// Every file below `root`, sorted by path, with the names starting with one of `ignore`
/// left out at every depth below the root.
pub fn list_files(root: &Path, ignore: &[String]) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| path_error("cannot list", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| path_error("cannot list", &dir, e))?;
            let name = entry.file_name();
            let ignored = name.to_str().is_some_and(|n| {
                ignore
                    .iter()
                    .any(|p| !p.is_empty() && n.starts_with(p.as_str()))
            });
            if ignored {
                continue;
            }
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| path_error("cannot read", &path, e))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let size = entry
                    .metadata()
                    .map_err(|e| path_error("cannot read", &path, e))?
                    .len();
                out.push((path, size));
            } else if kind.is_symlink() {
                // A link is read as the file it names, never walked as a directory.
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => out.push((path, m.len())),
                    Ok(_) => {}
                    Err(e) => return Err(path_error("cannot read", &path, e).into()),
                }
            }
        }
    }
    // By the path's bytes, as pyarrow sorts paths (a PathBuf orders by component: "k=a/"
    // before "k=a-b/", where the bytes put "-" before "/").
    out.sort_by(|a, b| {
        use std::os::unix::ffi::OsStrExt;
        a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes())
    });
    Ok(out)
}

/// `%XX` escapes decoded, as pyarrow's "uri" segment encoding writes them; a segment that
/// holds a malformed escape is kept as it is. A segment that is not valid UTF-8 once decoded
/// is refused, as pyarrow refuses it (reading its escaped text would give values no writer
/// wrote).
pub fn unescape(segment: &str) -> Result<String> {
    if !segment.contains('%') {
        return Ok(segment.to_string());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return Ok(segment.to_string()),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| {
        Error::Parameter(format!(
            "partitioning: the segment {segment:?} is not valid UTF-8 after URL decoding"
        ))
    })
}

/// A partition value as written, `null` naming a null one.
fn value_of(raw: &str, null: &str) -> Result<Option<String>> {
    let value = unescape(raw)?;
    Ok((value != null).then_some(value))
}

/// An integer's text as arrow's parser reads it, where arrow-rs's cast does not: `0x` or
/// `0X` and up to `bits / 4` hex digits, the bits of the type's two's
/// complement (pyarrow reads `q=0x10` as 16 and `0xFFFFFFFF` as an int32's -1); None for
/// other text.
fn hex_as_decimal(text: &str, bits: u32, signed: bool) -> Option<String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if digits.len() > (bits / 4) as usize {
        return None;
    }
    let bits_value = u64::from_str_radix(digits, 16).ok()?;
    if signed && bits_value >> (bits - 1) & 1 == 1 {
        let value = bits_value as i128 - (1i128 << bits);
        return Some(value.to_string());
    }
    Some(bits_value.to_string())
}

/// Whether `text` is an int32 as pyarrow's partition inference reads one: decimal digits
/// with an optional `-`, or `0x` hex of up to 8 digits, in range.
fn is_int32(text: &str) -> bool {
    castable_text(text, &DataType::Int32).is_ok_and(|t| t.parse::<i32>().is_ok())
}

/// A partition value's text as arrow-rs casts it to `to`: hex made decimal for integers.
/// An integer's text must be what arrow's parser reads (an optional `-`, then digits; or
/// hex): arrow-rs also reads `+5`, which pyarrow refuses. The error is the cast's.
fn castable_text<'a>(
    text: &'a str,
    to: &DataType,
) -> std::result::Result<std::borrow::Cow<'a, str>, arrow_schema::ArrowError> {
    let (bits, signed) = match to {
        DataType::Int8 => (8, true),
        DataType::Int16 => (16, true),
        DataType::Int32 => (32, true),
        DataType::Int64 => (64, true),
        DataType::UInt8 => (8, false),
        DataType::UInt16 => (16, false),
        DataType::UInt32 => (32, false),
        DataType::UInt64 => (64, false),
        _ => return Ok(text.into()),
    };
    if let Some(decimal) = hex_as_decimal(text, bits, signed) {
        return Ok(decimal.into());
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(text.into());
    }
    Err(arrow_schema::ArrowError::CastError(format!(
        "cannot parse {text:?} as {to}"
    )))
}

/// The files' partitions, typed.
pub fn partitions(
    files: Vec<(PathBuf, u64)>,
    base: Option<&Path>,
    partitioning: &Partitioning,
) -> Result<Discovered> {
    let dirs = |path: &Path| -> Vec<String> {
        let parent = path.parent().unwrap_or(Path::new(""));
        let rel = base
            .and_then(|b| parent.strip_prefix(b).ok())
            .unwrap_or(parent);
        rel.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => s.to_str().map(str::to_string),
                _ => None,
            })
            .collect()
    };
    match partitioning {
        Partitioning::None => {
            let files = files
                .into_iter()
                .map(|(path, size)| DatasetFile {
                    path,
                    size,
                    values: Vec::new(),
                })
                .collect::<Vec<_>>();
            let n = files.len();
            Ok(Discovered {
                files,
                schema: Arc::new(Schema::empty()),
                values: vec![Vec::new(); n],
            })
        }
        Partitioning::Hive {
            schema,
            dictionary,
            null_fallback,
        } => {
            let null = null_fallback.as_deref().unwrap_or(NULL_PARTITION);
            let mut keys: Vec<String> = match schema {
                Some(s) => s.fields().iter().map(|f| f.name().clone()).collect(),
                None => Vec::new(),
            };
            let mut found = Vec::with_capacity(files.len());
            for (path, size) in files {
                let mut pairs: Vec<(String, Option<String>)> = Vec::new();
                for seg in dirs(&path) {
                    if let Some((k, v)) = seg.split_once('=') {
                        let k = unescape(k)?;
                        if schema.is_none() && !keys.contains(&k) {
                            keys.push(k.clone());
                        }
                        pairs.push((k, value_of(v, null)?));
                    }
                }
                let values = keys
                    .iter()
                    .map(|k| {
                        pairs
                            .iter()
                            .rev()
                            .find(|(pk, _)| pk == k)
                            .and_then(|(_, v)| v.clone())
                    })
                    .collect();
                found.push(DatasetFile { path, size, values });
            }
            // Files found before a key first appeared have no value for it.
            for f in &mut found {
                f.values.resize(keys.len(), None);
            }
            let schema = match schema {
                Some(s) => s.clone(),
                None => inferred(&keys, &found, *dictionary),
            };
            typed(found, schema)
        }
        Partitioning::Directory {
            schema,
            infer,
            dictionary,
        }
        | Partitioning::Filename {
            schema,
            infer,
            dictionary,
        } => {
            let by_name = matches!(partitioning, Partitioning::Filename { .. });
            // A file name's segments are those before its last `_` (the rest is its own name).
            let in_name = |path: &Path| -> Vec<String> {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let mut segs: Vec<String> = name.split('_').map(str::to_string).collect();
                segs.pop();
                segs
            };
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            let found = files
                .into_iter()
                .map(|(path, size)| {
                    let segs = if by_name { in_name(&path) } else { dirs(&path) };
                    let values = (0..names.len())
                        .map(|i| {
                            segs.get(i)
                                .map(|s| value_of(s, NULL_PARTITION))
                                .transpose()
                                .map(Option::flatten)
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(DatasetFile { path, size, values })
                })
                .collect::<Result<Vec<_>>>()?;
            let schema = if *infer {
                inferred(&names, &found, *dictionary)
            } else {
                schema.clone()
            };
            typed(found, schema)
        }
    }
}

/// pyarrow's inference: int32 where every value of a key is one, else string (a key with no
/// value but nulls is a string; pyarrow refuses it); with `dictionary`, a dictionary of that
/// type with int32 keys.
fn inferred(keys: &[String], files: &[DatasetFile], dictionary: bool) -> SchemaRef {
    let fields: Vec<Field> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut seen = files
                .iter()
                .filter_map(|f| f.values[i].as_deref())
                .peekable();
            let int = seen.peek().is_some() && seen.all(is_int32);
            let t = if int { DataType::Int32 } else { DataType::Utf8 };
            let t = match dictionary {
                true => DataType::Dictionary(Box::new(DataType::Int32), Box::new(t)),
                false => t,
            };
            Field::new(k, t, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Each file's values as arrays of one value of the schema's types. A dictionary field's
/// dictionary holds every value of the key, in the order the files are listed, as pyarrow's
/// does: a column read from several files shares one dictionary.
fn typed(files: Vec<DatasetFile>, schema: SchemaRef) -> Result<Discovered> {
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let fail = |field: &Field, v: Option<&str>, path: &Path, e: arrow_schema::ArrowError| {
        Error::Parameter(format!(
            "partitioning: the value {:?} of '{}' in {} is not a {}: {e}",
            v.unwrap_or("null"),
            field.name(),
            path.display(),
            field.data_type()
        ))
    };
    let mut columns: Vec<Vec<ArrayRef>> = Vec::with_capacity(schema.fields().len());
    for (k, field) in schema.fields().iter().enumerate() {
        let to = field.data_type();
        let mut column = Vec::with_capacity(files.len());
        if let DataType::Dictionary(_, value_type) = to {
            let mut distinct: Vec<&str> = Vec::new();
            for f in &files {
                if let Some(v) = f.values[k].as_deref() {
                    if !distinct.contains(&v) {
                        distinct.push(v);
                    }
                }
            }
            let first = files.first().map_or(Path::new(""), |f| f.path.as_path());
            let texts = distinct
                .iter()
                .map(|v| castable_text(v, value_type).map_err(|e| fail(field, Some(v), first, e)))
                .collect::<Result<Vec<_>>>()?;
            let text: ArrayRef = Arc::new(StringArray::from_iter_values(texts));
            let dictionary = cast_with_options(&text, value_type, &options)
                .map_err(|e| fail(field, None, first, e))?;
            for f in &files {
                let key = f.values[k]
                    .as_deref()
                    .and_then(|v| distinct.iter().position(|d| *d == v))
                    .map(|i| i as i32);
                let keys = arrow_array::Int32Array::from(vec![key]);
                let one: ArrayRef = Arc::new(arrow_array::Int32DictionaryArray::try_new(
                    keys,
                    dictionary.clone(),
                )?);
                column.push(if one.data_type() == to {
                    one
                } else {
                    arrow_cast::cast(&one, to)?
                });
            }
        } else {
            for f in &files {
                let v = f.values[k].as_deref();
                let castable = v
                    .map(|v| castable_text(v, to))
                    .transpose()
                    .map_err(|e| fail(field, v, &f.path, e))?;
                let text: ArrayRef = Arc::new(StringArray::from_iter([castable]));
                column.push(
                    cast_with_options(&text, to, &options)
                        .map_err(|e| fail(field, v, &f.path, e))?,
                );
            }
        }
        columns.push(column);
    }
    let values = (0..files.len())
        .map(|i| columns.iter().map(|c| c[i].clone()).collect())
        .collect();
    Ok(Discovered {
        files,
        schema,
        values,
    })
}

/// Every object below `prefix`, with the names starting with one of `ignore` left out at
/// every depth below it, sorted by key (as [`list_files`] sorts paths).
pub(super) fn list_objects(
    store: &Store,
    prefix: &str,
    ignore: &[String],
) -> Result<Vec<(PathBuf, u64)>> {
    let listed = store.list(prefix)?;
    let below = |key: &str| -> String {
        match prefix.is_empty() {
            true => key.to_string(),
            false => key
                .strip_prefix(prefix)
                .map_or(key, |k| k.trim_start_matches('/'))
                .to_string(),
        }
    };
    Ok(listed
        .into_iter()
        .filter(|(key, _)| {
            !below(key).split('/').any(|name| {
                ignore
                    .iter()
                    .any(|p| !p.is_empty() && name.starts_with(p.as_str()))
            })
        })
        .map(|(key, size)| (PathBuf::from(key), size))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_decoded_as_pyarrow_writes_them() {
        assert_eq!(unescape("a%2Fb%20c").unwrap(), "a/b c");
        assert_eq!(unescape("%C3%A9").unwrap(), "é");
        assert_eq!(unescape("100%").unwrap(), "100%");
        assert_eq!(unescape("%zz").unwrap(), "%zz");
        assert_eq!(unescape("plain").unwrap(), "plain");
        let err = unescape("%FF").unwrap_err().to_string();
        assert!(err.contains("not valid UTF-8"), "{err}");
        assert!(unescape("%C3").is_err());
    }

    #[test]
    fn integers_are_read_as_arrows_parser_reads_them() {
        for (text, int) in [
            ("0x10", true),
            ("0X1f", true),
            ("0x0010", true),
            ("0xFFFFFFFF", true),
            ("-3", true),
            ("007", true),
            ("-0", true),
            ("+5", false),
            (" 7", false),
            ("1e3", false),
            ("0x", false),
            ("-0x10", false),
            ("0x100000000", false),
            ("0x000000010", false),
            ("2147483648", false),
            ("-", false),
            ("", false),
        ] {
            assert_eq!(is_int32(text), int, "{text:?}");
        }
        let cast = |t, to: &DataType| castable_text(t, to).map(|c| c.into_owned()).ok();
        assert_eq!(cast("0xFFFFFFFF", &DataType::Int32).unwrap(), "-1");
        assert_eq!(cast("0x80000000", &DataType::Int32).unwrap(), "-2147483648");
        assert_eq!(cast("0xFFFFFFFF", &DataType::Int64).unwrap(), "4294967295");
        assert_eq!(cast("0xFF", &DataType::UInt8).unwrap(), "255");
        assert_eq!(cast("0x10", &DataType::Utf8).unwrap(), "0x10");
        assert_eq!(cast("-12", &DataType::Int64).unwrap(), "-12");
        assert_eq!(cast("+5", &DataType::Int64), None);
        assert_eq!(cast(" 7", &DataType::Int16), None);
    }

    #[test]
    fn hive_keys_are_typed_as_pyarrow_types_them() {
        let files = vec![
            (PathBuf::from("/d/k=1/s=a%2Fb/f.parquet"), 1),
            (
                PathBuf::from("/d/k=__HIVE_DEFAULT_PARTITION__/s=x/f.parquet"),
                1,
            ),
            (PathBuf::from("/d/k=-3/s=3000000000/f.parquet"), 1),
        ];
        let found = partitions(
            files,
            Some(Path::new("/d")),
            &Partitioning::Hive {
                schema: None,
                dictionary: false,
                null_fallback: None,
            },
        )
        .unwrap();
        assert_eq!(found.schema.field(0).data_type(), &DataType::Int32);
        assert_eq!(found.schema.field(1).data_type(), &DataType::Utf8);
        assert_eq!(
            found.files[0].values,
            vec![Some("1".into()), Some("a/b".into())]
        );
        assert!(found.values[1][0].is_null(0));
    }
}
