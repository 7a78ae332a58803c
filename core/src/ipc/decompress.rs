//! The decompression stage of the readers: each buffer of a compressed message body is
//! decompressed into a new, 64-byte aligned body, with every declared length checked against
//! the input and the caller's limits before anything is allocated.

use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use arrow_ipc::CompressionType;

use super::compress::UNCOMPRESSED;
use super::lz4::lz4_decompress_exact;
use crate::context::{frame_content_size, ContentSize, Decompressor};
use crate::error::{Error, Result};
use crate::memory::spare::{RawBytes, Returning, Spares};
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::pool::{ContextPool, Lease};

/// A rebuilt message body and each buffer's (offset, length) in it.
pub type NewBody = (Buffer, Vec<(usize, usize)>);

/// Where decompressed buffers start: Arrow's recommended alignment, more than any type needs
/// (decimal128 needs 16), so arrow-rs never copies a buffer to realign it.
const BODY_ALIGNMENT: usize = 64;

fn body_padding(len: usize) -> usize {
    (BODY_ALIGNMENT - len % BODY_ALIGNMENT) % BODY_ALIGNMENT
}

/// Limits on what a reader allocates for data it has not seen yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// The largest uncompressed size one buffer may declare.
    pub max_buffer_size: usize,
    /// The most one message (record batch or dictionary) may take once decompressed.
    pub max_batch_size: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_buffer_size: i32::MAX as usize,
            max_batch_size: 4 << 30,
        }
    }
}

enum Stored<'a> {
    Raw(&'a [u8]),
    Zstd(&'a [u8]),
    Lz4(&'a [u8]),
}

struct Planned<'a> {
    index: usize,
    stored: Stored<'a>,
    /// Where this buffer goes in the new body: `len` bytes at `dst`, uninitialized until
    /// written, and written by one thread only.
    dst: *mut u8,
    len: usize,
}

// SAFETY: each Planned is handed to exactly one thread, and the regions of different
// Planned values do not overlap (they are disjoint spans of one allocation).
unsafe impl Send for Planned<'_> {}
unsafe impl Sync for Planned<'_> {}

/// Decompresses the buffers `spans` of a compressed `body` into a new body whose buffers start
/// on 64-byte boundaries.
/// Returns it and each buffer's (offset, length) in it. Sizes are checked against `limits`,
/// and zstd frames' own content sizes against their prefixes, before allocating.
pub fn decompress_buffers(
    body: &[u8],
    spans: &[(i64, i64)],
    codec: CompressionType,
    limits: &ReadLimits,
    primary: &mut Option<Lease<Decompressor>>,
    pool: &ContextPool,
    threads: Option<usize>,
) -> Result<NewBody> {
    if codec != CompressionType::ZSTD && codec != CompressionType::LZ4_FRAME {
        return Err(Error::Ipc(format!(
            "unsupported body compression codec {codec:?}"
        )));
    }
    let mut sources = Vec::with_capacity(spans.len());
    let mut out_spans = Vec::with_capacity(spans.len());
    let mut total = 0usize;
    for (i, &(offset, length)) in spans.iter().enumerate() {
        let src = span(body, i, offset, length)?;
        let (stored, size) = if src.is_empty() {
            (Stored::Raw(src), 0)
        } else {
            let Some((prefix, data)) = src.split_first_chunk::<8>() else {
                return Err(Error::Ipc(format!(
                    "buffer {i} is {} bytes, too short for its 8-byte length prefix",
                    src.len()
                )));
            };
            match i64::from_le_bytes(*prefix) {
                UNCOMPRESSED => (Stored::Raw(data), data.len()),
                n if n < 0 => {
                    return Err(Error::Ipc(format!(
                        "buffer {i} declares a negative uncompressed length ({n})"
                    )))
                }
                n => {
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    if n > limits.max_buffer_size {
                        return Err(Error::Limit(format!(
                            "buffer {i} declares {n} bytes uncompressed, more than \
                             max_buffer_size ({} bytes)",
                            limits.max_buffer_size
                        )));
                    }
                    if codec == CompressionType::ZSTD {
                        if let ContentSize::Known(k) = frame_content_size(data)
                            .map_err(|e| e.at(format_args!("buffer {i}")))?
                        {
                            if k != n as u64 {
                                return Err(Error::Corrupt(format!(
                                    "buffer {i}: the zstd frame holds {k} bytes but the buffer's \
                                     prefix declares {n}"
                                )));
                            }
                        }
                        (Stored::Zstd(data), n)
                    } else {
                        (Stored::Lz4(data), n)
                    }
                }
            }
        };
        out_spans.push((total, size));
        total = total
            .checked_add(size + body_padding(size))
            .filter(|t| *t <= limits.max_batch_size)
            .ok_or_else(|| {
                Error::Limit(format!(
                    "the message's buffers declare more than max_batch_size ({} bytes) \
                     uncompressed",
                    limits.max_batch_size
                ))
            })?;
        sources.push(stored);
    }
    // The allocation is byte-aligned: over-allocate and start at its first 64-byte boundary.
    let padded = total.checked_add(BODY_ALIGNMENT - 1).ok_or_else(|| {
        Error::Limit("the message's buffers declare more than fits in memory".into())
    })?;
    let out = UninitBody::alloc(padded, pool.spares())?;
    let start = body_padding(out.ptr() as usize);
    let mut planned = Vec::with_capacity(sources.len());
    // Every byte no buffer covers (the alignment prefix, the padding after each buffer, the
    // tail) is zeroed here; the buffers themselves are written whole by decompression.
    let mut at = 0;
    for (index, (stored, &(offset, size))) in sources.into_iter().zip(&out_spans).enumerate() {
        // SAFETY: start + offset + size <= start + total <= padded: inside the allocation.
        unsafe {
            out.zero(at, start + offset);
            planned.push(Planned {
                index,
                stored,
                dst: out.ptr().add(start + offset),
                len: size,
            });
        }
        at = start + offset + size;
    }
    // SAFETY: at <= padded.
    unsafe { out.zero(at, padded) };
    let compressed_bytes: usize = planned
        .iter()
        .map(|p| match p.stored {
            Stored::Zstd(_) | Stored::Lz4(_) => p.len,
            Stored::Raw(_) => 0,
        })
        .sum();
    let nonempty = planned
        .iter()
        .filter(|p| !matches!(p.stored, Stored::Raw(_)))
        .count();
    let threads = resolve_threads(threads, compressed_bytes, nonempty)?;
    let run = |d: &mut Option<Lease<Decompressor>>, p: &Planned<'_>| -> Result<()> {
        let tag = |e: Error| e.at(format_args!("buffer {}", p.index));
        // SAFETY (all three): `p.dst` is `p.len` bytes of the body that only this call
        // writes (see Planned); on success every one of them is written.
        match p.stored {
            Stored::Raw(src) => {
                debug_assert_eq!(src.len(), p.len);
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p.dst, p.len) }
            }
            Stored::Zstd(src) => {
                if d.is_none() {
                    *d = Some(pool.decompressor(Default::default())?);
                }
                let d = d.as_mut().expect("just set");
                unsafe { d.decompress_exact_raw(src, p.dst, p.len) }.map_err(tag)?
            }
            Stored::Lz4(src) => {
                // lz4_flex writes into initialized memory; lz4 bodies are rare.
                let dst = unsafe {
                    std::ptr::write_bytes(p.dst, 0, p.len);
                    std::slice::from_raw_parts_mut(p.dst, p.len)
                };
                lz4_decompress_exact(src, dst).map_err(tag)?
            }
        }
        Ok(())
    };
    if threads <= 1 {
        for p in &planned {
            run(primary, p)?;
        }
    } else {
        // The calling thread decompresses too, with the reader's own context.
        for_each_parallel(
            &planned,
            threads,
            Some(primary),
            |p| p.len,
            || Ok(None),
            |d, _, p| run(d, p),
        )?;
    }
    drop(planned);
    // SAFETY: every byte is written: the gaps above, each buffer by a successful `run`.
    let out = unsafe { out.assume_init(pool.spares()) };
    Ok((out.slice_with_length(start, total), out_spans))
}

/// A new body's allocation before every byte of it is written. Not zeroed: decompression
/// writes each buffer whole, and only the gaps need zeros (a zeroed allocation costs a pass
/// over the whole body whenever the memory is reused). Freed unseen if decompression fails.
struct UninitBody {
    mem: RawBytes,
    /// The bytes asked for; a reused block may be larger, and its tail is never exposed.
    len: usize,
}

impl UninitBody {
    /// `len` bytes, a pool's spare block if one fits, failing with an error rather than
    /// aborting when the memory is not there.
    fn alloc(len: usize, spares: &Spares) -> Result<Self> {
        let mem = spares
            .alloc(len)
            .ok_or_else(|| Error::Memory(format!("{len} bytes for a decompressed message body")))?;
        Ok(UninitBody { mem, len })
    }

    fn ptr(&self) -> *mut u8 {
        self.mem.ptr()
    }

    /// Zeroes bytes `from..to`.
    ///
    /// # Safety
    /// `from <= to <= ` the length asked for.
    unsafe fn zero(&self, from: usize, to: usize) {
        debug_assert!(from <= to && to <= self.len);
        // SAFETY: the caller keeps the range inside the allocation.
        unsafe { std::ptr::write_bytes(self.ptr().add(from), 0, to - from) }
    }

    /// The bytes asked for as an Arrow buffer whose memory goes back to `spares` when the
    /// last array using it is dropped.
    ///
    /// # Safety
    /// All of them have been written.
    unsafe fn assume_init(self, spares: &Arc<Spares>) -> Buffer {
        let len = self.len;
        let Some(ptr) = NonNull::new(self.ptr()).filter(|_| len > 0) else {
            return Buffer::from_vec(Vec::<u8>::new());
        };
        let owner = Arc::new(Returning::new(self.mem, spares));
        // SAFETY: `owner` keeps the allocation alive and unmoved for as long as the buffer and
        // its slices live; the caller vouches for the bytes.
        unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
    }
}

/// The bytes of buffer `i`, checked to lie inside the body.
fn span(body: &[u8], i: usize, offset: i64, length: i64) -> Result<&[u8]> {
    let range = usize::try_from(offset)
        .ok()
        .zip(usize::try_from(length).ok())
        .and_then(|(o, l)| Some(o..o.checked_add(l)?))
        .filter(|r| r.end <= body.len());
    match range {
        Some(r) => Ok(&body[r]),
        None => Err(Error::Ipc(format!(
            "buffer {i} (offset {offset}, length {length}) lies outside the message body \
             ({} bytes)",
            body.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{CompressParams, Compressor};
    use crate::ipc::compress::{compress_buffers, Compression};

    fn sample() -> Vec<Vec<u8>> {
        vec![
            (0..10_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect(),
            vec![],
            (0..97u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
            vec![5u8; 3],
        ]
    }

    #[test]
    fn round_trip_all_codecs_and_thread_counts() {
        let pool = ContextPool::default();
        let data = sample();
        let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
        for compression in [
            Compression::Zstd(CompressParams::level(1)),
            Compression::Lz4,
        ] {
            let mut lease = pool.compressor(CompressParams::level(1)).unwrap();
            let mut body1 = Vec::new();
            let spans1 = compress_buffers(
                &refs,
                compression,
                Some(&mut lease),
                &pool,
                Some(1),
                &mut body1,
            )
            .unwrap();
            let mut body2 = b"prefix!!".to_vec();
            let spans2 = compress_buffers(
                &refs,
                compression,
                Some(&mut lease),
                &pool,
                Some(3),
                &mut body2,
            )
            .unwrap();
            let body2 = body2.split_off(8);
            assert_eq!(body1, body2);
            assert_eq!(spans1, spans2);
            assert_eq!(body1.len() % 8, 0);
            // The incompressible and tiny buffers are stored raw.
            let (o, _) = spans1[2];
            assert_eq!(i64::from_le_bytes(body1[o..o + 8].try_into().unwrap()), -1);
            assert_eq!(spans1[1].1, 0);
            let spans: Vec<(i64, i64)> =
                spans1.iter().map(|&(o, l)| (o as i64, l as i64)).collect();
            let mut d = None;
            for threads in [Some(1), Some(4)] {
                let (out, out_spans) = decompress_buffers(
                    &body1,
                    &spans,
                    compression.wire_codec().unwrap(),
                    &ReadLimits::default(),
                    &mut d,
                    &pool,
                    threads,
                )
                .unwrap();
                let mut covered = vec![false; out.len()];
                for (orig, &(o, l)) in data.iter().zip(&out_spans) {
                    assert_eq!(&out[o..o + l], orig.as_slice());
                    // Every buffer starts on a 64-byte boundary, in memory too.
                    assert_eq!((out.as_ptr() as usize + o) % 64, 0);
                    covered[o..o + l].fill(true);
                }
                // The body is allocated uninitialized: every byte between buffers is zeroed.
                assert!(out
                    .iter()
                    .zip(&covered)
                    .all(|(&b, &buffer)| buffer || b == 0));
            }
        }
    }

    /// Compresses `buffers` with zstd and decompresses them again through `pool`.
    fn zstd_round_trip(pool: &ContextPool, buffers: &[Vec<u8>]) -> NewBody {
        let refs: Vec<&[u8]> = buffers.iter().map(|v| v.as_slice()).collect();
        let params = CompressParams::level(1);
        let mut lease = pool.compressor(params).unwrap();
        let mut body = Vec::new();
        let spans = compress_buffers(
            &refs,
            Compression::Zstd(params),
            Some(&mut lease),
            pool,
            Some(1),
            &mut body,
        )
        .unwrap();
        let spans: Vec<(i64, i64)> = spans.iter().map(|&(o, l)| (o as i64, l as i64)).collect();
        decompress_buffers(
            &body,
            &spans,
            CompressionType::ZSTD,
            &ReadLimits::default(),
            &mut None,
            pool,
            Some(1),
        )
        .unwrap()
    }

    #[test]
    fn a_freed_body_serves_the_next_read_with_its_gaps_zeroed_again() {
        let pool = ContextPool::default();
        let first = zstd_round_trip(&pool, &[vec![0xAB; 1 << 20], vec![0xCD; 100_000]]);
        let first_ptr = first.0.as_ptr() as usize;
        assert_eq!(
            pool.stats().spares.blocks,
            0,
            "in use until the buffer goes"
        );
        drop(first);
        assert_eq!(pool.stats().spares.blocks, 1);
        // A little smaller, with buffer ends where the first body had data.
        let data = vec![vec![1u8; 1_000_001], vec![2u8; 77], vec![3u8; 90_001]];
        let (out, spans) = zstd_round_trip(&pool, &data);
        assert_eq!(pool.stats().spares.reused, 1);
        assert_eq!(pool.stats().spares.blocks, 0);
        assert!(
            (out.as_ptr() as usize).abs_diff(first_ptr) < 64,
            "the same allocation"
        );
        let mut covered = vec![false; out.len()];
        for (orig, &(o, l)) in data.iter().zip(&spans) {
            assert_eq!(&out[o..o + l], orig.as_slice());
            covered[o..o + l].fill(true);
        }
        assert!(out
            .iter()
            .zip(&covered)
            .all(|(&b, &buffer)| buffer || b == 0));
        // trim and clear free spares.
        drop(out);
        assert_eq!(pool.stats().spares.blocks, 1);
        assert!(pool.trim() >= 1 << 20);
        assert_eq!(pool.stats().spares.bytes, 0);
    }

    #[test]
    fn hostile_prefixes_and_spans_are_refused() {
        let pool = ContextPool::default();
        let mut d = None;
        let limits = ReadLimits {
            max_buffer_size: 1000,
            max_batch_size: 1500,
        };
        let run = |body: &[u8], spans: &[(i64, i64)], d: &mut Option<Lease<Decompressor>>| {
            decompress_buffers(body, spans, CompressionType::ZSTD, &limits, d, &pool, None)
        };
        let mut body = (1i64 << 40).to_le_bytes().to_vec();
        body.extend_from_slice(&[0u8; 8]);
        let err = run(&body, &[(0, 16)], &mut d).unwrap_err();
        assert!(
            err.to_string().contains("max_buffer_size (1000 bytes)"),
            "{err}"
        );
        assert!(run(&body, &[(8, 16)], &mut d)
            .unwrap_err()
            .to_string()
            .contains("outside"));
        assert!(run(&body, &[(-1, 4)], &mut d).is_err());
        assert!(run(&body, &[(0, 4)], &mut d)
            .unwrap_err()
            .to_string()
            .contains("too short"));
        let body = (-5i64).to_le_bytes();
        assert!(run(&body, &[(0, 8)], &mut d)
            .unwrap_err()
            .to_string()
            .contains("negative"));
        // Two buffers that each pass the buffer limit but together pass the batch limit.
        let mut c = Compressor::new(CompressParams::level(1)).unwrap();
        let frame = c.compress_to_scratch(&[1u8; 900]).unwrap().to_vec();
        let mut body = 900i64.to_le_bytes().to_vec();
        body.extend_from_slice(&frame);
        let n = body.len() as i64;
        let err = run(&body, &[(0, n), (0, n)], &mut d).unwrap_err();
        assert!(err.to_string().contains("max_batch_size"), "{err}");
        // A prefix that disagrees with the frame's own size.
        let mut body = 899i64.to_le_bytes().to_vec();
        body.extend_from_slice(&frame);
        let err = run(&body, &[(0, n)], &mut d).unwrap_err();
        assert!(err.to_string().contains("holds 900 bytes"), "{err}");
    }
}
