//! The file reader: the footer at open, then any batch by index, dictionaries first.
use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::Block;
use arrow_schema::SchemaRef;

use super::{
    body_length, header_rows, read_message_meta, truncated, BatchWithMetadata, Decoder, ReadLimits,
    ReadStats,
};
use crate::error::{Error, Result};
use crate::ipc::message::{self, read_key_values, KeyValues};
use crate::ipc::schema::schema_from_fb;
use crate::ipc::source::{BytesSource, RandomSource};
use crate::ipc::ARROW_MAGIC;
use crate::pool::ContextPool;

/// Reads an IPC file: the footer at open, then any batch by index.
pub struct FileReader<S> {
    source: S,
    decoder: Decoder,
    blocks: Vec<Block>,
    dictionary_blocks: Vec<Block>,
    dictionaries_loaded: bool,
    /// The footer's metadata in its order; None when the footer has none.
    metadata: Option<KeyValues>,
    /// Where the file ends in the source (its size, or less for a file inside a larger one).
    size: u64,
}

impl<S: RandomSource> FileReader<S> {
    /// Reads and checks the magic bytes and the footer.
    pub fn try_new(
        source: S,
        limits: ReadLimits,
        pool: &ContextPool,
        threads: Option<usize>,
    ) -> Result<Self> {
        Self::try_new_ending_at(source, None, limits, pool, threads)
    }

    /// As [`FileReader::try_new`], for a file that ends at `end` bytes into the source
    /// (pyarrow's `footer_offset`: a file embedded at the start of a larger one).
    pub fn try_new_ending_at(
        mut source: S,
        end: Option<u64>,
        limits: ReadLimits,
        pool: &ContextPool,
        threads: Option<usize>,
    ) -> Result<Self> {
        let available = source.size()?;
        let len = match end {
            Some(end) if end > available => {
                return Err(Error::Ipc(format!(
                    "footer_offset {end} lies beyond the end of the input ({available} bytes)"
                )))
            }
            Some(end) => end,
            None => available,
        };
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
        let metadata = footer.custom_metadata().map(read_key_values);
        Ok(FileReader {
            source,
            decoder: Decoder::new(schema, limits, pool, threads),
            blocks,
            dictionary_blocks,
            dictionaries_loaded: false,
            metadata,
            size: len,
        })
    }

    /// Reads only `columns` (top-level field indices, see [`crate::ipc::Projection`]) of each
    /// batch; the schema becomes theirs.
    pub fn project(&mut self, columns: Vec<usize>) -> Result<()> {
        self.decoder.project(columns)
    }

    /// The schema of the batches returned.
    pub fn schema(&self) -> SchemaRef {
        self.decoder.output_schema.clone()
    }

    pub fn stats(&self) -> ReadStats {
        self.decoder.stats
    }

    pub fn num_batches(&self) -> usize {
        self.blocks.len()
    }

    /// The footer's key-value metadata, in its order; None when it has none.
    pub fn metadata(&self) -> Option<&KeyValues> {
        self.metadata.as_ref()
    }

    /// The header of the message in `block`, checked against the file; returns it with the
    /// body length it declares.
    fn read_header(&mut self, block: &Block) -> Result<(Buffer, usize)> {
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
        let file_len = self.size;
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
        Ok((meta, declared))
    }

    fn read_block(&mut self, block: &Block) -> Result<Option<BatchWithMetadata>> {
        let (meta, declared) = self.read_header(block)?;
        let msg = message::parse(&meta)?;
        let body_at = block.offset() as u64 + block.metaDataLength() as u64;
        let body = self.source.read_at(body_at, declared)?;
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
                .map_err(|e| e.at(format_args!("dictionary {i}")))?
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

    /// The bytes of the record batches' bodies, as the footer gives them (compressed, where
    /// the file is).
    pub fn body_bytes(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| u64::try_from(b.bodyLength()).unwrap_or(0))
            .fold(0, u64::saturating_add)
    }

    /// Batch `i` of the file.
    pub fn batch(&mut self, i: usize) -> Result<RecordBatch> {
        Ok(self.batch_with_metadata(i)?.0)
    }

    /// The rows of every batch, from their headers alone: no body is read or decompressed.
    pub fn count_rows(&mut self) -> Result<u64> {
        let mut rows = 0u64;
        for (i, block) in self.blocks.clone().iter().enumerate() {
            let found = self.read_header(block).and_then(|(meta, _)| {
                let msg = message::parse(&meta)?;
                header_rows(&msg)?.ok_or_else(|| {
                    Error::Ipc("corrupt IPC file: a record batch block holds a dictionary".into())
                })
            });
            rows = rows.saturating_add(found.map_err(|e| e.at(format_args!("record batch {i}")))?);
        }
        Ok(rows)
    }

    /// Batch `i` of the file with its message's key-value metadata.
    pub fn batch_with_metadata(&mut self, i: usize) -> Result<BatchWithMetadata> {
        let block = *self.blocks.get(i).ok_or_else(|| {
            Error::Parameter(format!(
                "batch index {i} is out of range: the file has {} batches",
                self.blocks.len()
            ))
        })?;
        self.load_dictionaries()?;
        let batch = self
            .read_block(&block)
            .map_err(|e| e.at(format_args!("record batch {i}")))?;
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
