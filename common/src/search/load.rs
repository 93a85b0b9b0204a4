//! A scope's index as one query (or a compaction) reads it: the manifest's
//! segments with each message's state as it is now (the state blob, then the
//! changes since), and the messages filed since the last segment, made into
//! one more segment in memory.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::cache;
use super::doc::{Doc, State};
use super::items::{self, Stored};
use super::segment::{self, Head};
use crate::blob::BlobStore;
use crate::error::ApiError;
use crate::store::Store;

/// Where a scope's index blobs live: `search/<32 hex of the scope>`.
pub fn blob_prefix(scope: &str) -> String {
    format!("search/{}", &hex::encode(Sha256::digest(scope.as_bytes()))[..32])
}

pub fn head_key(prefix: &str, segment: &str) -> String {
    format!("{prefix}/seg/{segment}/h")
}

pub fn bucket_key(prefix: &str, segment: &str, bucket: u32) -> String {
    format!("{prefix}/seg/{segment}/b{bucket}")
}

/// One segment (or the fresh messages) as a query reads it.
pub struct View {
    pub head: Arc<Head>,
    /// Each message's state, the changes since the blob applied.
    pub state: Vec<u8>,
    /// The segment's id (none for the fresh messages, held in memory).
    pub segment: Option<String>,
    /// Its blobs' bytes (0 for the fresh messages).
    pub bytes: u64,
}

impl View {
    pub fn state(&self, d: usize) -> State {
        State(self.state[d])
    }
}

pub struct Loaded {
    pub stored: Stored,
    /// The manifest's segments in order, then the fresh messages (if any).
    pub views: Vec<View>,
    /// Fresh messages not yet in any segment.
    pub unfolded: usize,
}

/// Loads a scope's index; `Ok(None)` when a blob the manifest names is gone
/// (a compaction moved on meanwhile: read again).
pub async fn load(store: &dyn Store, blobs: &dyn BlobStore, scope: &str) -> Result<Option<Loaded>, ApiError> {
    let stored = items::read(store, scope).await?;
    load_from(blobs, scope, stored).await
}

pub async fn load_from(blobs: &dyn BlobStore, scope: &str, stored: Stored) -> Result<Option<Loaded>, ApiError> {
    let prefix = blob_prefix(scope);
    let m = &stored.manifest;
    let keys: Vec<String> = m.segments.iter().map(|s| head_key(&prefix, &s.id)).collect();
    let heads = futures::future::try_join_all(keys.iter().map(|k| cache::head(blobs, k)));
    let state = async {
        match &m.state {
            Some(key) => cache::state(blobs, key).await.map(|s| s.map(Some)),
            None => Ok(Some(None)),
        }
    };
    let (heads, state) = futures::join!(heads, state);
    let Some(heads) = heads?.into_iter().collect::<Option<Vec<Arc<Head>>>>() else {
        return Ok(None);
    };
    let Some(state) = state? else {
        return Ok(None);
    };
    let mut views = Vec::with_capacity(heads.len() + 1);
    let mut at = 0;
    for (seg, head) in m.segments.iter().zip(heads) {
        let bytes = state
            .as_ref()
            .and_then(|s| s.get(at..at + head.n))
            .map(<[u8]>::to_vec)
            .unwrap_or_else(|| vec![0; head.n]);
        at += head.n;
        views.push(View {
            head,
            state: bytes,
            segment: Some(seg.id.clone()),
            bytes: seg.bytes,
        });
    }
    // Fresh messages a segment already holds (folded, not yet deleted) are
    // read from the segment.
    let fresh: Vec<&Doc> = stored
        .docs
        .iter()
        .filter(|d| !views.iter().any(|v| v.head.find(&d.id).is_some()))
        .collect();
    let unfolded = fresh.len();
    if !fresh.is_empty() {
        let mut which = Sha256::new();
        for d in &fresh {
            which.update(d.id.as_bytes());
            which.update(b"\n");
        }
        let head = cache::fresh(&format!("{prefix}/fresh"), which.finalize().into(), || {
            let built = segment::build(&fresh, true);
            Ok(Arc::new(Head::parse(built.head).map_err(ApiError::internal)?))
        })?;
        let by_id: HashMap<&str, State> = fresh.iter().map(|d| (d.id.as_str(), d.state)).collect();
        let state = (0..head.n).map(|d| by_id.get(head.id(d)).map_or(0, |s| s.0)).collect();
        views.push(View {
            head,
            state,
            segment: None,
            bytes: 0,
        });
    }
    for o in &stored.overrides {
        for view in views.iter_mut() {
            if let Some(d) = view.head.find(&o.id) {
                view.state[d] = o.apply(State(view.state[d])).0;
            }
        }
    }
    Ok(Some(Loaded {
        stored,
        views,
        unfolded,
    }))
}
