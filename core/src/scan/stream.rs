//! A dataset read as a stream: files are read a window at a time, a window holding at most
//! `readahead` bytes of what its files decode to (one file at least), so that memory is
//! bounded by what is held decoded, not by the bytes on disk. Files are opened a few ahead
//! (their footers read, on the reading threads) and weighed from their footers before a
//! window takes them; the window then reads the files it holds from where they were opened.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::files::{OpenedFile, SMALL_FILE};
use super::plan::Plan;
use super::predicate::Outcomes;
use super::scanner::{Dataset, ScanOptions};
use crate::error::Result;
use crate::parallel::available_threads;

impl Dataset {
    /// The rows the options keep, a window of files at a time: at most `readahead` bytes of
    /// what the files decode to (or one file, when it decodes to more) are read ahead of
    /// what has been taken.
    pub fn stream(self: &Arc<Self>, options: &ScanOptions, readahead: usize) -> Result<ScanStream> {
        let (plan, files) = self.planned(options)?;
        Ok(ScanStream {
            dataset: self.clone(),
            schema: plan.output.clone(),
            plan,
            files: files.into(),
            opened: VecDeque::new(),
            ready: VecDeque::new(),
            readahead: readahead.max(1),
            threads: options.threads,
        })
    }
}

/// A file opened ahead: its index, what the filter can be on it, the file, what it is
/// expected to decode to, and its weight in a window (that, but never less than its bytes on
/// disk).
struct Weighed {
    index: usize,
    outcomes: Outcomes,
    file: OpenedFile,
    decoded: usize,
    weight: usize,
}

/// A dataset's batches, read a window of files at a time.
pub struct ScanStream {
    dataset: Arc<Dataset>,
    plan: Plan,
    schema: SchemaRef,
    /// The files not opened yet, in order.
    files: VecDeque<(usize, Outcomes)>,
    /// The files opened ahead, in order.
    opened: VecDeque<Weighed>,
    ready: VecDeque<RecordBatch>,
    readahead: usize,
    threads: Option<usize>,
}

impl ScanStream {
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next batch; None at the end. After an error the stream ends.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.ready.is_empty() {
            match self.read_window() {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) => {
                    self.files.clear();
                    self.opened.clear();
                    return Err(e);
                }
            }
        }
        Ok(self.ready.pop_front())
    }

    /// Reads the next window: files in order while their weights add up to `readahead` at
    /// most (one file at least). False when no file is left.
    fn read_window(&mut self) -> Result<bool> {
        let mut window = Vec::new();
        let mut files = Vec::new();
        let mut held = 0usize;
        loop {
            if self.opened.is_empty() && !self.open_ahead()? {
                break;
            }
            let next = self.opened.front().expect("opened above").weight;
            if !window.is_empty() && held.saturating_add(next) > self.readahead {
                break;
            }
            let Weighed {
                index,
                outcomes,
                file,
                decoded,
                weight,
            } = self.opened.pop_front().expect("opened above");
            held = held.saturating_add(weight);
            window.push((index, outcomes));
            files.push((index, (file, decoded)));
        }
        if window.is_empty() {
            return Ok(false);
        }
        let read = self
            .dataset
            .read_opened(&self.plan, &window, files, self.threads)?;
        self.ready.extend(read.into_iter().flatten());
        Ok(true)
    }

    /// Opens the next files, as many as are read at once, and weighs each. False when no
    /// file is left to open.
    fn open_ahead(&mut self) -> Result<bool> {
        if self.files.is_empty() {
            return Ok(false);
        }
        // Files are opened a group at a time on the read's threads: a group of one file a
        // thread started the threads for every two files, which cost more than opening a small
        // file. A group holds at most readahead's worth of small files read whole (each at most
        // SMALL_FILE), and sixteen a thread.
        let threads = self.threads.unwrap_or_else(available_threads).max(1);
        let by_readahead = (self.readahead as u64 / SMALL_FILE).max(1) as usize;
        let n = by_readahead
            .clamp(threads, threads.saturating_mul(16))
            .clamp(1, self.files.len());
        let next: Vec<(usize, Outcomes)> = self.files.drain(..n).collect();
        let opened = self.dataset.open_files(&next, self.threads)?;
        for ((index, outcomes), mut file) in next.into_iter().zip(opened) {
            let decoded = self.dataset.decoded_bytes(&self.plan, index, &mut file)?;
            let on_disk = usize::try_from(self.dataset.file_size(index)).unwrap_or(usize::MAX);
            self.opened.push_back(Weighed {
                index,
                outcomes,
                file,
                decoded,
                weight: decoded.max(on_disk),
            });
        }
        Ok(true)
    }
}
