//! A dataset opened for reading, and its reads: the files a read's plan (`plan`) keeps after
//! pruning (`prune`) read on several threads (each file on one, every page decompressed with
//! a pooled context: `files`), fitted to the dataset's schema (`fit`) and filtered exactly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch, RecordBatchOptions};
use arrow_schema::{FieldRef, Schema, SchemaRef};

use super::discover::{
    list_files, list_objects, partitions, DatasetFile, Discovered, Partitioning,
};
use super::files::OpenedFile;
use super::plan::Plan;
use super::predicate::{Outcomes, Predicate};
use crate::error::{catch_panics, path_error, Error, Result};
use crate::parallel::{available_threads, for_each_parallel};
use crate::parquet::{ParquetFile, ParquetLimits};
use crate::pool::ContextPool;
use crate::store::Store;

/// What is asked of the kernel beyond a file's decoded size before the file is read: room
/// for the small allocations of a read on each thread (`Dataset::read_file`).
const READ_RESERVE: u64 = 16 << 20;

/// The files a dataset reads.
#[derive(Clone, Debug)]
pub enum Sources {
    /// Every file below a directory (but those `ignore_prefixes` leave out).
    Directory {
        root: PathBuf,
        ignore_prefixes: Vec<String>,
    },
    /// These files, in this order; Hive partitions are read from their directories.
    Files(Vec<PathBuf>),
    /// Every object below `prefix` in a store (but those `ignore_prefixes` leave out).
    StorePrefix {
        store: Store,
        prefix: String,
        ignore_prefixes: Vec<String>,
    },
    /// These objects of a store, in this order.
    StoreKeys { store: Store, keys: Vec<String> },
}

/// The format of a dataset's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    /// Arrow IPC files (Feather v2).
    Ipc,
}

/// A dataset opened for reading: its files, their partitions, and the schema they read as.
pub struct Dataset {
    pub(super) found: Discovered,
    /// The store its files are objects of; None for local files.
    pub(super) store: Option<Store>,
    pub(super) format: Format,
    /// The dataset's schema: the files' columns, then the partition fields they lack.
    pub(super) schema: SchemaRef,
    pub(super) pool: ContextPool,
    pub(super) parquet_limits: ParquetLimits,
    /// The first file of a store, opened for the schema: its footer took requests that a
    /// read of it need not make again.
    pub(super) first: Option<ParquetFile>,
}

/// What a read returns and keeps.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Top-level columns, in the order returned; all by default.
    pub columns: Option<Vec<String>>,
    pub filter: Option<Predicate>,
    /// Threads reading files at once; all the machine's by default.
    pub threads: Option<usize>,
    /// The files to read, by index (what a filter the scanner cannot bound, such as a pyarrow
    /// expression, leaves after the bindings pruned by it); all by default.
    pub files: Option<Vec<usize>>,
}

impl Dataset {
    /// Finds the files of `sources` and their partitions, and takes the schema from `schema`
    /// or from the first file.
    pub fn open(
        sources: Sources,
        format: Format,
        partitioning: &Partitioning,
        schema: Option<SchemaRef>,
        pool: &ContextPool,
    ) -> Result<Dataset> {
        let mut store = None;
        let found = match sources {
            Sources::Directory {
                root,
                ignore_prefixes,
            } => {
                let files = list_files(&root, &ignore_prefixes)?;
                partitions(files, Some(&root), partitioning)?
            }
            Sources::StorePrefix {
                store: s,
                prefix,
                ignore_prefixes,
            } => {
                let files = list_objects(&s, &prefix, &ignore_prefixes)?;
                // Nothing below the prefix: it may be an object itself, read as a file.
                let one = match files.is_empty() && !prefix.is_empty() {
                    true => Some(s.size(&prefix)),
                    false => None,
                };
                store = Some(s);
                // Neither an object nor a prefix of any: missing, as a path would be.
                match one {
                    Some(Ok(size)) => {
                        partitions(vec![(PathBuf::from(&prefix), size)], None, partitioning)?
                    }
                    Some(Err(e)) => return Err(e),
                    None => partitions(files, Some(Path::new(&prefix)), partitioning)?,
                }
            }
            Sources::StoreKeys { store: s, keys } => {
                let mut files = Vec::with_capacity(keys.len());
                for k in keys {
                    let size = s.size(&k)?;
                    files.push((PathBuf::from(k), size));
                }
                store = Some(s);
                partitions(files, None, partitioning)?
            }
            Sources::Files(paths) => {
                let mut files = Vec::with_capacity(paths.len());
                for p in paths {
                    let size = std::fs::metadata(&p)
                        .map_err(|e| path_error("cannot read", &p, e))?
                        .len();
                    files.push((p, size));
                }
                partitions(files, None, partitioning)?
            }
        };
        let mut dataset = Dataset {
            found,
            store,
            format,
            schema: Arc::new(Schema::empty()),
            pool: pool.clone(),
            parquet_limits: ParquetLimits::default(),
            first: None,
        };
        let file_schema = match schema {
            Some(s) => s,
            None => match dataset.found.files.first() {
                Some(f) if dataset.store.is_some() && format == Format::Parquet => {
                    let (path, size) = (f.path.clone(), f.size);
                    let file = dataset
                        .open_parquet(&path, size, false)
                        .map_err(|e| e.at(path.display()))?;
                    let schema = file.schema().clone();
                    dataset.first = Some(file);
                    schema
                }
                Some(f) => dataset.file_schema(&f.path.clone(), f.size)?,
                None => Arc::new(Schema::empty()),
            },
        };
        let mut fields: Vec<FieldRef> = file_schema.fields().iter().cloned().collect();
        for f in dataset.found.schema.fields() {
            if file_schema.index_of(f.name()).is_err() {
                fields.push(f.clone());
            }
        }
        dataset.schema = Arc::new(Schema::new_with_metadata(
            fields,
            file_schema.metadata().clone(),
        ));
        Ok(dataset)
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The dataset with each Parquet page whose header gives a CRC checked against it
    /// (`page_checksum_verification`).
    pub fn verifying_checksums(mut self, verify: bool) -> Self {
        if self.parquet_limits.verify_checksums != verify {
            // Opened with the other limits.
            self.first = None;
        }
        self.parquet_limits.verify_checksums = verify;
        self
    }

    /// The partition fields, typed.
    pub fn partition_schema(&self) -> &SchemaRef {
        &self.found.schema
    }

    /// Each file's partition values: a row per file, a column per partition field.
    pub fn partition_table(&self) -> Result<RecordBatch> {
        let columns = (0..self.found.schema.fields().len())
            .map(|k| {
                let values: Vec<&dyn Array> =
                    self.found.values.iter().map(|v| v[k].as_ref()).collect();
                match values.is_empty() {
                    true => Ok(arrow_array::new_empty_array(
                        self.found.schema.field(k).data_type(),
                    )),
                    false => Ok(arrow_select::concat::concat(&values)?),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(self.found.files.len()));
        Ok(RecordBatch::try_new_with_options(
            self.found.schema.clone(),
            columns,
            &options,
        )?)
    }

    /// The schema a read with `options` returns.
    pub fn output_schema(&self, options: &ScanOptions) -> Result<SchemaRef> {
        Ok(self.plan(options)?.output)
    }

    /// The files' paths (for a store, "bucket/key", as pyarrow's filesystems show them).
    pub fn files(&self) -> Vec<PathBuf> {
        let shown = |f: &DatasetFile| match &self.store {
            Some(store) => PathBuf::from(store.bucket_path(&f.path.to_string_lossy())),
            None => f.path.clone(),
        };
        self.found.files.iter().map(shown).collect()
    }

    /// Reads files on `threads`; by default every core, or for a store as many as it
    /// takes requests in flight, since there each file's time is mostly its request's.
    pub(super) fn default_threads(&self) -> usize {
        match &self.store {
            Some(store) => store.max_in_flight(),
            None => available_threads(),
        }
    }

    /// Every row the options keep, in file order.
    pub fn read(&self, options: &ScanOptions) -> Result<Vec<RecordBatch>> {
        let plan = self.plan(options)?;
        let files = self.pruned(&plan);
        let per_file = self.read_files(&plan, &files, options.threads)?;
        Ok(per_file.into_iter().flatten().collect())
    }

    pub(super) fn read_files(
        &self,
        plan: &Plan,
        files: &[(usize, Outcomes)],
        threads: Option<usize>,
    ) -> Result<Vec<Vec<RecordBatch>>> {
        self.read_opened(plan, files, Vec::new(), threads)
    }

    /// `read_files`, with files already opened and weighed (`opened`: by file index, each
    /// with what it decodes to) read from where they are, the others opened as they are read.
    pub(super) fn read_opened(
        &self,
        plan: &Plan,
        files: &[(usize, Outcomes)],
        opened: Vec<(usize, (OpenedFile, usize))>,
        threads: Option<usize>,
    ) -> Result<Vec<Vec<RecordBatch>>> {
        // One file alone spreads its columns over the read's threads (its cores: a store's
        // default is requests in flight, not cores); several files take one each. A file
        // is opened for one thread, so one alone is given its threads here.
        let per_file_threads = match files.len() {
            1 => Some(threads.unwrap_or_else(available_threads).max(1)),
            _ => Some(1),
        };
        let opened: HashMap<usize, Mutex<Option<(OpenedFile, usize)>>> = opened
            .into_iter()
            .map(|(i, f)| (i, Mutex::new(Some(f))))
            .collect();
        self.for_each_file(files, threads, |i, outcomes| {
            let file = opened
                .get(&i)
                .and_then(|m| m.lock().unwrap_or_else(|p| p.into_inner()).take());
            self.read_file(plan, i, outcomes, per_file_threads, file)
        })
    }

    /// Opens files `files` on `threads` at once (their footers read), for a stream to
    /// weigh them before it reads them.
    pub(super) fn open_files(
        &self,
        files: &[(usize, Outcomes)],
        threads: Option<usize>,
    ) -> Result<Vec<OpenedFile>> {
        self.for_each_file(files, threads, |i, _| self.open_file(i))
    }

    /// The size on disk of file `i`.
    pub(super) fn file_size(&self, i: usize) -> u64 {
        self.found.files[i].size
    }

    /// `work` on each of `files`, on `threads` at once (every core by default), largest file
    /// first; a panic in a file's work is that file's error, of the dataset's format.
    pub(super) fn for_each_file<R: Send>(
        &self,
        files: &[(usize, Outcomes)],
        threads: Option<usize>,
        work: impl Fn(usize, Outcomes) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        let threads = match threads {
            Some(0) => {
                return Err(Error::Parameter(
                    "threads must be at least 1 (or None for every core)".into(),
                ))
            }
            Some(n) => n,
            None => self.default_threads(),
        }
        .min(files.len().max(1));
        for_each_parallel(
            files,
            threads,
            None,
            |&(i, _)| self.found.files[i].size as usize,
            || Ok(()),
            |_, _, &(i, outcomes)| {
                let path = &self.found.files[i].path;
                catch_panics(&format!("reading {}", path.display()), || work(i, outcomes)).map_err(
                    |e| match self.format {
                        Format::Parquet => e.into_parquet(),
                        Format::Ipc => e,
                    },
                )
            },
        )
    }

    /// Every row of file `i` the plan keeps; read from `opened` where it is open already
    /// (with what it decodes to).
    ///
    /// Before a file is decoded, what it decodes to and [`READ_RESERVE`] more are asked of
    /// the kernel (`headroom`). A read of many small files holds each one's rows while it
    /// reads the next, and no one file asks for enough to meet an address-space limit
    /// first: the small infallible allocations around a decode (Rust's and the C library's,
    /// a thread's own data) would then abort the process where this fails as MemoryError.
    pub(super) fn read_file(
        &self,
        plan: &Plan,
        i: usize,
        outcomes: Outcomes,
        threads: Option<usize>,
        opened: Option<(OpenedFile, usize)>,
    ) -> Result<Vec<RecordBatch>> {
        let path = &self.found.files[i].path;
        let (file, need) = match opened {
            Some(weighed) => weighed,
            None => {
                let mut file = self.open_file(i)?;
                let need = self.decoded_bytes(plan, i, &mut file)?;
                (file, need)
            }
        };
        if !crate::memory::headroom::can_map((need as u64).saturating_add(READ_RESERVE)) {
            return Err(Error::Memory(format!(
                "reading {} needs about {need} bytes, and {READ_RESERVE} more in reserve, which \
                 cannot be allocated",
                path.display()
            )));
        }
        let raw = match file {
            OpenedFile::Parquet(file) => self.read_parquet(plan, i, threads, file),
            OpenedFile::Ipc(reader) => self.read_ipc(plan, *reader),
        }
        .map_err(|e| e.at(path.display()))?;
        let mut out = Vec::with_capacity(raw.len());
        for batch in raw {
            let batch = self
                .conform(plan, i, batch)
                .map_err(|e| e.at(path.display()))?;
            let batch = match &plan.filter {
                Some(f) if !outcomes.keeps_all() => {
                    let keep = f.evaluate(&batch)?;
                    arrow_select::filter::filter_record_batch(&batch, &keep)?
                }
                _ => batch,
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let columns = plan
                .output
                .fields()
                .iter()
                .map(|f| batch.column_by_name(f.name()).expect("planned").clone())
                .collect();
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            out.push(RecordBatch::try_new_with_options(
                plan.output.clone(),
                columns,
                &options,
            )?);
        }
        Ok(out)
    }

    /// The rows the filter keeps (all rows without one), from the files' footers where their
    /// partitions and statistics answer, else by reading the filter's columns.
    pub fn count_rows(&self, options: &ScanOptions) -> Result<u64> {
        let threads = options.threads;
        let options = ScanOptions {
            columns: Some(Vec::new()),
            ..options.clone()
        };
        let plan = self.plan(&options)?;
        let files = self.pruned(&plan);
        let counts = self.for_each_file(&files, threads, |i, outcomes| {
            self.count_file(&plan, i, outcomes)
        })?;
        Ok(counts.into_iter().sum())
    }

    /// The rows of file `i` the plan keeps; an error names the file.
    pub(super) fn count_file(&self, plan: &Plan, i: usize, outcomes: Outcomes) -> Result<u64> {
        let path = &self.found.files[i].path;
        match self.format {
            Format::Ipc if outcomes.keeps_all() => self
                .open_ipc(path)
                .and_then(|mut r| r.count_rows())
                .map_err(|e| e.at(path.display())),
            Format::Ipc => {
                let batches = self.read_file(plan, i, outcomes, Some(1), None)?;
                Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
            }
            Format::Parquet => self
                .count_parquet(plan, i)
                .map_err(|e| e.at(path.display())),
        }
    }
}
