//! zstd's compression parameters besides the level, the checksum flag, the window log and the
//! dictionary id flag (which `CompressParams` names itself), as `compression.zstd`'s
//! `options` set them. Each is part of a context's identity in the pool: each changes what a
//! context writes, or, for the worker threads, how it is made.

use zstd_safe::{CCtx, CParameter};

use crate::error::{zstd_error_name, Error, Result};

/// The parameters, by zstd's numbers (`ZSTD_cParameter`), in the order they are kept.
pub const PARAMETERS: [(i32, &str); 15] = [
    (102, "hash_log"),
    (103, "chain_log"),
    (104, "search_log"),
    (105, "min_match"),
    (106, "target_length"),
    (107, "strategy"),
    (160, "enable_long_distance_matching"),
    (161, "ldm_hash_log"),
    (162, "ldm_min_match"),
    (163, "ldm_bucket_size_log"),
    (164, "ldm_hash_rate_log"),
    (200, "content_size_flag"),
    (400, "nb_workers"),
    (401, "job_size"),
    (402, "overlap_log"),
];

/// The values set, in [`PARAMETERS`]' order; [`UNSET`] keeps zstd's default. Plain `i32`s
/// rather than `Option<i32>`s halve the size of every `CompressParams`, which the pool copies
/// and compares on each lease and return (no parameter's bounds include `i32::MIN`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Advanced([i32; PARAMETERS.len()]);

/// The parameters set, by name (the sentinel of the others is no value to show).
impl std::fmt::Debug for Advanced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.named()).finish()
    }
}

/// A parameter left at zstd's default.
const UNSET: i32 = i32::MIN;

impl Default for Advanced {
    fn default() -> Self {
        Advanced::EMPTY
    }
}

/// The bounds zstd gives the compression parameter `id` (`ZSTD_cParam_getBounds`), or None
/// for a number that is no parameter this module sets.
pub fn compression_bounds(id: i32) -> Option<(i32, i32)> {
    use zstd_sys::ZSTD_cParameter as P;
    let param = match id {
        100 => P::ZSTD_c_compressionLevel,
        101 => P::ZSTD_c_windowLog,
        102 => P::ZSTD_c_hashLog,
        103 => P::ZSTD_c_chainLog,
        104 => P::ZSTD_c_searchLog,
        105 => P::ZSTD_c_minMatch,
        106 => P::ZSTD_c_targetLength,
        107 => P::ZSTD_c_strategy,
        160 => P::ZSTD_c_enableLongDistanceMatching,
        161 => P::ZSTD_c_ldmHashLog,
        162 => P::ZSTD_c_ldmMinMatch,
        163 => P::ZSTD_c_ldmBucketSizeLog,
        164 => P::ZSTD_c_ldmHashRateLog,
        200 => P::ZSTD_c_contentSizeFlag,
        201 => P::ZSTD_c_checksumFlag,
        202 => P::ZSTD_c_dictIDFlag,
        400 => P::ZSTD_c_nbWorkers,
        401 => P::ZSTD_c_jobSize,
        402 => P::ZSTD_c_overlapLog,
        _ => return None,
    };
    // SAFETY: FFI on a plain value of zstd's own enum.
    let b = unsafe { zstd_sys::ZSTD_cParam_getBounds(param) };
    // SAFETY: as above.
    (unsafe { zstd_sys::ZSTD_isError(b.error) } == 0).then_some((b.lowerBound, b.upperBound))
}

/// The bounds of the decompression parameter `id` (`ZSTD_dParam_getBounds`); zstd's stable
/// API has one, the largest window log accepted.
pub fn decompression_bounds(id: i32) -> Option<(i32, i32)> {
    if id != 100 {
        return None;
    }
    // SAFETY: FFI on a plain value of zstd's own enum.
    let b =
        unsafe { zstd_sys::ZSTD_dParam_getBounds(zstd_sys::ZSTD_dParameter::ZSTD_d_windowLogMax) };
    // SAFETY: as above.
    (unsafe { zstd_sys::ZSTD_isError(b.error) } == 0).then_some((b.lowerBound, b.upperBound))
}

impl Advanced {
    /// None set.
    pub const EMPTY: Advanced = Advanced([UNSET; PARAMETERS.len()]);

    /// Sets the parameter `id` to `value`; an `id` that is not one of [`PARAMETERS`] is
    /// refused (the level and the flags `CompressParams` names are set there).
    pub fn set(&mut self, id: i32, value: i32) -> Result<()> {
        let at = PARAMETERS
            .iter()
            .position(|(p, _)| *p == id)
            .ok_or_else(|| Error::Parameter(format!("invalid compression parameter {id}")))?;
        if value == UNSET {
            let name = PARAMETERS[at].1;
            return Err(Error::Parameter(format!("{name} is out of range: {value}")));
        }
        self.0[at] = value;
        Ok(())
    }

    /// The value set for `id`, if one is.
    pub fn get(&self, id: i32) -> Option<i32> {
        let at = PARAMETERS.iter().position(|(p, _)| *p == id)?;
        Some(self.0[at]).filter(|v| *v != UNSET)
    }

    /// The parameters set, with their values.
    pub fn iter(&self) -> impl Iterator<Item = (i32, i32)> + '_ {
        PARAMETERS
            .iter()
            .zip(self.0.iter())
            .filter(|(_, v)| **v != UNSET)
            .map(|((id, _), v)| (*id, *v))
    }

    /// The parameters set, by `compression.zstd`'s names, with their values.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, i32)> + '_ {
        PARAMETERS
            .iter()
            .zip(self.0.iter())
            .filter(|(_, v)| **v != UNSET)
            .map(|((_, name), v)| (*name, *v))
    }

    /// Sets every parameter given on `cctx`.
    pub(super) fn apply(&self, cctx: &mut CCtx<'static>) -> Result<()> {
        for (id, value) in self.iter() {
            // zstd takes 0 as "the default" for each of these but the content size flag,
            // where 0 turns the size off.
            if value == 0 && id != 200 {
                continue;
            }
            let name = PARAMETERS
                .iter()
                .find(|(p, _)| *p == id)
                .map_or("?", |(_, n)| n);
            let param = to_parameter(id, value)
                .ok_or_else(|| Error::Parameter(format!("invalid value {value} for {name}")))?;
            cctx.set_parameter(param).map_err(|code| {
                Error::Parameter(format!(
                    "zstd refused {name}={value}: {}",
                    zstd_error_name(code)
                ))
            })?;
        }
        Ok(())
    }
}

/// zstd-safe's form of the parameter `id` at `value` (through zstd-safe rather than zstd
/// itself, so that its guards on worker threads hold).
fn to_parameter(id: i32, value: i32) -> Option<CParameter> {
    let n = u32::try_from(value).ok();
    Some(match id {
        102 => CParameter::HashLog(n?),
        103 => CParameter::ChainLog(n?),
        104 => CParameter::SearchLog(n?),
        105 => CParameter::MinMatch(n?),
        106 => CParameter::TargetLength(n?),
        107 => CParameter::Strategy(strategy(value)?),
        // zstd's switch: 0 lets the strategy decide, 1 enables, 2 disables. zstd-safe takes
        // a flag (true is 1, false 0), so 2 is "decide", which disables it but for the
        // strongest strategies with windows of 128 MiB and more (a difference
        // docs/migrating.md lists).
        160 => CParameter::EnableLongDistanceMatching(value == 1),
        161 => CParameter::LdmHashLog(n?),
        162 => CParameter::LdmMinMatch(n?),
        163 => CParameter::LdmBucketSizeLog(n?),
        164 => CParameter::LdmHashRateLog(n?),
        200 => CParameter::ContentSizeFlag(value != 0),
        400 => CParameter::NbWorkers(n?),
        401 => CParameter::JobSize(n?),
        402 => CParameter::OverlapSizeLog(n?),
        _ => return None,
    })
}

/// zstd's strategy numbered `value` (0 keeps the level's).
fn strategy(value: i32) -> Option<zstd_safe::Strategy> {
    use zstd_safe::Strategy as S;
    Some(match value {
        1 => S::ZSTD_fast,
        2 => S::ZSTD_dfast,
        3 => S::ZSTD_greedy,
        4 => S::ZSTD_lazy,
        5 => S::ZSTD_lazy2,
        6 => S::ZSTD_btlazy2,
        7 => S::ZSTD_btopt,
        8 => S::ZSTD_btultra,
        9 => S::ZSTD_btultra2,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_parameters_read_as_none_and_cannot_be_set() {
        let mut a = Advanced::default();
        assert_eq!(a, Advanced::EMPTY);
        assert_eq!(a.get(102), None);
        a.set(102, 17).unwrap();
        assert_eq!(a.get(102), Some(17));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(102, 17)]);
        assert_eq!(a.named().collect::<Vec<_>>(), vec![("hash_log", 17)]);
        // The sentinel is not a value anyone can set.
        let err = a.set(103, i32::MIN).unwrap_err();
        assert!(err.to_string().contains("chain_log"), "{err}");
        assert_eq!(a.get(103), None);
        assert!(a.set(999, 1).is_err());
    }
}
