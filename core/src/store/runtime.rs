//! The tokio runtime that object store requests run on: one for the process, made on first
//! use. Callers block on it from their own threads (Python's, or the writers' and readers'
//! worker threads), never from its own, so a blocking call cannot stall it.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};

use tokio::runtime::{Builder, Runtime};

/// The runtime and the process that made it.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// Worker threads: they only wait on sockets and sign requests, and the machine's cores
/// belong to the threads that compress.
const WORKERS: usize = 2;

/// The process's runtime. A child forked after the runtime was made (Dask's and
/// multiprocessing's workers) inherits it without its threads: it gets a runtime of its own,
/// and the inherited one is forgotten, since dropping it would wait for threads that do not
/// exist in the child.
pub fn runtime() -> io::Result<Arc<Runtime>> {
    let mut held = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if let Some((owner, rt)) = held.as_ref() {
        if *owner == pid {
            return Ok(rt.clone());
        }
    }
    if let Some((_, inherited)) = held.take() {
        std::mem::forget(inherited);
    }
    let rt = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("zstdpool-io")
            .enable_all()
            .build()?,
    );
    *held = Some((pid, rt.clone()));
    Ok(rt)
}

/// Chooses rustls's cryptography, once per process, before a client is built: ring, or a
/// provider another library in the process installed already.
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Runs `f` to completion on the runtime, blocking the calling thread.
pub fn block_on<F: Future>(f: F) -> io::Result<F::Output> {
    Ok(runtime()?.block_on(f))
}
