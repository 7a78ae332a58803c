//! Object stores (S3-compatible storage, Google Cloud Storage) through arrow-rs's
//! `object_store`: a store is opened from a URL and options as polars, delta-rs and obstore
//! take them, and its requests run on the core's own runtime ([`runtime`]) without the
//! caller's lock. Uploads are bounded in flight by one semaphore per store, so that a write
//! of a thousand small files keeps many requests going without holding more than that many
//! files in memory.

pub mod blocking;
pub mod runtime;
mod writer;

use std::collections::HashSet;
use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt as _, RetryConfig};
use tokio::sync::Semaphore;

pub use writer::{ObjectWriter, Upload};

use crate::error::{catch_panics, Error, Result};
use crate::parquet::{ParquetSource, ReadAt};
use runtime::block_on;

/// Requests in flight at once by default: polars' and obstore's figure, and where a store's
/// per-connection latency stops being what limits a write of many small files.
pub const DEFAULT_IN_FLIGHT: usize = 32;

/// Bytes of a file held before its upload becomes a multipart upload, and the size of each
/// part (S3 takes parts of 5 MiB at least).
pub const DEFAULT_PART_SIZE: usize = 10 << 20;

/// A store's options that are the client's rather than the store's: they are taken out of
/// `storage_options` before the rest go to `object_store`'s builder.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub max_in_flight: usize,
    pub part_size: usize,
    pub retry: RetryConfig,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            max_in_flight: DEFAULT_IN_FLIGHT,
            part_size: DEFAULT_PART_SIZE,
            retry: RetryConfig::default(),
        }
    }
}

/// A store's identity in the cache: the process, scheme, bucket and options.
type StoreKey = (u32, String, String, Vec<(String, String)>);

/// The stores opened, the most recent last.
static OPENED: std::sync::Mutex<Vec<(StoreKey, Store)>> = std::sync::Mutex::new(Vec::new());

/// How many stores the cache keeps: a process reaches a few buckets, with few sets of options.
const KEPT_STORES: usize = 16;

struct Inner {
    store: Arc<dyn ObjectStore>,
    /// What keys are shown under in messages: "s3://bucket/".
    root: String,
    /// What keys are shown under as pyarrow's filesystems show paths: "bucket/" (a
    /// filesystem object's own root for [`Store::over_filesystem`]).
    shown_root: String,
    options: ClientOptions,
    in_flight: Arc<Semaphore>,
    /// Multipart uploads whose abort the store did not answer, with why: their parts stay
    /// in the bucket. Taken by whoever reports the write's failure ([`Store::take_unaborted`]).
    unaborted: std::sync::Mutex<Vec<String>>,
}

/// An opened object store (one bucket), shared by every file a write or read makes.
#[derive(Clone)]
pub struct Store(Arc<Inner>);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.0.root)
    }
}

/// A number of `storage_options`, named in the message when it is not one.
fn option_number(key: &str, value: &str) -> Result<u64> {
    value.trim().parse::<u64>().map_err(|_| {
        Error::Parameter(format!(
            "storage_options[{key:?}] must be a whole number, not {value:?}"
        ))
    })
}

/// A duration of `storage_options`: seconds, or a number with "ms", "s" or "m".
fn option_duration(key: &str, value: &str) -> Result<Duration> {
    let v = value.trim();
    let (number, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else {
        (v, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(Duration::from_secs_f64(n * scale)),
        _ => Err(Error::Parameter(format!(
            "storage_options[{key:?}] must be a duration (seconds, or \"500ms\", \"30s\", \
             \"2m\"), not {value:?}"
        ))),
    }
}

/// The kinds of store zstdpool opens itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    S3,
    Gcs,
}

/// The URL schemes opened natively, each with its store: the one list of them (the bindings
/// and `zstdpool._fs` take theirs from here).
const SCHEMES: &[(&str, Kind)] = &[
    ("s3", Kind::S3),
    ("s3a", Kind::S3),
    ("gs", Kind::Gcs),
    ("gcs", Kind::Gcs),
];

/// The schemes opened natively ("s3", ...).
pub fn schemes() -> impl Iterator<Item = &'static str> {
    SCHEMES.iter().map(|(s, _)| *s)
}

/// Whether `url` names an object of a store opened natively ("s3://...", any case).
pub fn is_store_url(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(scheme, _)| kind(scheme).is_some())
}

fn kind(scheme: &str) -> Option<Kind> {
    SCHEMES
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(scheme))
        .map(|(_, k)| *k)
}

/// Splits "s3://bucket/prefix/" into ("s3", "bucket", "prefix").
fn split_url(url: &str) -> Result<(String, &str, &str)> {
    let bad = |why: &str| Error::Parameter(format!("{why}: {url:?}"));
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("an object store URL starts with a scheme such as s3://"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("the URL names no bucket"));
    }
    Ok((
        scheme.to_ascii_lowercase(),
        bucket,
        prefix.trim_matches('/'),
    ))
}

/// The key `path` names in a store, checked as `object_store` takes keys (no empty, "." or
/// ".." segment, no control character), without re-encoding it: Hive values are already
/// escaped with '%'.
pub fn key(path: &str) -> Result<Key> {
    Key::parse(path)
        .map_err(|e| Error::Parameter(format!("{path:?} cannot be an object's key: {e}")))
}

impl Store {
    /// The store `url` ("s3://bucket/prefix", "gs://bucket/prefix"; "s3a" and "gcs" as
    /// aliases) names, configured by `options` (object_store's keys: "endpoint", "region",
    /// "access_key_id", "allow_http", ...; AWS_* and GOOGLE_* environment variables fill in
    /// what they leave out) and the client's own keys ("max_in_flight", "part_size",
    /// "max_retries", "retry_timeout"). The timeouts take object_store's and pyarrow's names:
    /// "timeout" or "request_timeout" for each request (object_store's 30 s by default),
    /// "connect_timeout" for a connection (5 s); a request that fails or times out is tried
    /// again up to "max_retries" times (10) within "retry_timeout" (180 s). Returns the store
    /// and the URL's prefix. Nothing is requested yet.
    ///
    /// Stores are kept by bucket and options, per process: a client's TLS set-up and its
    /// connections are made once, not on every write or read (a child process after a fork
    /// makes its own, as the runtime's threads are not in it).
    pub fn open(url: &str, options: &[(String, String)]) -> Result<(Store, String)> {
        runtime::install_crypto();
        let (scheme, bucket, prefix) = split_url(url)?;
        // The environment fills in what the options leave out: it is part of the identity.
        let mut sorted = options.to_vec();
        sorted.extend(std::env::vars().filter(|(k, _)| {
            k.starts_with("AWS_") || k.starts_with("GOOGLE_") || k.starts_with("GCS_")
        }));
        sorted.sort();
        let cache_key = (std::process::id(), scheme, bucket.to_string(), sorted);
        let mut cache = OPENED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = cache.iter().find(|(k, _)| *k == cache_key).map(|(_, s)| s) {
            return Ok((store.clone(), prefix.to_string()));
        }
        let (store, prefix) =
            catch_panics("opening an object store", || Self::open_inner(url, options))?;
        cache.retain(|((pid, ..), _)| *pid == cache_key.0);
        if cache.len() >= KEPT_STORES {
            cache.remove(0);
        }
        cache.push((cache_key, store.clone()));
        Ok((store, prefix))
    }

    fn open_inner(url: &str, options: &[(String, String)]) -> Result<(Store, String)> {
        let (scheme, bucket, prefix) = split_url(url)?;
        let mut client = ClientOptions::default();
        let mut rest = Vec::new();
        let mut endpoint_http = false;
        let mut allow_http_given = false;
        for (k, v) in options {
            let lower = k.to_ascii_lowercase();
            match lower.as_str() {
                "max_in_flight" => {
                    client.max_in_flight = option_number(k, v)?.max(1) as usize;
                }
                "part_size" => {
                    let n = option_number(k, v)? as usize;
                    if n < 5 << 20 {
                        return Err(Error::Parameter(format!(
                            "storage_options[{k:?}] must be at least 5 MiB (5242880), the \
                             smallest part S3 takes, not {v}"
                        )));
                    }
                    client.part_size = n;
                }
                "max_retries" => client.retry.max_retries = option_number(k, v)? as usize,
                "retry_timeout" => client.retry.retry_timeout = option_duration(k, v)?,
                // Each request's timeout, by object_store's name ("timeout") or pyarrow's
                // S3FileSystem's ("request_timeout"), and the connection's: seconds as
                // pyarrow gives them, or a duration with its unit, as object_store does.
                "timeout" | "request_timeout" | "connect_timeout" => {
                    let name = if lower == "connect_timeout" {
                        "connect_timeout"
                    } else {
                        "timeout"
                    };
                    let millis = option_duration(k, v)?.as_millis();
                    rest.push((name.to_string(), format!("{millis}ms")));
                }
                _ => {
                    if lower.ends_with("endpoint") || lower.ends_with("endpoint_url") {
                        endpoint_http = v.starts_with("http://");
                    }
                    allow_http_given |= lower.ends_with("allow_http");
                    rest.push((k.clone(), v.clone()));
                }
            }
        }
        // An endpoint given as http:// says plainly that the store is reached without TLS.
        let env_endpoint = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
            .iter()
            .find_map(|k| std::env::var(k).ok());
        endpoint_http |= kind(&scheme) == Some(Kind::S3)
            && env_endpoint.is_some_and(|e| e.starts_with("http://"))
            && !options
                .iter()
                .any(|(k, _)| k.to_ascii_lowercase().contains("endpoint"));
        if endpoint_http && !allow_http_given {
            rest.push(("allow_http".into(), "true".into()));
        }
        let unknown = |k: &str, e: &dyn std::fmt::Display| {
            Error::Parameter(format!(
                "storage_options has a key {k:?} that {scheme}:// does not take ({e})"
            ))
        };
        let store: Arc<dyn ObjectStore> = match kind(&scheme) {
            Some(Kind::S3) => {
                let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
                for (k, v) in &rest {
                    let key: AmazonS3ConfigKey =
                        k.to_ascii_lowercase().parse().map_err(|e| unknown(k, &e))?;
                    b = b.with_config(key, v);
                }
                Arc::new(
                    b.with_retry(client.retry.clone())
                        .build()
                        .map_err(|e| Error::Parameter(format!("cannot open {url}: {e}")))?,
                )
            }
            Some(Kind::Gcs) => {
                let mut b = GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket);
                for (k, v) in &rest {
                    let key: GoogleConfigKey =
                        k.to_ascii_lowercase().parse().map_err(|e| unknown(k, &e))?;
                    b = b.with_config(key, v);
                }
                Arc::new(
                    b.with_retry(client.retry.clone())
                        .build()
                        .map_err(|e| Error::Parameter(format!("cannot open {url}: {e}")))?,
                )
            }
            None => {
                return Err(Error::Parameter(format!(
                    "{scheme}:// is not an object store zstdpool opens itself (s3:// and gs:// \
                     are); pass a pyarrow or fsspec filesystem as filesystem= for others"
                )))
            }
        };
        Ok((
            Store::new(
                store,
                format!("{scheme}://{bucket}/"),
                format!("{bucket}/"),
                client,
            ),
            prefix.to_string(),
        ))
    }

    fn new(
        store: Arc<dyn ObjectStore>,
        root: String,
        shown_root: String,
        options: ClientOptions,
    ) -> Store {
        Store(Arc::new(Inner {
            store,
            root,
            shown_root,
            in_flight: Arc::new(Semaphore::new(options.max_in_flight)),
            options,
            unaborted: Default::default(),
        }))
    }

    /// A store in this process's memory ("memory://"), for tests of what writes and reads
    /// stores without a server.
    pub fn in_memory(options: ClientOptions) -> Store {
        let store = Arc::new(object_store::memory::InMemory::new());
        Store::new(store, "memory:///".into(), "/".into(), options)
    }

    /// A filesystem reached through blocking calls (a pyarrow or fsspec filesystem object),
    /// as a store: its keys are paths below `root` ("" or "/"), shown as `root` + key.
    pub fn over_filesystem(
        fs: Arc<dyn blocking::BlockingFs>,
        root: &str,
        options: ClientOptions,
    ) -> Store {
        let store = Arc::new(blocking::BlockingStore::new(fs));
        Store::new(store, root.to_string(), root.to_string(), options)
    }

    /// `key` as a URL, for messages.
    pub fn url(&self, key: &str) -> String {
        format!("{}{key}", self.0.root)
    }

    /// `key` as pyarrow's filesystems show paths ("bucket/key").
    pub fn bucket_path(&self, key: &str) -> String {
        format!("{}{key}", self.0.shown_root)
    }

    pub fn max_in_flight(&self) -> usize {
        self.0.options.max_in_flight
    }

    /// Notes that the multipart upload of `key` could not be aborted, and why.
    pub(crate) fn note_unaborted(&self, key: &str, why: impl std::fmt::Display) {
        let mut unaborted = self.0.unaborted.lock().unwrap_or_else(|p| p.into_inner());
        unaborted.push(format!("{} ({why})", self.url(key)));
    }

    /// The multipart uploads noted since the last call whose abort the store did not answer:
    /// their parts stay in the bucket until something aborts them.
    pub fn take_unaborted(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.unaborted.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// An object store error as an I/O error naming what was done to which key: a missing
    /// key or bucket is `NotFound`, refused credentials `PermissionDenied`.
    fn error(&self, action: &str, key: &str, e: object_store::Error) -> Error {
        use object_store::Error as E;
        let kind = match &e {
            E::NotFound { .. } => io::ErrorKind::NotFound,
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
                io::ErrorKind::PermissionDenied
            }
            E::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
            _ => io::ErrorKind::Other,
        };
        // S3's answers, where object_store reports a listing's failure as a generic error;
        // the server's XML on one line.
        let mut text = e.to_string().replace(['\r', '\n'], " ");
        let kind = if text.contains("NoSuchBucket") {
            let bucket = self.0.shown_root.trim_end_matches('/');
            text = format!("the bucket {bucket:?} does not exist (NoSuchBucket): {text}");
            io::ErrorKind::NotFound
        } else if [
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AccessDenied",
            "403 Forbidden",
            "401 Unauthorized",
        ]
        .iter()
        .any(|code| text.contains(code))
        {
            io::ErrorKind::PermissionDenied
        } else {
            kind
        };
        Error::Io(io::Error::new(
            kind,
            format!("cannot {action} {}: {text}", self.url(key)),
        ))
    }

    /// The objects below `prefix` (a directory: "a/b" lists "a/b/..." only), with their
    /// sizes, sorted by key.
    pub fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        let k = key(prefix)?;
        let listed: Vec<_> = block_on(
            self.0
                .store
                .list((!prefix.is_empty()).then_some(&k))
                .try_collect::<Vec<_>>(),
        )?
        .map_err(|e| self.error("list", prefix, e))?;
        let mut found: Vec<(String, u64)> = listed
            .into_iter()
            .map(|m| (m.location.to_string(), m.size))
            .collect();
        // Directory markers (an empty object "a/b/" that tools such as pyarrow's S3
        // filesystem make for each directory) are not objects of their own here.
        let parents: HashSet<&str> = found
            .iter()
            .flat_map(|(k, _)| k.match_indices('/').map(move |(i, _)| &k[..i]))
            .collect();
        let markers: HashSet<String> = found
            .iter()
            .filter(|(k, size)| *size == 0 && parents.contains(k.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        found.retain(|(k, _)| !markers.contains(k));
        found.sort();
        Ok(found)
    }

    /// Whether anything lies below `prefix`.
    pub fn any_below(&self, prefix: &str) -> Result<bool> {
        let k = key(prefix)?;
        let mut listing = self.0.store.list((!prefix.is_empty()).then_some(&k));
        block_on(listing.try_next())?
            .map(|first| first.is_some())
            .map_err(|e| self.error("list", prefix, e))
    }

    /// Deletes every object below `prefix`, in batches where the store takes them.
    pub fn delete_below(&self, prefix: &str) -> Result<()> {
        let k = key(prefix)?;
        let store = self.0.store.clone();
        let result = block_on(async move {
            let listed = store.list(Some(&k)).map_ok(|m| m.location).boxed();
            store.delete_stream(listed).try_collect::<Vec<_>>().await
        })?;
        result
            .map(|_| ())
            .map_err(|e| self.error("delete below", prefix, e))
    }

    /// Deletes the objects `keys`, in batches where the store takes them.
    pub fn delete(&self, keys: &[String]) -> Result<()> {
        let parsed = keys.iter().map(|k| key(k)).collect::<Result<Vec<_>>>()?;
        let store = self.0.store.clone();
        let result = block_on(async move {
            let stream = futures_util::stream::iter(parsed.into_iter().map(Ok)).boxed();
            store.delete_stream(stream).try_collect::<Vec<_>>().await
        })?;
        let first = keys.first().map_or("", String::as_str);
        result
            .map(|_| ())
            .map_err(|e| self.error("delete", first, e))
    }

    /// The size of the object `key`.
    pub fn size(&self, path: &str) -> Result<u64> {
        let k = key(path)?;
        block_on(self.0.store.head(&k))?
            .map(|m| m.size)
            .map_err(|e| self.error("read", path, e))
    }

    /// The whole object `key`.
    pub fn get(&self, path: &str) -> Result<Bytes> {
        let k = key(path)?;
        block_on(async { self.0.store.get(&k).await?.bytes().await })?
            .map_err(|e| self.error("read", path, e))
    }

    /// `range` of the object `key`.
    pub fn get_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let k = key(path)?;
        block_on(self.0.store.get_range(&k, range))?.map_err(|e| self.error("read", path, e))
    }

    /// `ranges` of the object `key`, fetched with object_store's `get_ranges`: ranges less
    /// than its gap apart are coalesced, and the requests run concurrently.
    pub fn get_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let k = key(path)?;
        block_on(self.0.store.get_ranges(&k, ranges))?.map_err(|e| self.error("read", path, e))
    }

    /// Writes `key` (see [`ObjectWriter`]: nothing is under the key until it is committed).
    pub fn create(&self, path: &str) -> Result<ObjectWriter> {
        ObjectWriter::new(self.clone(), key(path)?, path.to_string())
    }
}

/// Objects up to this size are read whole, in one request, before their footer is parsed:
/// a request costs more than the bytes of a small file.
pub const SMALL_OBJECT: u64 = 1 << 20;

impl Store {
    /// The object `key` (of `size` bytes, when a listing said) as a Parquet input: read whole
    /// if it is small, else at offsets with ranged GETs.
    pub fn parquet_source(&self, key: &str, size: Option<u64>) -> Result<ParquetSource> {
        let size = match size {
            Some(n) => n,
            None => self.size(key)?,
        };
        if size <= SMALL_OBJECT {
            return Ok(ParquetSource::memory(arrow_buffer::Buffer::from(
                self.get(key)?,
            )));
        }
        ParquetSource::read_at(Arc::new(StoreObject::sized(self, key, size))).map_err(Error::Io)
    }
}

/// An object read at offsets with ranged GETs: what a Parquet reader reads a large file of a
/// store through. Its size is asked for once.
pub struct StoreObject {
    store: Store,
    path: String,
    size: u64,
    /// The object's last [`TAIL`] bytes, fetched by the first read that falls in them: a
    /// Parquet footer, its length and its page indexes are read there, piece by piece.
    tail: std::sync::OnceLock<Bytes>,
    /// The last [`KEPT_WINDOWS`] windows fetched (their offsets and bytes), the newest last.
    windows: std::sync::Mutex<std::collections::VecDeque<(u64, Bytes)>>,
    /// The ranges a whole read said it would read ([`ReadAt::prefetch`]), fetched together,
    /// by offset; kept until that read ends.
    prefetched: std::sync::Mutex<Vec<(u64, Bytes)>>,
    /// The whole object as it arrives, when a read asked for most of it: its ranges are read
    /// as soon as their bytes are in, so that decoding runs while the rest is fetched.
    arriving: std::sync::Mutex<Option<Arc<Arrival>>>,
}

/// An object's bytes arriving from one GET: its chunks in order, and how the GET ended.
struct Arrival {
    state: std::sync::Mutex<Arrived>,
    more: std::sync::Condvar,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct Arrived {
    /// Chunks by offset, back to back from 0.
    chunks: Vec<(u64, Bytes)>,
    received: u64,
    /// Set when the GET ended: Ok, or why it failed.
    ended: Option<std::result::Result<(), String>>,
}

impl Arrival {
    /// Starts the GET of `path` on the runtime.
    fn start(store: &Store, path: &str) -> Result<Arc<Arrival>> {
        let k = key(path)?;
        let arrival = Arc::new(Arrival {
            state: Default::default(),
            more: std::sync::Condvar::new(),
            task: Default::default(),
        });
        // The task holds the arrival weakly: when the read that asked for it lets it go, the
        // arrival is dropped, which aborts the GET rather than fetching what nobody reads.
        let into = Arc::downgrade(&arrival);
        let store = store.clone();
        let path = path.to_string();
        let task = runtime::runtime()?.spawn(async move {
            let fetched = async {
                let mut stream = store.0.store.get(&k).await?.into_stream();
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk?;
                    match into.upgrade() {
                        Some(arrival) => arrival.push(chunk),
                        None => return Ok(()),
                    }
                }
                Ok::<_, object_store::Error>(())
            }
            .await;
            if let Some(arrival) = into.upgrade() {
                arrival.end(fetched.map_err(|e| store.error("read", &path, e).to_string()));
            }
        });
        *arrival.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        Ok(arrival)
    }

    fn push(&self, chunk: Bytes) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let at = state.received;
        state.received += chunk.len() as u64;
        state.chunks.push((at, chunk));
        drop(state);
        self.more.notify_all();
    }

    fn end(&self, ended: std::result::Result<(), String>) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).ended = Some(ended);
        self.more.notify_all();
    }

    /// Copies `offset..offset + buf.len()` once those bytes have arrived; an error if the
    /// GET failed or ended before them.
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset + buf.len() as u64;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.received < end && state.ended.is_none() {
            state = self.more.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        if state.received < end {
            return Err(match &state.ended {
                Some(Err(why)) => io::Error::other(why.clone()),
                _ => io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the object ended at {} bytes, before {end}", state.received),
                ),
            });
        }
        let first = state
            .chunks
            .partition_point(|(at, c)| at + c.len() as u64 <= offset);
        let mut done = 0;
        for (at, chunk) in &state.chunks[first..] {
            if done == buf.len() {
                break;
            }
            let from = (offset + done as u64 - at) as usize;
            let n = (chunk.len() - from).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&chunk[from..from + n]);
            done += n;
        }
        Ok(())
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// What a read near an object's end fetches at once (the parquet crate's own footer
/// prefetch is of this size too).
const TAIL: u64 = 64 << 10;

/// What a smaller read fetches at once: the reader reads a page's header (a few KiB), then its
/// body, then the next page's header, so that one request of this size serves a run of pages
/// of a column chunk where each read would be a request of its own. Past a chunk's end it
/// fetches at most this much that is not read.
const WINDOW: u64 = 1 << 20;

/// Windows kept per object: about one per thread reading it at once.
const KEPT_WINDOWS: usize = 4;

impl StoreObject {
    pub fn open(store: &Store, path: &str) -> Result<StoreObject> {
        Ok(StoreObject::sized(store, path, store.size(path)?))
    }

    /// The object `path`, known to be `size` bytes (from a listing).
    pub fn sized(store: &Store, path: &str, size: u64) -> StoreObject {
        StoreObject {
            store: store.clone(),
            path: path.to_string(),
            size,
            tail: std::sync::OnceLock::new(),
            windows: Default::default(),
            prefetched: Default::default(),
            arriving: Default::default(),
        }
    }

    fn fetch(&self, range: Range<u64>) -> io::Result<Bytes> {
        self.store
            .get_range(&self.path, range)
            .map_err(|e| match e {
                Error::Io(io) => io,
                other => io::Error::other(other.to_string()),
            })
    }

    /// Copies `offset..offset + buf.len()` from a window or a range fetched before, if one
    /// holds it.
    fn read_from_windows(&self, offset: u64, buf: &mut [u8]) -> bool {
        let prefetched = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
        if copy_from(prefetched.iter(), offset, buf) {
            return true;
        }
        drop(prefetched);
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        copy_from(windows.iter(), offset, buf)
    }
}

/// Copies `offset..offset + buf.len()` from the first of `pieces` (offsets and bytes) that
/// holds it; false if none does.
fn copy_from<'a>(
    mut pieces: impl Iterator<Item = &'a (u64, Bytes)>,
    offset: u64,
    buf: &mut [u8],
) -> bool {
    let end = offset + buf.len() as u64;
    match pieces.find(|(start, data)| *start <= offset && end <= start + data.len() as u64) {
        Some((start, data)) => {
            let at = (offset - start) as usize;
            buf.copy_from_slice(&data[at..at + buf.len()]);
            true
        }
        None => false,
    }
}

impl ReadAt for StoreObject {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    /// Fetches the ranges not already at hand: one GET of the whole object where they cover
    /// most of it, read as it arrives (see [`Arrival`]), else one call of object_store's
    /// `get_ranges` (coalesced, concurrent). A large file read whole takes one or a few
    /// requests instead of a window's request after another.
    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        if self
            .arriving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return Ok(());
        }
        let tail_start = self.size.saturating_sub(TAIL);
        let wanted: Vec<Range<u64>> = {
            let have = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
            let mut wanted: Vec<Range<u64>> = ranges
                .iter()
                .map(|r| r.start..r.end.min(self.size))
                .filter(|r| r.start < r.end && r.start < tail_start)
                .filter(|r| {
                    !have
                        .iter()
                        .any(|(s, d)| *s <= r.start && r.end <= s + d.len() as u64)
                })
                .collect();
            wanted.sort_by_key(|r| r.start);
            wanted
        };
        if wanted.is_empty() {
            return Ok(());
        }
        let to_io = |e: Error| match e {
            Error::Io(io) => io,
            other => io::Error::other(other.to_string()),
        };
        let total: u64 = wanted.iter().map(|r| r.end - r.start).sum();
        if total.saturating_mul(2) >= self.size {
            // Most of the object: one GET of all of it, the request a store serves fastest
            // (ranges of one object cost the local S3 server more; benchmarks/RESULTS-archive.md).
            let arrival = Arrival::start(&self.store, &self.path).map_err(to_io)?;
            *self.arriving.lock().unwrap_or_else(|p| p.into_inner()) = Some(arrival);
            return Ok(());
        }
        let fetched = self.store.get_ranges(&self.path, &wanted).map_err(to_io)?;
        let pieces: Vec<(u64, Bytes)> = wanted.iter().map(|r| r.start).zip(fetched).collect();
        let mut have = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
        have.extend(pieces);
        Ok(())
    }

    fn forget_prefetched(&self) {
        self.prefetched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.arriving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    fn requests(&self) -> bool {
        true
    }

    fn prefetch_failure(&self) -> Option<io::Error> {
        let arriving = self.arriving.lock().unwrap_or_else(|p| p.into_inner());
        let state = arriving
            .as_ref()?
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match &state.ended {
            Some(Err(why)) => Some(io::Error::other(why.clone())),
            _ => None,
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let end = (offset + buf.len() as u64).min(self.size);
        if offset >= end {
            return Ok(0);
        }
        let tail_start = self.size.saturating_sub(TAIL);
        if offset >= tail_start {
            let tail = match self.tail.get() {
                Some(t) => t,
                None => {
                    let fetched = self.fetch(tail_start..self.size)?;
                    self.tail.get_or_init(|| fetched)
                }
            };
            let at = (offset - tail_start) as usize;
            let n = ((end - offset) as usize).min(tail.len().saturating_sub(at));
            buf[..n].copy_from_slice(&tail[at..at + n]);
            return Ok(n);
        }
        let wanted = (end - offset) as usize;
        let arriving = self
            .arriving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(arrival) = arriving {
            arrival.read(offset, &mut buf[..wanted])?;
            return Ok(wanted);
        }
        if self.read_from_windows(offset, &mut buf[..wanted]) {
            return Ok(wanted);
        }
        if end - offset >= WINDOW {
            let got = self.fetch(offset..end)?;
            let n = got.len().min(buf.len());
            buf[..n].copy_from_slice(&got[..n]);
            return Ok(n);
        }
        let window = self.fetch(offset..(offset + WINDOW).min(self.size))?;
        let n = window.len().min(wanted);
        buf[..n].copy_from_slice(&window[..n]);
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() >= KEPT_WINDOWS {
            windows.pop_front();
        }
        windows.push_back((offset, window));
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
