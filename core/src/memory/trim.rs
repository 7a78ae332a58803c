//! Gives back to the system the memory a large write has freed. glibc keeps what a process
//! frees in its arenas (one for each thread that allocated, a write's workers among them),
//! and after the first large block is freed it raises the size from which blocks are mapped on
//! their own, so that later buffers come from those arenas too. A write's encoded pages,
//! compressed buffers and scratch are freed when it ends, yet stay resident: a process that
//! wrote a million rows held its peak after the write returned, and grew with each further
//! write (benchmarks/RESULTS.md#held-after-write). `malloc_trim` returns the free pages inside
//! every arena and the top of the main one (glibc gives back the top of a worker's arena only
//! itself, past a threshold), which took a few milliseconds at most after writes of hundreds.
//! The callers are the bindings' single-file writers, once their buffers are freed and without
//! the GIL, and the dataset writer once for all its files.

/// Bytes written below which a write leaves the allocator as it is: a small write frees little,
/// and a loop of them would pay for a trim each time. Counted in output, which a very
/// compressible write keeps small whatever it encoded.
pub const TRIM_FROM: u64 = 4 << 20;

/// After a write of `bytes_written` bytes has freed its buffers: returns the free memory of
/// every allocator arena to the system if the write was large.
pub fn after_write(bytes_written: u64) {
    if bytes_written >= TRIM_FROM {
        give_back();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn give_back() {
    // SAFETY: malloc_trim takes no pointer and locks each arena itself; any thread may call it
    // at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators (musl's, macOS's) give freed pages back on their own terms.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back() {}
