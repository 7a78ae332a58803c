//! Row groups whose data pages end where the values say (content-defined chunking, pyarrow's
//! `use_content_defined_chunking`): a file written again after a few rows changed, or were
//! inserted, keeps most of its pages byte for byte, so a deduplicating store holds them once.
//!
//! The parquet crate cuts pages by content only inside its own `ArrowWriter`: the chunker and
//! the column writers' page break are private to it. So such a row group is written whole by an
//! `ArrowWriter` of its own, into memory, with the column writers' properties (the leaves the
//! repaging stage compresses stay uncompressed there). Each column chunk is then taken out of
//! that file with what its footer says of it (metadata, page indexes, bloom filter) and goes on
//! as a column writer's chunk goes: through the repaging stage, or appended as it is.
//!
//! A fresh `ArrowWriter` per row group starts its chunkers afresh at each row group, where
//! pyarrow and the crate's own writer carry them on from one row group to the next: the first
//! row group's pages end where pyarrow's do, and a later one's first page or two may not. Only
//! an `ArrowWriter` that is finished gives its chunks' page indexes, so one cannot write a
//! whole file and hand each row group on as it is done.

use ::parquet::arrow::arrow_writer::{ArrowWriter, ArrowWriterOptions};
use ::parquet::bloom_filter::Sbbf;
use ::parquet::column::writer::ColumnCloseResult;
use ::parquet::file::page_index::column_index::ColumnIndexMetaData;
use ::parquet::file::properties::WriterProperties;
use ::parquet::schema::types::SchemaDescriptor;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;

use super::int96;
use crate::error::{Error, Result};

/// One row group's column chunks, cut by content: the in-memory file they were written in
/// (each chunk's metadata gives its place there), and each chunk's close result.
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

/// Writes `batches` (of the writer's schema) as one row group of an `ArrowWriter` set up with
/// `props` (which carry the chunking options), its leaves laid out as `schema` and its values
/// of type `encoded` (timestamps as their INT96 bytes where the file stores INT96).
pub(crate) fn encode_row_group(
    props: &WriterProperties,
    schema: &SchemaDescriptor,
    encoded: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<ContentChunks> {
    // The row group is the caller's: the `ArrowWriter` must not cut it by rows or bytes.
    let props = props
        .clone()
        .into_builder()
        .set_max_row_group_row_count(None)
        .set_max_row_group_bytes(None)
        .build();
    let options = ArrowWriterOptions::new()
        .with_properties(props)
        .with_skip_arrow_metadata(true)
        .with_parquet_schema(schema.clone());
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), encoded.clone(), options)?;
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .zip(encoded.fields())
            .map(
                |(column, field)| match column.data_type() == field.data_type() {
                    true => Ok(column.clone()),
                    false => int96::encode(column),
                },
            )
            .collect::<Result<Vec<_>>>()?;
        writer.write(&RecordBatch::try_new(encoded.clone(), columns)?)?;
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
