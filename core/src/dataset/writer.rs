//! The partitioned dataset writer: batches are split by partition in Rust, each partition's
//! rows wait in memory until the input ends or the pending bytes pass their limit, and then
//! every partition's file is written on the caller's threads, all of them leasing contexts
//! from one pool: a write of a thousand partitions makes about as many contexts as it runs
//! threads. Each file goes through a `PathSink`: nothing stays under a final name unless it
//! is complete.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::destination::{Destination, Target};
use super::file::{Finished, GroupRows, OpenFile, WrittenFile};
use super::options::{DatasetOptions, ExistingData};
use super::partition::{Flavor, Part, Partitioner};
use crate::batch_schema::check_schema;
use crate::error::{catch_panics, Error, Result};
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::pool::ContextPool;

/// One partition: its rows waiting, its open file, and the number of its next file.
#[derive(Default)]
struct Partition {
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    file: Option<OpenFile>,
    next_index: usize,
    /// When it last wrote, in writes: the least recent is completed first.
    last_write: u64,
}

/// Writes one dataset.
pub struct DatasetWriter {
    target: Target,
    options: DatasetOptions,
    template: (String, String),
    schema: SchemaRef,
    partitioner: Partitioner,
    pool: ContextPool,
    partitions: HashMap<String, Partition>,
    pending_bytes: usize,
    written: Vec<WrittenFile>,
    clock: u64,
}

impl DatasetWriter {
    /// Checks the options against `schema` and prepares `base`.
    pub fn try_new(
        base: &Path,
        schema: SchemaRef,
        options: DatasetOptions,
        pool: &ContextPool,
    ) -> Result<Self> {
        Self::try_new_at(
            Destination::Local(base.to_path_buf()),
            schema,
            options,
            pool,
        )
    }

    /// Checks the options against `schema` and prepares `destination`.
    pub fn try_new_at(
        destination: Destination,
        schema: SchemaRef,
        options: DatasetOptions,
        pool: &ContextPool,
    ) -> Result<Self> {
        let mut partitioner = Partitioner::try_new(&schema, &options.partitioning, options.flavor)?;
        if let Some(null) = &options.null_fallback {
            partitioner = partitioner.with_null_name(null)?;
        }
        let template = options.check()?;
        let target = Target::open(destination, options.existing_data)?;
        Ok(DatasetWriter {
            target,
            template,
            schema,
            partitioner,
            pool: pool.clone(),
            partitions: HashMap::new(),
            pending_bytes: 0,
            written: Vec::new(),
            clock: 0,
            options,
        })
    }

    /// The files completed so far (all of them after `finish`; after a failure, those that
    /// were whole before it).
    pub fn written(&self) -> &[WrittenFile] {
        &self.written
    }

    /// Bytes of rows waiting for their files now.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// The schema of the data's files (without the partition columns).
    pub fn file_schema(&self) -> &SchemaRef {
        self.partitioner.file_schema()
    }

    /// Adds `batch`'s rows to their partitions; writes them out once the pending rows pass
    /// `max_pending_bytes`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        check_schema(&self.schema, batch.schema_ref()).map_err(Error::Parameter)?;
        let parts = catch_panics("partitioning a batch", || self.partitioner.split(batch))?;
        if let Some(max) = self.options.max_partitions.filter(|&max| parts.len() > max) {
            return Err(Error::Parameter(format!(
                "a batch would be written into {} partitions, more than max_partitions ({max})",
                parts.len()
            )));
        }
        for Part { dir, batch } in parts {
            let bytes = batch.get_array_memory_size();
            let p = self.partitions.entry(dir).or_default();
            p.pending.push(batch);
            p.pending_bytes += bytes;
            self.pending_bytes += bytes;
        }
        if self.pending_bytes > self.options.max_pending_bytes {
            self.flush(false)?;
        }
        Ok(())
    }

    /// Writes every pending row and completes every file (waiting for every upload);
    /// returns the files written.
    pub fn finish(&mut self) -> Result<Vec<WrittenFile>> {
        let flushed = self.flush(true);
        let uploaded = self.wait_for_uploads(false);
        flushed.and(uploaded)?;
        // Every file's buffers are freed by now: once for the whole dataset, not per file.
        crate::memory::trim::after_write(self.written.iter().map(|f| f.bytes).sum());
        Ok(self.written.clone())
    }

    /// Gives up after a failure (the bindings' input failed, or a write did): open files are
    /// dropped (leaving nothing under their names) and the uploads already started are waited
    /// for, so that [`written`](Self::written) lists every file there is.
    ///
    /// Returns what the failure's error should add, if anything: the multipart uploads whose
    /// abort the store did not answer, whose parts stay in the bucket, and how to remove them.
    pub fn abort(&mut self) -> Option<String> {
        for p in self.partitions.values_mut() {
            p.file = None;
            p.pending.clear();
        }
        let _ = self.wait_for_uploads(false);
        let Target::Store { store, .. } = &self.target else {
            return None;
        };
        let unaborted = store.take_unaborted();
        (!unaborted.is_empty()).then(|| {
            format!(
                "the store did not answer the abort of {} multipart upload(s), whose parts stay \
                 in the bucket until aborted: {}. List them with `aws s3api \
                 list-multipart-uploads` and remove them with `aws s3api \
                 abort-multipart-upload`, or let a lifecycle rule with \
                 AbortIncompleteMultipartUpload remove them",
                unaborted.len(),
                unaborted.join("; ")
            )
        })
    }

    /// Files completed: a written one is listed, an uploading one waits for its upload.
    fn completed(&mut self, file: Finished) {
        match (file, &mut self.target) {
            (Finished::Written(f), _) => self.written.push(f),
            (Finished::Uploading(f, upload), Target::Store { uploads, .. }) => {
                uploads.push((f, upload))
            }
            (Finished::Uploading(..), Target::Local { .. }) => {
                unreachable!("local files are written in place")
            }
        }
    }

    /// Waits for the uploads started (with `only_done`, only those that ended already),
    /// listing each that completed; returns the first failure. Each failed upload left no
    /// object.
    fn wait_for_uploads(&mut self, only_done: bool) -> Result<()> {
        let Target::Store { uploads, .. } = &mut self.target else {
            return Ok(());
        };
        let mut first_error = None;
        let mut still = Vec::new();
        for (mut file, upload) in std::mem::take(uploads) {
            if only_done && !upload.is_done() {
                still.push((file, upload));
                continue;
            }
            match upload.wait() {
                Ok(bytes) => {
                    file.bytes = bytes;
                    self.written.push(file);
                }
                Err(e) => {
                    if first_error.is_none() {
                        first_error = Some(e.at(format_args!("{}", file.path.display())));
                    }
                }
            }
        }
        *uploads = still;
        first_error.map_or(Ok(()), Err)
    }

    /// Writes the pending rows of every partition (and, with `close`, completes every file)
    /// on the caller's threads, then completes the least recently written files beyond
    /// `max_open_files`.
    fn flush(&mut self, close: bool) -> Result<()> {
        self.clock += 1;
        let dirs: Vec<String> = self
            .partitions
            .iter()
            .filter(|(_, p)| !p.pending.is_empty() || (close && p.file.is_some()))
            .map(|(d, _)| d.clone())
            .collect();
        for dir in &dirs {
            let (dir, _) = self.place(dir);
            let delete = self.options.existing_data == ExistingData::DeleteMatching;
            self.target.prepare(dir, delete)?;
        }
        let tasks: Vec<Task> = dirs
            .into_iter()
            .map(|dir| {
                let p = self.partitions.get_mut(&dir).expect("listed above");
                p.last_write = self.clock;
                Task {
                    state: Mutex::new(std::mem::take(p)),
                    dir,
                }
            })
            .collect();
        self.pending_bytes = 0;
        let result = self.run(tasks, close);
        if result.is_ok() && !close {
            self.close_beyond_limit()?;
            self.wait_for_uploads(true)?;
        }
        result
    }

    fn groups(&self) -> GroupRows {
        GroupRows {
            min: self.options.min_rows_per_group,
            max: self.options.max_rows_per_group,
        }
    }

    /// Where a partition's files go: its directory below the base, and the prefix of their
    /// names (a filename-partitioned dataset's partitions are prefixes, in the base).
    fn place<'a>(&self, partition: &'a str) -> (&'a str, &'a str) {
        match self.partitioner.flavor() {
            Flavor::Filename => ("", partition),
            _ => (partition, ""),
        }
    }

    fn file_name(&self, index: usize) -> String {
        format!("{}{index}{}", self.template.0, self.template.1)
    }

    /// Writes each task's partition in parallel. Every task runs even when one fails, so that
    /// what could be completed is, and is reported; the first failure is returned.
    fn run(&mut self, tasks: Vec<Task>, close: bool) -> Result<()> {
        let total: usize = tasks
            .iter()
            .map(|t| t.state.lock().map_or(0, |s| s.pending_bytes))
            .sum();
        // Files are many and small: their count, not only their bytes, justifies threads.
        let threads = match self.options.threads {
            Some(n) => n.min(tasks.len()).max(1),
            None => resolve_threads(None, total.max(tasks.len() << 16), tasks.len())?,
        };
        let this = &*self;
        let outcomes = for_each_parallel(
            &tasks,
            threads,
            None,
            |t| t.state.lock().map_or(0, |s| s.pending_bytes),
            || Ok(()),
            |_, _, task| Ok(this.write_partition(task, close)),
        )?;
        let mut first_error = None;
        for (task, (files, error)) in tasks.into_iter().zip(outcomes) {
            for file in files {
                self.completed(file);
            }
            let state = task.state.into_inner().unwrap_or_else(|p| p.into_inner());
            if error.is_none() {
                self.partitions.insert(task.dir, state);
            }
            if first_error.is_none() {
                first_error = error;
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Writes one partition's pending rows into its files (a new one each `max_rows_per_file`
    /// rows), completing them all with `close`. Returns the files completed and the failure,
    /// if any; a failed file is dropped, and its temporary file with it.
    fn write_partition(&self, task: &Task, close: bool) -> (Vec<Finished>, Option<Error>) {
        let mut state = task.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut done = Vec::new();
        let result = catch_panics("writing a partition", || {
            let pending = std::mem::take(&mut state.pending);
            state.pending_bytes = 0;
            for batch in pending {
                let mut rest = batch;
                while rest.num_rows() > 0 {
                    if state.file.is_none() {
                        let (dir, prefix) = self.place(&task.dir);
                        let name = format!("{prefix}{}", self.file_name(state.next_index));
                        state.next_index += 1;
                        let (sink, path) =
                            self.target
                                .create_file(dir, &name, self.options.durability)?;
                        state.file = Some(OpenFile::create(
                            sink,
                            path,
                            self.partitioner.file_schema(),
                            &self.options.format,
                            self.groups(),
                            &self.pool,
                        )?);
                    }
                    let file = state.file.as_mut().expect("just opened");
                    let room = self
                        .options
                        .max_rows_per_file
                        .map_or(usize::MAX, |max| max.saturating_sub(file.rows() as usize));
                    let n = rest.num_rows().min(room);
                    file.write(&rest.slice(0, n), self.groups())?;
                    rest = rest.slice(n, rest.num_rows() - n);
                    if room == n && self.options.max_rows_per_file.is_some() {
                        done.push(state.file.take().expect("open").finish(self.groups())?);
                    }
                }
            }
            match state.file.take() {
                Some(file) if close => done.push(file.finish(self.groups())?),
                Some(mut file) => {
                    file.pause(self.groups())?;
                    state.file = Some(file);
                }
                None => {}
            }
            Ok(())
        });
        match result {
            Ok(()) => (done, None),
            Err(e) => {
                state.file = None;
                (done, Some(e.at(format_args!("partition {:?}", task.dir))))
            }
        }
    }

    /// Completes the least recently written open files until at most `max_open_files` remain.
    fn close_beyond_limit(&mut self) -> Result<()> {
        let mut open: Vec<(u64, String)> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.file.is_some())
            .map(|(d, p)| (p.last_write, d.clone()))
            .collect();
        if open.len() <= self.options.max_open_files {
            return Ok(());
        }
        open.sort();
        let excess = open.len() - self.options.max_open_files;
        for (_, dir) in open.into_iter().take(excess) {
            let file = self.partitions.get_mut(&dir).and_then(|p| p.file.take());
            if let Some(file) = file {
                let finished = file.finish(self.groups())?;
                self.completed(finished);
            }
        }
        Ok(())
    }
}

/// One partition, taken by one thread.
struct Task {
    dir: String,
    state: Mutex<Partition>,
}
