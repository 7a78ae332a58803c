//! Whether memory of a size taken from the input can be had, asked before a library that
//! allocates infallibly (the parquet crate's decoders) allocates it: such an allocation that
//! fails aborts the process, where this check lets the read fail as an error.
//!
//! The question is put to the kernel, not to the allocator: as much memory is mapped, private
//! and writable as a large `malloc` maps, and unmapped untouched. That meets the same limits a
//! real allocation meets (the address-space and data limits, the overcommit policy) and leaves
//! the allocator as it was. A `try_reserve` probe does not: glibc raises its mmap threshold
//! after a large block is freed, so a read that probed every page that way got its buffers
//! from the heap instead, whose trimmed pages the kernel then cleared again, a visible share
//! of a large read (benchmarks/RESULTS.md#expansion-measure).
//! Like any such check it is an answer for now, not a reservation: other threads may take
//! the memory before it is used.

/// Below this the answer is yes without asking: a failure of so small an allocation is not
/// one the input's sizes cause, and the system call would cost more than the check is worth.
pub const SMALL: usize = 1 << 20;

/// Whether `bytes` of fresh memory can be mapped now.
pub fn can_map(bytes: u64) -> bool {
    let Ok(len) = usize::try_from(bytes) else {
        return false;
    };
    if len < SMALL {
        return true;
    }
    // SAFETY: a new private anonymous mapping of `len` bytes is made and, if it was made,
    // unmapped at once; nothing reads or writes it, and no other memory is touched.
    unsafe {
        let rw = rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE;
        match rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            len,
            rw,
            rustix::mm::MapFlags::PRIVATE,
        ) {
            Ok(at) => {
                let _ = rustix::mm::munmap(at, len);
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_possible_sizes_pass_and_impossible_ones_do_not() {
        assert!(can_map(0));
        assert!(can_map(16 << 20));
        // More than any address space holds.
        assert!(!can_map(1 << 62));
        assert!(!can_map(u64::MAX));
    }
}
