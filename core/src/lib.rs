//! zstdpool's core: pooled zstd contexts for compressing Arrow data often and in small pieces,
//! and the readers and writers that borrow them.
//!
//! `context` and `pool` keep zstd contexts warm between callers, `dict` their trained
//! dictionaries; `codec` decides how to decompress a frame safely. `ipc` adds compression as
//! a stage over Arrow IPC message bodies, `parquet` over Parquet pages; `dataset` writes
//! partitioned datasets and `scan` reads them, with pruning; `store` reaches object stores and
//! `path_sink` writes files safely in shared directories. `memory`, `output`, `parallel`,
//! `batch_schema` and `params` are the plumbing they share. Nothing here touches Python: the
//! bindings crate wraps it.
//!
//! Unix: path sinks work beneath a directory's descriptor (`openat`, `renameat`,
//! `O_NOFOLLOW`, through rustix), which Linux and macOS both have. What is Linux's alone (the
//! huge-page hint, removing a tree through `/proc/self/fd`) has a portable fallback beside it,
//! which the `portable` feature forces on Linux so that it is tested. Windows has none of the
//! descriptor-relative calls and is refused here rather than left to fail somewhere less clear.

#[cfg(not(unix))]
compile_error!(
    "zstdpool builds for Unix only (see the README's \"Wheels and supported platforms\")"
);

pub mod batch_schema;
pub mod codec;
pub mod context;
pub mod dataset;
pub mod dict;
pub mod error;
pub mod ipc;
pub mod memory;
pub mod output;
pub mod parallel;
pub mod parquet;
pub mod path_sink;
pub mod pool;
pub mod scan;
pub mod store;

pub use context::{CompressParams, Compressor, DecompressParams, Decompressor};
pub use dict::ZstdDict;
pub use error::{Error, Result};
pub use pool::{ContextPool, Lease, PoolConfig, PoolKey, PoolStats};

/// The core's own tests count allocations through the counting allocator, as the extension does.
#[cfg(all(test, feature = "alloc-stats"))]
#[global_allocator]
static ALLOCATOR: memory::alloc::CountingAllocator = memory::alloc::CountingAllocator;
