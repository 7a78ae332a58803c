//! The keywords of `zstdpool.parquet.write_table` and `ParquetWriter`: pyarrow's, all of them,
//! parsed once for both (and for `write_to_dataset`), each checked with an error that names it.

use std::collections::HashMap;

use arrow_schema::TimeUnit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use crate::args::{self, Named};
use crate::buffer::type_name;
use crate::errors;
use crate::errors::OrRaise as _;
use crate::params;
use crate::shared_keywords::{SinkKeywords, SINK_KEYWORDS};
use zstdpool_core::parquet::{
    BloomFilter, CdcOptions, Encoding, PageCodec, PerColumn, SortingColumn, WriteOptions,
};

/// Every keyword a Parquet writer takes but the shared ones (`SINK_KEYWORDS`): pyarrow's, in
/// its order, then zstdpool's own.
const KEYWORDS: &[&str] = &[
    "row_group_size",
    "version",
    "use_dictionary",
    "compression",
    "write_statistics",
    "use_deprecated_int96_timestamps",
    "coerce_timestamps",
    "allow_truncated_timestamps",
    "data_page_size",
    "flavor",
    "compression_level",
    "use_byte_stream_split",
    "column_encoding",
    "data_page_version",
    "use_compliant_nested_type",
    "encryption_properties",
    "write_batch_size",
    "dictionary_pagesize_limit",
    "store_schema",
    "write_page_index",
    "write_page_checksum",
    "sorting_columns",
    "store_decimal_as_integer",
    "write_time_adjusted_to_utc",
    "max_rows_per_page",
    "bloom_filter_options",
    "use_content_defined_chunking",
    "writer_engine_version",
    "threads",
];

/// What a writer's keywords ask for.
pub struct WriterKeywords<'py> {
    pub options: WriteOptions,
    /// `fsync`, `pool`, and where the path is.
    pub shared: SinkKeywords<'py>,
}

/// The keywords `kwargs` holds, for `func` (named in the error for a keyword it does not take,
/// as Python names a function: "write_table()").
pub fn writer_keywords<'py>(
    func: &str,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<WriterKeywords<'py>> {
    let mut given: HashMap<String, Bound<'py, PyAny>> = HashMap::new();
    if let Some(kwargs) = kwargs {
        for (k, v) in kwargs.iter() {
            let key: String = k.extract()?;
            if !KEYWORDS.contains(&key.as_str()) && !SINK_KEYWORDS.contains(&key.as_str()) {
                return Err(errors::wrong_type(format!(
                    "{func} got an unexpected keyword argument '{key}'"
                )));
            }
            given.insert(key, v);
        }
    }
    // A keyword given as None means its default, as in pyarrow; but compression=None means
    // uncompressed.
    given.retain(|k, v| k == "compression" || !v.is_none());
    let kw = Keywords { given };
    let mut o = WriteOptions::default();

    if let Some(v) = kw.get("encryption_properties") {
        return Err(errors::unsupported(format!(
            "encryption_properties: zstdpool does not write encrypted Parquet (a pyarrow \
             FileEncryptionProperties holds its keys in C++, out of reach), not '{}'; write \
             encrypted files with pyarrow.parquet",
            type_name(v)
        )));
    }
    if let Some(v) = kw.get("use_content_defined_chunking") {
        o.content_defined_chunking = content_defined_chunking(v)?;
    }
    if let Some(v) = kw.get("writer_engine_version") {
        let v: String = args::convert(v, "writer_engine_version")?;
        if v != "V1" && v != "V2" {
            return Err(errors::parameter(format!(
                "writer_engine_version must be \"V2\", not {v:?}"
            )));
        }
    }

    let flavor: Option<String> = kw.opt("flavor")?;
    let spark = match flavor.as_deref() {
        None => false,
        Some("spark") => true,
        Some(other) => {
            return Err(errors::parameter(format!(
                "flavor must be \"spark\" or None, not {other:?}"
            )))
        }
    };
    o.spark_names = spark;
    // INT96 is what Spark before 2.3, Hive and Impala read timestamps as; pyarrow writes it
    // when asked and, unless told otherwise, under flavor="spark".
    o.int96_timestamps = kw.flag("use_deprecated_int96_timestamps", spark)?;

    o.compression = codecs(kw.get("compression"), kw.get("compression_level"))?;
    o.dictionary = switches(kw.get("use_dictionary"), "use_dictionary")?;
    o.sample_dictionary = kw.get("use_dictionary").is_none();
    o.statistics = switches(kw.get("write_statistics"), "write_statistics")?;
    if let Some(n) = kw.opt::<i64>("row_group_size")? {
        o.row_group_size = params::positive("row_group_size", n).or_raise()?;
    }
    o.data_page_size = kw.size("data_page_size")?;
    o.dictionary_page_size = kw.size("dictionary_pagesize_limit")?;
    o.max_rows_per_page = kw.size("max_rows_per_page")?;
    o.write_batch_size = kw.size("write_batch_size")?;
    if let Some(v) = kw.opt::<String>("data_page_version")? {
        o.page_version = params::page_version(&v).or_raise()?;
    }
    if let Some(v) = kw.opt::<String>("version")? {
        o.format_version = params::format_version(&v).or_raise()?;
    }
    o.threads = params::threads(kw.opt("threads")?).or_raise()?;
    o.store_schema = kw.flag("store_schema", true)?;
    o.page_index = kw.flag("write_page_index", true)?;
    o.page_checksum = kw.flag("write_page_checksum", false)?;
    o.allow_truncated_timestamps = kw.flag("allow_truncated_timestamps", false)?;
    o.time_adjusted_to_utc = kw.flag("write_time_adjusted_to_utc", false)?;
    o.compliant_nested_types = kw.flag("use_compliant_nested_type", true)?;
    o.decimal_as_integer = kw.flag("store_decimal_as_integer", true)?;
    o.coerce_timestamps = match kw.opt::<String>("coerce_timestamps")?.as_deref() {
        None if spark => Some(TimeUnit::Microsecond),
        None => None,
        Some(unit) => Some(
            params::choice(
                "coerce_timestamps",
                unit,
                &[
                    (&["ms"], TimeUnit::Millisecond),
                    (&["us"], TimeUnit::Microsecond),
                ],
                true,
            )
            .or_raise()?,
        ),
    };
    o.encoding = encodings(
        kw.get("column_encoding"),
        kw.get("use_byte_stream_split"),
        &o.dictionary,
    )?;
    if let Some(v) = kw.get("sorting_columns") {
        o.sorting_columns = sorting_columns(v)?;
    }
    if let Some(v) = kw.get("bloom_filter_options") {
        o.bloom_filters = bloom_filters(v)?;
    }
    Ok(WriterKeywords {
        options: o,
        shared: SinkKeywords::read(|name| kw.get(name))?,
    })
}

/// The keywords given, not None.
struct Keywords<'py> {
    given: HashMap<String, Bound<'py, PyAny>>,
}

impl<'py> Keywords<'py> {
    fn get(&self, name: &str) -> Option<&Bound<'py, PyAny>> {
        self.given.get(name)
    }

    /// The keyword `name` where given, converted as every argument is (`args`).
    fn opt<T: for<'a> Named<'a>>(&self, name: &str) -> PyResult<Option<T>> {
        self.get(name).map(|v| args::convert(v, name)).transpose()
    }

    /// A bool keyword (only a bool: pyarrow's checks accept no other truthy value).
    fn flag(&self, name: &str, default: bool) -> PyResult<bool> {
        Ok(self.opt(name)?.unwrap_or(default))
    }

    /// A size or count of at least 1.
    fn size(&self, name: &str) -> PyResult<Option<usize>> {
        self.opt::<i64>(name)?
            .map(|n| params::positive(name, n).or_raise())
            .transpose()
    }
}

/// A level argument: one for every column, or one per column.
enum Levels {
    All(Option<i64>),
    PerColumn(Vec<(String, i64)>),
}

impl Levels {
    fn parse(level: Option<&Bound<'_, PyAny>>) -> PyResult<Levels> {
        let Some(level) = level else {
            return Ok(Levels::All(None));
        };
        if let Ok(dict) = level.cast::<PyDict>() {
            return dict
                .iter()
                .map(|(k, v)| {
                    let column = column_name(&k, "compression_level")?;
                    let l = args::convert(
                        &v,
                        &format!("compression_level: the level of column {column:?}"),
                    )?;
                    Ok((column, l))
                })
                .collect::<PyResult<_>>()
                .map(Levels::PerColumn);
        }
        // An int or anything that is one (numpy's integers: `__index__`), as `level=` takes.
        if !level.is_instance_of::<PyInt>() && !level.hasattr("__index__")? {
            return Err(args::not_one_of(
                level,
                "compression_level",
                "an int, a dict of column names to ints or None",
            ));
        }
        args::convert(level, "compression_level").map(|l| Levels::All(Some(l)))
    }

    fn for_column(&self, column: Option<&str>) -> Option<i64> {
        match (self, column) {
            (Levels::All(l), _) => *l,
            (Levels::PerColumn(levels), Some(c)) => {
                levels.iter().find(|(name, _)| name == c).map(|(_, l)| *l)
            }
            (Levels::PerColumn(_), None) => None,
        }
    }
}

fn column_name(key: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    key.extract::<String>().map_err(|_| {
        errors::wrong_type(format!(
            "{what} names columns with str, not {}",
            type_name(key)
        ))
    })
}

/// `compression`: a codec name for every column (zstd when not given; None is none), or a
/// dict of column names to codecs (columns it does not name are uncompressed, as in pyarrow).
fn codecs(
    compression: Option<&Bound<'_, PyAny>>,
    level: Option<&Bound<'_, PyAny>>,
) -> PyResult<PerColumn<PageCodec>> {
    let levels = Levels::parse(level)?;
    let codec = |name: Option<&str>, column: Option<&str>| {
        params::page_codec(name, levels.for_column(column)).or_raise()
    };
    // One codec for every column, at each column's level where levels are per column.
    let every = |name: Option<&str>| -> PyResult<PerColumn<PageCodec>> {
        let mut all = PerColumn::all(codec(name, None)?);
        if let Levels::PerColumn(per) = &levels {
            for (column, _) in per {
                all.columns
                    .insert(column.clone(), codec(name, Some(column))?);
            }
        }
        Ok(all)
    };
    let Some(compression) = compression else {
        return every(Some("zstd"));
    };
    if compression.is_none() {
        return every(None);
    }
    if let Ok(name) = compression.cast::<PyString>() {
        return every(Some(name.to_str()?));
    }
    if let Ok(dict) = compression.cast::<PyDict>() {
        let mut all = PerColumn::all(PageCodec::None);
        for (k, v) in dict.iter() {
            let column = column_name(&k, "compression")?;
            let name: Option<String> =
                args::convert(&v, &format!("the codec of column {column:?}"))?;
            let c = codec(name.as_deref(), Some(&column))?;
            all.columns.insert(column, c);
        }
        return Ok(all);
    }
    Err(args::not_one_of(
        compression,
        "compression",
        "a codec name, a dict of column names to codec names, or None",
    ))
}

/// `use_dictionary` and `write_statistics`: True (the default) or False for every column, or a
/// list of the columns that get it (the others do not), as in pyarrow.
fn switches(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<PerColumn<bool>> {
    let Some(value) = value else {
        return Ok(PerColumn::all(true));
    };
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(PerColumn::all(value.extract()?));
    }
    if !value.is_instance_of::<PyString>() {
        if let Ok(names) = value.try_iter() {
            let mut some = PerColumn::all(false);
            for item in names {
                some.columns.insert(column_name(&item?, what)?, true);
            }
            return Ok(some);
        }
    }
    Err(args::not_one_of(
        value,
        what,
        "a bool or a list of column names",
    ))
}

/// `column_encoding` (one encoding name, or a dict of column names to names) and
/// `use_byte_stream_split` (a bool, or a list of columns), combined as pyarrow combines them.
fn encodings(
    column_encoding: Option<&Bound<'_, PyAny>>,
    byte_stream_split: Option<&Bound<'_, PyAny>>,
    dictionary: &PerColumn<bool>,
) -> PyResult<PerColumn<Option<Encoding>>> {
    let named = |v: &Bound<'_, PyAny>, column: Option<&str>| -> PyResult<_> {
        let name: String = match column {
            Some(c) => args::convert(v, &format!("column_encoding: the encoding of column {c:?}"))?,
            None if v.is_instance_of::<PyString>() => args::convert(v, "column_encoding")?,
            None => {
                return Err(args::not_one_of(
                    v,
                    "column_encoding",
                    "a str or a dict of column names to str",
                ))
            }
        };
        params::column_encoding(&name).or_raise()
    };
    let mut out = PerColumn::all(None);
    if let Some(ce) = column_encoding {
        // pyarrow refuses an encoding for a column that also has a dictionary.
        let uses_dictionary = |column: Option<&str>| match column {
            None => dictionary.default || !dictionary.columns.is_empty(),
            Some(c) => dictionary
                .columns
                .get(c)
                .copied()
                .unwrap_or(dictionary.default),
        };
        if let Ok(dict) = ce.cast::<PyDict>() {
            for (k, v) in dict.iter() {
                let column = column_name(&k, "column_encoding")?;
                if uses_dictionary(Some(&column)) {
                    return Err(errors::parameter(format!(
                        "column_encoding names column {column:?}, which use_dictionary \
                         dictionary-encodes: to use column_encoding, set use_dictionary to \
                         False for it"
                    )));
                }
                let e = named(&v, Some(&column))?;
                out.columns.insert(column, Some(e));
            }
        } else {
            if uses_dictionary(None) {
                return Err(errors::parameter(
                    "to use column_encoding, set use_dictionary to False",
                ));
            }
            out.default = Some(named(ce, None)?);
        }
    }
    let Some(bss) = byte_stream_split else {
        return Ok(out);
    };
    let split = Some(Encoding::BYTE_STREAM_SPLIT);
    if bss.is_instance_of::<pyo3::types::PyBool>() {
        if bss.extract::<bool>()? {
            if column_encoding.is_some() {
                return Err(errors::parameter(
                    "use_byte_stream_split=True cannot be passed together with column_encoding",
                ));
            }
            out.default = split;
        }
        return Ok(out);
    }
    let columns = bss
        .cast::<PyList>()
        .map(|l| l.iter().collect::<Vec<_>>())
        .or_else(|_| bss.cast::<PyTuple>().map(|t| t.iter().collect::<Vec<_>>()));
    let Ok(columns) = columns else {
        return Err(args::not_one_of(
            bss,
            "use_byte_stream_split",
            "a bool or a list of column names",
        ));
    };
    for c in columns {
        let column = column_name(&c, "use_byte_stream_split")?;
        if out.columns.get(&column).is_some_and(Option::is_some) {
            return Err(errors::parameter(format!(
                "use_byte_stream_split and column_encoding both name column {column:?}"
            )));
        }
        out.columns.insert(column, split);
    }
    Ok(out)
}

/// `sorting_columns`: a sequence of `pyarrow.parquet.SortingColumn` (or any object with its
/// `column_index`, `descending` and `nulls_first`).
fn sorting_columns(v: &Bound<'_, PyAny>) -> PyResult<Vec<SortingColumn>> {
    let wrong = || {
        args::not_one_of(
            v,
            "sorting_columns",
            "a list of pyarrow.parquet.SortingColumn",
        )
    };
    if v.is_instance_of::<PyString>() {
        return Err(wrong());
    }
    let items = v.try_iter().map_err(|_| wrong())?;
    let mut out = Vec::new();
    for item in items {
        let item = item?;
        let field = |name: &str| item.getattr(name).map_err(|_| wrong());
        let index: i64 = field("column_index")?.extract().map_err(|_| wrong())?;
        let column_idx = i32::try_from(index).map_err(|_| {
            errors::parameter(format!(
                "sorting_columns: column_index must be a leaf column's index, not {index}"
            ))
        })?;
        out.push(SortingColumn {
            column_idx,
            descending: field("descending")?.is_truthy()?,
            nulls_first: field("nulls_first")?.is_truthy()?,
        });
    }
    Ok(out)
}

/// `use_content_defined_chunking`: True (pyarrow's sizes), False, or a dict with
/// "min_chunk_size" and "max_chunk_size" (bytes) and optionally "norm_level", checked as
/// pyarrow checks it.
fn content_defined_chunking(v: &Bound<'_, PyAny>) -> PyResult<Option<CdcOptions>> {
    const NAME: &str = "use_content_defined_chunking";
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(v.extract::<bool>()?.then(CdcOptions::default));
    }
    let Ok(dict) = v.cast::<PyDict>() else {
        return Err(args::not_one_of(
            v,
            NAME,
            "a bool or a dict of chunking options",
        ));
    };
    let mut options = CdcOptions::default();
    let (mut min, mut max) = (false, false);
    for (key, value) in dict.iter() {
        let key: String = key.extract().map_err(|_| {
            errors::parameter(format!(
                "{NAME}: its options are named by str, not {}",
                type_name(&key)
            ))
        })?;
        let size = |what: &str| -> PyResult<usize> {
            let n: i64 = args::convert(&value, &format!("{NAME}: {what}"))?;
            usize::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                errors::parameter(format!("{NAME}: {what} must be at least 1, not {n}"))
            })
        };
        match key.as_str() {
            "min_chunk_size" => {
                options.min_chunk_size = size("min_chunk_size")?;
                min = true;
            }
            "max_chunk_size" => {
                options.max_chunk_size = size("max_chunk_size")?;
                max = true;
            }
            "norm_level" => {
                let n: i64 = args::convert(&value, &format!("{NAME}: norm_level"))?;
                options.norm_level = i32::try_from(n).map_err(|_| {
                    errors::parameter(format!("{NAME}: norm_level is out of range: {n}"))
                })?;
            }
            other => {
                return Err(errors::parameter(format!(
                    "{NAME} has an unknown option {other:?} (they are \"min_chunk_size\", \
                     \"max_chunk_size\" and \"norm_level\")"
                )))
            }
        }
    }
    if !(min && max) {
        let missing = match (min, max) {
            (false, false) => "min_chunk_size and max_chunk_size",
            (false, true) => "min_chunk_size",
            _ => "max_chunk_size",
        };
        return Err(errors::parameter(format!(
            "{NAME} must give {missing}, as pyarrow requires"
        )));
    }
    Ok(Some(options))
}

/// `bloom_filter_options`: a dict of column names to True (pyarrow's defaults), False (none),
/// or a dict with "ndv" (int) and "fpp" (float).
fn bloom_filters(v: &Bound<'_, PyAny>) -> PyResult<HashMap<String, Option<BloomFilter>>> {
    let dict = v.cast::<PyDict>().map_err(|_| {
        args::not_one_of(
            v,
            "bloom_filter_options",
            "a dict of column names to options",
        )
    })?;
    let mut out = HashMap::new();
    for (k, opts) in dict.iter() {
        let column = column_name(&k, "bloom_filter_options")?;
        let mut filter = BloomFilter::default();
        if opts.is_instance_of::<pyo3::types::PyBool>() {
            let on: bool = opts.extract()?;
            out.insert(column, on.then_some(filter));
            continue;
        }
        let Ok(opts) = opts.cast::<PyDict>() else {
            return Err(args::not_one_of(
                &opts,
                &format!("bloom_filter_options: the options of column {column:?}"),
                "a bool or a dict",
            ));
        };
        for (key, value) in opts.iter() {
            let key: String = key.extract()?;
            match key.as_str() {
                "ndv" => {
                    let ndv: i64 = args::convert(
                        &value,
                        &format!("bloom_filter_options: the ndv of column {column:?}"),
                    )?;
                    filter.ndv = u64::try_from(ndv).ok().filter(|n| *n > 0).ok_or_else(|| {
                        errors::parameter(format!(
                            "bloom_filter_options: the ndv of column {column:?} must be greater \
                             than zero, not {ndv}"
                        ))
                    })?;
                }
                "fpp" => {
                    let fpp: f64 = args::convert(
                        &value,
                        &format!("bloom_filter_options: the fpp of column {column:?}"),
                    )?;
                    if !(fpp > 0.0 && fpp < 1.0) {
                        return Err(errors::parameter(format!(
                            "bloom_filter_options: the fpp of column {column:?} must be in \
                             (0.0, 1.0), not {fpp}"
                        )));
                    }
                    filter.fpp = fpp;
                }
                other => {
                    return Err(errors::parameter(format!(
                        "bloom_filter_options: column {column:?} has an unknown option {other:?} \
                         (they are \"ndv\" and \"fpp\")"
                    )))
                }
            }
        }
        out.insert(column, Some(filter));
    }
    Ok(out)
}
