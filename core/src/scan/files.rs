//! A dataset's files opened and read by format: Parquet through the core's reader (a small
//! file read whole first), Arrow IPC files through the IPC reader, each weighed by what it
//! decodes to before it is read.

use std::fs::File;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};

use super::discover::DatasetFile;
use super::plan::Plan;
use super::predicate::Outcomes;
use super::scanner::{Dataset, Format};
use crate::error::{path_error, Error, Result};
use crate::ipc::decompress::ReadLimits;
use crate::ipc::reader::FileReader;
use crate::ipc::source::ReaderSource;
use crate::parquet::{ParquetFile, ParquetSource};

/// The most rows a batch of a file read on one thread holds.
const BATCH_ROWS: usize = 1 << 16;

/// Files up to this size are read whole, in one call, before their footer is parsed.
pub(super) const SMALL_FILE: u64 = 1 << 20;

impl Dataset {
    pub(super) fn file_schema(&self, path: &Path, size: u64) -> Result<SchemaRef> {
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
    pub(super) fn open_ipc(&self, path: &Path) -> Result<IpcFile> {
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

    /// Opens file `i`: its footer read (and a small file read whole).
    pub(super) fn open_file(&self, i: usize) -> Result<OpenedFile> {
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

    pub(super) fn read_parquet(
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

    pub(super) fn read_ipc(&self, plan: &Plan, mut reader: IpcFile) -> Result<Vec<RecordBatch>> {
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

    pub(super) fn count_parquet(&self, plan: &Plan, i: usize) -> Result<u64> {
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
}

/// An IPC file of a dataset, open.
pub(super) type IpcFile = FileReader<ReaderSource<Box<dyn ReadSeek>>>;

/// What an IPC file is read from: a local file, or a store's object in memory.
pub(super) trait ReadSeek: std::io::Read + std::io::Seek + Send {}

impl<T: std::io::Read + std::io::Seek + Send> ReadSeek for T {}

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
