//! The Parquet reader: the footer is checked and parsed at open, the Arrow schema restored from
//! `ARROW:schema` where the file has one, and columns are decoded by the parquet crate from
//! pages the decompression stage (`pages`) hands it. A whole read decodes each row group's
//! columns on the caller's threads; a batch iterator reads in order.

use std::sync::Arc;

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use ::parquet::arrow::{parquet_to_arrow_field_levels, parquet_to_arrow_schema_by_columns};
use ::parquet::arrow::{FieldLevels, ProjectionMask};
use ::parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use ::parquet::file::reader::{ChunkReader, Length};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};

use super::arrow_types::writes_given_dictionary;
use super::decompress::{Leaf, ParquetLimits, PooledRowGroups};
use super::footer::{check_footer, check_struct};
use super::source::ParquetSource;
use super::steps::{codec_name, Failure};
use crate::batch_schema::column_names;
use crate::error::{catch_panics, Error, Result};
use crate::ipc::validate::validate_columns;
use crate::parallel::{for_each_parallel, resolve_threads};
use crate::pool::ContextPool;

const MAGIC: &[u8; 4] = b"PAR1";
const ENCRYPTED_MAGIC: &[u8; 4] = b"PARE";

/// An open Parquet file (a clone shares its footer and its source).
#[derive(Clone)]
pub struct ParquetFile {
    source: ParquetSource,
    metadata: Arc<ParquetMetaData>,
    schema: SchemaRef,
    pool: ContextPool,
    limits: ParquetLimits,
    threads: Option<usize>,
    /// For each leaf column, whether it is read into a dictionary array: a top-level string
    /// or binary dictionary column's (see `readable`).
    leaves: Arc<[Leaf]>,
}

/// A Parquet footer's contents, as pyarrow's `FileMetaData` names them.
#[derive(Clone, Debug)]
pub struct FileSummary {
    pub num_rows: i64,
    pub num_columns: usize,
    pub created_by: Option<String>,
    pub format_version: i32,
    pub key_value_metadata: Vec<(String, Option<String>)>,
    pub row_groups: Vec<RowGroupSummary>,
}

#[derive(Clone, Debug)]
pub struct RowGroupSummary {
    pub num_rows: i64,
    pub total_byte_size: i64,
    pub columns: Vec<ColumnSummary>,
}

#[derive(Clone, Debug)]
pub struct ColumnSummary {
    pub path_in_schema: String,
    pub physical_type: String,
    /// pyarrow's spelling: "ZSTD", "SNAPPY", "UNCOMPRESSED"...
    pub compression: &'static str,
    pub encodings: Vec<String>,
    pub num_values: i64,
    pub total_compressed_size: i64,
    pub total_uncompressed_size: i64,
    pub has_dictionary_page: bool,
}

/// The columns a read returns, in the order asked for: each top-level column with the leaves
/// of it that were asked for.
#[derive(Clone, Debug)]
pub struct Projection {
    roots: Vec<(usize, Vec<usize>)>,
    schema: SchemaRef,
}

impl Projection {
    /// The schema of what a read with this projection returns.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

impl ParquetFile {
    /// Checks the magic bytes and the footer, and reads the schema.
    pub fn open(
        source: ParquetSource,
        limits: ParquetLimits,
        pool: &ContextPool,
        threads: Option<usize>,
    ) -> Result<Self> {
        let len = source.len();
        if len < 12 {
            return Err(Error::Parquet(format!(
                "not a Parquet file: {len} bytes is too short for the magic bytes and footer"
            )));
        }
        // The leading magic bytes of an object in a store would be a request of their own:
        // there only the footer's are checked, as parquet-cpp and the parquet crate check.
        let head = match source.requests() {
            true => bytes::Bytes::from_static(&MAGIC[..]),
            false => source.get_bytes(0, 4)?,
        };
        let tail = source.get_bytes(len - 8, 8)?;
        if &tail[4..] == ENCRYPTED_MAGIC {
            return Err(Error::Parquet(
                "the file's footer is encrypted (PARE): encrypted Parquet files are not supported"
                    .into(),
            ));
        }
        if &head[..] != MAGIC || &tail[4..] != MAGIC {
            return Err(Error::Parquet(
                "not a Parquet file: the PAR1 magic bytes are missing".into(),
            ));
        }
        let footer_len = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")) as u64;
        if footer_len > len - 12 {
            return Err(Error::Parquet(format!(
                "corrupt Parquet file: the footer's length ({footer_len} bytes) does not fit \
                 the file ({len} bytes)"
            )));
        }
        let footer = source.get_bytes(len - 8 - footer_len, footer_len as usize)?;
        check_footer(&footer)?;
        let metadata = catch_panics("reading the footer", || {
            Ok(ParquetMetaDataReader::new().parse_and_finish(&source)?)
        })
        .map_err(|e| e.at("corrupt Parquet footer"))?;
        let metadata = without_legacy_dictionary_offsets(metadata)?;
        let descr = metadata.file_metadata().schema_descr();
        for group in metadata.row_groups() {
            if group.num_columns() != descr.num_columns() {
                return Err(Error::Parquet(format!(
                    "corrupt Parquet footer: a row group has {} columns, the schema {}",
                    group.num_columns(),
                    descr.num_columns()
                )));
            }
        }
        let schema = catch_panics("reading the schema", || {
            Ok(readable(parquet_to_arrow_schema_by_columns(
                descr,
                ProjectionMask::all(),
                metadata.file_metadata().key_value_metadata(),
            )?))
        })?;
        let types = leaf_types(&schema);
        let leaves = (0..descr.num_columns())
            .map(|leaf| {
                let root = descr.get_column_root_idx(leaf);
                let as_dictionary = schema.fields().get(root).is_some_and(|f| {
                    matches!(f.data_type(), DataType::Dictionary(..))
                        && descr.column(leaf).max_rep_level() == 0
                });
                let int96_unit = match types.get(leaf) {
                    Some(DataType::Timestamp(unit, _))
                        if descr.column(leaf).physical_type() == ::parquet::basic::Type::INT96 =>
                    {
                        Some(*unit)
                    }
                    _ => None,
                };
                Leaf {
                    as_dictionary,
                    int96_unit,
                }
            })
            .collect();
        Ok(ParquetFile {
            leaves,
            source,
            metadata: Arc::new(metadata),
            schema: Arc::new(schema),
            pool: pool.clone(),
            limits,
            threads,
        })
    }

    /// The file's Arrow schema, with its metadata.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn metadata(&self) -> &Arc<ParquetMetaData> {
        &self.metadata
    }

    /// What the footer says, in plain values.
    pub fn summary(&self) -> FileSummary {
        let meta = &self.metadata;
        let fm = meta.file_metadata();
        FileSummary {
            num_rows: fm.num_rows(),
            num_columns: fm.schema_descr().num_columns(),
            created_by: fm.created_by().map(str::to_string),
            format_version: fm.version(),
            key_value_metadata: fm
                .key_value_metadata()
                .into_iter()
                .flatten()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect(),
            row_groups: meta
                .row_groups()
                .iter()
                .map(|g| RowGroupSummary {
                    num_rows: g.num_rows(),
                    total_byte_size: g.total_byte_size(),
                    columns: g
                        .columns()
                        .iter()
                        .map(|c| ColumnSummary {
                            path_in_schema: c.column_path().string(),
                            physical_type: c.column_type().to_string(),
                            compression: codec_name(&c.compression()),
                            encodings: c.encodings().map(|e| e.to_string()).collect(),
                            num_values: c.num_values(),
                            total_compressed_size: c.compressed_size(),
                            total_uncompressed_size: c.uncompressed_size(),
                            has_dictionary_page: c.dictionary_page_offset().is_some(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    pub fn num_row_groups(&self) -> usize {
        self.metadata.num_row_groups()
    }

    /// Reads the file's page index (each column chunk's column and offset index), where it
    /// has one: page statistics for pruning, and page locations with which pages a read skips
    /// are never read. Each index is checked as the footer is before the crate decodes it.
    /// Returns whether the file has one; an index that cannot be read is treated as absent
    /// (it is only an index: the file reads without it, as pyarrow reads it).
    pub fn load_page_index(&mut self) -> bool {
        self.try_load_page_index().unwrap_or(false)
    }

    fn try_load_page_index(&mut self) -> Result<bool> {
        if self.metadata.offset_index().is_some() {
            return Ok(true);
        }
        let mut any = false;
        for group in self.metadata.row_groups() {
            for chunk in group.columns() {
                for (offset, length, what) in [
                    (
                        chunk.column_index_offset(),
                        chunk.column_index_length(),
                        "column index",
                    ),
                    (
                        chunk.offset_index_offset(),
                        chunk.offset_index_length(),
                        "offset index",
                    ),
                ] {
                    let (Some(offset), Some(length)) = (offset, length) else {
                        continue;
                    };
                    let (Ok(offset), Ok(length)) = (u64::try_from(offset), usize::try_from(length))
                    else {
                        return Err(Error::Parquet(format!(
                            "corrupt Parquet footer: a {what} at {offset} of {length} bytes"
                        )));
                    };
                    check_struct(&self.source.get_bytes(offset, length)?, what)?;
                    any = true;
                }
            }
        }
        if !any {
            return Ok(false);
        }
        let metadata = catch_panics("reading the page index", || {
            let mut reader = ParquetMetaDataReader::new_with_metadata((*self.metadata).clone())
                .with_page_index_policy(PageIndexPolicy::Optional);
            reader.read_page_indexes(&self.source)?;
            Ok(reader.finish()?)
        })
        .map_err(|e| e.into_parquet().at("corrupt Parquet page index"))?;
        let has = metadata.offset_index().is_some();
        self.metadata = Arc::new(metadata);
        Ok(has)
    }

    /// The bloom filter of leaf column `leaf` in row group `group`, where the file has one.
    /// Its bytes are read through the source, which refuses a range past the file's end
    /// before allocating for it.
    ///
    /// The header's `num_bytes` must be a whole number of 32-byte blocks and equal the bitset
    /// that follows it (all of `bloom_filter_length` after the header, where the footer gives
    /// one): the parquet crate's own reader takes whatever bytes follow, and a bitset of
    /// another size hashes values into other blocks than the writer's, which would prune rows
    /// the file holds. A filter that fails the check is an error, which the scanner reads as
    /// "no filter"; a bitset of zeros is no filter either.
    pub fn bloom_filter(
        &self,
        group: usize,
        leaf: usize,
    ) -> Result<Option<::parquet::bloom_filter::Sbbf>> {
        use ::parquet::bloom_filter::{Sbbf, BITSET_MAX_LENGTH, BITSET_MIN_LENGTH};
        /// What a header takes at most when the footer gives no length: four small fields.
        const HEADER_AT_MOST: u64 = 64;
        let chunk = self.metadata.row_group(group).column(leaf);
        let Some(offset) = chunk.bloom_filter_offset() else {
            return Ok(None);
        };
        let corrupt = |why: String| Error::Parquet(format!("corrupt Parquet bloom filter: {why}"));
        let offset = u64::try_from(offset)
            .map_err(|_| corrupt(format!("its offset {offset} is negative")))?;
        let given = chunk
            .bloom_filter_length()
            .map(|n| u64::try_from(n).map_err(|_| corrupt(format!("its length {n} is negative"))))
            .transpose()?;
        let head_len =
            given.unwrap_or_else(|| HEADER_AT_MOST.min(self.source.len().saturating_sub(offset)));
        let head_len = usize::try_from(head_len)
            .map_err(|_| corrupt(format!("its length {head_len} is too large")))?;
        let bytes = self
            .source
            .get_bytes(offset, head_len)
            .map_err(|e| Error::Parquet(e.to_string()))?;
        let (num_bytes, header_len) = super::page_header::bloom_filter_header(&bytes)?;
        let num_bytes = usize::try_from(num_bytes)
            .ok()
            .filter(|n| (BITSET_MIN_LENGTH..=BITSET_MAX_LENGTH).contains(n) && n % 32 == 0)
            .ok_or_else(|| {
                corrupt(format!(
                    "its header declares a bitset of {num_bytes} bytes, not a whole number of \
                     32-byte blocks from {BITSET_MIN_LENGTH} to {BITSET_MAX_LENGTH}"
                ))
            })?;
        let bitset = match given {
            Some(_) => bytes.slice(header_len..),
            None => self
                .source
                .get_bytes(offset + header_len as u64, num_bytes)
                .map_err(|e| Error::Parquet(e.to_string()))?,
        };
        if bitset.len() != num_bytes {
            return Err(corrupt(format!(
                "its header declares a bitset of {num_bytes} bytes, and {} follow it",
                bitset.len()
            )));
        }
        // A bitset of no bit set says the chunk holds no value at all: a writer that inserted
        // one value set eight bits. Such a filter is damaged (or the chunk is all nulls, which
        // the statistics prune anyway), and would prune every row.
        if bitset.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        Ok(Some(Sbbf::new(&bitset)))
    }

    /// The columns named (top-level names, or dotted paths into nested ones), or all of them.
    pub fn projection(&self, columns: Option<&[String]>) -> Result<Projection> {
        let descr = self.metadata.file_metadata().schema_descr();
        let root_of = |leaf: usize| descr.get_column_root_idx(leaf);
        let mut roots: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut add =
            |root: usize, leaves: &[usize]| match roots.iter_mut().find(|(r, _)| *r == root) {
                Some((_, have)) => {
                    for l in leaves {
                        if !have.contains(l) {
                            have.push(*l);
                        }
                    }
                    have.sort_unstable();
                }
                None => roots.push((root, leaves.to_vec())),
            };
        match columns {
            None => {
                for root in 0..self.schema.fields().len() {
                    let leaves: Vec<usize> = (0..descr.num_columns())
                        .filter(|&l| root_of(l) == root)
                        .collect();
                    add(root, &leaves);
                }
            }
            Some(names) => {
                for name in names {
                    let leaves: Vec<usize> = match self.schema.index_of(name) {
                        Ok(root) => (0..descr.num_columns())
                            .filter(|&l| root_of(l) == root)
                            .collect(),
                        Err(_) => {
                            let parts: Vec<&str> = name.split('.').collect();
                            (0..descr.num_columns())
                                .filter(|&l| {
                                    let path = descr.column(l).path().parts().to_vec();
                                    path.len() >= parts.len()
                                        && parts.iter().zip(&path).all(|(a, b)| a == b)
                                })
                                .collect()
                        }
                    };
                    if leaves.is_empty() {
                        return Err(Error::Parameter(format!(
                            "column {name:?} is not in the file (its columns: {})",
                            column_names(&self.schema)
                        )));
                    }
                    // Every leaf of one name lies under one top-level column.
                    add(root_of(leaves[0]), &leaves);
                }
            }
        }
        let mut fields = Vec::with_capacity(roots.len());
        for (_, leaves) in &roots {
            let one = readable(parquet_to_arrow_schema_by_columns(
                descr,
                ProjectionMask::leaves(descr, leaves.iter().copied()),
                self.metadata.file_metadata().key_value_metadata(),
            )?);
            fields.push(one.field(0).clone());
        }
        Ok(Projection {
            roots,
            schema: Arc::new(Schema::new_with_metadata(
                fields,
                self.schema.metadata().clone(),
            )),
        })
    }

    fn levels(&self, leaves: impl IntoIterator<Item = usize>) -> Result<FieldLevels> {
        let descr = self.metadata.file_metadata().schema_descr();
        Ok(parquet_to_arrow_field_levels(
            descr,
            ProjectionMask::leaves(descr, leaves),
            Some(self.schema.fields()),
        )?)
    }

    fn check_row_groups(&self, row_groups: Option<&[usize]>) -> Result<Vec<usize>> {
        let n = self.num_row_groups();
        match row_groups {
            None => Ok((0..n).collect()),
            Some(groups) => groups
                .iter()
                .map(|&g| {
                    if g < n {
                        Ok(g)
                    } else {
                        Err(Error::Parameter(format!(
                            "row group {g} is out of range: the file has {n} row groups"
                        )))
                    }
                })
                .collect(),
        }
    }

    fn row_groups(&self, groups: Vec<usize>, failure: &Failure) -> PooledRowGroups {
        PooledRowGroups {
            source: self.source.clone(),
            metadata: self.metadata.clone(),
            row_groups: groups,
            pool: self.pool.clone(),
            limits: self.limits,
            failure: failure.clone(),
            leaves: self.leaves.clone(),
        }
    }

    /// Every row group asked for (all by default), one batch each, with the projection's
    /// columns decoded in parallel for a large read (on `threads`, else the file's own
    /// setting), each batch validated in full.
    pub fn read(
        &self,
        projection: &Projection,
        row_groups: Option<&[usize]>,
        threads: Option<usize>,
    ) -> Result<Vec<RecordBatch>> {
        let groups = self.check_row_groups(row_groups)?;
        // Every chunk this read decodes, asked for at once: a store fetches them with
        // concurrent, coalesced requests where page-by-page reads would be one after another.
        let chunks: Vec<std::ops::Range<u64>> = groups
            .iter()
            .flat_map(|&g| {
                let group = self.metadata.row_group(g);
                projection.roots.iter().flat_map(move |(_, leaves)| {
                    leaves
                        .iter()
                        .filter_map(move |&l| chunk_range(group.column(l)))
                })
            })
            .collect();
        self.source.prefetch(&chunks)?;
        // What was fetched is let go when this read ends, however it ends: the file may stay
        // open long after (its batches hold copies).
        struct Forget<'a>(&'a ParquetSource);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.forget_prefetched();
            }
        }
        let _forget = Forget(&self.source);
        let levels: Vec<FieldLevels> = projection
            .roots
            .iter()
            .map(|(_, leaves)| self.levels(leaves.iter().copied()))
            .collect::<Result<_>>()?;
        let tasks: Vec<(usize, usize)> = groups
            .iter()
            .flat_map(|&g| (0..projection.roots.len()).map(move |c| (g, c)))
            .collect();
        let weight = |&(g, c): &(usize, usize)| -> usize {
            let group = self.metadata.row_group(g);
            projection.roots[c]
                .1
                .iter()
                .map(|&l| group.column(l).uncompressed_size().max(0) as usize)
                .sum()
        };
        let total: usize = tasks.iter().map(weight).sum();
        let threads = resolve_threads(threads.or(self.threads), total, tasks.len())?;
        let columns = for_each_parallel(
            &tasks,
            threads,
            None,
            weight,
            || Ok(()),
            |_, _, &(g, c)| {
                let failure = Failure::default();
                let rows = self.metadata.row_group(g).num_rows().max(0) as usize;
                let name = projection.schema.field(c).name();
                catch_panics(&format!("decoding column '{name}'"), || {
                    check_decode_headroom(self.metadata.row_group(g), &projection.roots[c].1)?;
                    let data_type = projection.schema.field(c).data_type();
                    decode(
                        &levels[c],
                        &self.row_groups(vec![g], &failure),
                        rows,
                        &failure,
                        data_type,
                    )
                })
                .map_err(|e| e.at(format_args!("row group {g}, column '{name}'")))
            },
        )
        // Bytes that did not arrive are the read's error, not the decoder's account of it.
        .map_err(|e| match self.source.prefetch_failure() {
            Some(io) => Error::Io(io),
            None => e,
        })?;
        let mut batches = Vec::with_capacity(groups.len());
        let mut columns = columns.into_iter();
        for &g in &groups {
            let rows = self.metadata.row_group(g).num_rows().max(0) as usize;
            let arrays: Vec<ArrayRef> = columns.by_ref().take(projection.roots.len()).collect();
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            let batch =
                RecordBatch::try_new_with_options(projection.schema.clone(), arrays, &options)
                    .map_err(|e| {
                        Error::from(e)
                            .into_parquet()
                            .at(format_args!("row group {g}"))
                    })?;
            batches.push(
                validate_columns(batch, threads)
                    .map_err(|e| e.at(format_args!("row group {g}")))?,
            );
        }
        Ok(batches)
    }

    /// The row groups asked for (all by default), in batches of at most `batch_size` rows read
    /// in order.
    pub fn batches(
        &self,
        projection: &Projection,
        row_groups: Option<&[usize]>,
        batch_size: usize,
    ) -> Result<Batches> {
        self.selected_batches(projection, row_groups, batch_size, None)
    }

    /// As [`ParquetFile::batches`], of the rows `selection` selects in those row groups (a
    /// page none of whose rows is selected is not read where the page index is loaded).
    pub fn selected_batches(
        &self,
        projection: &Projection,
        row_groups: Option<&[usize]>,
        batch_size: usize,
        selection: Option<::parquet::arrow::arrow_reader::RowSelection>,
    ) -> Result<Batches> {
        if batch_size == 0 {
            return Err(Error::Parameter("batch_size must be at least 1 row".into()));
        }
        let groups = self.check_row_groups(row_groups)?;
        let mut leaves: Vec<usize> = projection
            .roots
            .iter()
            .flat_map(|(_, l)| l.clone())
            .collect();
        leaves.sort_unstable();
        let levels = self.levels(leaves)?;
        let failure = Failure::default();
        let inner = ParquetRecordBatchReader::try_new_with_row_groups(
            &levels,
            &self.row_groups(groups, &failure),
            batch_size,
            selection,
        )?;
        // The crate returns columns in file order; a projection may ask for another.
        let mut by_file_order: Vec<usize> = (0..projection.roots.len()).collect();
        by_file_order.sort_by_key(|&i| projection.roots[i].0);
        let mut order = vec![0; by_file_order.len()];
        for (file_pos, &i) in by_file_order.iter().enumerate() {
            order[i] = file_pos;
        }
        Ok(Batches {
            inner,
            order,
            schema: projection.schema.clone(),
            failure,
            done: false,
        })
    }
}

/// Where a column chunk's bytes lie, as the crate's `byte_range` says, but None for a footer
/// whose offset or size is negative (`byte_range` asserts on them): a range asked for ahead
/// of a read only, which the read itself then refuses.
fn chunk_range(
    chunk: &::parquet::file::metadata::ColumnChunkMetaData,
) -> Option<std::ops::Range<u64>> {
    let start = chunk
        .dictionary_page_offset()
        .unwrap_or(chunk.data_page_offset());
    let start = u64::try_from(start).ok()?;
    let len = u64::try_from(chunk.compressed_size()).ok()?;
    Some(start..start.saturating_add(len))
}

/// Checks that decoding a column of a row group can have what it allocates for certain: a page
/// decompressed, its values decoded, and levels for every value, as its footer sizes them. The
/// parquet crate allocates its decoded values infallibly, so a read too large for the memory
/// left (an address-space limit, a hostile footer) would abort the process there; asked first
/// (`headroom`), it fails as a `MemoryError` instead: a check, not a guarantee, when other
/// threads allocate meanwhile. Values that dictionaries or delta encodings expand beyond their
/// pages are measured page by page (`expansion`).
fn check_decode_headroom(group: &RowGroupMetaData, leaves: &[usize]) -> Result<()> {
    let need = decode_need(group, leaves);
    match crate::memory::headroom::can_map(need) {
        true => Ok(()),
        false => Err(Error::Memory(format!(
            "decoding needs about {need} bytes (its pages decompressed, and its values), which \
             cannot be allocated"
        ))),
    }
}

/// What decoding leaves `leaves` of a row group takes, as its footer sizes it: for each, the
/// page being decoded held decompressed, the values it decodes to (as large as the page's
/// bytes for strings and binaries, or a slot each), and each value's definition and
/// repetition levels (two bytes each). Values a dictionary repeats are counted once.
pub(crate) fn decode_need(group: &RowGroupMetaData, leaves: &[usize]) -> u64 {
    use ::parquet::basic::Type;
    let mut need = 0u64;
    for &leaf in leaves {
        let chunk = group.column(leaf);
        let slot: u64 = match chunk.column_type() {
            Type::BOOLEAN => 1,
            Type::INT32 | Type::FLOAT => 4,
            Type::INT64 | Type::DOUBLE | Type::BYTE_ARRAY => 8,
            Type::INT96 => 12,
            Type::FIXED_LEN_BYTE_ARRAY => {
                u64::try_from(chunk.column_descr().type_length()).unwrap_or(0)
            }
        };
        let values = u64::try_from(chunk.num_values()).unwrap_or(0);
        let pages = u64::try_from(chunk.uncompressed_size()).unwrap_or(0);
        need = need
            .saturating_add(pages)
            .saturating_add(pages.max(values.saturating_mul(slot)))
            .saturating_add(values.saturating_mul(4));
    }
    need
}

/// The schema the file's columns are read as: `schema`, from the file's `ARROW:schema`, with
/// every dictionary but one of strings or binaries read as its values, as pyarrow reads them
/// (pyarrow decodes the others; the parquet crate cannot decode fixed-length byte arrays or
/// booleans into a dictionary at all).
fn readable(schema: Schema) -> Schema {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| {
            let dt = super::arrow_types::map_types(f.data_type(), &|t| match t {
                // Only a dictionary of strings or binaries is read back as a dictionary, as
                // pyarrow reads them; any other as its values.
                DataType::Dictionary(_, v) if !writes_given_dictionary(t) => {
                    Some(v.as_ref().clone())
                }
                _ => None,
            });
            Arc::new(f.as_ref().clone().with_data_type(dt))
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// The types of `schema`'s leaves, in the order of the file's columns it was read from (a
/// dictionary is a leaf).
fn leaf_types(schema: &Schema) -> Vec<DataType> {
    let types = std::cell::RefCell::new(Vec::new());
    for f in schema.fields() {
        // Called on each node before its children; a leaf stops the descent.
        super::arrow_types::map_types(f.data_type(), &|t| match t {
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..)
            | DataType::Struct(_) => None,
            leaf => {
                types.borrow_mut().push(leaf.clone());
                Some(leaf.clone())
            }
        });
    }
    types.into_inner()
}

/// One column of one row group, decoded whole.
fn decode(
    levels: &FieldLevels,
    groups: &PooledRowGroups,
    rows: usize,
    failure: &Failure,
    data_type: &arrow_schema::DataType,
) -> Result<ArrayRef> {
    let reader =
        ParquetRecordBatchReader::try_new_with_row_groups(levels, groups, rows.max(1), None)?;
    let mut arrays = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| taken_back(e, failure))?;
        arrays.push(batch.column(0).clone());
    }
    match arrays.len() {
        0 => Ok(arrow_array::new_empty_array(data_type)),
        1 => Ok(arrays.pop().expect("one array")),
        _ => {
            let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        }
    }
}

/// The error a failed read reports: the decompression stage's own, with its kind, when it
/// failed; otherwise the crate's, as a Parquet error.
fn taken_back(e: ArrowError, failure: &Failure) -> Error {
    if let Some(ours) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return ours;
    }
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(ours) => *ours,
            Err(other) => Error::Parquet(other.to_string()),
        },
        ArrowError::ParquetError(m) => Error::Parquet(m),
        ArrowError::MemoryError(m) => Error::Memory(m),
        other => Error::Parquet(other.to_string()),
    }
}

/// Batches of a Parquet file, read in order.
pub struct Batches {
    inner: ParquetRecordBatchReader,
    /// For each output column, its position in what the crate returns.
    order: Vec<usize>,
    schema: SchemaRef,
    failure: Failure,
    done: bool,
}

impl Batches {
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next batch, validated in full; None at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        let next = catch_panics("decoding a batch", || {
            self.inner
                .next()
                .transpose()
                .map_err(|e| taken_back(e, &self.failure))
        });
        let batch = match next {
            Ok(Some(batch)) => batch,
            other => {
                self.done = true;
                return other;
            }
        };
        let columns = self
            .order
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .map_err(|e| Error::Parquet(e.to_string()))?;
        validate_columns(batch, 1).map(Some)
    }
}

// The reader's state is shared only through `Arc`s and the pool.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<ParquetFile>();
};

/// Whether a column chunk's dictionary page offset is one that old writers put in the footer
/// without a dictionary page there: 0 (PARQUET-816), or one past the first data page. The
/// parquet crate would start reading the chunk at that offset (at offset 0, the file's magic
/// bytes); parquet-cpp, and so pyarrow, ignores such an offset, as this reader does. A chunk
/// without data pages (an empty table's, whose data page offset pyarrow writes as 0) keeps
/// its dictionary offset.
fn legacy_dictionary_offset(c: &ColumnChunkMetaData) -> bool {
    let data = c.data_page_offset();
    matches!(c.dictionary_page_offset(), Some(o) if o <= 0 || (data > 0 && o > data))
}

/// `metadata` with every legacy dictionary page offset dropped (see
/// [`legacy_dictionary_offset`]); the chunk is then read from its first data page, where a
/// dictionary page, if there is one, still comes first and is read as one.
fn without_legacy_dictionary_offsets(metadata: ParquetMetaData) -> Result<ParquetMetaData> {
    let any = metadata
        .row_groups()
        .iter()
        .any(|g| g.columns().iter().any(legacy_dictionary_offset));
    if !any {
        return Ok(metadata);
    }
    let mut builder = metadata.into_builder();
    let mut groups = Vec::new();
    for group in builder.take_row_groups() {
        let columns = group
            .columns()
            .iter()
            .map(|c| match legacy_dictionary_offset(c) {
                true => c
                    .clone()
                    .into_builder()
                    .set_dictionary_page_offset(None)
                    .build(),
                false => Ok(c.clone()),
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        groups.push(group.into_builder().set_column_metadata(columns).build()?);
    }
    Ok(builder.set_row_groups(groups).build())
}
