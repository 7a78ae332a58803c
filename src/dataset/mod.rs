//! Datasets: `write_dataset` (the core's `dataset`) and the scanner `zstdpool.dataset` reads
//! through (the core's `scan`).

pub mod scan;
pub mod write;
