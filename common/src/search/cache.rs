//! The blobs a process has read, kept read: a segment's blobs never change
//! (a new one gets a new name), so a warm Lambda or the local server answers
//! from memory what a cold one reads from the blob store. The least recently
//! used go first past [`CAPACITY`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::segment::{Bucket, Head};
use crate::blob::BlobStore;
use crate::error::ApiError;

/// Bytes kept, about. A function has 256 MB (template.yaml); the poller,
/// whose merges read through it, 1024 MB.
pub const CAPACITY: usize = 96 * 1024 * 1024;

#[derive(Clone)]
enum Part {
    Head(Arc<Head>),
    Bucket(Arc<Bucket>),
    State(Arc<Vec<u8>>),
    /// A scope's fresh messages made into a segment, and which they are.
    Fresh([u8; 32], Arc<Head>),
}

impl Part {
    fn size(&self) -> usize {
        match self {
            Part::Head(h) => h.size(),
            Part::Bucket(b) => b.size(),
            Part::State(s) => s.len(),
            Part::Fresh(_, h) => h.size(),
        }
    }
}

#[derive(Default)]
struct Lru {
    parts: HashMap<String, (Part, u64)>,
    bytes: usize,
    clock: u64,
}

impl Lru {
    fn get(&mut self, key: &str) -> Option<Part> {
        self.clock += 1;
        let clock = self.clock;
        self.parts.get_mut(key).map(|(part, used)| {
            *used = clock;
            part.clone()
        })
    }

    fn put(&mut self, key: &str, part: Part) {
        self.clock += 1;
        self.bytes += part.size();
        if let Some((old, _)) = self.parts.insert(key.to_string(), (part, self.clock)) {
            self.bytes -= old.size();
        }
        while self.bytes > CAPACITY && self.parts.len() > 1 {
            let Some(oldest) = self
                .parts
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((gone, _)) = self.parts.remove(&oldest) {
                self.bytes -= gone.size();
            }
        }
    }
}

fn lru() -> &'static Mutex<Lru> {
    static LRU: OnceLock<Mutex<Lru>> = OnceLock::new();
    LRU.get_or_init(Mutex::default)
}

/// Forgets every blob read (the benchmark's cold reads).
pub fn clear() {
    if let Ok(mut lru) = lru().lock() {
        *lru = Lru::default();
    }
}

/// Bytes held now.
pub fn held() -> usize {
    lru().lock().map_or(0, |lru| lru.bytes)
}

fn cached(key: &str) -> Option<Part> {
    lru().lock().ok()?.get(key)
}

fn keep(key: &str, part: Part) {
    if let Ok(mut lru) = lru().lock() {
        lru.put(key, part);
    }
}

async fn fetch(blobs: &dyn BlobStore, key: &str) -> Result<Option<Vec<u8>>, ApiError> {
    blobs.get(key).await.map_err(ApiError::internal)
}

/// A segment's head; `None` when the blob is gone (the index moved on).
pub async fn head(blobs: &dyn BlobStore, key: &str) -> Result<Option<Arc<Head>>, ApiError> {
    if let Some(Part::Head(h)) = cached(key) {
        return Ok(Some(h));
    }
    let Some(bytes) = fetch(blobs, key).await? else {
        return Ok(None);
    };
    let head = Arc::new(Head::parse(bytes).map_err(ApiError::internal)?);
    keep(key, Part::Head(head.clone()));
    Ok(Some(head))
}

/// A bucket blob; `None` when it is gone.
pub async fn bucket(blobs: &dyn BlobStore, key: &str) -> Result<Option<Arc<Bucket>>, ApiError> {
    if let Some(Part::Bucket(b)) = cached(key) {
        return Ok(Some(b));
    }
    let Some(bytes) = fetch(blobs, key).await? else {
        return Ok(None);
    };
    let bucket = Arc::new(Bucket::parse(bytes).map_err(ApiError::internal)?);
    keep(key, Part::Bucket(bucket.clone()));
    Ok(Some(bucket))
}

/// A scope's fresh messages as a segment: built again only when they are
/// other messages (`which`, a digest of their ids: a fresh message's words
/// never change, and its state is applied after). One is kept per scope.
pub fn fresh(
    key: &str,
    which: [u8; 32],
    build: impl FnOnce() -> Result<Arc<Head>, ApiError>,
) -> Result<Arc<Head>, ApiError> {
    if let Some(Part::Fresh(held, h)) = cached(key)
        && held == which
    {
        return Ok(h);
    }
    let head = build()?;
    keep(key, Part::Fresh(which, head.clone()));
    Ok(head)
}

/// The state blob; `None` when it is gone.
pub async fn state(blobs: &dyn BlobStore, key: &str) -> Result<Option<Arc<Vec<u8>>>, ApiError> {
    if let Some(Part::State(s)) = cached(key) {
        return Ok(Some(s));
    }
    let Some(bytes) = fetch(blobs, key).await? else {
        return Ok(None);
    };
    let state = Arc::new(bytes);
    keep(key, Part::State(state.clone()));
    Ok(Some(state))
}
