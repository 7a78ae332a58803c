//! `zstdpool.ipc`'s classes and functions: Arrow IPC streams and files written and read with
//! pooled contexts (the core's `ipc`), and pyarrow's IPC options read into the core's settings.

pub mod options;
pub mod reader;
pub mod writer;
