//! The descriptions of keywords that many functions and classes share, written once: each
//! macro expands to a Markdown list (one item per keyword) for a `#[doc = ...]` attribute, so
//! that the API reference says the same of `pool` wherever it appears. Those of the keywords
//! every reader and writer takes (`filesystem`, `storage_options`, `fsync`) are in
//! `shared_keywords.rs`, beside the macro that appends them.

/// `pool`, as every function that borrows contexts takes it.
macro_rules! doc_pool {
    () => {
        "- `pool`: the `ContextPool` to borrow contexts from (default: `zstdpool.default_pool()`)."
    };
}

/// The limits and threads of the IPC readers.
macro_rules! doc_ipc_read {
    () => {
        "- `max_buffer_size`: the most bytes one buffer may declare uncompressed (default \
         2^31 - 1); a larger one raises `OutputLimitError` before anything is allocated.\n\
         - `max_batch_size`: the most bytes one batch's buffers may declare together \
         (default 4 GiB).\n\
         - `threads`: how many threads decompress a large batch's buffers (None: by size)."
    };
}

/// The compression keywords of the IPC writers.
macro_rules! doc_ipc_write {
    () => {
        "- `compression`: \"zstd\" (the default, with pooled contexts), \"lz4\" or None.\n\
         - `level`: the zstd level (default 1, as pyarrow's IPC writer).\n\
         - `threads`: how many threads compress a batch's buffers (None: by size; the output \
         is the same whatever it is).\n\
         - `dictionary_deltas`: write a dictionary that grew as a delta, as pyarrow's \
         `emit_dictionary_deltas` does."
    };
}

/// What a writer does with a path sink, for the IPC writers' docstrings.
macro_rules! doc_path_sink {
    () => {
        "A path sink is written under a hidden temporary name beside it and renamed into place \
         when the output is complete, so a failed write leaves nothing under its name and a \
         crash of the process leaves the old file or the new one whole. With `fsync=True` the \
         file and its directory are synced as well: once the output is complete it survives a \
         power loss (without, as in pyarrow and polars, a power loss soon after may leave an \
         empty or partial file)."
    };
}
