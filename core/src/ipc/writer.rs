//! The IPC writer: arrow-ipc encodes each batch uncompressed (its buffers referenced, not
//! copied), and the compression stage rewrites every record batch and dictionary message with
//! its buffers compressed by a pooled context. The output is plain Arrow IPC, stream or file.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::writer::{
    DictionaryHandling, DictionaryTracker, IpcDataGenerator, IpcWriteOptions, StreamEncoder,
};
use arrow_ipc::{Block, FooterBuilder, Message, MessageHeader, MetadataVersion};
use arrow_schema::SchemaRef;
use flatbuffers::FlatBufferBuilder;

use super::compress::{compress_buffers, Compression};
use super::message::{self, batch_header, buffer_spans};
use super::IpcFormat;
use super::{pad, ALIGNMENT, ARROW_MAGIC};
use crate::batch_schema::check_schema;

/// Bodies of at least this many uncompressed bytes are compressed straight into the output.
const DIRECT_BODY_MIN: usize = 1 << 20;

/// Room left in a large message's header beyond the measured metadata; unused room is
/// padding inside the metadata block, as the format allows.
const HEADER_SLACK: usize = 64;
use crate::context::Compressor;
use crate::error::{catch_panics, Error, Result};
use crate::output::Output;
use crate::pool::{ContextPool, Lease};

/// How a writer writes.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    pub format: IpcFormat,
    pub compression: Compression,
    /// Threads to compress one batch's buffers with; None chooses by batch size.
    pub threads: Option<usize>,
    /// Send only the new entries when a dictionary grows (otherwise it is sent whole).
    pub dictionary_deltas: bool,
    /// Key-value metadata for the file footer (file format only).
    pub footer_metadata: HashMap<String, String>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            format: IpcFormat::Stream,
            compression: Compression::Zstd(crate::context::CompressParams::level(1)),
            threads: None,
            dictionary_deltas: false,
            footer_metadata: HashMap::new(),
        }
    }
}

/// What a writer has written, counted as pyarrow's `WriteStats` counts it: messages (the
/// schema's among them, not the end-of-stream marker), batches of each kind, and body bytes
/// before and after compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub num_messages: u64,
    pub num_record_batches: u64,
    pub num_dictionary_batches: u64,
    pub num_dictionary_deltas: u64,
    /// Dictionary batches that replace a dictionary already sent (stream format only).
    pub num_replaced_dictionaries: u64,
    /// Message bodies as arrow-ipc lays them out uncompressed, padding included.
    pub total_raw_body_size: u64,
    /// Message bodies as written.
    pub total_serialized_body_size: u64,
}

/// Writes Arrow IPC into byte vectors that the caller passes on to its sink. Each call
/// appends whole messages or nothing: on error the output is as it was (unless growing it
/// failed and lost it, see [`Output::try_reserve_exact`]).
pub struct IpcWriter {
    schema: SchemaRef,
    options: WriterOptions,
    pool: ContextPool,
    /// Held for the writer's whole life, so a long stream keeps one warm context.
    compressor: Option<Lease<Compressor>>,
    encoder: StreamEncoder,
    /// Bytes handed out so far: the offset of the next message in a file.
    written: usize,
    header_written: bool,
    dictionary_blocks: Vec<Block>,
    record_blocks: Vec<Block>,
    dictionaries_seen: HashSet<i64>,
    rows: u64,
    stats: WriteStats,
    /// Set when a failed write left the encoder's dictionary state ahead of the output.
    broken: Option<String>,
    finished: bool,
}

impl IpcWriter {
    /// Starts a writer. Nothing is written yet: the header (file magic and schema message)
    /// goes out with the first batch or at `finish`, as in arrow-go and arrow-rs, so a writer
    /// pays for its schema once and a writer that fails before its first batch writes nothing.
    pub fn try_new(schema: SchemaRef, options: WriterOptions, pool: &ContextPool) -> Result<Self> {
        let write_options = IpcWriteOptions::try_new(8, false, MetadataVersion::V5)?
            .with_dictionary_handling(if options.dictionary_deltas {
                DictionaryHandling::Delta
            } else {
                DictionaryHandling::Resend
            });
        let encoder = StreamEncoder::try_new_with_options(&schema, write_options)?;
        let compressor = match options.compression {
            Compression::Zstd(params) => Some(pool.compressor(params)?),
            _ => None,
        };
        Ok(IpcWriter {
            schema,
            options,
            pool: pool.clone(),
            compressor,
            encoder,
            written: 0,
            header_written: false,
            dictionary_blocks: Vec::new(),
            record_blocks: Vec::new(),
            dictionaries_seen: HashSet::new(),
            rows: 0,
            stats: WriteStats::default(),
            broken: None,
            finished: false,
        })
    }

    /// Appends the file magic (file format) and the schema message.
    fn write_header(&mut self, schema_message: &[u8], out: &mut dyn Output) -> Result<()> {
        if self.options.format == IpcFormat::File {
            out.extend_from_slice(ARROW_MAGIC)?;
            pad(out)?;
        }
        message::frame(schema_message, &[], out)?;
        self.header_written = true;
        Ok(())
    }

    /// What has been written so far.
    pub fn stats(&self) -> WriteStats {
        self.stats
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn options(&self) -> &WriterOptions {
        &self.options
    }

    /// Rows of the batches written so far.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// Bytes handed out so far.
    pub fn bytes_written(&self) -> usize {
        self.written
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(Error::Ipc("the writer is closed".into()));
        }
        if let Some(why) = &self.broken {
            return Err(Error::Ipc(format!(
                "the writer cannot continue after an earlier error ({why}); close it"
            )));
        }
        Ok(())
    }

    /// Appends `batch` (its dictionaries first) to `out`.
    pub fn write(&mut self, batch: &RecordBatch, out: &mut dyn Output) -> Result<()> {
        self.write_with_metadata(batch, &[], out)
    }

    /// As [`IpcWriter::write`], with key-value metadata on the batch's message (pyarrow's
    /// `write_batch(batch, custom_metadata)`), read back with the batch.
    pub fn write_with_metadata(
        &mut self,
        batch: &RecordBatch,
        custom_metadata: &[(String, String)],
        out: &mut dyn Output,
    ) -> Result<()> {
        self.check_open()?;
        check_schema(&self.schema, batch.schema_ref()).map_err(Error::Ipc)?;
        // The body does not depend on names or metadata, so a batch whose fields match is
        // encoded as it is; the stream carries the writer's schema.
        let start = out.len();
        let result = self.encode(batch, custom_metadata, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode(
        &mut self,
        batch: &RecordBatch,
        custom_metadata: &[(String, String)],
        out: &mut dyn Output,
    ) -> Result<()> {
        // The encoder records dictionaries as sent when it encodes them; if anything below
        // fails, the output no longer matches that record.
        let encoded = catch_panics("encoding a batch", || Ok(self.encoder.encode(batch)?));
        let segments = match encoded {
            Ok(buffers) => Segments::new(buffers),
            Err(e) => {
                self.broken = Some(e.to_string());
                return Err(e);
            }
        };
        let mut blocks = Vec::new();
        let start = out.len();
        let header_before = self.header_written;
        // Counted here and kept only if the whole batch is written.
        let mut stats = self.stats;
        let mut seen = Vec::new();
        let mut pos = 0;
        let result = (|| {
            // Room for a small batch's messages at once; large ones grow as they compress.
            out.grow_for(segments.len.min(64 << 10) + 256)?;
            while let Some((meta, body_start)) = segments.next_message(pos)? {
                // SAFETY: arrow-ipc's encoder wrote this flatbuffer a moment ago; it is not input.
                let msg = unsafe { arrow_ipc::root_as_message_unchecked(&meta) };
                let raw_len = usize::try_from(msg.bodyLength()).map_err(|_| {
                    Error::Ipc("encoded message with a negative body length".into())
                })?;
                pos = body_start + raw_len;
                if msg.header_type() == MessageHeader::Schema {
                    // The encoder sends the schema before its first batch.
                    if !self.header_written {
                        self.write_header(&meta, out)?;
                        stats.num_messages += 1;
                    }
                    continue;
                }
                let (rb, dictionary) = batch_header(&msg)?;
                if let Some((id, is_delta)) = dictionary {
                    if self.options.format == IpcFormat::File
                        && !is_delta
                        && self.dictionaries_seen.contains(&id)
                    {
                        return Err(Error::Ipc(format!(
                            "dictionary {id} changed between batches, and the IPC file format \
                             cannot replace a dictionary: write a stream, keep one dictionary \
                             (unify_dictionaries), or pass dictionary_deltas=True when new \
                             batches only add entries"
                        )));
                    }
                    stats.num_dictionary_batches += 1;
                    if is_delta {
                        stats.num_dictionary_deltas += 1;
                    } else if self.dictionaries_seen.contains(&id) || seen.contains(&id) {
                        stats.num_replaced_dictionaries += 1;
                    }
                    seen.push(id);
                } else {
                    stats.num_record_batches += 1;
                }
                let spans = buffer_spans(&rb)?;
                let buffers = spans
                    .iter()
                    .map(|&(o, l)| segments.bytes(body_start + o as usize, l as usize))
                    .collect::<Result<Vec<_>>>()?;
                let slices: Vec<&[u8]> = buffers.iter().map(|b| b.as_ref()).collect();
                let offset = self.written + (out.len() - start);
                let metadata = if dictionary.is_none() {
                    custom_metadata
                } else {
                    &[]
                };
                let (header_len, body_len) = self.write_message(&msg, &slices, metadata, out)?;
                stats.num_messages += 1;
                stats.total_raw_body_size += raw_len as u64;
                stats.total_serialized_body_size += body_len as u64;
                blocks.push((
                    dictionary.is_some(),
                    Block::new(offset as i64, header_len as i32, body_len as i64),
                ));
            }
            Ok(())
        })();
        if let Err(e) = result {
            self.broken = Some(e.to_string());
            // What this call wrote, the header included, is taken back by the caller.
            self.header_written = header_before;
            return Err(e);
        }
        self.stats = stats;
        self.dictionaries_seen.extend(seen);
        for (is_dictionary, block) in blocks {
            if is_dictionary {
                self.dictionary_blocks.push(block);
            } else {
                self.record_blocks.push(block);
            }
        }
        self.written += out.len() - start;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Appends `buffers`, compressed with this writer's codec, context and threads, to `out`;
    /// returns each one's (offset, length) from where `out` ended.
    fn compress_into(
        &mut self,
        buffers: &[&[u8]],
        out: &mut dyn Output,
    ) -> Result<Vec<(usize, usize)>> {
        if let (Compression::Zstd(params), None) = (self.options.compression, &self.compressor) {
            self.compressor = Some(self.pool.compressor(params)?);
        }
        compress_buffers(
            buffers,
            self.options.compression,
            self.compressor.as_mut(),
            &self.pool,
            self.options.threads,
            out,
        )
    }

    /// Appends `msg` with its `buffers` compressed, framed; returns its header and body lengths.
    fn write_message(
        &mut self,
        msg: &Message<'_>,
        buffers: &[&[u8]],
        custom_metadata: &[(String, String)],
        out: &mut dyn Output,
    ) -> Result<(usize, usize)> {
        let codec = self.options.compression.wire_codec();
        let uncompressed: usize = buffers.iter().map(|b| b.len()).sum();
        if uncompressed < DIRECT_BODY_MIN {
            // Small: compress into a body of its own and copy it after the header.
            let mut body = Vec::new();
            let spans = self.compress_into(buffers, &mut body)?;
            let meta = message::rebuild(msg, &spans, body.len(), codec, custom_metadata)?;
            return Ok((message::frame(&meta, &body, out)?, body.len()));
        }
        // Large: compress straight into `out` after a gap for the header, so the compressed
        // body is never held twice. The header's size does not depend on the offsets it
        // records, so one built from the uncompressed layout measures the gap.
        let mut at = 0;
        let layout: Vec<(usize, usize)> = buffers
            .iter()
            .map(|b| {
                let span = (at, b.len() + 8);
                at += b.len() + 8 + ALIGNMENT;
                span
            })
            .collect();
        let estimate = message::rebuild(msg, &layout, at, codec, custom_metadata)?.len();
        let mut gap = message::header_len(estimate) + HEADER_SLACK;
        let message_start = out.len();
        out.extend_zeros(gap)?;
        let spans = self.compress_into(buffers, out)?;
        let body_len = out.len() - message_start - gap;
        let meta = message::rebuild(msg, &spans, body_len, codec, custom_metadata)?;
        let needed = message::header_len(meta.len());
        if needed > gap {
            // Not expected (the estimate has slack); make room by moving the body.
            out.insert_zeros(message_start + gap, needed - gap)?;
            gap = needed;
        }
        message::fill_header(
            &meta,
            &mut out.as_mut_slice()[message_start..message_start + gap],
        );
        Ok((gap, body_len))
    }

    /// Appends the end-of-stream marker (and for files the footer) to `out`, and gives the
    /// compression context back. Idempotent.
    pub fn finish(&mut self, out: &mut dyn Output) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.compressor = None;
        let start = out.len();
        let result = self.write_tail(out);
        match result {
            Ok(()) => self.written += out.len() - start,
            Err(_) => out.truncate(start),
        }
        result
    }

    /// The header if no batch wrote it, the end-of-stream marker and a file's footer.
    fn write_tail(&mut self, out: &mut dyn Output) -> Result<()> {
        if !self.header_written {
            let schema_message = IpcDataGenerator::default()
                .schema_to_bytes_with_dictionary_tracker(
                    &self.schema,
                    &mut DictionaryTracker::new(false),
                    &IpcWriteOptions::default(),
                )
                .ipc_message;
            self.write_header(&schema_message, out)?;
            self.stats.num_messages += 1;
        }
        message::end_of_stream(out)?;
        if self.options.format == IpcFormat::File {
            let footer = self.footer();
            out.extend_from_slice(&footer)?;
            out.extend_from_slice(&(footer.len() as i32).to_le_bytes())?;
            out.extend_from_slice(ARROW_MAGIC)?;
        }
        Ok(())
    }

    /// Gives the compression context back until the next write, which leases one again: a
    /// writer kept open between writes (one of a dataset's many files) holds none meanwhile.
    pub fn release_context(&mut self) {
        self.compressor = None;
    }

    /// Gives the compression context back without writing anything more (a writer that is
    /// abandoned after an error).
    pub fn abandon(&mut self) {
        self.finished = true;
        self.compressor = None;
    }

    fn footer(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let dictionaries = fbb.create_vector(&self.dictionary_blocks);
        let batches = fbb.create_vector(&self.record_blocks);
        // A fresh tracker numbers dictionaries in schema order, as the schema message did.
        let mut tracker = DictionaryTracker::new(false);
        let schema = arrow_ipc::convert::IpcSchemaEncoder::new()
            .with_dictionary_tracker(&mut tracker)
            .schema_to_fb_offset(&mut fbb, &self.schema);
        // Sorted by key, so that the same metadata gives the same bytes.
        let mut pairs: message::KeyValues = self
            .options
            .footer_metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        pairs.sort();
        let metadata = (!pairs.is_empty()).then(|| message::key_values(&mut fbb, &pairs));
        let mut f = FooterBuilder::new(&mut fbb);
        f.add_version(MetadataVersion::V5);
        f.add_schema(schema);
        f.add_dictionaries(dictionaries);
        f.add_recordBatches(batches);
        if let Some(m) = metadata {
            f.add_custom_metadata(m);
        }
        let root = f.finish();
        fbb.finish(root, None);
        fbb.finished_data().to_vec()
    }
}

/// The framed messages arrow-ipc's encoder produced: a list of buffers (headers, padding and
/// the batch's own Arrow buffers, uncopied) read as one byte sequence.
struct Segments {
    buffers: Vec<Buffer>,
    /// Where each buffer starts in the sequence.
    starts: Vec<usize>,
    len: usize,
}

impl Segments {
    fn new(buffers: Vec<Buffer>) -> Self {
        let mut starts = Vec::with_capacity(buffers.len());
        let mut len = 0;
        for b in &buffers {
            starts.push(len);
            len += b.len();
        }
        Segments {
            buffers,
            starts,
            len,
        }
    }

    /// Bytes `at..at + len`: borrowed when they sit in one buffer (always, for Arrow buffers),
    /// copied otherwise.
    fn bytes(&self, at: usize, len: usize) -> Result<Cow<'_, [u8]>> {
        if len == 0 {
            return Ok(Cow::Borrowed(&[]));
        }
        if at + len > self.len {
            return Err(Error::Ipc(
                "encoded message is shorter than its header says".into(),
            ));
        }
        let first = self.starts.partition_point(|&s| s <= at) - 1;
        let off = at - self.starts[first];
        let buf = &self.buffers[first];
        if off + len <= buf.len() {
            return Ok(Cow::Borrowed(&buf.as_slice()[off..off + len]));
        }
        let mut v = Vec::with_capacity(len);
        let mut i = first;
        let mut off = off;
        while v.len() < len {
            let b = self.buffers[i].as_slice();
            let take = (len - v.len()).min(b.len() - off);
            v.extend_from_slice(&b[off..off + take]);
            i += 1;
            off = 0;
        }
        Ok(Cow::Owned(v))
    }

    /// The message at `pos`: its metadata and where its body starts (the metadata gives the
    /// body's length).
    fn next_message(&self, pos: usize) -> Result<Option<(Cow<'_, [u8]>, usize)>> {
        if pos >= self.len {
            return Ok(None);
        }
        let prefix = self.bytes(pos, 8)?;
        let meta_len = i32::from_le_bytes(prefix[4..8].try_into().expect("8 bytes")) as usize;
        if meta_len == 0 {
            return Ok(None);
        }
        let meta = self.bytes(pos + 8, meta_len)?;
        Ok(Some((meta, pos + 8 + meta_len)))
    }
}
