//! Compaction: the fresh messages written into a segment, small segments
//! merged (four of a size into one, so a scope holds a few segments of each
//! size), the changes folded into a new state blob, and what that leaves
//! behind deleted once no reader can need it.
//!
//! A compaction writes its blobs first and then the manifest, on condition
//! its version is unchanged: a compaction that lost the race deletes its
//! blobs and reads again. What it replaces (fresh items, change items, old
//! blobs) is listed in the manifest and deleted [`GRACE_MS`] later, by a later
//! compaction: a query that read the manifest before it still finds
//! everything it names.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::doc::Doc;
use super::items::{self, Garbage, Manifest, Pending, SegmentRef, Stored};
use super::load::{self, View, blob_prefix, bucket_key, head_key};
use super::segment::{self, Bucket, Built, Head, Meta, Postings, PostingsBuf, bucket_of};
use super::{MERGE_FACTOR, OVERRIDE_LIMIT, TAIL_LIMIT, cache};
use crate::blob::BlobStore;
use crate::error::ApiError;
use crate::store::{Cond, Store, StoreError, StoreExt, item};

/// How long what a compaction replaced stays readable.
pub const GRACE_MS: i64 = 60_000;
/// Past this many folded items waiting, the oldest go at once.
const MAX_PENDING: usize = 4096;
const OCTETS: &str = "application/octet-stream";

/// What to do beyond what is due.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Write every fresh message and change now, and rewrite segments that
    /// hold purged mail or mail deleted for good.
    pub force: bool,
    /// How long replaced items and blobs stay (tests and purges: 0).
    pub grace_ms: Option<i64>,
}

/// What a compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub segments_written: usize,
    pub docs_written: usize,
    pub folded: usize,
    pub items_deleted: usize,
    pub blobs_deleted: usize,
    /// More waits to be deleted later.
    pub pending: bool,
}

fn new_id() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

fn tier(docs: usize) -> u32 {
    let mut t = 0;
    let mut size = TAIL_LIMIT * MERGE_FACTOR;
    while docs >= size {
        t += 1;
        size *= MERGE_FACTOR;
    }
    t
}

/// Compacts a scope's index when something is due (or `force`): at most a
/// few tries against concurrent compactions. With no grace, what it
/// replaced is deleted before it returns.
pub async fn compact(
    store: &dyn Store,
    blobs: &dyn BlobStore,
    scope: &str,
    now_ms: i64,
    options: Options,
) -> Result<Outcome, ApiError> {
    let mut total = Outcome::default();
    let mut options = options;
    for _ in 0..8 {
        let stored = items::read(store, scope).await?;
        let Some(loaded) = load::load_from(blobs, scope, stored).await? else {
            continue;
        };
        let Some(outcome) = once(store, blobs, scope, now_ms, options, loaded).await? else {
            continue;
        };
        total.segments_written += outcome.segments_written;
        total.docs_written += outcome.docs_written;
        total.folded += outcome.folded;
        total.items_deleted += outcome.items_deleted;
        total.blobs_deleted += outcome.blobs_deleted;
        total.pending = outcome.pending;
        if options.grace_ms == Some(0) && outcome.pending && options.force {
            // Once more, to delete what this one replaced.
            options.force = false;
            continue;
        }
        return Ok(total);
    }
    Err(ApiError::internal("a search compaction lost the race too many times"))
}

/// One try: `Ok(None)` when another compaction changed the manifest first.
async fn once(
    store: &dyn Store,
    blobs: &dyn BlobStore,
    scope: &str,
    now_ms: i64,
    options: Options,
    loaded: load::Loaded,
) -> Result<Option<Outcome>, ApiError> {
    let grace = options.grace_ms.unwrap_or(GRACE_MS);
    let load::Loaded {
        stored,
        views,
        unfolded,
    } = loaded;
    let old = stored.manifest.clone();
    let mut outcome = Outcome::default();
    let prefix = blob_prefix(scope);

    // What waited long enough goes now.
    let (ripe, mut pending): (Vec<Pending>, Vec<Pending>) =
        old.pending.iter().cloned().partition(|p| p.at + grace <= now_ms);
    let (ripe_garbage, mut garbage): (Vec<Garbage>, Vec<Garbage>) =
        old.garbage.iter().cloned().partition(|g| g.at + grace <= now_ms);
    let mut ripe = ripe;
    while pending.iter().map(|p| p.docs.len() + p.overrides.len()).sum::<usize>() > MAX_PENDING {
        ripe.push(pending.remove(0));
    }

    let (segment_views, fresh_view): (Vec<&View>, Option<&View>) = match views.last() {
        Some(v) if v.segment.is_none() => (views[..views.len() - 1].iter().collect(), Some(v)),
        _ => (views.iter().collect(), None),
    };
    let purged = |view: &View, d: usize| stored.purged(view.head.mailbox_of(d), view.head.id(d));
    // What a merge leaves out: purged mail, and messages deleted for good.
    let dropped = |view: &View, d: usize| purged(view, d) || view.state(d).gone();
    let flush = fresh_view.is_some() && (unfolded >= TAIL_LIMIT || options.force);
    let fold = stored.overrides.len() >= OVERRIDE_LIMIT || (options.force && !stored.overrides.is_empty());
    let stale: Vec<usize> = if options.force {
        (0..segment_views.len())
            .filter(|&i| (0..segment_views[i].head.n).any(|d| dropped(segment_views[i], d)))
            .collect()
    } else {
        Vec::new()
    };
    let mut segments: Vec<(SegmentRef, Vec<u8>)> = old
        .segments
        .iter()
        .cloned()
        .zip(segment_views.iter().map(|v| v.state.clone()))
        .collect();
    let mergeable = {
        let mut tiers: HashMap<u32, usize> = HashMap::new();
        for (s, _) in &segments {
            *tiers.entry(tier(s.docs)).or_default() += 1;
        }
        tiers.values().any(|n| *n >= MERGE_FACTOR)
    };
    if !flush && !fold && stale.is_empty() && !mergeable && ripe.is_empty() && ripe_garbage.is_empty() {
        // Nothing to do now; what waits is deleted by a later run.
        if let Some(soonest) = old
            .pending
            .iter()
            .map(|p| p.at)
            .chain(old.garbage.iter().map(|g| g.at))
            .min()
        {
            outcome.pending = true;
            if grace > 0 {
                items::flag_due(store, scope, soonest + grace).await?;
            }
        }
        return Ok(Some(outcome));
    }

    // Deletions that waited long enough (before the manifest forgets them:
    // a crash in between deletes them again next time).
    for p in &ripe {
        for id in &p.docs {
            store.delete(&items::doc_key(scope, id), None).await?;
            outcome.items_deleted += 1;
        }
        for (id, token) in &p.overrides {
            match store
                .delete(&items::override_key(scope, id), Some(Cond::eq("t", token.as_str())))
                .await
            {
                Ok(_) => outcome.items_deleted += 1,
                // Changed again since: it stays, for the next fold.
                Err(StoreError::ConditionFailed) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    for g in &ripe_garbage {
        for key in &g.blobs {
            blobs.delete(key).await.map_err(ApiError::internal)?;
            outcome.blobs_deleted += 1;
        }
    }

    let mut written: Vec<String> = Vec::new();
    let mut replaced: Vec<String> = Vec::new();
    let mut folded_docs: Vec<String> = Vec::new();
    let result = async {
        // The fresh messages, as a segment.
        if flush && let Some(fresh) = fresh_view {
            let docs: Vec<Doc> = stored
                .docs
                .iter()
                .filter(|d| {
                    // Deleted meanwhile: never written (its change is folded
                    // with it, and both go together).
                    fresh.head.find(&d.id).is_some_and(|f| !fresh.state(f).gone()) && !stored.purged(&d.mailbox, &d.id)
                })
                .cloned()
                .collect();
            folded_docs.extend(
                stored
                    .docs
                    .iter()
                    .filter(|d| fresh.head.find(&d.id).is_some())
                    .map(|d| d.id.clone()),
            );
            if !docs.is_empty() {
                let refs: Vec<&Doc> = docs.iter().collect();
                let built = segment::build(&refs, false);
                let head = Head::parse(built.head.clone()).map_err(ApiError::internal)?;
                let (seg, keys) = put_segment(blobs, &prefix, built).await?;
                written.extend(keys);
                let state = (0..head.n)
                    .map(|d| fresh.head.find(head.id(d)).map_or(0, |f| fresh.state[f]))
                    .collect();
                outcome.segments_written += 1;
                outcome.docs_written += seg.docs;
                segments.push((seg, state));
            }
        }
        // Segments holding purged or deleted mail, rewritten without it.
        for &i in stale.iter().rev() {
            let (seg, _) = segments.remove(i);
            replaced.extend(segment_blobs(&prefix, &seg));
            let view = segment_views[i];
            let merged = merge(blobs, &prefix, &[view], &|v, d| !dropped(v, d)).await?;
            if let Some((seg, state, keys)) = merged {
                written.extend(keys);
                outcome.segments_written += 1;
                outcome.docs_written += seg.docs;
                segments.push((seg, state));
            }
        }
        // Four segments of a size, merged into one, until no size has four.
        loop {
            let mut by_tier: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, (s, _)) in segments.iter().enumerate() {
                by_tier.entry(tier(s.docs)).or_default().push(i);
            }
            let Some(group) = by_tier.into_values().find(|g| g.len() >= MERGE_FACTOR) else {
                break;
            };
            let group: Vec<usize> = group.into_iter().take(MERGE_FACTOR).collect();
            let mut inputs: Vec<(SegmentRef, Vec<u8>)> = Vec::new();
            for &i in group.iter().rev() {
                inputs.push(segments.remove(i));
            }
            let mut input_views = Vec::new();
            for (seg, state) in &inputs {
                let head = cache::head(blobs, &head_key(&prefix, &seg.id))
                    .await?
                    .ok_or_else(|| ApiError::internal("a segment's head vanished during a merge"))?;
                input_views.push(View {
                    head,
                    state: state.clone(),
                    segment: Some(seg.id.clone()),
                    bytes: seg.bytes,
                });
            }
            let refs: Vec<&View> = input_views.iter().collect();
            let merged = merge(blobs, &prefix, &refs, &|v, d| !dropped(v, d)).await?;
            // Only once merged: the merge reads the inputs' buckets.
            for (seg, _) in &inputs {
                if old.segments.iter().any(|s| s.id == seg.id) {
                    replaced.extend(segment_blobs(&prefix, seg));
                } else {
                    // Written by this compaction: no reader knows it.
                    let keys = segment_blobs(&prefix, seg);
                    for key in &keys {
                        blobs.delete(key).await.map_err(ApiError::internal)?;
                    }
                    written.retain(|w| !keys.contains(w));
                }
            }
            if let Some((seg, state, keys)) = merged {
                written.extend(keys);
                outcome.segments_written += 1;
                outcome.docs_written += seg.docs;
                segments.push((seg, state));
            }
        }
        Ok::<(), ApiError>(())
    }
    .await;
    if let Err(e) = result {
        delete_all(blobs, &written).await;
        // A blob gone under a merge: another compaction moved on, past its
        // grace. Read again.
        let now: Option<Manifest> = store.read(&items::manifest_key(scope)).await?;
        if now.is_some_and(|m| m.version != old.version) {
            return Ok(None);
        }
        return Err(e);
    }

    // Every change the new state holds is folded: all but those of messages
    // still fresh (their changes stay beside them).
    let still_fresh: HashSet<&str> = match (flush, fresh_view) {
        (false, Some(f)) => (0..f.head.n).map(|d| f.head.id(d)).collect(),
        _ => HashSet::new(),
    };
    let state_changed =
        outcome.segments_written > 0 || !stale.is_empty() || fold || segments.len() != old.segments.len();
    let mut state_key = old.state.clone();
    let mut folded_overrides = Vec::new();
    if state_changed {
        replaced.extend(old.state.iter().cloned());
        // With no segment left there is no state to keep.
        state_key = None;
        if !segments.is_empty() {
            let bytes: Vec<u8> = segments.iter().flat_map(|(_, state)| state.iter().copied()).collect();
            let key = format!("{prefix}/state/{}", new_id());
            if let Err(e) = blobs.put(&key, bytes, OCTETS).await {
                delete_all(blobs, &written).await;
                return Err(ApiError::internal(e));
            }
            written.push(key.clone());
            state_key = Some(key);
        }
        folded_overrides = stored
            .overrides
            .iter()
            .filter(|o| !still_fresh.contains(o.id.as_str()))
            .map(|o| (o.id.clone(), o.token.clone()))
            .collect();
        outcome.folded = folded_overrides.len();
    }
    if !folded_docs.is_empty() || !folded_overrides.is_empty() {
        pending.push(Pending {
            at: now_ms,
            docs: folded_docs,
            overrides: folded_overrides,
        });
    }
    if !replaced.is_empty() {
        garbage.push(Garbage {
            at: now_ms,
            blobs: replaced,
        });
    }
    let new = Manifest {
        version: old.version + 1,
        segments: segments.into_iter().map(|(s, _)| s).collect(),
        state: state_key,
        pending,
        garbage,
    };
    outcome.pending = !new.pending.is_empty() || !new.garbage.is_empty();
    let cond = if old.version == 0 {
        Cond::NotExists
    } else {
        Cond::eq("version", old.version)
    };
    let key = items::manifest_key(scope);
    match store.put(item(&key, &new), Some(cond)).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            delete_all(blobs, &written).await;
            return Ok(None);
        }
        Err(e) => {
            delete_all(blobs, &written).await;
            return Err(e.into());
        }
    }
    if outcome.pending && grace > 0 {
        let soonest = new
            .pending
            .iter()
            .map(|p| p.at)
            .chain(new.garbage.iter().map(|g| g.at))
            .min()
            .unwrap_or(now_ms);
        items::flag_due(store, scope, soonest + grace).await?;
    }
    Ok(Some(outcome))
}

async fn delete_all(blobs: &dyn BlobStore, keys: &[String]) {
    for key in keys {
        if let Err(e) = blobs.delete(key).await {
            tracing::warn!(error = %e, blob = %key, "a search blob of a failed compaction stays");
        }
    }
}

/// Every blob of a segment.
fn segment_blobs(prefix: &str, seg: &SegmentRef) -> Vec<String> {
    let mut keys = vec![head_key(prefix, &seg.id)];
    keys.extend((0..seg.k).map(|b| bucket_key(prefix, &seg.id, b)));
    keys
}

/// Writes a built segment's blobs: its reference and the keys written.
async fn put_segment(blobs: &dyn BlobStore, prefix: &str, built: Built) -> Result<(SegmentRef, Vec<String>), ApiError> {
    let id = new_id();
    let k = built.buckets.len() as u32;
    let mut keys = Vec::new();
    let mut bytes = built.head.len() as u64;
    let head = head_key(prefix, &id);
    blobs.put(&head, built.head, OCTETS).await.map_err(ApiError::internal)?;
    keys.push(head);
    for (b, bucket) in built.buckets.into_iter().enumerate() {
        let key = bucket_key(prefix, &id, b as u32);
        bytes += bucket.len() as u64;
        if let Err(e) = blobs.put(&key, bucket, OCTETS).await {
            delete_all(blobs, &keys).await;
            return Err(ApiError::internal(e));
        }
        keys.push(key);
    }
    Ok((
        SegmentRef {
            id,
            docs: built.docs,
            k,
            bytes,
        },
        keys,
    ))
}

/// Merges segments into one, keeping the messages `keep` keeps: the new
/// segment, its messages' states, and its blobs' keys; `None` when no
/// message is kept. Postings are merged one output bucket at a time, so a
/// merge holds about one bucket's postings at once.
type Merged = (SegmentRef, Vec<u8>, Vec<String>);

async fn merge(
    blobs: &dyn BlobStore,
    prefix: &str,
    inputs: &[&View],
    keep: &(dyn Fn(&View, usize) -> bool + Sync),
) -> Result<Option<Merged>, ApiError> {
    let mut order: Vec<(&str, usize, usize)> = Vec::new();
    for (i, view) in inputs.iter().enumerate() {
        for d in 0..view.head.n {
            if keep(view, d) {
                order.push((view.head.id(d), i, d));
            }
        }
    }
    order.sort_by(|a, b| a.0.cmp(b.0));
    order.dedup_by(|a, b| a.0 == b.0);
    if order.is_empty() {
        return Ok(None);
    }
    let mut mapping: Vec<Vec<u32>> = inputs.iter().map(|v| vec![u32::MAX; v.head.n]).collect();
    let mut metas: Vec<Meta> = Vec::with_capacity(order.len());
    let mut states = Vec::with_capacity(order.len());
    for (new, (_, i, d)) in order.iter().enumerate() {
        mapping[*i][*d] = new as u32;
        metas.push(inputs[*i].head.meta(*d));
        states.push(inputs[*i].state[*d]);
    }
    let total_docs: usize = inputs.iter().map(|v| v.head.n).sum();
    let input_bytes: u64 = inputs.iter().map(|v| v.bytes).sum();
    let posting_bytes = (input_bytes as f64 * order.len() as f64 / total_docs.max(1) as f64) as usize;
    let k = segment::buckets_for(posting_bytes, metas.len());
    let id = new_id();
    let mut keys = Vec::new();
    let mut inline = None;
    let mut bytes = 0u64;
    for b in 0..k.max(1) {
        let mut entries: BTreeMap<Vec<u8>, Vec<(u32, Vec<u32>)>> = BTreeMap::new();
        for (i, view) in inputs.iter().enumerate() {
            for bucket in input_buckets(blobs, prefix, view, k, b).await? {
                for (key, data) in bucket.entries() {
                    if k > 0 && bucket_of(&key[1..], k) != b {
                        continue;
                    }
                    let postings = Postings::decode(data).map_err(ApiError::internal)?;
                    let positions = postings.positions().map_err(ApiError::internal)?;
                    for (d, at) in postings.docs.iter().zip(positions) {
                        let new = mapping[i][*d as usize];
                        if new != u32::MAX {
                            entries.entry(key.to_vec()).or_default().push((new, at));
                        }
                    }
                }
            }
        }
        let entries: BTreeMap<Vec<u8>, PostingsBuf> = entries
            .into_iter()
            .map(|(key, mut list)| {
                list.sort_by_key(|(d, _)| *d);
                list.dedup_by_key(|(d, _)| *d);
                let (docs, positions) = list.into_iter().unzip();
                (key, PostingsBuf { docs, positions })
            })
            .collect();
        let encoded = Bucket::encode(&entries);
        if k == 0 {
            inline = Some(encoded);
        } else {
            let key = bucket_key(prefix, &id, b);
            bytes += encoded.len() as u64;
            if let Err(e) = blobs.put(&key, encoded, OCTETS).await {
                delete_all(blobs, &keys).await;
                return Err(ApiError::internal(e));
            }
            keys.push(key);
        }
    }
    let head = Head::encode(&metas, k, inline.as_deref());
    bytes += head.len() as u64;
    let head_blob = head_key(prefix, &id);
    if let Err(e) = blobs.put(&head_blob, head, OCTETS).await {
        delete_all(blobs, &keys).await;
        return Err(ApiError::internal(e));
    }
    keys.push(head_blob);
    Ok(Some((
        SegmentRef {
            id,
            docs: metas.len(),
            k,
            bytes,
        },
        states,
        keys,
    )))
}

/// The input buckets that can hold words of output bucket `b` of `k`.
async fn input_buckets(
    blobs: &dyn BlobStore,
    prefix: &str,
    view: &View,
    k: u32,
    b: u32,
) -> Result<Vec<BucketRef>, ApiError> {
    let head = &view.head;
    if head.inline.is_some() {
        return Ok(vec![BucketRef::Inline(view.head.clone())]);
    }
    let segment = view.segment.as_deref().unwrap_or_default();
    let common = k.max(1).min(head.k) - 1;
    let mut out = Vec::new();
    for j in 0..head.k {
        if k > 0 && (j & common) != (b & common) {
            continue;
        }
        let bucket = cache::bucket(blobs, &bucket_key(prefix, segment, j))
            .await?
            .ok_or_else(|| ApiError::internal("a segment's bucket vanished during a merge"))?;
        out.push(BucketRef::Blob(bucket));
    }
    Ok(out)
}

enum BucketRef {
    Inline(std::sync::Arc<Head>),
    Blob(std::sync::Arc<Bucket>),
}

impl BucketRef {
    fn entries(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            BucketRef::Inline(head) => match &head.inline {
                Some(b) => Box::new(b.entries()),
                None => Box::new(std::iter::empty()),
            },
            BucketRef::Blob(b) => Box::new(b.entries()),
        }
    }
}

/// Whether a scope's index has enough waiting to compact (for the poller,
/// after it filed mail there).
pub fn due(stored: &Stored, unfolded: usize) -> bool {
    unfolded >= TAIL_LIMIT || stored.overrides.len() >= OVERRIDE_LIMIT
}
