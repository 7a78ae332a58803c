//! zstdpool: pooled zstd contexts for compressing Arrow data often and in small pieces.
//!
//! The core (`context`, `pool`, `spare`, `codec`, `output`, `ipc`) does not touch Python and
//! is tested with `cargo test`; `python` holds the bindings, built only with the `python`
//! feature.

pub mod alloc;
pub mod codec;
pub mod context;
pub mod error;
pub mod ipc;
pub mod output;
pub mod pages;
pub mod parallel;
pub mod pool;
pub mod spare;

pub use context::{CompressParams, Compressor, DecompressParams, Decompressor};
pub use error::{Error, Result};
pub use pool::{ContextPool, Lease, PoolConfig, PoolKey, PoolStats};

#[cfg(feature = "python")]
mod python;

#[cfg(feature = "alloc-stats")]
#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

#[cfg(all(feature = "mimalloc", not(feature = "alloc-stats")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
