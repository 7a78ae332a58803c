//! Reading a dataset: its files pruned by their partitions before any is opened, each
//! Parquet file's row groups pruned by their statistics, the rest read on several threads
//! (each file on one, every page decompressed with a pooled context), conformed to the
//! dataset's schema (a column a file lacks reads as nulls), given their partition columns
//! and filtered exactly.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::file::metadata::ParquetMetaData;

use super::bloom::BloomFilter;
use super::discover::{list_files, partitions, DatasetFile, Discovered, Partitioning};
use super::page_prune::row_selection;
use super::predicate::{repeated, ColumnFacts, Outcomes, Predicate};
use crate::batch_schema::column_names;
use crate::error::{catch_panics, path_error, Error, Result};
use crate::ipc::decompress::ReadLimits;
use crate::ipc::reader::FileReader;
use crate::ipc::source::ReaderSource;
use crate::parallel::{available_threads, for_each_parallel};
use crate::parquet::{ParquetFile, ParquetLimits, ParquetSource};
use crate::pool::ContextPool;
use crate::store::Store;

/// The most rows a batch of a file read on one thread holds.
const BATCH_ROWS: usize = 1 << 16;

/// Files up to this size are read whole, in one call, before their footer is parsed.
const SMALL_FILE: u64 = 1 << 20;

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
    found: Discovered,
    /// The store its files are objects of; None for local files.
    store: Option<Store>,
    format: Format,
    /// The dataset's schema: the files' columns, then the partition fields they lack.
    schema: SchemaRef,
    pool: ContextPool,
    parquet_limits: ParquetLimits,
    /// The first file of a store, opened for the schema: its footer took requests that a
    /// read of it need not make again.
    first: Option<ParquetFile>,
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

/// A read resolved against the dataset's schema.
pub(super) struct Plan {
    /// What the read returns.
    pub(super) output: SchemaRef,
    /// What each file is read into before it is filtered: the output's columns and the
    /// filter's, partition fields included.
    work: SchemaRef,
    filter: Option<Predicate>,
    files: Option<Vec<usize>>,
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
    fn default_threads(&self) -> usize {
        match &self.store {
            Some(store) => store.max_in_flight(),
            None => available_threads(),
        }
    }

    fn file_schema(&self, path: &Path, size: u64) -> Result<SchemaRef> {
        match self.format {
            Format::Parquet => self
                .open_parquet(path, size, false)
                .map(|f| f.schema().clone()),
            Format::Ipc => self.open_ipc(path).map(|r| r.schema()),
        }
        .map_err(|e| e.at(path.display()))
    }

    /// Opens a Parquet file of `size` bytes; with `whole`, a small file is read into memory
    /// in one call first (what reading its pages and footer one by one would cost more in
    /// calls, and for a store in requests).
    pub(super) fn open_parquet(&self, path: &Path, size: u64, whole: bool) -> Result<ParquetFile> {
        if let Some(store) = &self.store {
            // A small object is read whole even for its footer alone: one request costs
            // less than the footer's few.
            let source = store.parquet_source(&path.to_string_lossy(), Some(size))?;
            return ParquetFile::open(source, self.parquet_limits, &self.pool, Some(1));
        }
        let cannot = |e| path_error("cannot read", path, e);
        let mut file = File::open(path).map_err(cannot)?;
        let size = file.metadata().map_err(cannot)?.len();
        let source = if whole && size <= SMALL_FILE {
            let mut data = Vec::new();
            data.try_reserve_exact(size as usize)
                .map_err(|_| Error::Memory(format!("{size} bytes to read {}", path.display())))?;
            std::io::Read::read_to_end(&mut file, &mut data).map_err(cannot)?;
            ParquetSource::memory(arrow_buffer::Buffer::from_vec(data))
        } else {
            ParquetSource::file(file).map_err(cannot)?
        };
        ParquetFile::open(source, self.parquet_limits, &self.pool, Some(1))
    }

    /// Opens an IPC file; one of a store is read whole first.
    fn open_ipc(&self, path: &Path) -> Result<IpcFile> {
        let input: Box<dyn ReadSeek> = match &self.store {
            Some(store) => Box::new(std::io::Cursor::new(store.get(&path.to_string_lossy())?)),
            None => Box::new(File::open(path).map_err(|e| path_error("cannot read", path, e))?),
        };
        FileReader::try_new(
            ReaderSource::new(input),
            ReadLimits::default(),
            &self.pool,
            Some(1),
        )
    }

    fn plan(&self, options: &ScanOptions) -> Result<Plan> {
        let field = |name: &str| -> Result<FieldRef> {
            self.schema
                .field_with_name(name)
                .map(|f| Arc::new(f.clone()))
                .map_err(|_| {
                    Error::Parameter(format!(
                        "column '{name}' is not in the dataset (its columns: {})",
                        column_names(&self.schema)
                    ))
                })
        };
        let output: Vec<FieldRef> = match &options.columns {
            Some(names) => names.iter().map(|n| field(n)).collect::<Result<_>>()?,
            None => self.schema.fields().iter().cloned().collect(),
        };
        let mut work = output.clone();
        if let Some(filter) = &options.filter {
            for name in filter.columns() {
                let f = field(name).map_err(|e| match e {
                    Error::Parameter(m) => Error::Parameter(format!("filter: {m}")),
                    other => other,
                })?;
                if !work.iter().any(|w| w.name() == name) {
                    work.push(f);
                }
            }
        }
        Ok(Plan {
            output: Arc::new(Schema::new_with_metadata(
                output,
                self.schema.metadata().clone(),
            )),
            work: Arc::new(Schema::new(work)),
            filter: options.filter.clone(),
            files: match &options.files {
                Some(files) => {
                    let n = self.found.files.len();
                    if let Some(bad) = files.iter().find(|&&i| i >= n) {
                        return Err(Error::Parameter(format!(
                            "file index {bad} is out of range: the dataset has {n} files"
                        )));
                    }
                    Some(files.clone())
                }
                None => None,
            },
        })
    }

    /// The files a filter may keep rows of, judged by their partitions alone, with what the
    /// filter can be on each.
    fn pruned(&self, plan: &Plan) -> Vec<(usize, Outcomes)> {
        let all: Vec<usize>;
        let files = match &plan.files {
            Some(f) => f,
            None => {
                all = (0..self.found.files.len()).collect();
                &all
            }
        };
        let filter = plan.filter.as_ref();
        files
            .iter()
            .filter_map(|&i| {
                let outcomes = match filter {
                    None => Outcomes::TRUE,
                    Some(f) => f.outcomes(&|name| self.partition_facts(i, name, 1)),
                };
                outcomes.may_keep().then_some((i, outcomes))
            })
            .collect()
    }

    fn partition_facts(&self, file: usize, name: &str, rows: u64) -> Option<ColumnFacts> {
        let k = self.found.schema.index_of(name).ok()?;
        Some(ColumnFacts::constant(
            self.found.values[file][k].clone(),
            rows,
        ))
    }

    /// Every row the options keep, in file order.
    pub fn read(&self, options: &ScanOptions) -> Result<Vec<RecordBatch>> {
        let plan = self.plan(options)?;
        let files = self.pruned(&plan);
        let per_file = self.read_files(&plan, &files, options.threads)?;
        Ok(per_file.into_iter().flatten().collect())
    }

    fn read_files(
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

    /// Opens file `i`: its footer read (and a small file read whole).
    fn open_file(&self, i: usize) -> Result<OpenedFile> {
        if let (0, Some(first)) = (i, &self.first) {
            return Ok(OpenedFile::Parquet(first.clone()));
        }
        let DatasetFile { path, size, .. } = &self.found.files[i];
        match self.format {
            Format::Parquet => self
                .open_parquet(path, *size, true)
                .map(OpenedFile::Parquet),
            Format::Ipc => self.open_ipc(path).map(|r| OpenedFile::Ipc(Box::new(r))),
        }
        .map_err(|e| e.at(path.display()))
    }

    /// What reading file `i` is expected to take decoded, from its footer alone (see
    /// [`OpenedFile::decoded_bytes`]): the columns the plan reads, every row group.
    pub(super) fn decoded_bytes(
        &self,
        plan: &Plan,
        i: usize,
        file: &mut OpenedFile,
    ) -> Result<usize> {
        let path = &self.found.files[i].path;
        let schema = match file {
            OpenedFile::Parquet(f) => f.schema().clone(),
            OpenedFile::Ipc(r) => r.schema(),
        };
        let names = self.file_columns(plan, &schema);
        file.decoded_bytes(&names).map_err(|e| e.at(path.display()))
    }

    /// The size on disk of file `i`.
    pub(super) fn file_size(&self, i: usize) -> u64 {
        self.found.files[i].size
    }

    /// `work` on each of `files`, on `threads` at once (every core by default), largest file
    /// first; a panic in a file's work is that file's error, of the dataset's format.
    fn for_each_file<R: Send>(
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
    fn read_file(
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
        if !crate::headroom::can_map((need as u64).saturating_add(READ_RESERVE)) {
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

    /// The columns of the plan's work schema that file `i` holds, by name.
    fn file_columns<'a>(&self, plan: &'a Plan, file: &Schema) -> Vec<&'a str> {
        plan.work
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| file.index_of(n).is_ok())
            .collect()
    }

    fn read_parquet(
        &self,
        plan: &Plan,
        i: usize,
        threads: Option<usize>,
        mut file: ParquetFile,
    ) -> Result<Vec<RecordBatch>> {
        let names: Vec<String> = self
            .file_columns(plan, file.schema())
            .into_iter()
            .map(str::to_string)
            .collect();
        let kept = match &plan.filter {
            Some(f) => self.row_groups_kept(f, i, &file)?,
            None => (0..file.num_row_groups())
                .map(|g| (g, Outcomes::TRUE))
                .collect(),
        };
        if kept.is_empty() {
            return Ok(Vec::new());
        }
        let selection = self.pages_kept(plan, i, &mut file, &kept)?;
        let groups: Vec<usize> = kept.into_iter().map(|(g, _)| g).collect();
        let projection = file.projection(Some(&names))?;
        if threads != Some(1) && selection.is_none() {
            return file.read(&projection, Some(&groups), threads);
        }
        // On one thread, the row groups are decoded by one reader into batches that span
        // them: a file of many small row groups (pyarrow's dataset writer makes them) would
        // otherwise cost a reader and a batch for every column of every group.
        let metadata = file.metadata();
        let rows: usize = groups
            .iter()
            .map(|&g| metadata.row_group(g).num_rows().max(0) as usize)
            .sum();
        let mut batches = file.selected_batches(
            &projection,
            Some(&groups),
            rows.clamp(1, BATCH_ROWS),
            selection,
        )?;
        let mut out = Vec::new();
        while let Some(b) = batches.next_batch()? {
            out.push(b);
        }
        Ok(out)
    }

    fn read_ipc(&self, plan: &Plan, mut reader: IpcFile) -> Result<Vec<RecordBatch>> {
        let schema = reader.schema();
        let columns: Vec<usize> = self
            .file_columns(plan, &schema)
            .into_iter()
            .map(|n| schema.index_of(n).expect("present"))
            .collect();
        reader.project(columns)?;
        let mut out = Vec::with_capacity(reader.num_batches());
        for b in 0..reader.num_batches() {
            out.push(reader.batch(b)?);
        }
        reader.release();
        Ok(out)
    }

    /// The row groups of file `i` whose statistics (and the file's partitions) say the filter
    /// may keep a row of, with what it can be on each.
    pub(super) fn row_groups_kept(
        &self,
        filter: &Predicate,
        i: usize,
        file: &ParquetFile,
    ) -> Result<Vec<(usize, Outcomes)>> {
        let metadata = file.metadata();
        let stats = ColumnStatistics::of(filter, file.schema(), metadata);
        let mut kept = Vec::new();
        for g in 0..file.num_row_groups() {
            let rows = metadata.row_group(g).num_rows().max(0) as u64;
            let facts = |name: &str, blooms: &[(&str, Arc<BloomFilter>)]| {
                self.partition_facts(i, name, rows)
                    .filter(|_| file.schema().index_of(name).is_err())
                    .or_else(|| {
                        // Statistics bound the file's values in the file's type: they say
                        // nothing of a column the dataset reads as another type.
                        self.same_type(file.schema(), name)
                            .then(|| stats.facts(name, g, rows))
                            .flatten()
                    })
                    .map(|mut f| {
                        if let Some((_, b)) = blooms.iter().find(|(n, _)| *n == name) {
                            f.values = Some(b.clone());
                        }
                        f
                    })
            };
            let mut outcomes = filter.outcomes(&|name| facts(name, &[]));
            // Bloom filters are read only for a row group the statistics keep, and only for
            // the columns an equality or `in` compares.
            if outcomes.may_keep() {
                let blooms = stats.bloom_filters(filter, file, g);
                if !blooms.is_empty() {
                    outcomes = filter.outcomes(&|name| facts(name, &blooms));
                }
            }
            if outcomes.may_keep() {
                kept.push((g, outcomes));
            }
        }
        Ok(kept)
    }

    /// The rows of the kept row groups that the page index cannot rule out, where a filter
    /// keeps some groups only in part (the index is read only then); None to read them all.
    fn pages_kept(
        &self,
        plan: &Plan,
        i: usize,
        file: &mut ParquetFile,
        kept: &[(usize, Outcomes)],
    ) -> Result<Option<RowSelection>> {
        let Some(filter) = &plan.filter else {
            return Ok(None);
        };
        if kept.iter().all(|(_, o)| o.keeps_all()) || !file.load_page_index() {
            return Ok(None);
        }
        let schema = file.schema().clone();
        row_selection(
            filter,
            file,
            kept,
            &|name| self.same_type(&schema, name),
            &|name, rows| {
                self.partition_facts(i, name, rows)
                    .filter(|_| schema.index_of(name).is_err())
            },
        )
    }

    /// Whether column `name` has the dataset's type in a file of schema `file` (a dictionary
    /// of it counts as it).
    fn same_type(&self, file: &Schema, name: &str) -> bool {
        let values = |t: &DataType| match t {
            DataType::Dictionary(_, v) => v.as_ref().clone(),
            t => t.clone(),
        };
        match (
            file.field_with_name(name),
            self.schema.field_with_name(name),
        ) {
            (Ok(a), Ok(b)) => values(a.data_type()) == values(b.data_type()),
            _ => false,
        }
    }

    /// A batch of file `i` with the plan's work columns, in the dataset's types: a column the
    /// file lacks is null, a partition field one the file lacks is the partition's value.
    fn conform(&self, plan: &Plan, i: usize, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.work.fields().len());
        for field in plan.work.fields() {
            let name = field.name();
            let column = match batch.column_by_name(name) {
                Some(c) => c.clone(),
                None => match self.found.schema.index_of(name) {
                    Ok(k) => repeated(&self.found.values[i][k], rows)?,
                    Err(_) => new_null_array(field.data_type(), rows),
                },
            };
            let column = if column.data_type() != field.data_type() {
                let options = arrow_cast::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow_cast::cast_with_options(&column, field.data_type(), &options).map_err(
                    |e| {
                        Error::Parameter(format!(
                            "column '{name}' is {} in {}, and cannot be read as the \
                             dataset's {}: {e}",
                            column.data_type(),
                            self.found.files[i].path.display(),
                            field.data_type()
                        ))
                    },
                )?
            } else {
                column
            };
            columns.push(column);
        }
        // A field declared non-nullable that a file lacks reads as nulls all the same.
        let fields: Vec<Field> = plan
            .work
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| {
                f.as_ref()
                    .clone()
                    .with_nullable(f.is_nullable() || c.null_count() > 0)
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &options,
        )?)
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
    fn count_file(&self, plan: &Plan, i: usize, outcomes: Outcomes) -> Result<u64> {
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

    fn count_parquet(&self, plan: &Plan, i: usize) -> Result<u64> {
        let DatasetFile { path, size, .. } = &self.found.files[i];
        let mut file = self.open_parquet(path, *size, false)?;
        let Some(filter) = &plan.filter else {
            return Ok(file.metadata().file_metadata().num_rows().max(0) as u64);
        };
        let groups = self.row_groups_kept(filter, i, &file)?;
        let mut rows = 0u64;
        let mut to_read = Vec::new();
        for (g, o) in groups {
            if o.keeps_all() {
                rows += file.metadata().row_group(g).num_rows().max(0) as u64;
            } else {
                to_read.push((g, o));
            }
        }
        if !to_read.is_empty() {
            let names: Vec<String> = self
                .file_columns(plan, file.schema())
                .into_iter()
                .map(str::to_string)
                .collect();
            let selection = self.pages_kept(plan, i, &mut file, &to_read)?;
            let groups: Vec<usize> = to_read.iter().map(|(g, _)| *g).collect();
            let projection = file.projection(Some(&names))?;
            let mut batches =
                file.selected_batches(&projection, Some(&groups), BATCH_ROWS, selection)?;
            while let Some(batch) = batches.next_batch()? {
                let batch = self.conform(plan, i, batch)?;
                let keep = filter.evaluate(&batch)?;
                rows += keep.true_count() as u64;
            }
        }
        Ok(rows)
    }

    /// The plan and the files a read of `options` reads, in order, for a stream.
    pub(super) fn planned(&self, options: &ScanOptions) -> Result<(Plan, Vec<(usize, Outcomes)>)> {
        let plan = self.plan(options)?;
        let files = self.pruned(&plan);
        Ok((plan, files))
    }
}

/// What an IPC file is read from: a local file, or a store's object in memory.
pub(super) trait ReadSeek: std::io::Read + std::io::Seek + Send {}

impl<T: std::io::Read + std::io::Seek + Send> ReadSeek for T {}

/// An IPC file of a dataset, open.
pub(super) type IpcFile = FileReader<ReaderSource<Box<dyn ReadSeek>>>;

/// A file of a dataset, opened (its footer read) before it is read.
pub(super) enum OpenedFile {
    Parquet(ParquetFile),
    Ipc(Box<IpcFile>),
}

impl OpenedFile {
    /// What reading the top-level columns `names` is expected to take decoded, from the
    /// footer alone, since the bytes on disk say nothing of it (a file of zeros compresses a
    /// thousandfold): for Parquet what the reader's headroom check asks for decoding each
    /// row group; for IPC the Arrow widths of each row, plus the file's body bytes. An
    /// estimate, not a bound: a dictionary's values repeated by its indices count once.
    fn decoded_bytes(&mut self, names: &[&str]) -> Result<usize> {
        match self {
            OpenedFile::Parquet(file) => Ok(parquet_decoded_bytes(file, names)),
            OpenedFile::Ipc(reader) => {
                let rows = usize::try_from(reader.count_rows()?).unwrap_or(usize::MAX);
                let schema = reader.schema();
                let per_row: usize = names
                    .iter()
                    .filter_map(|n| schema.field_with_name(n).ok())
                    .map(|f| arrow_width(f.data_type()))
                    .sum();
                Ok(rows
                    .saturating_mul(per_row)
                    .saturating_add(usize::try_from(reader.body_bytes()).unwrap_or(usize::MAX)))
            }
        }
    }
}

/// What decoding the leaves of top-level columns `names` of every row group takes, as the
/// Parquet reader's own headroom check sizes it ([`crate::parquet::decode_need`]).
fn parquet_decoded_bytes(file: &ParquetFile, names: &[&str]) -> usize {
    let metadata = file.metadata();
    let descr = metadata.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&l| names.contains(&descr.get_column_root(l).name()))
        .collect();
    let need = metadata
        .row_groups()
        .iter()
        .map(|group| crate::parquet::decode_need(group, &leaves))
        .fold(0u64, u64::saturating_add);
    usize::try_from(need).unwrap_or(usize::MAX)
}

/// Bytes a row of `data_type` takes in Arrow's layout, besides its validity bit: its width,
/// a variable-length type's offset (or view), a nested type's children.
fn arrow_width(data_type: &DataType) -> usize {
    if let Some(width) = data_type.primitive_width() {
        return width;
    }
    match data_type {
        DataType::Boolean | DataType::Null => 0,
        DataType::Utf8 | DataType::Binary | DataType::List(_) | DataType::Map(..) => 4,
        DataType::LargeUtf8 | DataType::LargeBinary | DataType::LargeList(_) => 8,
        DataType::Utf8View | DataType::BinaryView => 16,
        DataType::ListView(_) => 8,
        DataType::LargeListView(_) => 16,
        DataType::FixedSizeBinary(n) => usize::try_from(*n).unwrap_or(0),
        DataType::FixedSizeList(child, n) => {
            arrow_width(child.data_type()).saturating_mul(usize::try_from(*n).unwrap_or(0))
        }
        DataType::Struct(fields) => fields.iter().map(|f| arrow_width(f.data_type())).sum(),
        DataType::Dictionary(key, _) => arrow_width(key),
        DataType::RunEndEncoded(_, values) => arrow_width(values.data_type()),
        _ => 8,
    }
}

/// Every object below `prefix`, with the names starting with one of `ignore` left out at
/// every depth below it, sorted by key (as [`list_files`] sorts paths).
fn list_objects(store: &Store, prefix: &str, ignore: &[String]) -> Result<Vec<(PathBuf, u64)>> {
    let listed = store.list(prefix)?;
    let below = |key: &str| -> String {
        match prefix.is_empty() {
            true => key.to_string(),
            false => key
                .strip_prefix(prefix)
                .map_or(key, |k| k.trim_start_matches('/'))
                .to_string(),
        }
    };
    Ok(listed
        .into_iter()
        .filter(|(key, _)| {
            !below(key).split('/').any(|name| {
                ignore
                    .iter()
                    .any(|p| !p.is_empty() && name.starts_with(p.as_str()))
            })
        })
        .map(|(key, size)| (PathBuf::from(key), size))
        .collect())
}

/// Whether the minimum and maximum of leaf `leaf` in `group` order values as the column's type
/// does. The deprecated `min` and `max` fields (written where `min_value` and `max_value` are
/// not) were ordered as signed bytes by old writers: wrong for strings, binaries and unsigned
/// or decimal values, which pyarrow ignores them for too.
fn min_max_trusted(group: &parquet::file::metadata::RowGroupMetaData, leaf: usize) -> bool {
    use parquet::basic::{LogicalType, Type};
    let chunk = group.column(leaf);
    let Some(stats) = chunk.statistics() else {
        return true;
    };
    if !stats.is_min_max_deprecated() {
        return true;
    }
    let descr = chunk.column_descr();
    let unsigned = match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => !int.is_signed,
        Some(LogicalType::Decimal { .. }) => true,
        _ => false,
    };
    !(unsigned
        || matches!(
            chunk.column_type(),
            Type::BYTE_ARRAY | Type::FIXED_LEN_BYTE_ARRAY
        ))
}

/// The statistics of the filter's columns, for every row group of a file: arrays of minima,
/// maxima and null counts by row group, read from the footer by the parquet crate.
struct ColumnStatistics {
    /// By column name: minima and maxima by row group, and null counts where the footer
    /// has them; None where the crate cannot read the column's statistics.
    columns: Vec<(String, Option<GroupStatistics>)>,
}

struct GroupStatistics {
    mins: ArrayRef,
    maxes: ArrayRef,
    nulls: Option<arrow_array::UInt64Array>,
    /// By row group, whether its minimum and maximum can be trusted.
    trusted: Vec<bool>,
    /// The column's leaf, Arrow type and physical type (what its bloom filter hashes).
    leaf: usize,
    data_type: arrow_schema::DataType,
    physical: parquet::basic::Type,
}

impl ColumnStatistics {
    fn of(filter: &Predicate, schema: &SchemaRef, metadata: &Arc<ParquetMetaData>) -> Self {
        let descr = metadata.file_metadata().schema_descr();
        let groups = metadata.row_groups();
        let columns = filter
            .columns()
            .into_iter()
            .map(|name| {
                // A null count the footer lacks is unknown, not zero: `is null` must not prune.
                let stats = StatisticsConverter::try_new(name, schema, descr)
                    .ok()
                    .map(|c| c.with_missing_null_counts_as_zero(false))
                    .filter(|c| c.parquet_column_index().is_some())
                    .and_then(|c| {
                        let mins = c.row_group_mins(groups.iter()).ok()?;
                        let maxes = c.row_group_maxes(groups.iter()).ok()?;
                        let nulls = c.row_group_null_counts(groups.iter()).ok();
                        let leaf = c.parquet_column_index()?;
                        let trusted = groups.iter().map(|g| min_max_trusted(g, leaf)).collect();
                        Some(GroupStatistics {
                            mins,
                            maxes,
                            nulls,
                            trusted,
                            leaf,
                            data_type: c.arrow_field().data_type().clone(),
                            physical: descr.column(leaf).physical_type(),
                        })
                    });
                (name.to_string(), stats)
            })
            .collect();
        ColumnStatistics { columns }
    }

    fn facts(&self, name: &str, group: usize, rows: u64) -> Option<ColumnFacts> {
        let (_, stats) = self.columns.iter().find(|(n, _)| n == name)?;
        let GroupStatistics {
            mins, maxes, nulls, ..
        } = stats.as_ref()?;
        let trusted = stats.as_ref()?.trusted.get(group).copied().unwrap_or(false);
        // A NaN bound (a writer that let NaN into its statistics) bounds nothing.
        let bound = |a: &ArrayRef| {
            (trusted && group < a.len() && a.is_valid(group))
                .then(|| a.slice(group, 1))
                .filter(|b| !super::predicate::is_nan(b))
        };
        Some(ColumnFacts {
            min: bound(mins),
            max: bound(maxes),
            null_count: nulls
                .as_ref()
                .filter(|n| group < n.len() && n.is_valid(group))
                .map(|n| n.value(group)),
            rows,
            values: None,
        })
    }

    /// The bloom filters of row group `group` for the columns `filter` compares for equality
    /// (or `in`), where the file has them.
    /// A bloom filter that cannot be read prunes nothing (it is only an index: pyarrow reads
    /// such a file too).
    fn bloom_filters<'a>(
        &self,
        filter: &'a Predicate,
        file: &ParquetFile,
        group: usize,
    ) -> Vec<(&'a str, Arc<BloomFilter>)> {
        let mut out = Vec::new();
        for name in filter.equality_columns() {
            let Some((_, Some(stats))) = self.columns.iter().find(|(n, _)| n == name) else {
                continue;
            };
            if let Ok(Some(bloom)) = file.bloom_filter(group, stats.leaf) {
                out.push((
                    name,
                    Arc::new(BloomFilter {
                        filter: bloom,
                        data_type: stats.data_type.clone(),
                        physical: stats.physical,
                    }),
                ));
            }
        }
        out
    }
}
