//! A hint that a large buffer about to be filled should be backed by huge pages.
//!
//! A fresh allocation costs a page fault per 4 KiB page on first write, a large share of
//! reading a large decompressed body (benchmarks/RESULTS.md#huge-pages). Allocators
//! that keep freed memory (pyarrow's mimalloc or jemalloc) mostly avoid them; glibc returns
//! large blocks to the kernel (for reads, the pool's spares keep them: see `spare`). With
//! transparent huge pages in `madvise` mode (the common default), asking for them turns those
//! faults into one per 2 MiB. The hint never changes the contents of memory.
//!
//! Linux's alone: elsewhere (and on Linux with the core's `portable` feature) every hint is
//! a no-op.

/// Below this, a system call costs more than the faults it saves.
pub const MIN_LEN: usize = 4 << 20;

const HUGE_PAGE: usize = 2 << 20;

/// Asks for huge pages on the whole 2 MiB pages within `len` bytes at `ptr`, memory that the
/// caller owns and has not written yet. Does nothing below [`MIN_LEN`].
///
/// Only for allocations that will not grow: advising part of a mapping splits it, and glibc
/// can then no longer grow it in place, so a growing vector would be copied at each step.
pub fn advise_huge_pages(ptr: *const u8, len: usize) {
    if len >= MIN_LEN {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // The range lies inside the caller's allocation.
            hint(start, end - start);
        }
    }
}

/// As [`advise_huge_pages`], for a block that may still grow with `realloc`: `len` bytes from
/// `block`, as returned by `malloc`. glibc serves a large block from a mapping of its own
/// (always from 32 MiB, from less until its threshold rises) and grows it with `mremap`, which
/// works only within one mapping: advising part of it would split it and turn every later
/// growth into a copy. So the advice covers exactly that mapping, and nothing is done for a
/// block that does not sit where glibc puts one (inside its heap, or under another allocator).
/// Advising again after a growth that moved the block is the caller's part: `mremap` keeps
/// the advice on a mapping it extends or moves.
pub fn advise_huge_pages_growable(block: *const u8, len: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
    if len >= MIN_LEN {
        if let Some((start, end)) = glibc_mapping(block as usize, len) {
            // Were the block not glibc's mapping after all (a heap block that happens to
            // start 16 bytes into a page), the hint would reach past it, into memory of the
            // same heap: still only a hint.
            hint(start, end - start);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu", not(feature = "portable"))))]
    let _ = (block, len);
}

/// MADV_HUGEPAGE on `len` bytes from `start`, page-aligned memory of the process.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn hint(start: usize, len: usize) {
    // SAFETY: MADV_HUGEPAGE only changes how pages not yet touched are backed, never their
    // contents. A refusal (THP off) is not an error.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
fn hint(_start: usize, _len: usize) {}

/// The mapping glibc's `malloc(len)` or `realloc(_, len)` made for `block`, if the block is
/// where such a mapping puts it: 16 bytes in (the chunk header), the mapping being the chunk
/// (`len` plus 8 bytes, rounded up to 16) and 8 more bytes, rounded up to a page.
#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
fn glibc_mapping(block: usize, len: usize) -> Option<(usize, usize)> {
    const HEADER: usize = 16;
    let page = page_size();
    if block % page != HEADER {
        return None;
    }
    let chunk = (len.checked_add(8 + 15)? & !15).max(32);
    let size = (chunk + 8).checked_next_multiple_of(page)?;
    let start = block - HEADER;
    Some((start, start.checked_add(size)?))
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
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
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
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

    /// Sizes around page boundaries, all above glibc's largest mmap threshold (32 MiB), so
    /// that every one gets a mapping of its own.
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
    fn large_sizes() -> impl Iterator<Item = usize> {
        let base = 40 << 20;
        [0, 1, 7, 8, 9, 16, 24, 25, 40, 56, 79, 80, 4095, 4096]
            .into_iter()
            .flat_map(move |d| [base - d, base + d])
    }

    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
    #[test]
    fn the_mapping_is_the_one_glibc_made() {
        for len in large_sizes() {
            // SAFETY: a fresh block, freed below; malloc_usable_size reads its header.
            unsafe {
                let p = libc::malloc(len);
                assert!(!p.is_null());
                let block = p as usize;
                // glibc's usable size of a mapped chunk runs to the end of its mapping.
                let end = block + libc::malloc_usable_size(p);
                assert_eq!(
                    glibc_mapping(block, len),
                    Some((block - 16, end)),
                    "malloc({len})"
                );
                libc::free(p);
            }
        }
        // Not where glibc puts a mapped block: left alone.
        assert_eq!(glibc_mapping(4096 * 100 + 17, 40 << 20), None);
        assert_eq!(glibc_mapping(4096 * 100, 40 << 20), None);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "portable")))]
    #[test]
    fn a_growable_block_keeps_its_mapping_whole_and_its_contents() {
        for len in large_sizes().take(6) {
            // SAFETY: a fresh block, written, reallocated and freed once.
            unsafe {
                let p = libc::malloc(len).cast::<u8>();
                assert!(!p.is_null());
                *p = 42;
                advise_huge_pages_growable(p, len);
                let (start, end) = glibc_mapping(p as usize, len).unwrap();
                // Advised whole, the mapping is still one piece (an inner range would have
                // split it), so mremap can grow it.
                let pieces = mappings(start, end);
                assert!(
                    pieces.iter().any(|&(a, b)| a <= start && end <= b),
                    "the block's mapping was split: {pieces:x?}"
                );
                let grown = libc::realloc(p.cast(), 2 * len).cast::<u8>();
                assert!(!grown.is_null());
                assert_eq!(*grown, 42);
                libc::free(grown.cast());
            }
        }
    }
}
