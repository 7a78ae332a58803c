//! The partitioned dataset writer: batches are split by partition in Rust, each partition's
//! rows wait in memory until the input ends or the pending bytes pass their limit, and then
//! every partition's file is written on the caller's threads, all of them leasing contexts
//! from one pool: a write of a thousand partitions makes about as many contexts as it runs
//! threads. Each file goes through a `PathSink`: nothing stays under a final name unless it
//! is complete.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::partition::{Flavor, Part, Partitioner};
use crate::batch_schema::check_schema;
use crate::error::{catch_panics, path_error, Error, Result};
use crate::ipc::{Compression, IpcFormat, IpcWriter, WriterOptions};
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::parquet::{PageCodec, ParquetWriter, PerColumn, WriteOptions};
use crate::path_sink::{Beneath, Durability, PathSink};
use crate::pool::ContextPool;
use crate::store::{ObjectWriter, Store, Upload};

/// What each file of a dataset is.
#[derive(Clone, Debug)]
pub enum FileFormat {
    Parquet(Box<WriteOptions>),
    /// Arrow IPC files (Feather v2); the options' format is taken as the file format.
    /// `feather` names them `.feather`, as pyarrow names the files of `format="feather"`,
    /// else `.arrow`.
    Ipc {
        options: WriterOptions,
        feather: bool,
    },
}

impl FileFormat {
    /// The format named `name` (case-insensitive: "parquet", or "ipc", "arrow" or "feather"
    /// for Arrow IPC files), with `compression` and `level` as that format takes them.
    pub fn from_name(name: &str, compression: Option<&str>, level: Option<i64>) -> Result<Self> {
        #[derive(Clone, Copy)]
        enum Named {
            Parquet,
            Ipc,
            Feather,
        }
        let named = crate::params::choice(
            "format",
            &name.to_ascii_lowercase(),
            &[
                (&["parquet"], Named::Parquet),
                (&["ipc", "arrow"], Named::Ipc),
                (&["feather"], Named::Feather),
            ],
            false,
        )?;
        Ok(match named {
            Named::Parquet => FileFormat::Parquet(Box::new(WriteOptions {
                compression: PerColumn::all(PageCodec::from_name(compression, level)?),
                ..Default::default()
            })),
            Named::Ipc | Named::Feather => FileFormat::Ipc {
                options: WriterOptions {
                    compression: Compression::from_name(compression, level)?,
                    ..Default::default()
                },
                feather: matches!(named, Named::Feather),
            },
        })
    }

    /// The file name extension of the format's files.
    pub fn extension(&self) -> &'static str {
        match self {
            FileFormat::Parquet(_) => "parquet",
            FileFormat::Ipc { feather: true, .. } => "feather",
            FileFormat::Ipc { feather: false, .. } => "arrow",
        }
    }
}

/// What to do about files already in the base directory, as pyarrow's
/// `existing_data_behavior`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExistingData {
    /// Refuse a base directory that is not empty.
    #[default]
    Error,
    /// Write beside what is there, replacing files of the same name.
    OverwriteOrIgnore,
    /// Empty each partition directory before its first file is written.
    DeleteMatching,
}

impl ExistingData {
    /// pyarrow's `existing_data_behavior`.
    pub fn from_name(name: &str) -> Result<Self> {
        crate::params::choice(
            "existing_data_behavior",
            name,
            &[
                (&["error"], ExistingData::Error),
                (&["overwrite_or_ignore"], ExistingData::OverwriteOrIgnore),
                (&["delete_matching"], ExistingData::DeleteMatching),
            ],
            false,
        )
    }
}

/// How a dataset is written.
#[derive(Clone, Debug)]
pub struct DatasetOptions {
    /// The partition columns, outermost first.
    pub partitioning: Vec<String>,
    /// How their values name the files: Hive directories `name=value/` by default.
    pub flavor: Flavor,
    /// What a Hive directory names a null value (pyarrow's `null_fallback`); None:
    /// `__HIVE_DEFAULT_PARTITION__`.
    pub null_fallback: Option<String>,
    pub format: FileFormat,
    /// File names, with `{i}` counting from 0 in each directory (`part-{i}.parquet`).
    pub basename_template: Option<String>,
    pub existing_data: ExistingData,
    /// Files kept open at once; beyond, the least recently written is completed.
    pub max_open_files: usize,
    /// Partitions one batch may be split into (pyarrow's `max_partitions`); None: any number.
    pub max_partitions: Option<usize>,
    /// Rows per file; a partition with more is written as several files.
    pub max_rows_per_file: Option<usize>,
    /// Rows a row group (Parquet) or record batch (IPC) is given at least, but for a file's
    /// last: rows are held until that many wait, as pyarrow's `min_rows_per_group`.
    pub min_rows_per_group: usize,
    /// Rows a row group or record batch holds at most (pyarrow's `max_rows_per_group`); None
    /// keeps the Parquet options' `row_group_size` and writes IPC batches as they come.
    pub max_rows_per_group: Option<usize>,
    /// Bytes of rows waiting for their files; beyond, every partition's rows are written out.
    pub max_pending_bytes: usize,
    /// Files written at once; None chooses by size.
    pub threads: Option<usize>,
    pub durability: Durability,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            partitioning: Vec::new(),
            flavor: Flavor::Hive,
            null_fallback: None,
            format: FileFormat::Parquet(Box::default()),
            basename_template: None,
            existing_data: ExistingData::Error,
            max_open_files: 1024,
            max_partitions: None,
            max_rows_per_file: None,
            min_rows_per_group: 0,
            max_rows_per_group: None,
            max_pending_bytes: 256 << 20,
            threads: None,
            durability: Durability::Rename,
        }
    }
}

/// Where a dataset is written.
#[derive(Clone, Debug)]
pub enum Destination {
    /// A local directory.
    Local(PathBuf),
    /// Keys below `prefix` in an object store (no trailing '/'; empty for the bucket's root).
    Store { store: Store, prefix: String },
}

/// Where the files go, prepared.
enum Target {
    /// A local directory, opened once: every partition directory and file is made beneath
    /// its descriptor, without following a link. The partition directories made (and
    /// emptied, for `DeleteMatching`) so far are kept open.
    Local {
        base: PathBuf,
        base_dir: Beneath,
        prepared: HashMap<String, Beneath>,
    },
    /// An object store: files are objects, uploaded as they are completed (a small one in
    /// the background, bounded by the store's requests in flight). Partitions are prefixes;
    /// those emptied for `DeleteMatching` so far are kept.
    Store {
        store: Store,
        prefix: String,
        prepared: HashSet<String>,
        uploads: Vec<(WrittenFile, Upload)>,
    },
}

impl Target {
    /// The key of `relative` (a partition directory, or a file in one) below the prefix.
    fn key(prefix: &str, relative: &str) -> String {
        match prefix.is_empty() {
            true => relative.to_string(),
            false => format!("{prefix}/{relative}"),
        }
    }
}

/// Where a file's bytes go.
enum FileSink {
    Path(PathSink),
    Object(ObjectWriter),
}

impl std::io::Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            FileSink::Path(s) => s.write(buf),
            FileSink::Object(o) => o.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            FileSink::Path(s) => s.write_all(buf),
            FileSink::Object(o) => o.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            FileSink::Path(s) => s.flush(),
            FileSink::Object(o) => o.flush(),
        }
    }
}

/// A file completed: written in place, or uploading.
enum Finished {
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
enum OpenFile {
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
struct GroupRows {
    min: usize,
    max: Option<usize>,
}

impl OpenFile {
    /// A file writing to `sink`, shown as `path`.
    fn create(
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

    fn rows(&self) -> u64 {
        match self {
            OpenFile::Parquet(w, _) => w.rows_written() + w.pending_rows() as u64,
            OpenFile::Ipc {
                writer, held_rows, ..
            } => writer.num_rows() + *held_rows as u64,
        }
    }

    /// Takes `batch`: a Parquet writer buffers it into row groups of its size; IPC rows are
    /// held until `groups.min` of them wait, then written in batches of at most `groups.max`.
    fn write(&mut self, batch: &RecordBatch, groups: GroupRows) -> Result<()> {
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
    fn pause(&mut self, groups: GroupRows) -> Result<()> {
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
    fn finish(mut self, groups: GroupRows) -> Result<Finished> {
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
        if options.flavor == Flavor::Filename
            && options.existing_data == ExistingData::DeleteMatching
            && !options.partitioning.is_empty()
        {
            return Err(Error::Parameter(
                "existing_data_behavior=\"delete_matching\" empties the partition directories \
                 written, and filename partitioning writes none; use \"overwrite_or_ignore\" \
                 or another flavor"
                    .into(),
            ));
        }
        let template = options
            .basename_template
            .clone()
            .unwrap_or_else(|| format!("part-{{i}}.{}", options.format.extension()));
        let template = match template.split_once("{i}") {
            Some((a, b))
                if !b.contains("{i}") && !template.contains('/') && !template.contains('\\') =>
            {
                (a.to_string(), b.to_string())
            }
            _ => {
                return Err(Error::Parameter(format!(
                    "basename_template must be a file name with one {{i}} (where the file's \
                     number goes), not {template:?}"
                )))
            }
        };
        if options.max_open_files == 0 {
            return Err(Error::Parameter("max_open_files must be at least 1".into()));
        }
        if options.max_rows_per_file == Some(0) {
            return Err(Error::Parameter(
                "max_rows_per_file must be at least 1 row".into(),
            ));
        }
        if options.max_rows_per_group == Some(0) {
            return Err(Error::Parameter(
                "max_rows_per_group must be at least 1 row".into(),
            ));
        }
        if let Some(max) = options.max_rows_per_group {
            // pyarrow's wording, then the values.
            if let Some(per_file) = options.max_rows_per_file.filter(|&per_file| max > per_file) {
                return Err(Error::Parameter(format!(
                    "max_rows_per_group must be less than or equal to max_rows_per_file \
                     ({max} > {per_file})"
                )));
            }
            if options.min_rows_per_group > max {
                return Err(Error::Parameter(format!(
                    "min_rows_per_group must be less than or equal to max_rows_per_group \
                     ({} > {max})",
                    options.min_rows_per_group
                )));
            }
        }
        let target = match destination {
            Destination::Local(base) => Self::prepare_local(base, options.existing_data)?,
            Destination::Store { store, prefix } => {
                if options.existing_data == ExistingData::Error && store.any_below(&prefix)? {
                    return Err(Error::Io(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        format!(
                            "cannot write a dataset to {}: objects exist below it ({})",
                            store.url(&prefix),
                            NOT_EMPTY
                        ),
                    )));
                }
                Target::Store {
                    store,
                    prefix,
                    prepared: HashSet::new(),
                    uploads: Vec::new(),
                }
            }
        };
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

    /// Checks a local base directory for `existing` (making it if it is missing) and opens it.
    fn prepare_local(base: PathBuf, existing: ExistingData) -> Result<Target> {
        match std::fs::read_dir(&base) {
            Ok(mut entries) => {
                if existing == ExistingData::Error && entries.next().is_some() {
                    return Err(Error::Io(path_error(
                        "cannot write a dataset to",
                        &base,
                        std::io::Error::new(
                            std::io::ErrorKind::AlreadyExists,
                            format!("the directory is not empty ({NOT_EMPTY})"),
                        ),
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&base).map_err(|e| path_error("cannot create", &base, e))?
            }
            Err(e) => return Err(Error::Io(path_error("cannot write a dataset to", &base, e))),
        }
        let base_dir =
            Beneath::base(&base).map_err(|e| path_error("cannot write a dataset to", &base, e))?;
        Ok(Target::Local {
            base,
            base_dir,
            prepared: HashMap::new(),
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
            self.prepare(dir)?;
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

    /// Makes a partition's directory beneath the base directory (emptied first for
    /// `DeleteMatching`), once, and keeps it open.
    fn prepare(&mut self, dir: &str) -> Result<()> {
        let delete = self.options.existing_data == ExistingData::DeleteMatching;
        match &mut self.target {
            Target::Local {
                base,
                base_dir,
                prepared,
            } => {
                if prepared.contains_key(dir) {
                    return Ok(());
                }
                let path = base.join(dir);
                let relative = Path::new(dir);
                let opened = match (relative.parent(), relative.file_name()) {
                    (Some(parent), Some(name)) if delete => {
                        let above = base_dir.child(parent, &base.join(parent))?;
                        above
                            .remove_all(name)
                            .map_err(|e| path_error("cannot delete", &path, e))?;
                        above.child(Path::new(name), &path)?
                    }
                    _ => base_dir.child(relative, &path)?,
                };
                prepared.insert(dir.to_string(), opened);
            }
            Target::Store {
                store,
                prefix,
                prepared,
                ..
            } => {
                if prepared.contains(dir) {
                    return Ok(());
                }
                // The partition's objects, as a local partition directory is emptied; the
                // base's own objects stay, as the base directory's files stay.
                if delete && !dir.is_empty() {
                    store.delete_below(&Target::key(prefix, dir))?;
                }
                prepared.insert(dir.to_string());
            }
        }
        Ok(())
    }

    /// A new file `name` in the partition `dir`: its sink and the path it is shown as.
    fn create_file(&self, dir: &str, name: &str) -> Result<(FileSink, PathBuf)> {
        match &self.target {
            Target::Local { base, prepared, .. } => {
                let path = base.join(dir).join(name);
                let opened = prepared.get(dir).ok_or_else(|| {
                    Error::Io(path_error(
                        "cannot write",
                        &path,
                        std::io::Error::other("its directory was not prepared"),
                    ))
                })?;
                let sink = PathSink::create_beneath(
                    opened,
                    name.as_ref(),
                    &path,
                    self.options.durability,
                )?;
                Ok((FileSink::Path(sink), path))
            }
            Target::Store { store, prefix, .. } => {
                let relative = match dir.is_empty() {
                    true => name.to_string(),
                    false => format!("{dir}/{name}"),
                };
                let object = store.create(&Target::key(prefix, &relative))?;
                let path = PathBuf::from(object.shown());
                Ok((FileSink::Object(object), path))
            }
        }
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
                        let (sink, path) = self.create_file(dir, &name)?;
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

/// What `existing_data_behavior="error"` refuses, and the ways out.
const NOT_EMPTY: &str = "existing_data_behavior=\"error\"; \"overwrite_or_ignore\" writes beside \
                         what is there, \"delete_matching\" replaces the partitions written";

/// One partition, taken by one thread.
struct Task {
    dir: String,
    state: Mutex<Partition>,
}
