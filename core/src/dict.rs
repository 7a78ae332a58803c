//! zstd dictionaries shared by every thread and every pooled context.
//!
//! zstd's prepared dictionaries (a CDict per level, one DDict) may be used by many threads at
//! once, and a context only references one (`ZSTD_CCtx_refCDict`). So contexts stay keyed by
//! their parameters alone: a lease references the dictionary it is given and drops the
//! reference when it goes back, and a frame is byte-identical whichever context wrote it.
//! Referencing costs about 100 instructions a call, against some 25,000 to compress a 1 KiB
//! record (benchmarks/RESULTS.md#dictionary-call-path), so contexts bound to one dictionary
//! are not kept apart.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use zstd_safe::{CDict, DDict};

use crate::error::{Error, Result};

/// The first four bytes of a zstd dictionary (little-endian), as the format defines them.
pub const DICT_MAGIC: u32 = 0xEC30_A437;

/// zstd ignores a dictionary shorter than this, so such content is refused rather than
/// silently compressing without one.
pub const MIN_CONTENT: usize = 8;

/// The largest dictionary accepted: zstd's offsets into a dictionary are 32-bit.
pub const MAX_CONTENT: usize = 1 << 31;

/// Levels a dictionary keeps prepared at once; the least recently used one beyond is freed
/// (and prepared again if asked for). Each is a copy of the content plus the level's tables.
pub const MAX_PREPARED_LEVELS: usize = 8;

/// The smallest `dict_size` zstd's trainer accepts (`ZDICT_DICTSIZE_MIN`).
pub const MIN_TRAINED_SIZE: usize = 256;

/// Prepared dictionaries alive in the process, and zstd's measure of their bytes: they are C
/// allocations, outside the Rust heap that `alloc` counts.
static PREPARED: AtomicUsize = AtomicUsize::new(0);
static PREPARED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Prepared dictionaries alive now, in the whole process: (count, bytes).
pub fn prepared_stats() -> (usize, usize) {
    (PREPARED.load(Relaxed), PREPARED_BYTES.load(Relaxed))
}

/// A CDict or DDict, counted while it lives.
pub struct Prepared<T> {
    pub(crate) dict: T,
    bytes: usize,
}

impl<T> Prepared<T> {
    fn new(dict: T, bytes: usize) -> Arc<Self> {
        PREPARED.fetch_add(1, Relaxed);
        PREPARED_BYTES.fetch_add(bytes, Relaxed);
        Arc::new(Prepared { dict, bytes })
    }
}

impl<T> Drop for Prepared<T> {
    fn drop(&mut self) {
        PREPARED.fetch_sub(1, Relaxed);
        PREPARED_BYTES.fetch_sub(self.bytes, Relaxed);
    }
}

/// A compression dictionary prepared for one level.
pub type PreparedC = Prepared<CDict<'static>>;
/// A decompression dictionary.
pub type PreparedD = Prepared<DDict<'static>>;

/// An immutable zstd dictionary: its content, and the prepared forms made from it on first
/// use and freed with it.
pub struct ZstdDict {
    content: Box<[u8]>,
    /// The id a frame records (0 for raw content, which has none).
    id: u32,
    raw: bool,
    /// Prepared per level, least recently used first.
    cdicts: Mutex<Vec<(i32, Arc<PreparedC>)>>,
    ddict: OnceLock<Arc<PreparedD>>,
}

impl std::fmt::Debug for ZstdDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdDict")
            .field("id", &self.id)
            .field("len", &self.content.len())
            .field("raw", &self.raw)
            .finish()
    }
}

impl ZstdDict {
    /// A dictionary from `content`: a zstd dictionary (magic number, id, entropy tables and
    /// content), or with `raw`, any bytes used as they are. Checks the content now, so that a
    /// malformed dictionary fails here rather than at its first use.
    pub fn new(content: &[u8], raw: bool) -> Result<Self> {
        if content.len() < MIN_CONTENT {
            return Err(Error::Parameter(format!(
                "zstd dictionary content is too short: {} bytes, at least {MIN_CONTENT} needed",
                content.len()
            )));
        }
        if content.len() > MAX_CONTENT {
            return Err(Error::Parameter(format!(
                "zstd dictionary content is too large: {} bytes, at most {MAX_CONTENT} accepted",
                content.len()
            )));
        }
        let has_magic = content[..4] == DICT_MAGIC.to_le_bytes();
        // zstd reads content that starts with the magic number as a full dictionary whatever
        // it is told (and `compression.zstd` gives such content its id with `is_raw=True`):
        // it is one here too, checked as one.
        let raw = raw && !has_magic;
        let id = if raw {
            0
        } else {
            if !has_magic {
                return Err(Error::Parameter(
                    "not a zstd dictionary: the content does not start with the zstd dictionary \
                     magic number (0xEC30A437); pass is_raw=True to use any bytes as raw content"
                        .into(),
                ));
            }
            let id = zstd_safe::get_dict_id(content).map_or(0, NonZeroU32::get);
            // The header's entropy tables are parsed by this call; a malformed header fails.
            // SAFETY: FFI over a valid slice.
            let header = unsafe {
                zstd_sys::ZDICT_getDictHeaderSize(content.as_ptr().cast(), content.len())
            };
            if id == 0 || unsafe { zstd_sys::ZDICT_isError(header) } != 0 {
                return Err(Error::Parameter(format!(
                    "malformed zstd dictionary ({} bytes): {}",
                    content.len(),
                    if id == 0 {
                        "its id is 0".to_string()
                    } else {
                        zdict_error_name(header)
                    }
                )));
            }
            id
        };
        Ok(ZstdDict {
            content: content.into(),
            id,
            raw,
            cdicts: Mutex::new(Vec::new()),
            ddict: OnceLock::new(),
        })
    }

    /// The content, as given.
    pub fn content(&self) -> &[u8] {
        &self.content
    }

    /// The id frames written with it record; 0 for raw content.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Whether the content is raw (no header, no id).
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// The dictionary prepared for `level`, made on first use. Callers share it; the lock is
    /// held only to look it up, not while preparing.
    pub fn cdict(&self, level: i32) -> Result<Arc<PreparedC>> {
        {
            let mut cdicts = self.lock_cdicts();
            if let Some(i) = cdicts.iter().position(|(l, _)| *l == level) {
                // Most recently used last; a dictionary used at one level is not reordered.
                if i + 1 != cdicts.len() {
                    let entry = cdicts.remove(i);
                    cdicts.push(entry);
                }
                return Ok(cdicts[cdicts.len() - 1].1.clone());
            }
        }
        let made = CDict::try_create(&self.content, level)
            .ok_or_else(|| Error::Memory("preparing a zstd dictionary".into()))?;
        let bytes = made.sizeof();
        let made = Prepared::new(made, bytes);
        let mut cdicts = self.lock_cdicts();
        // Another thread may have prepared the same level meanwhile: keep the first.
        if let Some((_, kept)) = cdicts.iter().find(|(l, _)| *l == level) {
            return Ok(kept.clone());
        }
        if cdicts.len() >= MAX_PREPARED_LEVELS {
            cdicts.remove(0);
        }
        cdicts.push((level, made.clone()));
        Ok(made)
    }

    /// The decompression dictionary, made on first use.
    pub fn ddict(&self) -> Result<Arc<PreparedD>> {
        if let Some(d) = self.ddict.get() {
            return Ok(d.clone());
        }
        let made = DDict::try_create(&self.content)
            .ok_or_else(|| Error::Memory("preparing a zstd dictionary".into()))?;
        let bytes = made.sizeof();
        // Two threads may race here; the loser's copy is freed.
        let _ = self.ddict.set(Prepared::new(made, bytes));
        Ok(self.ddict.get().expect("set above").clone())
    }

    /// Levels prepared now, least recently used first.
    pub fn prepared_levels(&self) -> Vec<i32> {
        self.lock_cdicts().iter().map(|(l, _)| *l).collect()
    }

    fn lock_cdicts(&self) -> std::sync::MutexGuard<'_, Vec<(i32, Arc<PreparedC>)>> {
        self.cdicts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a frame that records dictionary id `wanted` can be decompressed with the dictionary
/// `given` (its id, and whether it is raw content), or with none. Fails naming the id the
/// frame expects.
pub(crate) fn dict_mismatch(wanted: u32, given: Option<(u32, bool)>) -> Result<()> {
    match given {
        Some((id, _)) if id == wanted => Ok(()),
        Some((_, true)) => Err(Error::Corrupt(format!(
            "the zstd frame was compressed with the dictionary of id {wanted}, but zstd_dict is \
             raw content, which has no id"
        ))),
        Some((id, false)) => Err(Error::Corrupt(format!(
            "the zstd frame was compressed with the dictionary of id {wanted}, but zstd_dict has \
             id {id}"
        ))),
        None => Err(Error::Corrupt(format!(
            "the zstd frame was compressed with the dictionary of id {wanted}: pass that \
             dictionary as zstd_dict"
        ))),
    }
}

fn zdict_error_name(code: usize) -> String {
    // SAFETY: zstd returns a static, NUL-terminated string for every code.
    unsafe { std::ffi::CStr::from_ptr(zstd_sys::ZDICT_getErrorName(code)) }
        .to_string_lossy()
        .into_owned()
}

/// Samples laid end to end, as zstd's trainer takes them.
pub struct Samples {
    pub bytes: Vec<u8>,
    pub sizes: Vec<usize>,
}

impl Samples {
    fn check(&self, what: &str) -> Result<()> {
        if self.sizes.is_empty() {
            return Err(Error::Parameter(format!(
                "{what} needs at least one sample"
            )));
        }
        // zstd reads the samples by these sizes: they must cover the buffer exactly.
        let total = self.sizes.iter().try_fold(0usize, |t, &n| t.checked_add(n));
        if total != Some(self.bytes.len()) {
            return Err(Error::Parameter(format!(
                "{what}: the sample sizes do not add up to the {} bytes of samples",
                self.bytes.len()
            )));
        }
        if u32::try_from(self.sizes.len()).is_err() {
            return Err(Error::Parameter(format!(
                "{what} takes at most {} samples, not {}",
                u32::MAX,
                self.sizes.len()
            )));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{} samples, {} bytes", self.sizes.len(), self.bytes.len())
    }
}

fn check_dict_size(dict_size: usize) -> Result<()> {
    if !(MIN_TRAINED_SIZE..=MAX_CONTENT).contains(&dict_size) {
        return Err(Error::Parameter(format!(
            "dict_size must be from {MIN_TRAINED_SIZE} to {MAX_CONTENT} bytes, not {dict_size}"
        )));
    }
    Ok(())
}

/// Trains a dictionary of at most `dict_size` bytes on `samples` with zstd's default trainer
/// (`ZDICT_trainFromBuffer`, fast COVER), as `compression.zstd.train_dict` does.
pub fn train(samples: &Samples, dict_size: usize) -> Result<Vec<u8>> {
    check_dict_size(dict_size)?;
    samples.check("train_dict")?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(dict_size)?;
    zstd_safe::train_from_buffer(&mut out, &samples.bytes, &samples.sizes).map_err(|code| {
        Error::Parameter(format!(
            "zstd could not train a dictionary of {dict_size} bytes on {}: {} (zstd needs many \
             varied samples, about 100 times dict_size in all)",
            samples.describe(),
            zdict_error_name(code)
        ))
    })?;
    out.shrink_to_fit();
    Ok(out)
}

/// Makes a zstd dictionary of at most `dict_size` bytes from `content` (kept at the end, the
/// part cheapest to reference), with a header and entropy tables fitted to `samples` at
/// `level`, and a random id.
pub fn finalize(
    content: &[u8],
    samples: &Samples,
    dict_size: usize,
    level: i32,
) -> Result<Vec<u8>> {
    check_dict_size(dict_size)?;
    samples.check("finalize_dict")?;
    if content.len() > dict_size {
        return Err(Error::Parameter(format!(
            "the dictionary's content ({} bytes) is larger than dict_size ({dict_size} bytes)",
            content.len()
        )));
    }
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(dict_size)?;
    let params = zstd_sys::ZDICT_params_t {
        compressionLevel: level,
        notificationLevel: 0,
        dictID: 0,
    };
    // SAFETY: `out` has `dict_size` bytes of capacity; the samples buffer holds exactly the
    // sum of the sizes; zstd writes at most `dict_size` bytes and returns how many.
    let n = unsafe {
        zstd_sys::ZDICT_finalizeDictionary(
            out.as_mut_ptr().cast(),
            dict_size,
            content.as_ptr().cast(),
            content.len(),
            samples.bytes.as_ptr().cast(),
            samples.sizes.as_ptr(),
            samples.sizes.len() as u32,
            params,
        )
    };
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 {
        return Err(Error::Parameter(format!(
            "zstd could not finalize a dictionary of {dict_size} bytes on {}: {}",
            samples.describe(),
            zdict_error_name(n)
        )));
    }
    // SAFETY: zstd wrote `n <= dict_size` bytes.
    unsafe { out.set_len(n) };
    Ok(out)
}

#[cfg(test)]
mod tests;
