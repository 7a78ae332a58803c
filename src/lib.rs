//! The Python extension `zstdpool._zstdpool`: a thin layer over `zstdpool-core`, one file per
//! family of Python objects. Every exception it raises is built in `errors`; every argument is
//! converted in `args` and its value checked or its name parsed in `params`: the core's
//! functions take typed values.

mod args;
#[macro_use]
mod doc_keywords;
#[macro_use]
mod shared_keywords;
mod batch_stream;
mod buffer;
mod bytes_output;
mod codec;
mod dataset;
mod dict;
mod errors;
mod export;
mod field_names;
mod held;
mod input;
mod io;
mod ipc;
mod lifecycle;
mod params;
mod parquet;
mod pool;
mod sink;
mod source;
mod store;
mod zstd;

use pyo3::prelude::*;

/// The compiled part of zstdpool; import `zstdpool` instead.
///
/// Safe without the GIL (free-threaded Python): every class is frozen and keeps its mutable
/// state behind a lock that is never held while waiting for the GIL or while zstd runs, the
/// pool is Sync, and module state is set once through PyOnceLock.
#[pymodule(gil_used = false)]
fn _zstdpool(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ZSTD_VERSION", zstd_version())?;
    m.add("MIN_LEVEL", zstdpool_core::context::min_level())?;
    m.add("MAX_LEVEL", zstdpool_core::context::max_level())?;
    m.add("DEFAULT_LEVEL", zstdpool_core::context::DEFAULT_LEVEL)?;
    // The object store URL schemes the core opens itself, for zstdpool._fs.
    let schemes: Vec<String> = zstdpool_core::store::schemes()
        .map(|s| format!("{s}://"))
        .collect();
    m.add(
        "_STORE_SCHEMES",
        pyo3::types::PyTuple::new(m.py(), schemes)?,
    )?;
    m.add(
        "DEFAULT_MAX_OUTPUT_SIZE",
        zstdpool_core::codec::DEFAULT_MAX_OUTPUT_SIZE,
    )?;
    m.add_class::<pool::PyContextPool>()?;
    m.add_class::<codec::PyCompressor>()?;
    m.add_class::<codec::PyDecompressor>()?;
    m.add_class::<dict::PyZstdDict>()?;
    m.add_function(wrap_pyfunction!(dict::train_dict, m)?)?;
    m.add_function(wrap_pyfunction!(dict::finalize_dict, m)?)?;
    m.add_function(wrap_pyfunction!(pool::py_default_pool, m)?)?;
    m.add_function(wrap_pyfunction!(pool::pool_stats, m)?)?;
    m.add_function(wrap_pyfunction!(pool::memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(pool::reset_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(pool::resolve_threads, m)?)?;
    m.add_function(wrap_pyfunction!(codec::compress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress_into, m)?)?;
    m.add_function(wrap_pyfunction!(codec::compressor, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompressor, m)?)?;
    m.add_function(wrap_pyfunction!(codec::compress_many, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress_many, m)?)?;
    m.add_class::<ipc::writer::PyIpcWriter>()?;
    m.add_class::<ipc::writer::PyStreamWriter>()?;
    m.add_class::<ipc::writer::PyFileWriter>()?;
    m.add_class::<ipc::reader::PyIpcStreamReader>()?;
    m.add_class::<ipc::reader::PyIpcFileReader>()?;
    m.add_function(wrap_pyfunction!(ipc::writer::write_stream, m)?)?;
    m.add_function(wrap_pyfunction!(ipc::writer::write_file, m)?)?;
    m.add_function(wrap_pyfunction!(ipc::reader::read_stream, m)?)?;
    m.add_function(wrap_pyfunction!(ipc::reader::read_file, m)?)?;
    m.add_function(wrap_pyfunction!(ipc::reader::inspect_ipc, m)?)?;
    m.add_function(wrap_pyfunction!(io::remove_stale_temp_files, m)?)?;
    m.add_class::<parquet::writer::PyParquetWriter>()?;
    m.add_function(wrap_pyfunction!(parquet::writer::write_table, m)?)?;
    m.add_class::<parquet::reader::PyParquetFile>()?;
    m.add_class::<batch_stream::PyBatchStream>()?;
    // The names each module gives the one batch stream.
    m.add("ParquetBatches", m.getattr("BatchStream")?)?;
    m.add("DatasetBatches", m.getattr("BatchStream")?)?;
    m.add_function(wrap_pyfunction!(parquet::reader::read_table, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::reader::read_schema, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::write::write_dataset, m)?)?;
    m.add_class::<dataset::scan::PyDatasetScanner>()?;
    m.add_function(wrap_pyfunction!(dataset::write::_check_dataset_options, m)?)?;
    m.add_function(wrap_pyfunction!(store::_store_list, m)?)?;
    m.add_function(wrap_pyfunction!(store::_store_delete, m)?)?;
    m.add_class::<zstd::PyZstdCompressor>()?;
    m.add_class::<zstd::PyZstdDecompressor>()?;
    m.add_function(wrap_pyfunction!(zstd::_compression_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(zstd::_decompression_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(zstd::_frame_info, m)?)?;
    m.add_function(wrap_pyfunction!(zstd::_frame_size, m)?)?;
    Ok(())
}

fn zstd_version() -> String {
    let v = zstdpool_core::context::zstd_version_number();
    format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

/// The extension counts what Rust allocates (`memory_stats()`) with the core's allocator.
#[cfg(feature = "alloc-stats")]
#[global_allocator]
static ALLOCATOR: zstdpool_core::memory::alloc::CountingAllocator =
    zstdpool_core::memory::alloc::CountingAllocator;

#[cfg(all(feature = "mimalloc", not(feature = "alloc-stats")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
