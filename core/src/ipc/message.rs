//! IPC message framing and the rebuilding of a record batch header around a new body.

use arrow_ipc::{
    BodyCompressionBuilder, BodyCompressionMethod, CompressionType, DictionaryBatchBuilder,
    FieldNode, KeyValue, KeyValueBuilder, Message, MessageBuilder, MessageHeader,
    RecordBatchBuilder,
};
use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, Vector, WIPOffset};

use super::{pad, padding};
use crate::error::{Error, Result};
use crate::output::Output;

const CONTINUATION: [u8; 4] = [0xff; 4];

/// Appends one framed message (continuation marker, length, metadata, padding, body) to `out`.
/// Returns the framed header length (what a file footer's Block calls metaDataLength).
pub fn frame(meta: &[u8], body: &[u8], out: &mut dyn Output) -> Result<usize> {
    let padded = meta.len() + padding(meta.len());
    out.grow_for(8 + padded + body.len())?;
    out.extend_from_slice(&CONTINUATION)?;
    out.extend_from_slice(&(padded as i32).to_le_bytes())?;
    out.extend_from_slice(meta)?;
    pad(out)?;
    out.extend_from_slice(body)?;
    Ok(8 + padded)
}

/// The framed length of a header whose metadata is `meta_len` bytes.
pub fn header_len(meta_len: usize) -> usize {
    8 + meta_len + padding(meta_len)
}

/// Writes a header into exactly `slot` (continuation, length, metadata, zero padding): the
/// metadata block takes the whole slot after the 8-byte prefix. `slot` must be at least
/// `header_len(meta.len())` bytes and a multiple of 8.
pub fn fill_header(meta: &[u8], slot: &mut [u8]) {
    debug_assert!(slot.len() >= header_len(meta.len()) && slot.len() % 8 == 0);
    let block = (slot.len() - 8) as i32;
    slot[..4].copy_from_slice(&CONTINUATION);
    slot[4..8].copy_from_slice(&block.to_le_bytes());
    slot[8..8 + meta.len()].copy_from_slice(meta);
    slot[8 + meta.len()..].fill(0);
}

/// The end-of-stream marker.
pub fn end_of_stream(out: &mut dyn Output) -> Result<()> {
    out.extend_from_slice(&CONTINUATION)?;
    out.extend_from_slice(&0i32.to_le_bytes())
}

/// Parses a message header, verifying the flatbuffer first (it may come from anywhere).
pub fn parse(meta: &[u8]) -> Result<Message<'_>> {
    arrow_ipc::root_as_message(meta)
        .map_err(|e| Error::Ipc(format!("corrupt IPC message header: {e}")))
}

/// The record batch header of a RecordBatch or DictionaryBatch message, with the dictionary's
/// id and delta flag for the latter.
pub fn batch_header<'a>(
    msg: &Message<'a>,
) -> Result<(arrow_ipc::RecordBatch<'a>, Option<(i64, bool)>)> {
    match msg.header_type() {
        MessageHeader::RecordBatch => msg
            .header_as_record_batch()
            .map(|rb| (rb, None))
            .ok_or_else(|| Error::Ipc("record batch message without its header".into())),
        MessageHeader::DictionaryBatch => {
            let d = msg
                .header_as_dictionary_batch()
                .ok_or_else(|| Error::Ipc("dictionary message without its header".into()))?;
            let rb = d
                .data()
                .ok_or_else(|| Error::Ipc("dictionary message without data".into()))?;
            Ok((rb, Some((d.id(), d.isDelta()))))
        }
        other => Err(Error::Ipc(format!(
            "expected a record batch or dictionary message, found {other:?}"
        ))),
    }
}

/// The metadata key under which Arrow 0.17 named the codec of a compressed message body, before
/// the format had `BodyCompression`. pyarrow still reads such bodies as compressed; a reader
/// that ignored the key would return the compressed bytes as values.
pub const LEGACY_CODEC_KEY: &str = "ARROW:experimental_compression";

/// The codec a RecordBatch or DictionaryBatch message's body is compressed with, or None:
/// its `BodyCompression`, else the legacy key in the message's custom metadata (where Arrow
/// 0.17 wrote it, and pyarrow reads it), else the legacy key in the schema's metadata
/// (`schema_codec`), which no reader should take to mean "uncompressed" either.
pub fn body_codec(
    msg: &Message<'_>,
    rb: &arrow_ipc::RecordBatch<'_>,
    schema_codec: Option<&str>,
) -> Result<Option<CompressionType>> {
    if let Some(c) = rb.compression() {
        return Ok(Some(c.codec()));
    }
    let named = msg
        .custom_metadata()
        .into_iter()
        .flatten()
        .find(|kv| kv.key() == Some(LEGACY_CODEC_KEY))
        .and_then(|kv| kv.value())
        .or(schema_codec);
    named.map(legacy_codec).transpose()
}

/// The codec a legacy key's value names, as pyarrow reads it (any case).
fn legacy_codec(name: &str) -> Result<CompressionType> {
    match name.to_ascii_lowercase().as_str() {
        "zstd" => Ok(CompressionType::ZSTD),
        "lz4" | "lz4_frame" => Ok(CompressionType::LZ4_FRAME),
        _ => Err(Error::Ipc(format!(
            "the message body is compressed with {name:?}, as its {LEGACY_CODEC_KEY} metadata \
             says (the compression of Arrow 0.17), and only zstd and lz4 bodies can be read"
        ))),
    }
}

/// The offset and length of every buffer in a record batch header.
pub fn buffer_spans(rb: &arrow_ipc::RecordBatch<'_>) -> Result<Vec<(i64, i64)>> {
    let buffers = rb
        .buffers()
        .ok_or_else(|| Error::Ipc("record batch header without a buffer list".into()))?;
    Ok(buffers.iter().map(|b| (b.offset(), b.length())).collect())
}

/// Key-value metadata in the order it was given (a message's or a file footer's).
pub type KeyValues = Vec<(String, String)>;

/// `pairs` as a flatbuffer KeyValue vector, in their order.
pub fn key_values<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    pairs: &[(String, String)],
) -> WIPOffset<Vector<'a, ForwardsUOffset<KeyValue<'a>>>> {
    let entries: Vec<_> = pairs
        .iter()
        .map(|(k, v)| {
            let (k, v) = (fbb.create_string(k), fbb.create_string(v));
            let mut kv = KeyValueBuilder::new(fbb);
            kv.add_key(k);
            kv.add_value(v);
            kv.finish()
        })
        .collect();
    fbb.create_vector(&entries)
}

/// Key-value metadata read from a flatbuffer, in its order; entries without a key or a value
/// are skipped, as arrow-ipc does.
pub fn read_key_values<'a>(kvs: Vector<'a, ForwardsUOffset<KeyValue<'a>>>) -> KeyValues {
    kvs.iter()
        .filter_map(|kv| Some((kv.key()?.to_string(), kv.value()?.to_string())))
        .collect()
}

/// A new message like `msg` (a RecordBatch or DictionaryBatch) whose buffers are `spans` in a
/// body of `body_len` bytes, compressed with `codec` or not at all, with `custom_metadata`
/// (for a record batch written with it).
pub fn rebuild(
    msg: &Message<'_>,
    spans: &[(usize, usize)],
    body_len: usize,
    codec: Option<CompressionType>,
    custom_metadata: &[(String, String)],
) -> Result<Vec<u8>> {
    let (rb, dictionary) = batch_header(msg)?;
    let mut fbb = FlatBufferBuilder::with_capacity(256 + spans.len() * 16);
    let nodes: Vec<FieldNode> = rb
        .nodes()
        .map(|n| n.iter().copied().collect())
        .unwrap_or_default();
    let nodes = fbb.create_vector(&nodes);
    let buffers: Vec<arrow_ipc::Buffer> = spans
        .iter()
        .map(|&(o, l)| arrow_ipc::Buffer::new(o as i64, l as i64))
        .collect();
    let buffers = fbb.create_vector(&buffers);
    let variadic = rb
        .variadicBufferCounts()
        .map(|v| v.iter().collect::<Vec<i64>>())
        .map(|v| fbb.create_vector(&v));
    let compression = codec.map(|codec| {
        let mut b = BodyCompressionBuilder::new(&mut fbb);
        b.add_codec(codec);
        b.add_method(BodyCompressionMethod::BUFFER);
        b.finish()
    });
    let batch = {
        let mut b = RecordBatchBuilder::new(&mut fbb);
        b.add_length(rb.length());
        b.add_nodes(nodes);
        b.add_buffers(buffers);
        if let Some(c) = compression {
            b.add_compression(c);
        }
        if let Some(v) = variadic {
            b.add_variadicBufferCounts(v);
        }
        b.finish()
    };
    let (header_type, header) = match dictionary {
        None => (MessageHeader::RecordBatch, batch.as_union_value()),
        Some((id, is_delta)) => {
            let mut d = DictionaryBatchBuilder::new(&mut fbb);
            d.add_id(id);
            d.add_data(batch);
            d.add_isDelta(is_delta);
            (MessageHeader::DictionaryBatch, d.finish().as_union_value())
        }
    };
    let custom_metadata =
        (!custom_metadata.is_empty()).then(|| key_values(&mut fbb, custom_metadata));
    let mut m = MessageBuilder::new(&mut fbb);
    m.add_version(msg.version());
    if let Some(kvs) = custom_metadata {
        m.add_custom_metadata(kvs);
    }
    m.add_header_type(header_type);
    m.add_header(header);
    m.add_bodyLength(body_len as i64);
    let root = m.finish();
    fbb.finish(root, None);
    Ok(fbb.finished_data().to_vec())
}
