//! What the pool holds: the two kinds of zstd context, behind one trait, and one enum for an
//! idle context of either kind.

use super::PoolKey;
use crate::context::{Compressor, Decompressor};

/// What the pool can hold. Implemented by the two context kinds.
pub trait Pooled: Sized + Send + 'static {
    fn key(&self) -> PoolKey;
    fn held_bytes(&self) -> usize;
    fn scratch_bytes(&self) -> usize;
    /// Resets for the next user; false means the context must be freed instead.
    fn recycle(&mut self, max_scratch: usize) -> bool;
    fn drop_scratch(&mut self) -> usize;
    fn into_slot(self) -> Slot;
    fn from_slot(slot: Slot) -> Option<Self>;
}

/// An idle context of either kind.
pub enum Slot {
    Compressor(Compressor),
    Decompressor(Decompressor),
}

impl Slot {
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
    fn into_slot(self) -> Slot {
        Slot::Compressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Self> {
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
    fn into_slot(self) -> Slot {
        Slot::Decompressor(self)
    }
    fn from_slot(slot: Slot) -> Option<Self> {
        match slot {
            Slot::Decompressor(d) => Some(d),
            Slot::Compressor(_) => None,
        }
    }
}
