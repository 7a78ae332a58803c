//! What the pool holds: the two kinds of zstd context, behind one trait, and one enum for an
//! idle context of either kind. Contexts are boxed from the moment they are made, so that a
//! lease and a return move a pointer: a `Compressor` is a few hundred bytes, and each of the
//! moves between the pool, the lease and the idle list was a memcpy of all of it
//! (benchmarks/RESULTS.md#pool-boxed-contexts).

use super::PoolKey;
use crate::context::{Compressor, Decompressor};

/// What the pool can hold. Implemented by the two context kinds.
pub trait Pooled: Sized + Send + 'static {
    fn key(&self) -> PoolKey;
    /// Whether `key` is this context's: compared in place, where `key()` builds a copy.
    fn has_key(&self, key: &PoolKey) -> bool;
    fn held_bytes(&self) -> usize;
    fn scratch_bytes(&self) -> usize;
    /// Resets for the next user; false means the context must be freed instead.
    fn recycle(&mut self, max_scratch: usize) -> bool;
    fn drop_scratch(&mut self) -> usize;
    fn into_slot(self: Box<Self>) -> Slot;
    fn from_slot(slot: Slot) -> Option<Box<Self>>;
}

/// An idle context of either kind.
pub enum Slot {
    Compressor(Box<Compressor>),
    Decompressor(Box<Decompressor>),
}

impl Slot {
    pub(super) fn has_key(&self, key: &PoolKey) -> bool {
        match self {
            Slot::Compressor(c) => c.has_key(key),
            Slot::Decompressor(d) => d.has_key(key),
        }
    }

    pub(super) fn key(&self) -> PoolKey {
        match self {
            Slot::Compressor(c) => c.key(),
            Slot::Decompressor(d) => d.key(),
        }
    }

    pub(super) fn drop_scratch(&mut self) -> usize {
        match self {
            Slot::Compressor(c) => c.drop_scratch(),
            Slot::Decompressor(_) => 0,
        }
    }
}

impl Pooled for Compressor {
    fn key(&self) -> PoolKey {
        PoolKey::Compress(self.params())
    }
    fn has_key(&self, key: &PoolKey) -> bool {
        matches!(key, PoolKey::Compress(p) if self.has_params(p))
    }
    fn held_bytes(&self) -> usize {
        Compressor::held_bytes(self)
    }
    fn scratch_bytes(&self) -> usize {
        Compressor::scratch_bytes(self)
    }
    fn recycle(&mut self, max_scratch: usize) -> bool {
        Compressor::recycle(self, max_scratch)
    }
    fn drop_scratch(&mut self) -> usize {
        Compressor::drop_scratch(self)
    }
    fn into_slot(self: Box<Self>) -> Slot {
        Slot::Compressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Box<Self>> {
        match slot {
            Slot::Compressor(c) => Some(c),
            Slot::Decompressor(_) => None,
        }
    }
}

impl Pooled for Decompressor {
    fn key(&self) -> PoolKey {
        PoolKey::Decompress(self.params())
    }
    fn has_key(&self, key: &PoolKey) -> bool {
        matches!(key, PoolKey::Decompress(p) if *p == self.params())
    }
    fn held_bytes(&self) -> usize {
        Decompressor::held_bytes(self)
    }
    fn scratch_bytes(&self) -> usize {
        0
    }
    fn recycle(&mut self, _max_scratch: usize) -> bool {
        Decompressor::recycle(self)
    }
    fn drop_scratch(&mut self) -> usize {
        0
    }
    fn into_slot(self: Box<Self>) -> Slot {
        Slot::Decompressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Box<Self>> {
        match slot {
            Slot::Decompressor(d) => Some(d),
            Slot::Compressor(_) => None,
        }
    }
}
