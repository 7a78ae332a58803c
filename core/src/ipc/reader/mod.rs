//! IPC readers: framing is read here, every compressed body goes through the decompression
//! stage with a pooled context, and arrow-ipc decodes the uncompressed result, which is
//! validated in full (`validate`) before anything reads it.
//! Every length in the input is treated as hostile: checked against the input and the limits
//! before it is used or allocated.

use std::collections::HashMap;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::UnsafeFlag;
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::{Message, MessageHeader, MetadataVersion};
use arrow_schema::{Schema, SchemaRef};

use super::decompress::decompress_buffers;
pub use super::decompress::ReadLimits;
use super::message::{
    self, batch_header, body_codec, buffer_spans, read_key_values, KeyValues, LEGACY_CODEC_KEY,
};
use super::projection::Projection;
use super::source::Source;
use super::validate::validate_columns;
use super::ARROW_MAGIC;
use crate::context::Decompressor;
use crate::error::{catch_panics, Error, Result};
use crate::parallel::{resolve_threads, PARALLEL_MIN_BYTES};
use crate::pool::{ContextPool, Lease};

mod file;
mod stream;
#[cfg(test)]
mod tests;

pub use file::FileReader;
pub use stream::StreamReader;

fn truncated(what: &str, want: usize, got: usize) -> Error {
    Error::Ipc(format!(
        "truncated IPC data: {what} needs {want} bytes, the input has {got}"
    ))
}

pub(super) fn read_exact(source: &mut dyn Source, n: usize, what: &str) -> Result<Buffer> {
    let b = source.read(n)?;
    if b.len() != n {
        return Err(truncated(what, n, b.len()));
    }
    Ok(b)
}

/// Reads a message's framing and metadata; None at the end of the stream (an end-of-stream
/// marker, or the input ending cleanly between messages).
pub(crate) fn read_message_meta(
    source: &mut dyn Source,
    limits: &ReadLimits,
) -> Result<Option<Buffer>> {
    let first = source.read(4)?;
    if first.is_empty() {
        return Ok(None);
    }
    if first.len() < 4 {
        return Err(truncated("a message length", 4, first.len()));
    }
    if first.as_slice() == &ARROW_MAGIC[..4] {
        return Err(Error::Ipc(
            "this is an Arrow IPC file (it starts with the ARROW1 magic), not a stream: open it \
             with open_file or read_file"
                .into(),
        ));
    }
    let mut len = i32::from_le_bytes(first.as_slice().try_into().expect("4 bytes"));
    if len == -1 {
        // Continuation marker; the length follows (format 0.15 and later).
        let b = read_exact(source, 4, "a message length")?;
        len = i32::from_le_bytes(b.as_slice().try_into().expect("4 bytes"));
    }
    if len == 0 {
        return Ok(None);
    }
    if len < 0 {
        return Err(Error::Ipc(format!("invalid IPC message length {len}")));
    }
    let len = len as usize;
    if len > limits.max_batch_size {
        return Err(Error::Limit(format!(
            "an IPC message header declares {len} bytes, more than max_batch_size ({} bytes)",
            limits.max_batch_size
        )));
    }
    Ok(Some(read_exact(source, len, "a message header")?))
}

pub(super) fn body_length(msg: &Message<'_>, limits: &ReadLimits) -> Result<usize> {
    let n = msg.bodyLength();
    if n < 0 {
        return Err(Error::Ipc(format!("invalid IPC body length {n}")));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n > limits.max_batch_size {
        return Err(Error::Limit(format!(
            "an IPC message body declares {n} bytes, more than max_batch_size ({} bytes)",
            limits.max_batch_size
        )));
    }
    Ok(n)
}

/// Reads the body of `msg`, checked against the limits.
pub(crate) fn read_body(
    source: &mut dyn Source,
    msg: &Message<'_>,
    limits: &ReadLimits,
) -> Result<Buffer> {
    let n = body_length(msg, limits)?;
    read_exact(source, n, "a message body")
}

/// What a reader has read, counted as pyarrow's `ReadStats` counts it: messages (the schema's
/// among them), batches of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub num_messages: u64,
    pub num_record_batches: u64,
    pub num_dictionary_batches: u64,
    pub num_dictionary_deltas: u64,
    /// Dictionary batches that replaced a dictionary read before.
    pub num_replaced_dictionaries: u64,
}

/// A record batch and the key-value metadata its message carried, if any.
pub type BatchWithMetadata = (RecordBatch, Option<KeyValues>);

/// What readers of both formats share: the schema, the dictionaries read so far, the limits
/// and the pooled decompressor.
pub(super) struct Decoder {
    /// The schema of the data, every column.
    schema: SchemaRef,
    /// The columns read (None: all) and the schema of the batches returned.
    projection: Option<Projection>,
    output_schema: SchemaRef,
    stats: ReadStats,
    dictionaries: HashMap<i64, ArrayRef>,
    limits: ReadLimits,
    pool: ContextPool,
    threads: Option<usize>,
    /// Leased at the first compressed buffer and kept until the reader closes.
    decompressor: Option<Lease<Decompressor>>,
    /// The codec the schema's metadata names under the legacy key, if it does.
    schema_codec: Option<String>,
}

impl Decoder {
    fn new(schema: Schema, limits: ReadLimits, pool: &ContextPool, threads: Option<usize>) -> Self {
        let schema_codec = schema.metadata().get(LEGACY_CODEC_KEY).cloned();
        let schema = SchemaRef::new(schema);
        Decoder {
            output_schema: schema.clone(),
            schema,
            projection: None,
            stats: ReadStats {
                num_messages: 1,
                ..ReadStats::default()
            },
            dictionaries: HashMap::new(),
            limits,
            pool: pool.clone(),
            threads,
            decompressor: None,
            schema_codec,
        }
    }

    /// Reads only the `columns` of each batch (top-level field indices); their buffers alone
    /// are decompressed. Dictionaries are still read whole.
    fn project(&mut self, columns: Vec<usize>) -> Result<()> {
        let projection = Projection::new(columns, self.schema.fields().len())?;
        self.output_schema = SchemaRef::new(self.schema.project(projection.columns())?);
        self.projection = Some(projection);
        Ok(())
    }

    /// Decodes a DictionaryBatch or RecordBatch message (already parsed by the caller); a
    /// dictionary is stored and None returned. A batch comes with its message's metadata.
    fn decode(&mut self, msg: &Message<'_>, body: Buffer) -> Result<Option<BatchWithMetadata>> {
        self.stats.num_messages += 1;
        let decoded = catch_panics("decoding a message", || self.decode_unguarded(msg, body))?;
        Ok(decoded.map(|batch| {
            self.stats.num_record_batches += 1;
            (batch, msg.custom_metadata().map(read_key_values))
        }))
    }

    fn decode_unguarded(&mut self, msg: &Message<'_>, body: Buffer) -> Result<Option<RecordBatch>> {
        let (rb, _) = batch_header(msg)?;
        let Some(codec) = body_codec(msg, &rb, self.schema_codec.as_deref())? else {
            return self.decode_plain(msg, body);
        };
        let mut spans = buffer_spans(&rb)?;
        if let (Some(projection), MessageHeader::RecordBatch) =
            (&self.projection, msg.header_type())
        {
            // The other columns' buffers become empty: the decoder skips them unread.
            let variadic: Vec<i64> = rb
                .variadicBufferCounts()
                .map(|v| v.iter().collect())
                .unwrap_or_default();
            let mask =
                projection.buffer_mask(&self.schema, &variadic, msg.version(), spans.len())?;
            for (span, wanted) in spans.iter_mut().zip(mask) {
                if !wanted {
                    *span = (0, 0);
                }
            }
        }
        let (new_body, new_spans) = decompress_buffers(
            body.as_slice(),
            &spans,
            codec,
            &self.limits,
            &mut self.decompressor,
            &self.pool,
            self.threads,
        )?;
        // The same message without compression, around the decompressed body.
        let meta = message::rebuild(msg, &new_spans, new_body.len(), None, &[])?;
        self.decode_plain(&message::parse(&meta)?, new_body)
    }

    /// Decodes a message whose body is not compressed.
    fn decode_plain(&mut self, msg: &Message<'_>, body: Buffer) -> Result<Option<RecordBatch>> {
        let version = msg.version();
        if version < MetadataVersion::V4 {
            return Err(Error::Ipc(format!(
                "IPC metadata version {version:?} is not supported (V4 and later are)"
            )));
        }
        match msg.header_type() {
            MessageHeader::DictionaryBatch => {
                let d = msg
                    .header_as_dictionary_batch()
                    .ok_or_else(|| Error::Ipc("dictionary message without its header".into()))?;
                let replaces = !d.isDelta() && self.dictionaries.contains_key(&d.id());
                read_dictionary(&body, d, &self.schema, &mut self.dictionaries, &version)?;
                self.stats.num_dictionary_batches += 1;
                if d.isDelta() {
                    self.stats.num_dictionary_deltas += 1;
                } else if replaces {
                    self.stats.num_replaced_dictionaries += 1;
                }
                Ok(None)
            }
            MessageHeader::RecordBatch => {
                let rb = msg
                    .header_as_record_batch()
                    .ok_or_else(|| Error::Ipc("record batch message without its header".into()))?;
                let decoder = RecordBatchDecoder::try_new(
                    &body,
                    rb,
                    self.schema.clone(),
                    &self.dictionaries,
                    &version,
                )?
                .with_require_alignment(false)
                .with_projection(self.projection.as_ref().map(|p| p.columns()));
                // Decoded unvalidated, then every column validated in full before anything
                // reads its values (validate.rs, with a faster offsets check than arrow-data's)
                // and, from 1 MiB of buffers, on the reader's threads: arrow-ipc validates on
                // one thread, a fifth of a large read. Smaller batches are not worth a thread.
                let threads = if body.len() < PARALLEL_MIN_BYTES {
                    1
                } else {
                    resolve_threads(self.threads, body.len(), self.output_schema.fields().len())?
                };
                let mut skip = UnsafeFlag::new();
                // SAFETY: nothing reads the batch's values before `validate_columns` has
                // validated every column in full; a batch that fails is dropped unread.
                unsafe { skip.set(true) };
                let unchecked = decoder.with_skip_validation(skip).read_record_batch()?;
                Ok(Some(validate_columns(unchecked, threads)?))
            }
            other => Err(Error::Ipc(format!("unexpected IPC message type {other:?}"))),
        }
    }

    fn release(&mut self) {
        self.decompressor = None;
    }
}

/// The rows of a record batch message, read from its header alone; None for a dictionary.
fn header_rows(msg: &Message<'_>) -> Result<Option<u64>> {
    match msg.header_type() {
        MessageHeader::RecordBatch => {
            let (rb, _) = batch_header(msg)?;
            u64::try_from(rb.length())
                .map(Some)
                .map_err(|_| Error::Ipc(format!("invalid record batch length {}", rb.length())))
        }
        MessageHeader::DictionaryBatch => Ok(None),
        other => Err(Error::Ipc(format!("unexpected IPC message type {other:?}"))),
    }
}
