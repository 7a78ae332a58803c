//! What an IPC stream or file holds, message by message, without decoding any data: batches,
//! rows, codecs, and per top-level column the bytes on the wire and uncompressed.

use std::collections::{BTreeSet, HashMap};

use arrow_ipc::{CompressionType, MessageHeader};
use arrow_schema::{DataType, Field, SchemaRef, UnionMode};

use super::message;
use super::reader::{read_body, read_message_meta, ReadLimits};
use super::schema::schema_from_fb;
use super::source::Source;
use super::{IpcFormat, ARROW_MAGIC};
use crate::error::{Error, Result};

/// Bytes of one top-level column, its dictionaries included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnBytes {
    pub compressed: u64,
    pub uncompressed: u64,
}

/// The summary of one IPC stream or file.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub format: IpcFormat,
    pub schema: SchemaRef,
    pub num_batches: u64,
    pub num_rows: u64,
    pub num_dictionary_batches: u64,
    /// "zstd", "lz4", "none": every body compression seen.
    pub codecs: BTreeSet<&'static str>,
    /// All message bodies, as stored.
    pub body_bytes: u64,
    pub columns: Vec<ColumnBytes>,
}

/// Reads every message of a stream, or of a file (whose messages follow its 8-byte magic).
pub fn inspect(source: &mut dyn Source, limits: &ReadLimits) -> Result<Inspection> {
    let head = source.read(8)?;
    let format = if head.len() >= 6 && &head.as_slice()[..6] == ARROW_MAGIC {
        IpcFormat::File
    } else {
        IpcFormat::Stream
    };
    // For a stream, the 8 bytes just read are the first message's framing: read them again.
    let mut source = Replay {
        first: Some(head).filter(|_| format == IpcFormat::Stream),
        rest: source,
    };
    let meta = read_message_meta(&mut source, limits)?
        .ok_or_else(|| Error::Ipc("not an Arrow IPC stream or file: no schema message".into()))?;
    let msg = message::parse(&meta)?;
    let fb_schema = msg.header_as_schema().ok_or_else(|| {
        Error::Ipc(format!(
            "not an Arrow IPC stream or file: it starts with a {:?} message, not a schema",
            msg.header_type()
        ))
    })?;
    let schema = schema_from_fb(fb_schema)?;
    let schema_codec = schema.metadata().get(message::LEGACY_CODEC_KEY).cloned();
    let dictionary_columns = dictionary_owners(&fb_schema)?;
    read_body(&mut source, &msg, limits)?;
    let mut result = Inspection {
        format,
        schema: SchemaRef::new(schema),
        num_batches: 0,
        num_rows: 0,
        num_dictionary_batches: 0,
        codecs: BTreeSet::new(),
        body_bytes: 0,
        columns: Vec::new(),
    };
    result.columns = vec![ColumnBytes::default(); result.schema.fields().len()];
    while let Some(meta) = read_message_meta(&mut source, limits)? {
        let msg = message::parse(&meta)?;
        let body = read_body(&mut source, &msg, limits)?;
        result.body_bytes += body.len() as u64;
        let (rb, dictionary) = match msg.header_type() {
            MessageHeader::RecordBatch | MessageHeader::DictionaryBatch => {
                message::batch_header(&msg)?
            }
            MessageHeader::Schema => return Err(Error::Ipc("a second schema message".into())),
            other => return Err(Error::Ipc(format!("unexpected IPC message type {other:?}"))),
        };
        let codec = message::body_codec(&msg, &rb, schema_codec.as_deref())?;
        result.codecs.insert(match codec {
            None => "none",
            Some(CompressionType::ZSTD) => "zstd",
            Some(CompressionType::LZ4_FRAME) => "lz4",
            Some(_) => "unknown",
        });
        let sizes = message::buffer_spans(&rb)?
            .iter()
            .map(|&(offset, length)| buffer_sizes(body.as_slice(), offset, length, codec.is_some()))
            .collect::<Result<Vec<_>>>()?;
        match dictionary {
            Some((id, _)) => {
                result.num_dictionary_batches += 1;
                let column = *dictionary_columns.get(&id).ok_or_else(|| {
                    Error::Ipc(format!("a dictionary batch for unknown dictionary id {id}"))
                })?;
                add(&mut result.columns[column], &sizes);
            }
            None => {
                result.num_batches += 1;
                result.num_rows += u64::try_from(rb.length()).unwrap_or(0);
                let mut variadic = rb.variadicBufferCounts().into_iter().flatten();
                let mut at = 0;
                for (i, field) in result.schema.fields().iter().enumerate() {
                    let n = buffer_count(field.data_type(), &mut variadic);
                    let mine = sizes.get(at..at + n).ok_or_else(|| {
                        Error::Ipc(format!(
                            "record batch {} has {} buffers, fewer than its schema needs",
                            result.num_batches - 1,
                            sizes.len()
                        ))
                    })?;
                    add(&mut result.columns[i], mine);
                    at += n;
                }
            }
        }
    }
    Ok(result)
}

fn add(column: &mut ColumnBytes, sizes: &[(u64, u64)]) {
    for (compressed, uncompressed) in sizes {
        column.compressed += compressed;
        column.uncompressed += uncompressed;
    }
}

/// (stored, uncompressed) bytes of one buffer.
fn buffer_sizes(body: &[u8], offset: i64, length: i64, compressed: bool) -> Result<(u64, u64)> {
    let stored = u64::try_from(length)
        .map_err(|_| Error::Ipc(format!("negative buffer length {length}")))?;
    if !compressed || stored == 0 {
        return Ok((stored, stored));
    }
    let start = usize::try_from(offset)
        .map_err(|_| Error::Ipc(format!("negative buffer offset {offset}")))?;
    let prefix = body
        .get(start..start + 8)
        .ok_or_else(|| Error::Ipc(format!("buffer at {offset} lies outside its message body")))?;
    let declared = i64::from_le_bytes(prefix.try_into().expect("8 bytes"));
    Ok((
        stored,
        if declared == -1 {
            stored - 8
        } else {
            declared.max(0) as u64
        },
    ))
}

/// Buffers one column of type `dt` has in a record batch message (metadata V5).
fn buffer_count(dt: &DataType, variadic: &mut dyn Iterator<Item = i64>) -> usize {
    fn children<'a>(
        fields: impl Iterator<Item = &'a Field>,
        variadic: &mut dyn Iterator<Item = i64>,
    ) -> usize {
        fields.map(|f| buffer_count(f.data_type(), variadic)).sum()
    }
    use DataType::*;
    match dt {
        Null => 0,
        Binary | LargeBinary | Utf8 | LargeUtf8 => 3,
        BinaryView | Utf8View => 2 + variadic.next().map_or(0, |n| n.max(0) as usize),
        List(f) | LargeList(f) | Map(f, _) => 2 + buffer_count(f.data_type(), variadic),
        ListView(f) | LargeListView(f) => 3 + buffer_count(f.data_type(), variadic),
        FixedSizeList(f, _) => 1 + buffer_count(f.data_type(), variadic),
        Struct(fields) => 1 + children(fields.iter().map(|f| f.as_ref()), variadic),
        Union(fields, mode) => {
            let own = if *mode == UnionMode::Dense { 2 } else { 1 };
            own + children(fields.iter().map(|(_, f)| f.as_ref()), variadic)
        }
        Dictionary(key, _) => buffer_count(key, variadic),
        RunEndEncoded(run_ends, values) => {
            buffer_count(run_ends.data_type(), variadic)
                + buffer_count(values.data_type(), variadic)
        }
        _ => 2,
    }
}

/// Which top-level column each dictionary id belongs to.
fn dictionary_owners(schema: &arrow_ipc::Schema<'_>) -> Result<HashMap<i64, usize>> {
    fn walk(field: arrow_ipc::Field<'_>, column: usize, out: &mut HashMap<i64, usize>) {
        if let Some(d) = field.dictionary() {
            out.insert(d.id(), column);
        }
        for child in field.children().into_iter().flatten() {
            walk(child, column, out);
        }
    }
    let mut out = HashMap::new();
    let fields = schema
        .fields()
        .ok_or_else(|| Error::Ipc("schema without fields".into()))?;
    for (i, field) in fields.iter().enumerate() {
        walk(field, i, &mut out);
    }
    Ok(out)
}

/// Serves the bytes already read before the rest of the source.
struct Replay<'a> {
    first: Option<arrow_buffer::Buffer>,
    rest: &'a mut dyn Source,
}

impl Source for Replay<'_> {
    fn read(&mut self, n: usize) -> Result<arrow_buffer::Buffer> {
        match self.first.take() {
            None => self.rest.read(n),
            Some(first) if first.len() >= n => {
                if first.len() > n {
                    self.first = Some(first.slice(n));
                }
                Ok(first.slice_with_length(0, n))
            }
            Some(first) => {
                let more = self.rest.read(n - first.len())?;
                let mut v = Vec::with_capacity(first.len() + more.len());
                v.extend_from_slice(first.as_slice());
                v.extend_from_slice(more.as_slice());
                Ok(arrow_buffer::Buffer::from_vec(v))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, Int64Array, RecordBatch, StringArray, StringViewArray};
    use arrow_buffer::Buffer;

    use super::*;
    use crate::context::CompressParams;
    use crate::ipc::source::BytesSource;
    use crate::ipc::{Compression, IpcWriter, WriterOptions};
    use crate::pool::ContextPool;

    fn batch(n: i64) -> RecordBatch {
        let dict: DictionaryArray<Int32Type> =
            (0..n).map(|i| ["a", "bb", "ccc"][i as usize % 3]).collect();
        RecordBatch::try_from_iter([
            ("i", Arc::new(Int64Array::from_iter_values(0..n)) as _),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("row {i}")),
                )) as _,
            ),
            ("d", Arc::new(dict) as _),
            (
                "v",
                Arc::new(StringViewArray::from_iter_values(
                    (0..n).map(|i| format!("a longer view value {i}")),
                )) as _,
            ),
        ])
        .unwrap()
    }

    fn written(format: IpcFormat, compression: Compression) -> Vec<u8> {
        let pool = ContextPool::default();
        let b = batch(1000);
        let options = WriterOptions {
            format,
            compression,
            ..Default::default()
        };
        let mut w = IpcWriter::try_new(b.schema(), options, &pool).unwrap();
        let mut out = Vec::new();
        w.write(&b, &mut out).unwrap();
        w.write(&batch(10), &mut out).unwrap();
        w.finish(&mut out).unwrap();
        out
    }

    fn run(bytes: Vec<u8>) -> Inspection {
        inspect(
            &mut BytesSource::new(Buffer::from_vec(bytes)),
            &ReadLimits::default(),
        )
        .unwrap()
    }

    #[test]
    fn counts_batches_rows_and_bytes_per_column() {
        let plain = run(written(IpcFormat::Stream, Compression::None));
        for format in [IpcFormat::Stream, IpcFormat::File] {
            let zstd = run(written(format, Compression::Zstd(CompressParams::level(1))));
            assert_eq!(zstd.format, format);
            assert_eq!((zstd.num_batches, zstd.num_rows), (2, 1010));
            assert!(zstd.num_dictionary_batches >= 1);
            assert_eq!(zstd.codecs.iter().copied().collect::<Vec<_>>(), ["zstd"]);
            assert_eq!(zstd.columns.len(), 4);
            for (z, p) in zstd.columns.iter().zip(&plain.columns) {
                // Uncompressed sizes are the uncompressed writer's stored sizes.
                assert_eq!(z.uncompressed, p.compressed);
                assert!(z.compressed < z.uncompressed, "{z:?}");
            }
        }
        assert_eq!(plain.codecs.iter().copied().collect::<Vec<_>>(), ["none"]);
    }

    #[test]
    fn refuses_what_is_not_ipc() {
        for junk in [
            Vec::new(),
            b"hello world, not arrow".to_vec(),
            vec![0xff; 64],
        ] {
            assert!(inspect(
                &mut BytesSource::new(Buffer::from_vec(junk)),
                &ReadLimits::default()
            )
            .is_err());
        }
    }
}
