//! IPC readers: framing is read here, every compressed body goes through the decompression
//! stage with a pooled context, and arrow-ipc decodes the uncompressed result, which is
//! validated in full (validate.rs) before anything reads it.
//! Every length in the input is treated as hostile: checked against the input and the limits
//! before it is used or allocated.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_data::UnsafeFlag;
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::{Block, Message, MessageHeader, MetadataVersion};
use arrow_schema::{
    DataType, Schema, SchemaRef, DECIMAL128_MAX_PRECISION, DECIMAL256_MAX_PRECISION,
    DECIMAL32_MAX_PRECISION, DECIMAL64_MAX_PRECISION,
};

use super::body::decompress_buffers;
pub use super::body::ReadLimits;
use super::message::{self, batch_header, buffer_spans};
use super::validate::validate_full;
use super::writer::children;
use super::ARROW_MAGIC;
use crate::context::Decompressor;
use crate::error::{catch_panics, Error, Result};
use crate::parallel::{for_each_parallel, resolve_threads, PARALLEL_MIN_BYTES};
use crate::pool::{ContextPool, Lease};

/// Sequential input.
pub trait Source: Send {
    /// The next `n` bytes; fewer only at the end of the input.
    fn read(&mut self, n: usize) -> Result<Buffer>;
}

/// Input that can be read at any offset (for the file format's footer and blocks).
pub trait RandomSource: Send {
    fn size(&mut self) -> Result<u64>;
    /// `n` bytes at `offset`; fewer only at the end of the input.
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer>;
}

/// Input already in memory: every read is a slice of it, never a copy.
pub struct BytesSource {
    data: Buffer,
    pos: usize,
}

impl BytesSource {
    pub fn new(data: Buffer) -> Self {
        BytesSource { data, pos: 0 }
    }

    fn slice(&self, at: usize, n: usize) -> Buffer {
        let at = at.min(self.data.len());
        let n = n.min(self.data.len() - at);
        self.data.slice_with_length(at, n)
    }
}

impl Source for BytesSource {
    fn read(&mut self, n: usize) -> Result<Buffer> {
        let b = self.slice(self.pos, n);
        self.pos += b.len();
        Ok(b)
    }
}

impl RandomSource for BytesSource {
    fn size(&mut self) -> Result<u64> {
        Ok(self.data.len() as u64)
    }
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer> {
        Ok(self.slice(usize::try_from(offset).unwrap_or(usize::MAX), n))
    }
}

/// Input from a reader (a file, a socket, a Python file object through the bindings).
pub struct ReaderSource<R> {
    inner: R,
}

impl<R> ReaderSource<R> {
    pub fn new(inner: R) -> Self {
        ReaderSource { inner }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

/// Reads up to `n` bytes, growing the buffer as bytes arrive: a hostile length on a short
/// input costs no more memory than the input has.
fn read_up_to(r: &mut impl Read, n: usize) -> Result<Buffer> {
    let mut v = Vec::new();
    v.try_reserve_exact(n.min(8 << 20))?;
    r.take(n as u64).read_to_end(&mut v)?;
    Ok(Buffer::from_vec(v))
}

impl<R: Read + Send> Source for ReaderSource<R> {
    fn read(&mut self, n: usize) -> Result<Buffer> {
        read_up_to(&mut self.inner, n)
    }
}

impl<R: Read + Seek + Send> RandomSource for ReaderSource<R> {
    fn size(&mut self) -> Result<u64> {
        Ok(self.inner.seek(SeekFrom::End(0))?)
    }
    fn read_at(&mut self, offset: u64, n: usize) -> Result<Buffer> {
        self.inner.seek(SeekFrom::Start(offset))?;
        read_up_to(&mut self.inner, n)
    }
}

fn truncated(what: &str, want: usize, got: usize) -> Error {
    Error::Ipc(format!(
        "truncated IPC data: {what} needs {want} bytes, the input has {got}"
    ))
}

fn read_exact(source: &mut dyn Source, n: usize, what: &str) -> Result<Buffer> {
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

fn body_length(msg: &Message<'_>, limits: &ReadLimits) -> Result<usize> {
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

/// What readers of both formats share: the schema, the dictionaries read so far, the limits
/// and the pooled decompressor.
struct Decoder {
    schema: SchemaRef,
    dictionaries: HashMap<i64, ArrayRef>,
    limits: ReadLimits,
    pool: ContextPool,
    threads: Option<usize>,
    /// Leased at the first compressed buffer and kept until the reader closes.
    decompressor: Option<Lease<Decompressor>>,
}

impl Decoder {
    fn new(schema: Schema, limits: ReadLimits, pool: &ContextPool, threads: Option<usize>) -> Self {
        Decoder {
            schema: SchemaRef::new(schema),
            dictionaries: HashMap::new(),
            limits,
            pool: pool.clone(),
            threads,
            decompressor: None,
        }
    }

    /// Decodes a DictionaryBatch or RecordBatch message (already parsed by the caller); a
    /// dictionary is stored and None returned.
    fn decode(&mut self, msg: &Message<'_>, body: Buffer) -> Result<Option<RecordBatch>> {
        catch_panics("decoding a message", || self.decode_unguarded(msg, body))
    }

    fn decode_unguarded(&mut self, msg: &Message<'_>, body: Buffer) -> Result<Option<RecordBatch>> {
        let (rb, _) = batch_header(msg)?;
        let Some(compression) = rb.compression() else {
            return self.decode_plain(msg, body);
        };
        let spans = buffer_spans(&rb)?;
        let (new_body, new_spans) = decompress_buffers(
            body.as_slice(),
            &spans,
            compression.codec(),
            &self.limits,
            &mut self.decompressor,
            &self.pool,
            self.threads,
        )?;
        // The same message without compression, around the decompressed body.
        let meta = message::rebuild(msg, &new_spans, new_body.len(), None)?;
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
                read_dictionary(&body, d, &self.schema, &mut self.dictionaries, &version)?;
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
                .with_require_alignment(false);
                // Decoded unvalidated, then every column validated in full before anything
                // reads its values (validate.rs, with a faster offsets check than arrow-data's)
                // and, from 1 MiB of buffers, on the reader's threads: arrow-ipc validates on
                // one thread, a fifth of a large read. Smaller batches are not worth a thread.
                let threads = if body.len() < PARALLEL_MIN_BYTES {
                    1
                } else {
                    resolve_threads(self.threads, body.len(), self.schema.fields().len())?
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

/// `batch` after validating every column in full on up to `threads` threads (largest first),
/// and the batch itself (column lengths and types against its schema and row count). This
/// covers what arrow-ipc's validating decode checks for memory safety; it is more lenient in
/// places that are not (a struct child longer than its parent is accepted, as arrow-data does).
fn validate_columns(batch: RecordBatch, threads: usize) -> Result<RecordBatch> {
    let schema = batch.schema();
    for_each_parallel(
        batch.columns(),
        threads,
        None,
        |column| column.get_buffer_memory_size(),
        || Ok(()),
        |_, i, column| {
            let name = schema.field(i).name();
            // On the helper threads too, a panic (arrow-data asserts some lengths) is an error.
            catch_panics(&format!("validating column {i} ('{name}')"), || {
                validate_full(&column.to_data()).map_err(|e| match Error::from(e) {
                    Error::Ipc(m) => Error::Ipc(format!("column {i} ('{name}'): {m}")),
                    other => other,
                })
            })
        },
    )?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    let (schema, columns, _) = batch.into_parts();
    Ok(RecordBatch::try_new_with_options(
        schema, columns, &options,
    )?)
}

fn schema_from_message(msg: &Message<'_>) -> Result<Schema> {
    let fb = msg.header_as_schema().ok_or_else(|| {
        Error::Ipc(format!(
            "an IPC stream must start with a schema message, found {:?}",
            msg.header_type()
        ))
    })?;
    schema_from_fb(fb)
}

pub(crate) fn schema_from_fb(fb: arrow_ipc::Schema<'_>) -> Result<Schema> {
    if fb.fields().is_none() {
        return Err(Error::Ipc("schema without a field list".into()));
    }
    if fb.endianness() != arrow_ipc::Endianness::Little {
        return Err(Error::Ipc("big-endian IPC data is not supported".into()));
    }
    let schema = catch_panics("reading the schema", || {
        Ok(arrow_ipc::convert::fb_to_schema(fb))
    })?;
    validate_schema(&schema)?;
    Ok(schema)
}

/// Refuses types that arrow-ipc accepts but no Arrow implementation can use (found by fuzzing:
/// a decimal of precision 0).
fn validate_schema(schema: &Schema) -> Result<()> {
    fn check(dt: &DataType) -> Result<()> {
        let (precision, max) = match dt {
            DataType::Decimal32(p, _) => (*p, DECIMAL32_MAX_PRECISION),
            DataType::Decimal64(p, _) => (*p, DECIMAL64_MAX_PRECISION),
            DataType::Decimal128(p, _) => (*p, DECIMAL128_MAX_PRECISION),
            DataType::Decimal256(p, _) => (*p, DECIMAL256_MAX_PRECISION),
            DataType::Dictionary(k, v) => return check(k).and(check(v)),
            _ => {
                for child in children(dt) {
                    check(child.data_type())?;
                }
                return Ok(());
            }
        };
        if precision == 0 || precision > max {
            return Err(Error::Ipc(format!(
                "invalid type {dt}: decimal precision must be from 1 to {max}"
            )));
        }
        Ok(())
    }
    schema
        .fields()
        .iter()
        .try_for_each(|f| check(f.data_type()))
}

/// Reads an IPC stream one batch at a time.
pub struct StreamReader<S> {
    source: S,
    decoder: Decoder,
    batches_read: usize,
    dictionaries_read: usize,
    /// The kind of message being read, for error messages.
    reading_dictionary: bool,
    done: bool,
}

impl<S: Source> StreamReader<S> {
    /// Reads the schema message.
    pub fn try_new(
        mut source: S,
        limits: ReadLimits,
        pool: &ContextPool,
        threads: Option<usize>,
    ) -> Result<Self> {
        let meta = read_message_meta(&mut source, &limits)?
            .ok_or_else(|| Error::Ipc("empty input: an IPC stream starts with a schema".into()))?;
        let msg = message::parse(&meta)?;
        let schema = schema_from_message(&msg)?;
        read_body(&mut source, &msg, &limits)?;
        Ok(StreamReader {
            source,
            decoder: Decoder::new(schema, limits, pool, threads),
            batches_read: 0,
            dictionaries_read: 0,
            reading_dictionary: false,
            done: false,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.decoder.schema.clone()
    }

    /// The next batch, None at the end of the stream.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        let result = self.read_next();
        if !matches!(result, Ok(Some(_))) {
            // End of stream or an error: the reader is finished, its context goes back.
            self.done = true;
            self.decoder.release();
        }
        result.map_err(|e| self.locate(e))
    }

    fn read_next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let Some(meta) = read_message_meta(&mut self.source, &self.decoder.limits)? else {
                return Ok(None);
            };
            let msg = message::parse(&meta)?;
            if msg.header_type() == MessageHeader::Schema {
                return Err(Error::Ipc(
                    "a second schema message inside the stream".into(),
                ));
            }
            self.reading_dictionary = msg.header_type() == MessageHeader::DictionaryBatch;
            let body = read_body(&mut self.source, &msg, &self.decoder.limits)?;
            match self.decoder.decode(&msg, body)? {
                Some(batch) => {
                    self.batches_read += 1;
                    return Ok(Some(batch));
                }
                None => self.dictionaries_read += 1,
            }
        }
    }

    fn locate(&self, e: Error) -> Error {
        let at = if self.reading_dictionary {
            format!("dictionary batch {}", self.dictionaries_read)
        } else {
            format!("record batch {}", self.batches_read)
        };
        match e {
            Error::Ipc(m) => Error::Ipc(format!("{at}: {m}")),
            Error::Corrupt(m) => Error::Corrupt(format!("{at}: {m}")),
            Error::Limit(m) => Error::Limit(format!("{at}: {m}")),
            other => other,
        }
    }

    /// Gives the decompression context back; later reads return None.
    pub fn close(&mut self) {
        self.done = true;
        self.decoder.release();
    }
}

/// Reads an IPC file: the footer at open, then any batch by index.
pub struct FileReader<S> {
    source: S,
    decoder: Decoder,
    blocks: Vec<Block>,
    dictionary_blocks: Vec<Block>,
    dictionaries_loaded: bool,
    metadata: HashMap<String, String>,
}

impl<S: RandomSource> FileReader<S> {
    /// Reads and checks the magic bytes and the footer.
    pub fn try_new(
        mut source: S,
        limits: ReadLimits,
        pool: &ContextPool,
        threads: Option<usize>,
    ) -> Result<Self> {
        let len = source.size()?;
        let tail_len = 10u64;
        if len < 8 + tail_len {
            return Err(Error::Ipc(format!(
                "not an Arrow IPC file: {len} bytes is too short for the magic bytes and footer"
            )));
        }
        let head = source.read_at(0, 6)?;
        let tail = source.read_at(len - tail_len, tail_len as usize)?;
        if head.as_slice() != ARROW_MAGIC || &tail.as_slice()[4..] != ARROW_MAGIC {
            return Err(Error::Ipc(
                "not an Arrow IPC file: the ARROW1 magic bytes are missing (an IPC stream? \
                 use open_stream)"
                    .into(),
            ));
        }
        let footer_len = i32::from_le_bytes(tail.as_slice()[..4].try_into().expect("4 bytes"));
        let footer_len = u64::try_from(footer_len)
            .ok()
            .filter(|n| *n <= len - tail_len - 8)
            .ok_or_else(|| {
                Error::Ipc(format!(
                    "corrupt IPC file: footer length {footer_len} does not fit the file ({len} bytes)"
                ))
            })?;
        let footer_bytes = source.read_at(len - tail_len - footer_len, footer_len as usize)?;
        let footer = arrow_ipc::root_as_footer(footer_bytes.as_slice())
            .map_err(|e| Error::Ipc(format!("corrupt IPC file footer: {e}")))?;
        let schema = schema_from_fb(
            footer
                .schema()
                .ok_or_else(|| Error::Ipc("IPC file footer without a schema".into()))?,
        )?;
        let blocks = footer
            .recordBatches()
            .map(|b| b.iter().copied().collect())
            .unwrap_or_default();
        let dictionary_blocks = footer
            .dictionaries()
            .map(|b| b.iter().copied().collect())
            .unwrap_or_default();
        let mut metadata = HashMap::new();
        if let Some(kvs) = footer.custom_metadata() {
            for kv in kvs {
                if let (Some(k), Some(v)) = (kv.key(), kv.value()) {
                    metadata.insert(k.to_string(), v.to_string());
                }
            }
        }
        Ok(FileReader {
            source,
            decoder: Decoder::new(schema, limits, pool, threads),
            blocks,
            dictionary_blocks,
            dictionaries_loaded: false,
            metadata,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.decoder.schema.clone()
    }

    pub fn num_batches(&self) -> usize {
        self.blocks.len()
    }

    /// The footer's key-value metadata.
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    fn read_block(&mut self, block: &Block) -> Result<Option<RecordBatch>> {
        let (offset, meta_len, body_len) =
            (block.offset(), block.metaDataLength(), block.bodyLength());
        let bad = || {
            Error::Ipc(format!(
                "corrupt IPC file: block (offset {offset}, header {meta_len}, body {body_len}) \
                 lies outside the file"
            ))
        };
        let offset = u64::try_from(offset).map_err(|_| bad())?;
        let meta_len = usize::try_from(meta_len).map_err(|_| bad())?;
        let body_len = usize::try_from(body_len).map_err(|_| bad())?;
        let file_len = self.source.size()?;
        let end = offset
            .checked_add(meta_len as u64)
            .and_then(|e| e.checked_add(body_len as u64))
            .ok_or_else(bad)?;
        if end > file_len {
            return Err(bad());
        }
        let framed = self.source.read_at(offset, meta_len)?;
        let meta = read_message_meta(&mut BytesSource::new(framed), &self.decoder.limits)?
            .ok_or_else(|| {
                Error::Ipc("corrupt IPC file: a block points at an end-of-stream marker".into())
            })?;
        let msg = message::parse(&meta)?;
        let declared = body_length(&msg, &self.decoder.limits)?;
        if declared > body_len {
            return Err(Error::Ipc(format!(
                "corrupt IPC file: a message declares a {declared}-byte body in a {body_len}-byte block"
            )));
        }
        let body = self.source.read_at(offset + meta_len as u64, declared)?;
        if body.len() != declared {
            return Err(truncated("a message body", declared, body.len()));
        }
        self.decoder.decode(&msg, body)
    }

    fn load_dictionaries(&mut self) -> Result<()> {
        if self.dictionaries_loaded {
            return Ok(());
        }
        for (i, block) in self.dictionary_blocks.clone().iter().enumerate() {
            if self
                .read_block(block)
                .map_err(|e| tag(e, &format!("dictionary {i}")))?
                .is_some()
            {
                return Err(Error::Ipc(format!(
                    "corrupt IPC file: dictionary block {i} holds a record batch"
                )));
            }
        }
        self.dictionaries_loaded = true;
        Ok(())
    }

    /// Batch `i` of the file.
    pub fn batch(&mut self, i: usize) -> Result<RecordBatch> {
        let block = *self.blocks.get(i).ok_or_else(|| {
            Error::Parameter(format!(
                "batch index {i} is out of range: the file has {} batches",
                self.blocks.len()
            ))
        })?;
        self.load_dictionaries()?;
        let batch = self
            .read_block(&block)
            .map_err(|e| tag(e, &format!("record batch {i}")))?;
        batch.ok_or_else(|| {
            Error::Ipc(format!(
                "corrupt IPC file: record batch block {i} holds a dictionary"
            ))
        })
    }

    /// Gives the decompression context back (it is leased again if the reader reads on).
    pub fn release(&mut self) {
        self.decoder.release();
    }
}

fn tag(e: Error, at: &str) -> Error {
    match e {
        Error::Ipc(m) => Error::Ipc(format!("{at}: {m}")),
        Error::Corrupt(m) => Error::Corrupt(format!("{at}: {m}")),
        Error::Limit(m) => Error::Limit(format!("{at}: {m}")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::context::CompressParams;
    use crate::ipc::{Compression, IpcFormat, IpcWriter, WriterOptions};

    fn batch(n: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from_iter_values(0..n)),
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 3 != 0).then(|| format!("v{}", i % 10))),
                )),
            ],
        )
        .unwrap()
    }

    fn write(format: IpcFormat, compression: Compression, batches: &[RecordBatch]) -> Vec<u8> {
        let pool = ContextPool::default();
        let mut out = Vec::new();
        let options = WriterOptions {
            format,
            compression,
            ..Default::default()
        };
        let mut w = IpcWriter::try_new(batches[0].schema(), options, &pool).unwrap();
        for b in batches {
            w.write(b, &mut out).unwrap();
        }
        w.finish(&mut out).unwrap();
        out
    }

    const CODECS: [Compression; 3] = [
        Compression::None,
        Compression::Zstd(CompressParams {
            level: 1,
            checksum: false,
            window_log: 0,
        }),
        Compression::Lz4,
    ];

    #[test]
    fn arrow_rs_reads_what_we_write() {
        // The last batch is over a MiB, so its body is compressed straight into the output.
        let batches = vec![batch(1000), batch(0), batch(7), batch(300_000)];
        for compression in CODECS {
            let stream = write(IpcFormat::Stream, compression, &batches);
            let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(&stream), None)
                .unwrap();
            let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
            assert_eq!(got, batches, "{compression:?}");
            let file = write(IpcFormat::File, compression, &batches);
            let r =
                arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(&file), None).unwrap();
            let got: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
            assert_eq!(got, batches, "{compression:?}");
        }
    }

    #[test]
    fn we_read_what_arrow_rs_writes() {
        let batches = vec![batch(500), batch(3)];
        for codec in [
            None,
            Some(arrow_ipc::CompressionType::ZSTD),
            Some(arrow_ipc::CompressionType::LZ4_FRAME),
        ] {
            let options = arrow_ipc::writer::IpcWriteOptions::default()
                .try_with_compression(codec)
                .unwrap();
            let mut bytes = Vec::new();
            let mut w = arrow_ipc::writer::StreamWriter::try_new_with_options(
                &mut bytes,
                &batches[0].schema(),
                options,
            )
            .unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.finish().unwrap();
            drop(w);
            let pool = ContextPool::default();
            let mut r = StreamReader::try_new(
                BytesSource::new(Buffer::from_vec(bytes)),
                ReadLimits::default(),
                &pool,
                None,
            )
            .unwrap();
            let mut got = Vec::new();
            while let Some(b) = r.next_batch().unwrap() {
                got.push(b);
            }
            assert_eq!(got, batches);
            assert_eq!(pool.stats().leased, 0);
        }
    }

    #[test]
    fn file_reader_reads_any_batch() {
        let batches = vec![batch(10), batch(20), batch(30)];
        let file = write(IpcFormat::File, CODECS[1], &batches);
        let pool = ContextPool::default();
        let mut r = FileReader::try_new(
            BytesSource::new(Buffer::from_vec(file)),
            ReadLimits::default(),
            &pool,
            None,
        )
        .unwrap();
        assert_eq!(r.num_batches(), 3);
        assert_eq!(r.batch(2).unwrap(), batches[2]);
        assert_eq!(r.batch(0).unwrap(), batches[0]);
        assert!(r.batch(3).is_err());
        r.release();
        assert_eq!(pool.stats().leased, 0);
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        let stream = write(IpcFormat::Stream, CODECS[1], &[batch(50), batch(5)]);
        let pool = ContextPool::default();
        for cut in 0..stream.len() {
            let source = BytesSource::new(Buffer::from(&stream[..cut]));
            let result = StreamReader::try_new(source, ReadLimits::default(), &pool, None)
                .and_then(|mut r| {
                    let mut n = 0;
                    while r.next_batch()?.is_some() {
                        n += 1;
                    }
                    Ok(n)
                });
            // A cut between messages is a shorter valid stream; anything else is an error.
            if let Ok(n) = result {
                assert!(n <= 2);
            }
        }
        assert_eq!(pool.stats().leased, 0);
    }

    #[test]
    fn byte_flips_never_panic() {
        let stream = write(IpcFormat::Stream, CODECS[1], &[batch(50)]);
        let pool = ContextPool::default();
        for i in 0..stream.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = stream.clone();
                bad[i] ^= flip;
                let run = std::panic::catch_unwind(|| {
                    let source = BytesSource::new(Buffer::from_vec(bad));
                    StreamReader::try_new(source, ReadLimits::default(), &pool, None).and_then(
                        |mut r| {
                            while r.next_batch()?.is_some() {}
                            Ok(())
                        },
                    )
                });
                assert!(run.is_ok(), "a flip of byte {i} by {flip:#x} panicked");
            }
        }
    }
}
