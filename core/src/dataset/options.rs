//! How a dataset is written: the file format, what to do about files already there, and the
//! limits of files, row groups and pending rows, checked once before anything is written.

use crate::error::{Error, Result};
use crate::ipc::WriterOptions;
use crate::parquet::WriteOptions;
use crate::path_sink::Durability;

use super::partition::Flavor;

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

impl ExistingData {}

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

impl DatasetOptions {
    /// Checks the options against each other; returns the file name template split at its
    /// `{i}`.
    pub(super) fn check(&self) -> Result<(String, String)> {
        if self.flavor == Flavor::Filename
            && self.existing_data == ExistingData::DeleteMatching
            && !self.partitioning.is_empty()
        {
            return Err(Error::Parameter(
                "existing_data_behavior=\"delete_matching\" empties the partition directories \
             written, and filename partitioning writes none; use \"overwrite_or_ignore\" \
             or another flavor"
                    .into(),
            ));
        }
        let template = self
            .basename_template
            .clone()
            .unwrap_or_else(|| format!("part-{{i}}.{}", self.format.extension()));
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
        if self.max_open_files == 0 {
            return Err(Error::Parameter("max_open_files must be at least 1".into()));
        }
        if self.max_rows_per_file == Some(0) {
            return Err(Error::Parameter(
                "max_rows_per_file must be at least 1 row".into(),
            ));
        }
        if self.max_rows_per_group == Some(0) {
            return Err(Error::Parameter(
                "max_rows_per_group must be at least 1 row".into(),
            ));
        }
        if let Some(max) = self.max_rows_per_group {
            // pyarrow's wording, then the values.
            if let Some(per_file) = self.max_rows_per_file.filter(|&per_file| max > per_file) {
                return Err(Error::Parameter(format!(
                    "max_rows_per_group must be less than or equal to max_rows_per_file \
                 ({max} > {per_file})"
                )));
            }
            if self.min_rows_per_group > max {
                return Err(Error::Parameter(format!(
                    "min_rows_per_group must be less than or equal to max_rows_per_group \
                 ({} > {max})",
                    self.min_rows_per_group
                )));
            }
        }
        Ok(template)
    }
}
