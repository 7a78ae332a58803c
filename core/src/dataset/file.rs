//! One file of a dataset being written: a Parquet writer, or an IPC writer whose rows are
//! held until a record batch's worth waits, each over the sink its destination gave it.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::Result;
use crate::ipc::{IpcFormat, IpcWriter, WriterOptions};
use crate::parquet::{ParquetWriter, WriteOptions};
use crate::pool::ContextPool;
use crate::store::Upload;

use super::destination::FileSink;
use super::options::FileFormat;

/// A file completed: written in place, or uploading.
pub(super) enum Finished {
    Written(WrittenFile),
    Uploading(WrittenFile, Upload),
}

/// A file the write completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub rows: u64,
    pub bytes: u64,
}

/// A file being written.
// Both kinds are about a kilobyte (the Parquet writer some 240 bytes more), and there is one
// per file open: boxing either would add an allocation per file and save nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum OpenFile {
    Parquet(ParquetWriter<FileSink>, PathBuf),
    Ipc {
        writer: IpcWriter,
        sink: FileSink,
        scratch: Vec<u8>,
        path: PathBuf,
        /// Rows held until `min_rows_per_group` of them wait, and their count.
        held: Vec<RecordBatch>,
        held_rows: usize,
    },
}

/// The rows of each row group or record batch: at least `min` (but for a file's last), at
/// most `max`.
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupRows {
    pub(super) min: usize,
    pub(super) max: Option<usize>,
}

impl OpenFile {
    /// A file writing to `sink`, shown as `path`.
    pub(super) fn create(
        sink: FileSink,
        path: PathBuf,
        schema: &SchemaRef,
        format: &FileFormat,
        groups: GroupRows,
        pool: &ContextPool,
    ) -> Result<OpenFile> {
        Ok(match format {
            FileFormat::Parquet(options) => {
                // Files are written in parallel; each file's columns on its own thread.
                let options = WriteOptions {
                    threads: Some(1),
                    row_group_size: groups.max.unwrap_or(options.row_group_size),
                    ..options.as_ref().clone()
                };
                OpenFile::Parquet(
                    ParquetWriter::try_new(sink, schema.clone(), options, pool)?,
                    path,
                )
            }
            FileFormat::Ipc { options, .. } => {
                let options = WriterOptions {
                    format: IpcFormat::File,
                    threads: Some(1),
                    ..options.clone()
                };
                OpenFile::Ipc {
                    writer: IpcWriter::try_new(schema.clone(), options, pool)?,
                    sink,
                    scratch: Vec::new(),
                    path,
                    held: Vec::new(),
                    held_rows: 0,
                }
            }
        })
    }

    pub(super) fn rows(&self) -> u64 {
        match self {
            OpenFile::Parquet(w, _) => w.rows_written() + w.pending_rows() as u64,
            OpenFile::Ipc {
                writer, held_rows, ..
            } => writer.num_rows() + *held_rows as u64,
        }
    }

    /// Takes `batch`: a Parquet writer buffers it into row groups of its size; IPC rows are
    /// held until `groups.min` of them wait, then written in batches of at most `groups.max`.
    pub(super) fn write(&mut self, batch: &RecordBatch, groups: GroupRows) -> Result<()> {
        match self {
            OpenFile::Parquet(w, _) => w.write(batch),
            OpenFile::Ipc {
                held, held_rows, ..
            } => {
                held.push(batch.clone());
                *held_rows += batch.num_rows();
                if *held_rows >= groups.min.max(1) {
                    self.write_held(groups)?;
                }
                Ok(())
            }
        }
    }

    /// Writes the IPC rows held, as batches of at most `groups.max` rows.
    fn write_held(&mut self, groups: GroupRows) -> Result<()> {
        let OpenFile::Ipc {
            writer,
            sink,
            scratch,
            held,
            held_rows,
            ..
        } = self
        else {
            return Ok(());
        };
        if *held_rows == 0 {
            return Ok(());
        }
        let taken = std::mem::take(held);
        *held_rows = 0;
        let whole = match taken.as_slice() {
            [one] => one.clone(),
            _ => arrow_select::concat::concat_batches(taken[0].schema_ref(), &taken)?,
        };
        let step = groups.max.unwrap_or(usize::MAX).max(1);
        let mut start = 0;
        while start < whole.num_rows() {
            let n = step.min(whole.num_rows() - start);
            scratch.clear();
            writer.write(&whole.slice(start, n), scratch)?;
            std::io::Write::write_all(sink, scratch)?;
            start += n;
        }
        Ok(())
    }

    /// Hands what is buffered to the file and lets go of pooled contexts, keeping it open;
    /// fewer than `groups.min` rows stay buffered, to join the next rows.
    pub(super) fn pause(&mut self, groups: GroupRows) -> Result<()> {
        match self {
            OpenFile::Parquet(w, _) => match w.pending_rows() >= groups.min {
                true => w.flush(),
                false => Ok(()),
            },
            OpenFile::Ipc { held_rows, .. } => {
                if *held_rows >= groups.min.max(1) {
                    self.write_held(groups)?;
                }
                if let OpenFile::Ipc { writer, .. } = self {
                    writer.release_context();
                }
                Ok(())
            }
        }
    }

    /// Completes the file: renames it into place, or starts its upload.
    pub(super) fn finish(mut self, groups: GroupRows) -> Result<Finished> {
        self.write_held(groups)?;
        let rows = self.rows();
        let (sink, path) = match self {
            OpenFile::Parquet(mut w, path) => (w.finish()?, path),
            OpenFile::Ipc {
                mut writer,
                mut sink,
                mut scratch,
                path,
                ..
            } => {
                scratch.clear();
                writer.finish(&mut scratch)?;
                std::io::Write::write_all(&mut sink, &scratch)?;
                (sink, path)
            }
        };
        match sink {
            FileSink::Path(mut sink) => {
                sink.commit()?;
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                Ok(Finished::Written(WrittenFile { path, rows, bytes }))
            }
            FileSink::Object(object) => {
                let upload = object.commit_in_background()?;
                let file = WrittenFile {
                    path,
                    rows,
                    bytes: 0,
                };
                Ok(Finished::Uploading(file, upload))
            }
        }
    }
}
