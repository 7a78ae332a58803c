//! Row groups whose data pages end where the values say (content-defined chunking, pyarrow's
//! `use_content_defined_chunking`): a file written again after a few rows changed, or were
//! inserted, keeps most of its pages byte for byte, so a deduplicating store holds them once.
//!
//! The parquet crate cuts pages by content only inside its own `ArrowWriter`: the chunker and
//! the column writers' page break are private to it. So each top-level field of such a row
//! group is written by an `ArrowWriter` of its own, into memory, with the column writers'
//! properties (the leaves the compression stage compresses stay uncompressed there); fields are
//! written on as many threads as a row group's columns are. Each column chunk is then taken out
//! of that file with what its footer says of it (metadata, page indexes, bloom filter) and goes
//! on as a column writer's chunk goes: through the compression stage, or appended as it is. A
//! chunker belongs to one leaf, so writing fields apart cuts the pages one writer would.
//!
//! A fresh `ArrowWriter` per row group starts its chunkers afresh at each row group, where
//! pyarrow and the crate's own writer carry them on from one row group to the next: the first
//! row group's pages end where pyarrow's do, and a later one's first page or two may not. Only
//! an `ArrowWriter` that is finished gives its chunks' page indexes, so one cannot write a
//! whole file and hand each row group on as it is done.

use std::sync::Arc;

use ::parquet::arrow::arrow_writer::{ArrowWriter, ArrowWriterOptions};
use ::parquet::bloom_filter::Sbbf;
use ::parquet::column::writer::ColumnCloseResult;
use ::parquet::file::page_index::column_index::ColumnIndexMetaData;
use ::parquet::file::properties::WriterProperties;
use ::parquet::schema::types::{SchemaDescriptor, Type, TypePtr};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{FieldRef, Schema, SchemaRef};
use bytes::Bytes;

use super::int96;
use crate::error::{Error, Result};

/// The column chunks of one field of a row group, cut by content: the in-memory file they were
/// written in (each chunk's metadata gives its place there), and each chunk's close result.
pub(crate) struct ContentChunks {
    pub file: Bytes,
    pub chunks: Vec<ColumnCloseResult>,
}

/// Checks that the chunking options in `props` make a chunker for every leaf of `schema` (the
/// crate refuses a mask of no bits, which some sizes and `norm_level`s give), before the first
/// row group is written.
pub(crate) fn check(
    props: &WriterProperties,
    schema: &SchemaDescriptor,
    encoded: &SchemaRef,
) -> Result<()> {
    let options = ArrowWriterOptions::new()
        .with_properties(props.clone())
        .with_skip_arrow_metadata(true)
        .with_parquet_schema(schema.clone());
    ArrowWriter::try_new_with_options(std::io::sink(), encoded.clone(), options).map_err(|e| {
        Error::Parameter(format!(
            "use_content_defined_chunking: its chunk sizes and norm_level make no chunker: {e}"
        ))
    })?;
    Ok(())
}

/// The schema of a file of one top-level field of `root` (a file's root group), for
/// [`encode_field`].
pub(crate) fn field_schema(root: &TypePtr, field: usize) -> Result<SchemaDescriptor> {
    let fields = root.get_fields();
    let one = fields.get(field).ok_or_else(|| {
        Error::Parquet(format!(
            "field {field} of a schema of {} fields",
            fields.len()
        ))
    })?;
    let group = Type::group_type_builder(root.name())
        .with_fields(vec![one.clone()])
        .build()?;
    Ok(SchemaDescriptor::new(Arc::new(group)))
}

/// `props` for an `ArrowWriter` that writes one row group of the caller's: it must not cut
/// it by rows or bytes.
pub(crate) fn whole_row_groups(props: WriterProperties) -> WriterProperties {
    props
        .into_builder()
        .set_max_row_group_row_count(None)
        .set_max_row_group_bytes(None)
        .build()
}

/// Writes one top-level field of a row group (`columns`, one array per batch, of `field`'s
/// type but for timestamps stored as INT96, encoded here) as the only field of an
/// `ArrowWriter` set up with `props` (the field's, from [`whole_row_groups`], carrying the
/// chunking options), its leaves laid out as `schema` (from [`field_schema`]).
pub(crate) fn encode_field(
    props: &WriterProperties,
    schema: &SchemaDescriptor,
    field: &FieldRef,
    columns: &[&ArrayRef],
) -> Result<ContentChunks> {
    let options = ArrowWriterOptions::new()
        .with_properties(props.clone())
        .with_skip_arrow_metadata(true)
        .with_parquet_schema(schema.clone());
    let arrow = Arc::new(Schema::new(vec![field.clone()]));
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), arrow.clone(), options)?;
    for column in columns {
        let column = match column.data_type() == field.data_type() {
            true => (*column).clone(),
            false => int96::encode(column)?,
        };
        writer.write(&RecordBatch::try_new(arrow.clone(), vec![column])?)?;
    }
    let metadata = writer.finish()?;
    let file = Bytes::from(std::mem::take(writer.inner_mut()));
    let [group] = metadata.row_groups() else {
        return Err(Error::Parquet(format!(
            "the content-defined chunker wrote {} row groups for one",
            metadata.row_groups().len()
        )));
    };
    let mut chunks = Vec::with_capacity(group.num_columns());
    for (i, column) in group.columns().iter().enumerate() {
        let column_index = metadata
            .column_index()
            .and_then(|groups| groups.first())
            .and_then(|columns| columns.get(i))
            .filter(|index| !matches!(index, ColumnIndexMetaData::NONE))
            .cloned();
        let offset_index = metadata
            .offset_index()
            .and_then(|groups| groups.first())
            .and_then(|columns| columns.get(i))
            .cloned();
        chunks.push(ColumnCloseResult {
            bytes_written: column.compressed_size() as u64,
            rows_written: group.num_rows() as u64,
            bloom_filter: Sbbf::read_from_column_chunk(column, &file)?,
            metadata: column.clone(),
            column_index,
            offset_index,
        });
    }
    Ok(ContentChunks { file, chunks })
}
