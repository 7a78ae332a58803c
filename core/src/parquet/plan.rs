//! What a Parquet writer works out from its schema and options before it writes a byte: the
//! schemas it stores and encodes, the file's Parquet schema, how each leaf column is written,
//! and the parquet crate's properties (the file's, `ARROW:schema` encoded into them, and the
//! column writers'). For a file of a few hundred rows that is a large part of the write, and a
//! service, or a partitioned write, makes many files of one schema with one set of options.
//! So the plans made last are kept, and a writer of the same schema and options takes one
//! made before (benchmarks/RESULTS-archive.md has what it saves).

use std::sync::{Arc, Mutex};

use ::parquet::arrow::add_encoded_arrow_schema_to_metadata;
use ::parquet::basic::Type as Physical;
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::schema::types::{SchemaDescriptor, TypePtr};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::arrow_types::writes_given_dictionary;
use super::by_content;
use super::int96;
use super::options::{PageCodec, Properties, WriteOptions};
use super::stored::{declared_schema, parquet_schema, parquet_schema_as, stored_schema};
use crate::error::Result;

/// How many plans are kept: the schemas a process writes over and over are few.
const KEPT: usize = 16;

/// The plans made last, the most recently used first.
static KEPT_PLANS: Mutex<Vec<Arc<Plan>>> = Mutex::new(Vec::new());

/// A writer's plan for `schema` and `options`: one kept from before, or a new one (kept).
pub(crate) fn plan_for(schema: &SchemaRef, options: &WriteOptions) -> Result<Arc<Plan>> {
    let lock = || KEPT_PLANS.lock().unwrap_or_else(|p| p.into_inner());
    {
        let mut kept = lock();
        if let Some(at) = kept.iter().position(|p| p.made_for(schema, options)) {
            let plan = kept.remove(at);
            kept.insert(0, plan.clone());
            return Ok(plan);
        }
    }
    let plan = Arc::new(Plan::new(schema, options)?);
    let mut kept = lock();
    // Another writer of the same may have kept one meanwhile.
    if let Some(same) = kept.iter().find(|p| p.made_for(schema, options)) {
        return Ok(same.clone());
    }
    kept.insert(0, plan.clone());
    kept.truncate(KEPT);
    Ok(plan)
}

/// Everything a writer derives from its schema and options alone.
pub(crate) struct Plan {
    /// What the plan was made for.
    schema: SchemaRef,
    options: WriteOptions,
    /// What is stored: the schema with the types Parquet has no unit for coerced.
    pub stored: SchemaRef,
    /// What the column writers encode: `stored`, but with timestamps as their INT96 bytes
    /// under `use_deprecated_int96_timestamps` (see `int96`).
    pub encoded: SchemaRef,
    /// The root of the file's Parquet schema.
    pub file_root: TypePtr,
    /// The Parquet schema the column writers encode (INT96 leaves as FIXED_LEN_BYTE_ARRAY).
    pub encoder_schema: SchemaDescriptor,
    /// Per top-level field, how each of its leaf columns is written.
    pub leaves: Vec<Vec<LeafPlan>>,
    /// The file writer's properties, and the key-value pairs it appends (the schema's own
    /// metadata that the options do not set).
    pub file: Arc<WriterProperties>,
    pub appended: Vec<KeyValue>,
    /// The column writers' properties, and those of row groups where the sampled leaves go
    /// without a dictionary (None when no leaf is sampled).
    pub columns: Arc<WriterProperties>,
    pub plain: Option<Arc<WriterProperties>>,
    /// Per top-level field, how it is written alone when its pages are cut by content (see
    /// `by_content`); empty otherwise.
    pub by_content: Vec<ContentField>,
}

/// How one top-level field is written by a crate `ArrowWriter` of its own, its pages cut by
/// content: the schema of that file, and its properties (those of the field's leaves alone,
/// so that each row group's copy costs the field, not the table), without a dictionary for
/// its sampled leaf too.
pub(crate) struct ContentField {
    pub schema: SchemaDescriptor,
    pub props: WriterProperties,
    pub plain: Option<WriterProperties>,
}

impl Plan {
    /// A type Parquet cannot hold, or an option that names no column, fails here, naming the
    /// column.
    fn new(schema: &SchemaRef, options: &WriteOptions) -> Result<Plan> {
        let stored = Arc::new(stored_schema(schema, options));
        let encoded = match options.int96_timestamps {
            true => Arc::new(int96::encoded_schema(&stored)),
            false => stored.clone(),
        };
        // The file's schema, and the one the column writers encode (INT96 leaves as
        // FIXED_LEN_BYTE_ARRAY there).
        let file_schema = parquet_schema_as(&encoded, &stored, options)?;
        let encoder_schema = match options.int96_timestamps {
            true => parquet_schema(&encoded, options)?,
            false => file_schema.clone(),
        };
        let leaves = leaf_plans(&file_schema, &stored, options);
        let compressed_here: Vec<bool> =
            leaves.iter().flatten().map(|l| l.compressed_here).collect();
        let sampled: Vec<bool> = leaves.iter().flatten().map(|l| l.sampled).collect();
        let int96: Vec<bool> = leaves.iter().flatten().map(|l| l.int96).collect();
        let Properties {
            file: mut props,
            columns,
            plain,
        } = options.properties(&encoder_schema, &compressed_here, &sampled, &int96)?;
        if options.store_schema {
            add_encoded_arrow_schema_to_metadata(&declared_schema(schema, options), &mut props);
        }
        // The schema's own metadata (pandas' among it) also as the file's key-value pairs, as
        // pyarrow writes it, unless the caller set the same key.
        let mut appended: Vec<KeyValue> = Vec::new();
        let mut keys: Vec<&String> = schema.metadata().keys().collect();
        keys.sort();
        for key in keys {
            let taken = props
                .key_value_metadata()
                .is_some_and(|kv| kv.iter().any(|e| &e.key == key));
            if !taken {
                appended.push(KeyValue::new(key.clone(), schema.metadata()[key].clone()));
            }
        }
        let by_content = match options.content_defined_chunking {
            Some(_) => {
                by_content::check(&columns, &encoder_schema, &encoded)?;
                let root = encoder_schema.root_schema_ptr();
                let mut first = 0;
                let mut fields = Vec::with_capacity(leaves.len());
                for (field, plans) in leaves.iter().enumerate() {
                    let these = first..first + plans.len();
                    first = these.end;
                    let schema = by_content::field_schema(&root, field)?;
                    let Properties {
                        columns: props,
                        plain,
                        ..
                    } = options.properties_of(
                        &schema,
                        &compressed_here[these.clone()],
                        &sampled[these.clone()],
                        &int96[these],
                    )?;
                    fields.push(ContentField {
                        schema,
                        props: by_content::whole_row_groups(props),
                        plain: plain.map(by_content::whole_row_groups),
                    });
                }
                fields
            }
            None => Vec::new(),
        };
        Ok(Plan {
            schema: schema.clone(),
            options: options.clone(),
            stored,
            encoded,
            file_root: file_schema.root_schema_ptr(),
            encoder_schema,
            leaves,
            file: Arc::new(props),
            appended,
            columns: Arc::new(columns),
            plain: plain.map(Arc::new),
            by_content,
        })
    }

    fn made_for(&self, schema: &SchemaRef, options: &WriteOptions) -> bool {
        let same_schema = Arc::ptr_eq(&self.schema, schema)
            || (self.schema == *schema && same_dictionary_order(&self.schema, schema));
        same_schema && self.options == *options
    }
}

/// Whether every dictionary field of `a` and `b`, at any depth, is ordered alike: arrow's
/// `Field` equality leaves the flag out, and the stored `ARROW:schema` keeps it.
fn same_dictionary_order(a: &Schema, b: &Schema) -> bool {
    fn flags(field: &Field, out: &mut Vec<bool>) {
        out.push(field.dict_is_ordered().unwrap_or(false));
        match field.data_type() {
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::ListView(f)
            | DataType::LargeListView(f)
            | DataType::FixedSizeList(f, _)
            | DataType::Map(f, _) => flags(f, out),
            DataType::Struct(fields) => fields.iter().for_each(|f| flags(f, out)),
            DataType::Union(fields, _) => fields.iter().for_each(|(_, f)| flags(f, out)),
            DataType::RunEndEncoded(_, values) => flags(values, out),
            _ => {}
        }
    }
    let all = |s: &Schema| {
        let mut out = Vec::new();
        s.fields().iter().for_each(|f| flags(f, &mut out));
        out
    };
    all(a) == all(b)
}

/// How a leaf column is written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeafPlan {
    pub codec: PageCodec,
    /// Whether the crate encodes it uncompressed and the compression stage compresses its pages
    /// (zstd, with a pooled context), rewriting them on the way (checksums, a given
    /// dictionary).
    pub compressed_here: bool,
    /// Whether it is written with the Arrow dictionary it is given (see `dictionary`).
    pub given_dictionary: bool,
    /// Whether it has definition levels.
    pub nullable: bool,
    /// Whether each row group's sample decides if it gets the dictionary the options give it.
    pub sampled: bool,
    /// The bytes of a value as stored (a numeric column's).
    pub width: usize,
    /// Whether it is an INT96 timestamp, encoded as FIXED_LEN_BYTE_ARRAY(12) and declared INT96
    /// when its chunk is appended (which needs the compression stage's close result).
    pub int96: bool,
}

/// Per top-level field of `stored`, how each of its leaf columns is written.
fn leaf_plans(
    schema: &SchemaDescriptor,
    stored: &Schema,
    options: &WriteOptions,
) -> Vec<Vec<LeafPlan>> {
    let roots = schema.root_schema().get_fields().len();
    let mut out = vec![Vec::new(); roots];
    for (i, column) in schema.columns().iter().enumerate() {
        let root = schema.get_column_root_idx(i);
        let codec = options.compression.get(column.path());
        let given_dictionary = column.max_rep_level() == 0
            && column.path().parts().len() == 1
            && options.dictionary.get(column.path())
            && writes_given_dictionary(stored.field(root).data_type());
        let numeric = matches!(
            column.physical_type(),
            Physical::INT32 | Physical::INT64 | Physical::FLOAT | Physical::DOUBLE
        ) && stored.field(root).data_type().is_primitive();
        let sampled = options.sample_dictionary
            && numeric
            && column.path().parts().len() == 1
            && options.dictionary.get(column.path());
        let width = match column.physical_type() {
            Physical::INT64 | Physical::DOUBLE => 8,
            _ => 4,
        };
        let int96 = column.physical_type() == Physical::INT96;
        out[root].push(LeafPlan {
            sampled,
            width,
            codec,
            compressed_here: matches!(codec, PageCodec::Zstd(_))
                || options.page_checksum
                || given_dictionary
                || int96,
            int96,
            given_dictionary,
            nullable: column.max_def_level() > 0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(ordered: bool, nested_ordered: bool, meta: &str) -> SchemaRef {
        let dictionary = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        let nested = Field::new("n", dictionary.clone(), true).with_dict_is_ordered(nested_ordered);
        Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("d", dictionary, true).with_dict_is_ordered(ordered),
                Field::new_struct("s", vec![nested], true),
            ],
            [("k".to_string(), meta.to_string())].into(),
        ))
    }

    #[test]
    fn a_plan_is_shared_only_by_writers_of_the_same_schema_and_options() {
        let options = WriteOptions::default();
        // Other tests keep plans too: what is kept is checked through `made_for`, which
        // lookups use, not by which plan comes back.
        let first = plan_for(&schema(true, false, "a"), &options).unwrap();
        // An equal schema made apart, as each call imports its own.
        assert!(first.made_for(&schema(true, false, "a"), &options));
        assert!(plan_for(&schema(true, false, "a"), &options)
            .unwrap()
            .made_for(&schema(true, false, "a"), &options));
        // Arrow's Field equality leaves the ordered flag out, at the top and nested.
        assert!(*schema(false, false, "a") == *schema(true, false, "a"));
        assert!(*schema(true, true, "a") == *schema(true, false, "a"));
        for other in [
            schema(false, false, "a"),
            schema(true, true, "a"),
            schema(true, false, "b"),
        ] {
            assert!(!first.made_for(&other, &options));
            assert!(plan_for(&other, &options)
                .unwrap()
                .made_for(&other, &options));
        }
        let grouped = WriteOptions {
            row_group_size: 10,
            ..Default::default()
        };
        assert!(!first.made_for(&schema(true, false, "a"), &grouped));
    }
}
