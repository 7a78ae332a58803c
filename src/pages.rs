//! A hint that a large buffer about to be filled should be backed by huge pages.
//!
//! A fresh allocation costs a page fault per 4 KiB page on first write: a 160 MiB
//! decompressed body is 40,000 faults, about a sixth of the read on a small VM. Allocators
//! that keep freed memory (pyarrow's mimalloc or jemalloc) mostly avoid them; glibc returns
//! large blocks to the kernel (for reads, the pool's spares keep them: see `spare`). With
//! transparent huge pages in `madvise` mode (the common default), asking for them turns those
//! faults into one per 2 MiB. The hint never changes the contents of memory.

/// Below this, a system call costs more than the faults it saves.
pub const MIN_LEN: usize = 4 << 20;

#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Asks for huge pages on the whole 2 MiB pages within `len` bytes at `ptr`, memory that the
/// caller owns and has not written yet. Does nothing below [`MIN_LEN`] or off Linux.
///
/// Only for allocations that will not grow: advising part of a mapping splits it, and glibc
/// can then no longer grow it in place, so a growing vector would be copied at each step.
pub fn advise_huge_pages(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= MIN_LEN {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the range lies inside the caller's allocation; MADV_HUGEPAGE only changes
            // how pages not yet touched are backed. A refusal (THP off) is not an error.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_memory_keeps_its_contents() {
        let mut v = vec![0u8; 9 << 20];
        v[..3].copy_from_slice(b"abc");
        advise_huge_pages(v.as_ptr(), v.len());
        let last = v.len() - 1;
        v[last] = 7;
        assert_eq!(&v[..3], b"abc");
        assert_eq!(v[last], 7);
        // Small and unaligned ranges are left alone.
        advise_huge_pages(v[1..].as_ptr(), 1000);
    }
}
