//! The memory plumbing the codec, the pool and the readers share: the allocator that counts
//! what the extension holds (`alloc`), asking the kernel whether an allocation can be mapped
//! before making it (`headroom`), the huge-page hint for large output buffers (`huge_pages`),
//! the spare output buffers kept between calls (`spare`), and giving the allocator's free
//! memory back to the system after a large write (`trim`).

pub mod alloc;
pub mod headroom;
pub mod huge_pages;
pub mod spare;
pub mod trim;
