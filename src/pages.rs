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

/// How far into its first page a block may start and still be taken as the start of its own
/// mapping: glibc puts a large block 16 bytes in, CPython's debug hooks 16 more.
#[cfg(target_os = "linux")]
const MAPPING_HEADER: usize = 64;

/// As [`advise_huge_pages`], for a block that may still grow with `realloc`: `len` bytes from
/// `block`, the start of the allocation. glibc grows a large block with `mremap`, which works
/// only within one mapping; advising part of it would split it and turn every later growth into
/// a copy. So the advice covers the block's pages rounded outward (past its end by a header's
/// worth, so that the mapping's last page is never left out), and only for a block that starts
/// its own mapping; a block inside the heap is left alone. Advising again after a growth
/// that moved the block is the caller's part: one that did not move keeps the advice.
pub fn advise_huge_pages_growable(block: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= MIN_LEN && (block as usize) % page_size() < MAPPING_HEADER {
        let page = page_size();
        let start = (block as usize) / page * page;
        let end = (block as usize + len + MAPPING_HEADER).next_multiple_of(page);
        // SAFETY: MADV_HUGEPAGE changes how untouched pages are backed, never their contents.
        // The range may reach one page into a neighbouring mapping or a hole (then madvise
        // advises what is mapped and reports ENOMEM, which is not an error here).
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (block, len);
}

#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
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

    /// The mappings of this process that overlap `[start, end)`, as (start, end) pairs.
    #[cfg(target_os = "linux")]
    fn mappings(start: usize, end: usize) -> Vec<(usize, usize)> {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|line| {
                let (a, b) = line.split_whitespace().next()?.split_once('-')?;
                let range = (
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                );
                (range.0 < end && start < range.1).then_some(range)
            })
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_growable_block_keeps_its_mapping_whole_and_can_grow_in_place() {
        let len = 9 << 20;
        // A block laid out as glibc lays out a large one: 16 bytes into its own mapping.
        // SAFETY: a fresh anonymous mapping, unmapped at the end of the test.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        let base = map as usize;
        // SAFETY: inside the mapping.
        unsafe { *(base as *mut u8).add(16) = 42 };
        advise_huge_pages_growable((base + 16) as *const u8, len);
        // The mapping was advised whole, so it is still one piece (an inner range would have
        // split it in three), and mremap can grow it.
        let pieces = mappings(base, base + len + 4096);
        assert!(
            pieces
                .iter()
                .any(|&(a, b)| a <= base && base + len + 4096 <= b),
            "the block's mapping was split: {pieces:x?}"
        );
        // SAFETY: the whole mapping, grown (and perhaps moved) by the kernel; unmapped after.
        let grown = unsafe { libc::mremap(map, len + 4096, 2 * len, libc::MREMAP_MAYMOVE) };
        assert_ne!(grown, libc::MAP_FAILED);
        // SAFETY: the grown mapping keeps the contents and is unmapped once.
        unsafe {
            assert_eq!(*(grown as *const u8).add(16), 42);
            libc::munmap(grown, 2 * len);
        }
        // A block in the middle of a page (inside a heap) and a small one are left alone.
        let v = vec![0u8; 9 << 20];
        advise_huge_pages_growable(v[100..].as_ptr(), 8 << 20);
        advise_huge_pages_growable(v.as_ptr(), 1000);
    }
}
