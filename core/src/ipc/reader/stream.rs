//! The stream reader: a schema message, then batches and dictionaries until the end marker.

use arrow_array::RecordBatch;
use arrow_ipc::MessageHeader;
use arrow_schema::SchemaRef;

use super::{
    header_rows, read_body, read_message_meta, BatchWithMetadata, Decoder, ReadLimits, ReadStats,
};
use crate::error::{Error, Result};
use crate::ipc::message;
use crate::ipc::schema::schema_from_message;
use crate::ipc::source::Source;
use crate::pool::ContextPool;

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

    /// The next batch, None at the end of the stream.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        Ok(self.next_batch_with_metadata()?.map(|(batch, _)| batch))
    }

    /// The next batch with its message's key-value metadata.
    pub fn next_batch_with_metadata(&mut self) -> Result<Option<BatchWithMetadata>> {
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

    /// Counts the rows of the remaining batches from their headers, reading past the bodies
    /// without decompressing them. The stream is consumed.
    pub fn count_rows(&mut self) -> Result<u64> {
        let mut rows = 0u64;
        let result = (|| loop {
            if self.done {
                return Ok(rows);
            }
            let Some(meta) = read_message_meta(&mut self.source, &self.decoder.limits)? else {
                return Ok(rows);
            };
            let msg = message::parse(&meta)?;
            if msg.header_type() == MessageHeader::Schema {
                return Err(Error::Ipc(
                    "a second schema message inside the stream".into(),
                ));
            }
            self.reading_dictionary = msg.header_type() == MessageHeader::DictionaryBatch;
            read_body(&mut self.source, &msg, &self.decoder.limits)?;
            if let Some(n) = header_rows(&msg)? {
                rows = rows.saturating_add(n);
                self.batches_read += 1;
            } else {
                self.dictionaries_read += 1;
            }
        })();
        self.close();
        result.map_err(|e| self.locate(e))
    }

    fn read_next(&mut self) -> Result<Option<BatchWithMetadata>> {
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
                Some(found) => {
                    self.batches_read += 1;
                    return Ok(Some(found));
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
        e.at(at)
    }

    /// Gives the decompression context back; later reads return None.
    pub fn close(&mut self) {
        self.done = true;
        self.decoder.release();
    }
}
