//! The Parquet writer: the parquet crate lays out the file, encodes each column and writes the
//! footer; this writer buffers batches into row groups, encodes a row group's columns on the
//! caller's threads, and sends zstd columns through the pooled compression stage
//! (`compress`).

use std::io::Write;
use std::sync::{Arc, Mutex};

use ::parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use ::parquet::basic::Type as Physical;
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::{SchemaDescriptor, TypePtr};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};

use super::by_content;
use super::compress::{
    compress_chunk, compress_pages, CaptureFactory, EncodedChunk, PageCompression, Rewrites,
};
use super::dictionary::{dictionary_pays, GivenDictionary};
use super::int96;
use super::options::{PageCodec, WriteOptions};
use super::plan::{plan_for, LeafPlan, Plan};
use super::stored::{check_truncation, coarsens};
use crate::batch_schema::check_schema;
use crate::context::{CompressParams, Compressor};
use crate::error::{catch_panics, Error, Result};
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::pool::{ContextPool, Lease};

/// Writes Parquet to `W`. Batches are buffered until a row group is full (the caller's data,
/// referenced, not copied) and each row group is encoded and written whole.
pub struct ParquetWriter<W: Write + Send> {
    file: Option<SerializedFileWriter<Slot<W>>>,
    /// The footer written by `finish`, serialized (see [`ParquetWriter::footer`]).
    footer: Option<Vec<u8>>,
    /// The file's bytes once `finish` has written them all.
    finished_bytes: usize,
    factory: ColumnWriters,
    /// The column writers of row groups where a sampled leaf goes without a dictionary.
    plain: Option<ColumnWriters>,
    /// The schema batches must have.
    schema: SchemaRef,
    /// What the writer derives from its schema and options (kept for writers of the same).
    plan: Arc<Plan>,
    options: WriteOptions,
    pool: ContextPool,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    rows_written: u64,
    row_groups: usize,
    /// Set when a failure left the file writer in a state it cannot write on from.
    broken: Option<String>,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts a file on `sink`: the magic bytes are written now. A type Parquet cannot hold,
    /// or an option that names no column, fails here, naming the column.
    pub fn try_new(
        sink: W,
        schema: SchemaRef,
        options: WriteOptions,
        pool: &ContextPool,
    ) -> Result<Self> {
        let plan = plan_for(&schema, &options)?;
        let slot = Slot {
            sink: Some(sink),
            tee: None,
        };
        let mut file = SerializedFileWriter::new(slot, plan.file_root.clone(), plan.file.clone())?;
        for kv in &plan.appended {
            file.append_key_value_metadata(kv.clone());
        }
        let factory = ColumnWriters::new(&plan.encoder_schema, &plan.encoded, &plan.columns);
        let plain = plan
            .plain
            .as_ref()
            .map(|p| ColumnWriters::new(&plan.encoder_schema, &plan.encoded, p));
        Ok(ParquetWriter {
            file: Some(file),
            footer: None,
            finished_bytes: 0,
            factory,
            plain,
            schema,
            plan,
            options,
            pool: pool.clone(),
            pending: Vec::new(),
            pending_rows: 0,
            rows_written: 0,
            row_groups: 0,
            broken: None,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows written to the sink so far (buffered rows not counted).
    pub fn rows_written(&self) -> u64 {
        self.rows_written
    }

    /// Rows buffered for the next row group.
    pub fn pending_rows(&self) -> usize {
        self.pending_rows
    }

    /// Row groups written so far.
    pub fn row_groups(&self) -> usize {
        self.row_groups
    }

    /// The rows a row group is filled with before it is written.
    pub fn row_group_size(&self) -> usize {
        self.options.row_group_size
    }

    /// Changes the rows a row group is filled with (at least 1); buffered rows beyond it are
    /// written at the next write or flush.
    pub fn set_row_group_size(&mut self, rows: usize) {
        self.options.row_group_size = rows.max(1);
    }

    /// Bytes handed to the sink so far.
    pub fn bytes_written(&self) -> usize {
        self.file
            .as_ref()
            .map_or(self.finished_bytes, |f| f.bytes_written())
    }

    fn check_open(&self) -> Result<()> {
        if self.file.is_none() {
            return Err(Error::Parquet("the writer is closed".into()));
        }
        if let Some(why) = &self.broken {
            return Err(Error::Parquet(format!(
                "the writer cannot continue after an earlier error ({why}); close it"
            )));
        }
        Ok(())
    }

    /// Adds key-value pairs to the footer when it is written (pyarrow's
    /// `add_key_value_metadata`).
    pub fn add_key_value_metadata(&mut self, pairs: Vec<(String, String)>) -> Result<()> {
        self.check_open()?;
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| Error::Parquet("the writer is closed".into()))?;
        for (key, value) in pairs {
            file.append_key_value_metadata(KeyValue::new(key, value));
        }
        Ok(())
    }

    /// Writes the buffered rows, then a row group of no rows, as pyarrow's writer does for
    /// each empty table it is given.
    pub fn write_empty_row_group(&mut self) -> Result<()> {
        self.flush()?;
        let empty = RecordBatch::new_empty(self.plan.stored.clone());
        self.write_row_group(&[empty])
    }

    /// Adds `batch`; every full row group is encoded and written at once.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_open()?;
        check_schema(&self.schema, batch.schema_ref()).map_err(Error::Parquet)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let truncating = !self.options.allow_truncated_timestamps;
        // The stored schema, so that field metadata is the writer's and coerced types cast.
        let columns = batch
            .columns()
            .iter()
            .zip(self.plan.stored.fields())
            .map(|(column, field)| {
                if column.data_type() == field.data_type() {
                    return Ok(column.clone());
                }
                // Not `safe`: a value out of the stored unit's range fails, as in pyarrow, instead
                // of becoming a null.
                let options = arrow_cast::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                let stored = arrow_cast::cast_with_options(column, field.data_type(), &options)
                    .map_err(|e| {
                        Error::Parquet(format!(
                            "column '{}': {} cannot be stored as {}: {e}",
                            field.name(),
                            column.data_type(),
                            field.data_type()
                        ))
                    })?;
                if truncating && coarsens(column.data_type(), field.data_type()) {
                    check_truncation(field.name(), column, &stored)?;
                }
                Ok(stored)
            })
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(self.plan.stored.clone(), columns)?;
        let mut rest = batch;
        loop {
            let room = self.options.row_group_size - self.pending_rows;
            if rest.num_rows() < room {
                self.pending_rows += rest.num_rows();
                self.pending.push(rest);
                return Ok(());
            }
            self.pending.push(rest.slice(0, room));
            let taken = std::mem::take(&mut self.pending);
            self.pending_rows = 0;
            self.write_row_group(&taken)?;
            if rest.num_rows() == room {
                return Ok(());
            }
            rest = rest.slice(room, rest.num_rows() - room);
        }
    }

    /// Writes the buffered rows as a row group now, however few.
    pub fn flush(&mut self) -> Result<()> {
        self.check_open()?;
        if self.pending_rows == 0 {
            return Ok(());
        }
        let taken = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        self.write_row_group(&taken)
    }

    /// Writes the buffered rows and the footer, and returns the sink.
    pub fn finish(&mut self) -> Result<W> {
        self.flush()?;
        let mut file = self
            .file
            .take()
            .ok_or_else(|| Error::Parquet("the writer is closed".into()))?;
        // What the crate writes from here on (the last bloom filters, then the footer) is
        // kept too, for the footer's exact bytes.
        file.inner_mut().tee = Some(Vec::new());
        file.finish()?;
        self.finished_bytes = file.bytes_written();
        let slot = file.inner_mut();
        let written = slot.tee.take().unwrap_or_default();
        self.footer = footer_of(&written).map(<[u8]>::to_vec);
        // The crate hands its sink back only by writing the footer again; the slot lets it
        // go without.
        slot.sink
            .take()
            .ok_or_else(|| Error::Parquet("the writer's sink was taken already".into()))
    }

    /// After `finish`, the file's footer as the file ends: the Thrift FileMetaData, its
    /// length, and the magic bytes (pyarrow's `ParquetWriter.metadata` is read from it).
    pub fn footer(&self) -> Option<&[u8]> {
        self.footer.as_deref()
    }

    /// Drops the file writer and the sink without writing more (a path sink removes its file).
    pub fn abandon(&mut self) {
        self.file = None;
        self.pending.clear();
        self.pending_rows = 0;
    }

    fn write_row_group(&mut self, batches: &[RecordBatch]) -> Result<()> {
        let result = self.encode_row_group(batches);
        if let Err(e) = &result {
            self.broken = Some(e.to_string());
        }
        result
    }

    fn encode_row_group(&mut self, batches: &[RecordBatch]) -> Result<()> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let encoded = if self.options.content_defined_chunking.is_some() && rows > 0 {
            self.encode_by_content(batches)?
        } else {
            self.encode_columns(batches)?
        };
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| Error::Parquet("the writer is closed".into()))?;
        let descriptors = file.schema_descr().columns().to_vec();
        let mut group = file.next_row_group()?;
        for (chunk, descr) in encoded.into_iter().zip(descriptors) {
            match chunk {
                EncodedChunk::Compressed { bytes, mut close } => {
                    if descr.physical_type() == Physical::INT96 {
                        close = int96::declare(close, descr)?;
                    }
                    group.append_column(&bytes, close)?
                }
                EncodedChunk::Native(chunk) => chunk.append_to_row_group(&mut group)?,
                EncodedChunk::Appended(file, close) => group.append_column(&*file, close)?,
            }
        }
        group.close()?;
        self.row_groups += 1;
        self.rows_written += rows as u64;
        Ok(())
    }

    /// The row group's column chunks, encoded by the parquet crate's column writers (a field's
    /// leaves a task, on as many threads as the options allow) and compressed by the compression
    /// stage where it compresses them.
    fn encode_columns(&mut self, batches: &[RecordBatch]) -> Result<Vec<EncodedChunk>> {
        let plain = self.plain_leaves(batches);
        // Each set of writers is made only if some leaf takes its writer from it.
        let index = self.row_groups;
        let mut leaves = if plain.contains(&false) || self.plain.is_none() {
            Some(self.factory.create(index)?.into_iter())
        } else {
            None
        };
        let mut plain_leaves = match &mut self.plain {
            Some(p) if plain.contains(&true) => Some(p.create(index)?.into_iter()),
            _ => None,
        };
        let mut plain = plain.into_iter();
        let mut tasks = Vec::with_capacity(self.plan.leaves.len());
        for (field, plans) in self.plan.leaves.iter().enumerate() {
            let mut columns = Vec::with_capacity(plans.len());
            for plan in plans {
                let missing = || Error::Parquet("fewer column writers than leaf columns".into());
                let next = |set: &mut Option<std::vec::IntoIter<LeafWriter>>| {
                    set.as_mut()
                        .map(|l| l.next().ok_or_else(missing))
                        .transpose()
                };
                let with_dictionary = next(&mut leaves)?;
                let without = next(&mut plain_leaves)?;
                let (writer, blobs) = match (plain.next(), without, with_dictionary) {
                    (Some(true), Some(without), _) => without,
                    (_, _, Some(with)) => with,
                    _ => return Err(missing()),
                };
                columns.push(Leaf {
                    writer,
                    blobs,
                    plan: *plan,
                });
            }
            let bytes = batches
                .iter()
                .map(|b| b.column(field).get_buffer_memory_size())
                .sum();
            tasks.push(FieldTask {
                field,
                bytes,
                leaves: Mutex::new(columns),
            });
        }
        let total: usize = tasks.iter().map(|t| t.bytes).sum();
        let threads = resolve_threads(self.options.threads, total, tasks.len())?;
        let schema = &self.plan.encoded;
        let checksum = self.options.page_checksum;
        let encoded = for_each_parallel(
            &tasks,
            threads,
            None,
            |t| t.bytes,
            || Ok(Leases::default()),
            |leases, _, task| {
                let name = schema.field(task.field).name();
                catch_panics(&format!("encoding column '{name}'"), || {
                    encode_field(task, schema, batches, leases, &self.pool, checksum)
                })
                .map_err(|e| e.at(format_args!("column '{name}'")))
            },
        )?;
        Ok(encoded.into_iter().flatten().collect())
    }

    /// Per leaf, whether it goes without the dictionary the options give it: a sampled leaf
    /// whose row group's sample says a dictionary would not pay.
    fn plain_leaves(&self, batches: &[RecordBatch]) -> Vec<bool> {
        self.plan
            .leaves
            .iter()
            .enumerate()
            .flat_map(|(field, plans)| {
                plans.iter().map(move |plan| {
                    plan.sampled && {
                        let columns: Vec<_> = batches.iter().map(|b| b.column(field)).collect();
                        !dictionary_pays(&columns, plan.width)
                    }
                })
            })
            .collect()
    }

    /// The row group's column chunks with their data pages cut by content (see `by_content`):
    /// each top-level field written by the crate's own writer, a field a task, on as many
    /// threads as the options allow, and each chunk then through the compression stage where it
    /// goes through it.
    fn encode_by_content(&mut self, batches: &[RecordBatch]) -> Result<Vec<EncodedChunk>> {
        // Per field, whether its sampled leaf (a top-level one, so a field has one at most)
        // goes without a dictionary.
        let plain = self.plain_leaves(batches);
        let mut plain = plain.into_iter();
        let plain: Vec<bool> = self
            .plan
            .leaves
            .iter()
            .map(|plans| plain.by_ref().take(plans.len()).any(|p| p))
            .collect();
        let tasks: Vec<(usize, usize)> = (0..self.plan.leaves.len())
            .map(|field| {
                let bytes = batches
                    .iter()
                    .map(|b| b.column(field).get_buffer_memory_size())
                    .sum();
                (field, bytes)
            })
            .collect();
        let total = tasks.iter().map(|t| t.1).sum();
        let threads = resolve_threads(self.options.threads, total, tasks.len())?;
        let checksum = self.options.page_checksum;
        let encoded = for_each_parallel(
            &tasks,
            threads,
            None,
            |t| t.1,
            || Ok(Leases::default()),
            |leases, _, &(field, _)| {
                let name = self.schema.field(field).name();
                catch_panics(&format!("encoding column '{name}'"), || {
                    let columns: Vec<_> = batches.iter().map(|b| b.column(field)).collect();
                    let how = &self.plan.by_content[field];
                    let props = match (plain[field], &how.plain) {
                        (true, Some(plain)) => plain,
                        _ => &how.props,
                    };
                    let written = by_content::encode_field(
                        props,
                        &how.schema,
                        self.plan.encoded.fields().get(field).ok_or_else(|| {
                            Error::Parquet(format!("no field {field} to cut by content"))
                        })?,
                        &columns,
                    )?;
                    let file = Arc::new(written.file);
                    let plans = &self.plan.leaves[field];
                    if plans.len() != written.chunks.len() {
                        return Err(Error::Parquet(format!(
                            "the content-defined chunker wrote {} column chunks for {} leaves",
                            written.chunks.len(),
                            plans.len()
                        )));
                    }
                    plans
                        .iter()
                        .zip(written.chunks)
                        .map(|(plan, close)| match plan.compressed_here {
                            false => Ok(EncodedChunk::Appended(file.clone(), close)),
                            true => through_compression(
                                plan,
                                &columns,
                                leases,
                                &self.pool,
                                checksum,
                                |compression, rewrites| {
                                    compress_chunk(file.clone(), close, compression, rewrites)
                                },
                            ),
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .map_err(|e| e.at(format_args!("column '{name}'")))
            },
        )?;
        Ok(encoded.into_iter().flatten().collect())
    }
}

/// One top-level field of a row group: its leaf columns' writers, taken by one thread.
struct FieldTask {
    field: usize,
    bytes: usize,
    leaves: Mutex<Vec<Leaf>>,
}

struct Leaf {
    writer: ArrowColumnWriter,
    blobs: Arc<Mutex<Vec<bytes::Bytes>>>,
    plan: LeafPlan,
}

/// Makes the column writers of each row group: the parquet crate's factory, taking its
/// properties from a file writer of its own (the page version as its writer version, which
/// the crate ties to the format version the real file records), which writes its magic bytes
/// to nothing and is dropped; and the page stores the compression stage reads back. The factory
/// is made when first used: a small file may need only one of a writer's two sets.
struct ColumnWriters {
    root: TypePtr,
    stored: SchemaRef,
    props: Arc<WriterProperties>,
    made: Option<(ArrowRowGroupWriterFactory, Arc<CaptureFactory>)>,
}

type LeafWriter = (ArrowColumnWriter, Arc<Mutex<Vec<bytes::Bytes>>>);

impl ColumnWriters {
    fn new(schema: &SchemaDescriptor, stored: &SchemaRef, props: &Arc<WriterProperties>) -> Self {
        ColumnWriters {
            root: schema.root_schema_ptr(),
            stored: stored.clone(),
            props: props.clone(),
            made: None,
        }
    }

    /// Every leaf's writer and page store for row group `index`, in column order.
    fn create(&mut self, index: usize) -> Result<Vec<LeafWriter>> {
        let (factory, capture) = match &mut self.made {
            Some(made) => made,
            None => {
                let encoder = SerializedFileWriter::new(
                    std::io::sink(),
                    self.root.clone(),
                    self.props.clone(),
                )?;
                let capture = Arc::new(CaptureFactory::default());
                let factory = ArrowRowGroupWriterFactory::new(&encoder, self.stored.clone())
                    .with_page_store_factory(capture.clone());
                self.made.insert((factory, capture))
            }
        };
        let writers = factory.create_column_writers(index)?;
        Ok(writers.into_iter().zip(capture.take_created()).collect())
    }
}

/// Encodes one field of every batch and compresses the leaves the compression stage compresses.
fn encode_field(
    task: &FieldTask,
    schema: &Schema,
    batches: &[RecordBatch],
    leases: &mut Leases,
    pool: &ContextPool,
    checksum: bool,
) -> Result<Vec<EncodedChunk>> {
    let mut leaves = std::mem::take(&mut *task.leaves.lock().unwrap_or_else(|p| p.into_inner()));
    let field = schema.field(task.field);
    for batch in batches {
        let column = batch.column(task.field);
        let column = match column.data_type() == field.data_type() {
            true => column.clone(),
            false => int96::encode(column)?,
        };
        let computed = compute_leaves(field, &column)?;
        for (leaf, column) in computed.iter().zip(leaves.iter_mut()) {
            column.writer.write(leaf)?;
        }
    }
    let mut out = Vec::with_capacity(leaves.len());
    for leaf in leaves {
        let chunk = leaf.writer.close()?;
        let plan = leaf.plan;
        if !plan.compressed_here {
            out.push(EncodedChunk::Native(chunk));
            continue;
        }
        let columns: Vec<_> = batches.iter().map(|b| b.column(task.field)).collect();
        out.push(through_compression(
            &plan,
            &columns,
            leases,
            pool,
            checksum,
            |compression, rewrites| compress_pages(chunk, &leaf.blobs, compression, rewrites),
        )?);
    }
    Ok(out)
}

/// A chunk of `plan`'s leaf through the compression stage (`compress_pages`, given how to compress its
/// pages and what to rewrite): its codec, with a pooled context for zstd, and the Arrow
/// dictionary of the field's arrays (`columns`) where the leaf is written with it.
fn through_compression(
    plan: &LeafPlan,
    columns: &[&ArrayRef],
    leases: &mut Leases,
    pool: &ContextPool,
    checksum: bool,
    compress_pages: impl FnOnce(PageCompression<'_>, Rewrites<'_>) -> Result<EncodedChunk>,
) -> Result<EncodedChunk> {
    let dictionary = match plan.given_dictionary {
        true => GivenDictionary::of(columns, plan.nullable),
        false => None,
    };
    let compression = match plan.codec {
        PageCodec::Zstd(params) => PageCompression::Zstd(params, leases.get(pool, params)?),
        other => PageCompression::Other(other),
    };
    compress_pages(
        compression,
        Rewrites {
            dictionary: dictionary.as_ref(),
            checksum,
        },
    )
}

/// The compressors one thread holds while it encodes, one per parameter set it met.
#[derive(Default)]
struct Leases {
    held: Vec<Lease<Compressor>>,
}

impl Leases {
    fn get(&mut self, pool: &ContextPool, params: CompressParams) -> Result<&mut Compressor> {
        let at = match self.held.iter().position(|l| l.params() == params) {
            Some(at) => at,
            None => {
                self.held.push(pool.compressor(params)?);
                self.held.len() - 1
            }
        };
        Ok(&mut self.held[at])
    }
}

/// The sink a file writer writes to, held so that it can be taken back after the footer is
/// written (the crate's `into_inner` would write the footer a second time), and a copy of
/// what is written while `tee` is set.
struct Slot<W> {
    sink: Option<W>,
    tee: Option<Vec<u8>>,
}

impl<W: Write> Write for Slot<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = match &mut self.sink {
            Some(w) => w.write(buf)?,
            None => return Err(std::io::Error::other("the sink was handed back")),
        };
        if let Some(tee) = &mut self.tee {
            tee.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// The footer at the end of `tail` (the last bytes of a file): its Thrift FileMetaData, its
/// length and the magic bytes; None if `tail` does not end in one.
fn footer_of(tail: &[u8]) -> Option<&[u8]> {
    let end = tail.len().checked_sub(8)?;
    if &tail[end + 4..] != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(tail[end..end + 4].try_into().ok()?) as usize;
    tail.get(end.checked_sub(len)?..)
}
