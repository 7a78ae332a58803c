//! zstdpool's core: pooled zstd contexts for compressing Arrow data often and in small pieces.
//!
//! `context` and `pool` keep zstd contexts warm between callers; `codec` decides how to
//! decompress a frame safely; `ipc` adds compression as a stage over Arrow IPC message bodies;
//! `spare`, `output`, `pages` and `parallel` are the memory and thread plumbing they share.
//! Nothing here touches Python: the bindings crate wraps it.
//!
//! Linux only: path sinks work beneath a directory's descriptor (`openat`, `renameat`,
//! `O_NOFOLLOW`), and memory hints are Linux's `madvise`. Other systems have never been built
//! or tested, so they are refused here rather than left to fail somewhere less clear.

#[cfg(not(target_os = "linux"))]
compile_error!("zstdpool supports Linux only (see the README's \"Wheels and supported Pythons\")");

pub mod alloc;
pub mod batch_schema;
pub mod codec;
pub mod context;
pub mod dataset;
pub mod dict;
pub mod error;
pub mod headroom;
pub mod ipc;
pub mod output;
pub mod pages;
pub mod parallel;
pub mod params;
pub mod parquet;
pub mod path_sink;
pub mod pool;
pub mod scan;
pub mod spare;
pub mod store;

pub use context::{CompressParams, Compressor, DecompressParams, Decompressor};
pub use dict::ZstdDict;
pub use error::{Error, Result};
pub use pool::{ContextPool, Lease, PoolConfig, PoolKey, PoolStats};

/// The core's own tests count allocations through the counting allocator, as the extension does.
#[cfg(all(test, feature = "alloc-stats"))]
#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;
