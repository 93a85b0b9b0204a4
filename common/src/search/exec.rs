//! Running a query over a loaded index: each segment's matches as a bit set
//! (words from postings; dates, folders and flags from the head and the
//! state), what the caller may see kept, then the page: newest first across
//! segments, or by relevance, strictly past the cursor.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::Field;
use super::doc::{ATTACHMENT, Folder, OUTBOUND, OWNER_ONLY};
use super::grammar::{Node, Place, Query};
use super::load::{View, blob_prefix, bucket_key};
use super::segment::{Bucket, Corrupt, Postings, bucket_of, key};
use crate::blob::BlobStore;
use crate::error::ApiError;

/// How a page is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    /// Newest filed first.
    #[default]
    Newest,
    /// Best matches first (newest first among equals).
    Relevance,
}

/// Who is asking, as the index can tell: the mailboxes they may read and
/// whether owner-only mail is theirs.
pub struct Reader<'a> {
    pub covers: &'a (dyn Fn(&str) -> bool + Sync),
    pub owner: bool,
}

/// One match on a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub mailbox: String,
    /// The fields (bit `1 << code`) where the query's words matched.
    pub fields: u8,
    pub score: f32,
    /// It is in the spam folder (its row is kept apart).
    pub spam: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub next: Option<String>,
    /// Every match the caller may see (all pages).
    pub total: usize,
    /// Every row filed before the index existed is indexed too.
    pub backfilled: bool,
    /// The oldest message the index holds.
    pub oldest: Option<String>,
}

// ------------------------------------------------------------ bit sets

#[derive(Debug, Clone, PartialEq, Eq)]
struct Bits {
    words: Vec<u64>,
    n: usize,
}

impl Bits {
    fn none(n: usize) -> Bits {
        Bits {
            words: vec![0; n.div_ceil(64)],
            n,
        }
    }

    fn all(n: usize) -> Bits {
        let mut b = Bits {
            words: vec![u64::MAX; n.div_ceil(64)],
            n,
        };
        b.trim();
        b
    }

    fn of(n: usize, mut keep: impl FnMut(usize) -> bool) -> Bits {
        let mut b = Bits::none(n);
        for d in 0..n {
            if keep(d) {
                b.set(d);
            }
        }
        b
    }

    fn trim(&mut self) {
        let extra = self.words.len() * 64 - self.n;
        if extra > 0
            && let Some(last) = self.words.last_mut()
        {
            *last &= u64::MAX >> extra;
        }
    }

    fn set(&mut self, d: usize) {
        self.words[d / 64] |= 1 << (d % 64);
    }

    fn has(&self, d: usize) -> bool {
        self.words[d / 64] & (1 << (d % 64)) != 0
    }

    fn and(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    fn or(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    fn not(&mut self) {
        for w in self.words.iter_mut() {
            *w = !*w;
        }
        self.trim();
    }

    fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The highest member below `end`.
    fn last_below(&self, end: usize) -> Option<usize> {
        let mut end = end.min(self.n);
        while end > 0 {
            let w = (end - 1) / 64;
            let upto = end - w * 64;
            let mask = if upto == 64 { u64::MAX } else { (1u64 << upto) - 1 };
            let bits = self.words[w] & mask;
            if bits != 0 {
                return Some(w * 64 + 63 - bits.leading_zeros() as usize);
            }
            end = w * 64;
        }
        None
    }

    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, bits)| {
            let mut bits = *bits;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let t = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(w * 64 + t)
            })
        })
    }
}

// ------------------------------------------------------------ buckets

/// The bucket blobs a query needs, per segment: read before it runs.
pub async fn buckets(
    blobs: &dyn BlobStore,
    scope: &str,
    views: &[View],
    query: &Query,
) -> Result<Option<Vec<HashMap<u32, Arc<Bucket>>>>, ApiError> {
    let mut words = BTreeSet::new();
    collect_words(&query.root, &mut words);
    let prefix = blob_prefix(scope);
    let mut wanted = Vec::new();
    for (v, view) in views.iter().enumerate() {
        let (Some(segment), k) = (&view.segment, view.head.k) else {
            continue;
        };
        if k == 0 {
            continue;
        }
        let numbers: BTreeSet<u32> = words.iter().map(|w| bucket_of(w.as_bytes(), k)).collect();
        for b in numbers {
            wanted.push((v, b, bucket_key(&prefix, segment, b)));
        }
    }
    let fetched =
        futures::future::try_join_all(wanted.iter().map(|(_, _, key)| super::cache::bucket(blobs, key))).await?;
    let mut out: Vec<HashMap<u32, Arc<Bucket>>> = views.iter().map(|_| HashMap::new()).collect();
    for ((v, b, _), bucket) in wanted.into_iter().zip(fetched) {
        let Some(bucket) = bucket else {
            return Ok(None);
        };
        out[v].insert(b, bucket);
    }
    Ok(Some(out))
}

fn collect_words(node: &Node, out: &mut BTreeSet<String>) {
    match node {
        Node::Words { words, .. } => out.extend(words.iter().cloned()),
        Node::And(parts) | Node::Or(parts) => parts.iter().for_each(|p| collect_words(p, out)),
        Node::Not(inner) => collect_words(inner, out),
        _ => {}
    }
}

// ------------------------------------------------------------ evaluation

const TEXT_FIELDS: [Field; 6] = Field::ALL;

/// Relevance: BM25's shape with fixed constants and no corpus statistics,
/// so a message's score never changes while it is paged through.
const K1: f32 = 1.2;
const B: f32 = 0.75;
const AVERAGE_WORDS: f32 = 300.0;

fn weight(field: Field) -> f32 {
    match field {
        Field::Subject => 3.0,
        Field::From | Field::To | Field::Cc | Field::Filename => 2.0,
        Field::Body => 1.0,
    }
}

struct Eval<'a> {
    view: &'a View,
    buckets: &'a HashMap<u32, Arc<Bucket>>,
    /// Per field, the messages where a positive word matched.
    matched: [Option<Bits>; 6],
    scores: Option<Vec<f32>>,
}

impl<'a> Eval<'a> {
    fn n(&self) -> usize {
        self.view.head.n
    }

    fn bucket(&self, word: &str) -> Option<&'a Bucket> {
        let head = &self.view.head;
        match &head.inline {
            Some(b) => Some(b),
            None => self.buckets.get(&bucket_of(word.as_bytes(), head.k)).map(|b| &**b),
        }
    }

    fn postings(&self, field: Field, word: &str) -> Result<Option<Postings<'a>>, Corrupt> {
        match self.bucket(word) {
            Some(b) => b.get(&key(field, word)),
            None => Ok(None),
        }
    }

    /// (message, occurrences) of a word or a phrase in one field (a
    /// phrase's occurrences are 1 but with `counts`).
    fn occurrences(&self, field: Field, words: &[String], counts: bool) -> Result<Vec<(u32, u32)>, Corrupt> {
        if let [word] = words {
            return Ok(match self.postings(field, word)? {
                Some(p) => p.docs.iter().copied().zip(p.tfs.iter().copied()).collect(),
                None => Vec::new(),
            });
        }
        let mut lists = Vec::with_capacity(words.len());
        for word in words {
            match self.postings(field, word)? {
                Some(p) => lists.push(p),
                None => return Ok(Vec::new()),
            }
        }
        // Relevance counts a phrase's occurrences; a match alone needs one.
        super::phrase::occurrences(&lists, counts)
    }

    fn words(&mut self, field: Option<Field>, words: &[String], positive: bool) -> Result<Bits, Corrupt> {
        let n = self.n();
        let mut all = Bits::none(n);
        let fields: &[Field] = match &field {
            Some(f) => std::slice::from_ref(f),
            None => &TEXT_FIELDS,
        };
        for f in fields {
            let found = self.occurrences(*f, words, positive && self.scores.is_some())?;
            if found.is_empty() {
                continue;
            }
            let mut bits = Bits::none(n);
            for (d, _) in &found {
                bits.set(*d as usize);
            }
            if positive {
                if let Some(scores) = self.scores.as_mut() {
                    let len = &self.view.head.len;
                    for (d, tf) in &found {
                        let tf = *tf as f32;
                        let norm = K1 * (1.0 - B + B * len[*d as usize] as f32 / AVERAGE_WORDS);
                        scores[*d as usize] += weight(*f) * tf / (tf + norm);
                    }
                }
                match &mut self.matched[f.code() as usize] {
                    Some(m) => m.or(&bits),
                    slot => *slot = Some(bits.clone()),
                }
            }
            all.or(&bits);
        }
        Ok(all)
    }

    fn eval(&mut self, node: &Node, positive: bool) -> Result<Bits, Corrupt> {
        let n = self.n();
        let head = &self.view.head;
        let view = self.view;
        let outbound = |d: usize| head.flags[d] & OUTBOUND != 0;
        Ok(match node {
            Node::Words { field, words } => self.words(*field, words, positive)?,
            Node::HasAttachment => Bits::of(n, |d| head.flags[d] & ATTACHMENT != 0),
            Node::Unread(unread) => Bits::of(n, |d| view.state(d).unread() == *unread),
            Node::In(place) => {
                let folder = |d: usize| view.state(d).folder();
                let trash = Folder::Trash.code();
                match place {
                    Place::Inbox => Bits::of(n, |d| !outbound(d) && folder(d) == Folder::Inbox.code()),
                    Place::Archive => Bits::of(n, |d| !outbound(d) && folder(d) == Folder::Archive.code()),
                    Place::Trash => Bits::of(n, |d| folder(d) == trash),
                    Place::Spam => Bits::of(n, |d| folder(d) == Folder::Spam.code()),
                    Place::Sent => Bits::of(n, |d| outbound(d) && folder(d) != trash),
                    Place::Anywhere => Bits::all(n),
                }
            }
            Node::Before(ms) => Bits::of(n, |d| head.ms[d] < *ms),
            Node::After(ms) => Bits::of(n, |d| head.ms[d] >= *ms),
            Node::And(parts) => {
                let mut out = Bits::all(n);
                for p in parts {
                    out.and(&self.eval(p, positive)?);
                }
                out
            }
            Node::Or(parts) => {
                let mut out = Bits::none(n);
                for p in parts {
                    out.or(&self.eval(p, positive)?);
                }
                out
            }
            Node::Not(inner) => {
                let mut out = self.eval(inner, !positive)?;
                out.not();
                out
            }
        })
    }
}

/// What one segment gives a page.
struct Matches<'a> {
    view: &'a View,
    bits: Bits,
    matched: [Option<Bits>; 6],
    scores: Option<Vec<f32>>,
}

impl Matches<'_> {
    fn hit(&self, d: usize) -> Hit {
        let mut fields = 0u8;
        for f in Field::ALL {
            if self.matched[f.code() as usize].as_ref().is_some_and(|m| m.has(d)) {
                fields |= 1 << f.code();
            }
        }
        Hit {
            id: self.view.head.id(d).to_string(),
            mailbox: self.view.head.mailbox_of(d).to_string(),
            fields,
            score: self.scores.as_ref().map_or(0.0, |s| s[d]),
            spam: self.view.state(d).folder() == Folder::Spam.code(),
        }
    }
}

/// Whether a message (its mailbox, its id) was deleted with its whole
/// mailbox.
pub type Purged<'a> = &'a dyn Fn(&str, &str) -> bool;

/// Whether each message of a segment is one the reader may see: never one
/// deleted for good; trash and spam only when the query names them.
fn visible(view: &View, reader: &Reader<'_>, query: &Query, purged: Option<Purged<'_>>) -> Bits {
    let head = &view.head;
    let allowed: Vec<bool> = head.mailboxes().iter().map(|m| (reader.covers)(m)).collect();
    let (trash, spam) = (Folder::Trash.code(), Folder::Spam.code());
    Bits::of(head.n, |d| {
        let state = view.state(d);
        allowed[head.mailbox[d] as usize]
            && (reader.owner || head.flags[d] & OWNER_ONLY == 0)
            && !state.gone()
            && (query.names_trash || state.folder() != trash)
            && (query.names_spam || state.folder() != spam)
            && !purged.is_some_and(|purged| purged(head.mailbox_of(d), head.id(d)))
    })
}

/// A relevance cursor: the last hit's score and id.
fn relevance_cursor(score: f32, id: &str) -> String {
    format!("r{:08x}-{id}", score.to_bits())
}

fn read_relevance_cursor(cursor: &str) -> Option<(f32, &str)> {
    let rest = cursor.strip_prefix('r')?;
    let (bits, id) = rest.split_once('-')?;
    Some((f32::from_bits(u32::from_str_radix(bits, 16).ok()?), id))
}

/// Whether a cursor can be read for this order: a hit's id newest first,
/// a score and a hit's id by relevance. Anything else would page from a
/// place no page ended at (a page 1 again, or nothing at all).
pub fn cursor_fits(cursor: &str, sort: Sort) -> bool {
    match sort {
        Sort::Newest => hit_id(cursor),
        Sort::Relevance => read_relevance_cursor(cursor).is_some_and(|(score, id)| score.is_finite() && hit_id(id)),
    }
}

/// Whether `id` can be a hit's id: a row id, its filing time's 13 digits
/// first ([`super::doc::filed_ms`]) and letters and digits after them.
fn hit_id(id: &str) -> bool {
    id.len() > 13
        && id.bytes().take(13).all(|b| b.is_ascii_digit())
        && id.bytes().skip(13).all(|b| b.is_ascii_alphanumeric())
}

/// Runs a query over the loaded segments: a page of at most `limit` hits
/// past `cursor`. `purged` (none when no mailbox was purged) says whether a
/// message was deleted with its whole mailbox.
#[allow(clippy::too_many_arguments)]
pub fn run(
    views: &[View],
    buckets: &[HashMap<u32, Arc<Bucket>>],
    query: &Query,
    reader: &Reader<'_>,
    purged: Option<Purged<'_>>,
    sort: Sort,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Found, ApiError> {
    let mut all = Vec::with_capacity(views.len());
    for (view, buckets) in views.iter().zip(buckets) {
        let mut eval = Eval {
            view,
            buckets,
            matched: Default::default(),
            scores: (sort == Sort::Relevance).then(|| vec![0.0; view.head.n]),
        };
        let mut bits = eval.eval(&query.root, true).map_err(ApiError::internal)?;
        bits.and(&visible(view, reader, query, purged));
        all.push(Matches {
            view,
            bits,
            matched: eval.matched,
            scores: eval.scores,
        });
    }
    let total = all.iter().map(|m| m.bits.count()).sum();
    let mut found = match sort {
        Sort::Newest => newest(&all, cursor, limit),
        Sort::Relevance => best(&all, cursor, limit),
    };
    found.total = total;
    Ok(found)
}

/// Newest first: a merge of the segments from their newest match down.
fn newest(all: &[Matches<'_>], cursor: Option<&str>, limit: usize) -> Found {
    let mut next: Vec<Option<usize>> = all
        .iter()
        .map(|m| {
            let head = &m.view.head;
            let end = match cursor {
                Some(c) => {
                    let (mut lo, mut hi) = (0, head.n);
                    while lo < hi {
                        let mid = (lo + hi) / 2;
                        if head.id(mid) < c {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    lo
                }
                None => head.n,
            };
            m.bits.last_below(end)
        })
        .collect();
    let mut hits: Vec<Hit> = Vec::with_capacity(limit + 1);
    while hits.len() <= limit {
        let best = next
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.map(|d| (i, d)))
            .max_by(|(a, da), (b, db)| all[*a].view.head.id(*da).cmp(all[*b].view.head.id(*db)));
        let Some((i, d)) = best else {
            break;
        };
        next[i] = all[i].bits.last_below(d);
        let id = all[i].view.head.id(d);
        if hits.last().is_some_and(|h| h.id == id) {
            continue;
        }
        hits.push(all[i].hit(d));
    }
    page(hits, limit, |h| h.id.clone())
}

/// Best first, newest first among equal scores.
fn best(all: &[Matches<'_>], cursor: Option<&str>, limit: usize) -> Found {
    let after = cursor.and_then(read_relevance_cursor);
    let mut ranked: Vec<(f32, &str, usize, usize)> = Vec::new();
    for (i, m) in all.iter().enumerate() {
        for d in m.bits.members() {
            let score = m.scores.as_ref().map_or(0.0, |s| s[d]);
            let id = m.view.head.id(d);
            if let Some((cs, cid)) = after
                && !(score < cs || (score == cs && id < cid))
            {
                continue;
            }
            ranked.push((score, id, i, d));
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
    ranked.dedup_by(|a, b| a.1 == b.1);
    let hits: Vec<Hit> = ranked
        .into_iter()
        .take(limit + 1)
        .map(|(_, _, i, d)| all[i].hit(d))
        .collect();
    page(hits, limit, |h| relevance_cursor(h.score, &h.id))
}

fn page(mut hits: Vec<Hit>, limit: usize, cursor_of: impl Fn(&Hit) -> String) -> Found {
    let more = hits.len() > limit;
    hits.truncate(limit);
    let next = more.then(|| hits.last().map(cursor_of)).flatten();
    Found {
        hits,
        next,
        ..Found::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_sets_find_their_members_from_the_top() {
        let mut b = Bits::none(130);
        for d in [0, 63, 64, 129] {
            b.set(d);
        }
        assert_eq!(b.last_below(130), Some(129));
        assert_eq!(b.last_below(129), Some(64));
        assert_eq!(b.last_below(64), Some(63));
        assert_eq!(b.last_below(1), Some(0));
        assert_eq!(b.last_below(0), None);
        assert_eq!(b.members().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        let mut n = b.clone();
        n.not();
        assert_eq!(n.count(), 126);
        assert_eq!(Bits::all(130).count(), 130);
    }

    #[test]
    fn a_cursor_fits_the_order_whose_page_ended_there() {
        let c = relevance_cursor(2.5, "1800000000000abc");
        assert_eq!(read_relevance_cursor(&c), Some((2.5, "1800000000000abc")));
        assert!(cursor_fits(&c, Sort::Relevance));
        assert!(!cursor_fits(&c, Sort::Newest));
        assert!(!cursor_fits("1800000000000abc", Sort::Relevance));
        assert!(cursor_fits("1800000000000abc", Sort::Newest));
        assert!(cursor_fits("1800000000000o0123456789abcdef", Sort::Newest));
        for not_a_page_end in ["garbage", "0", "1800000000000", "18000000000x0abc", "1800000000000ab_c"] {
            assert!(!cursor_fits(not_a_page_end, Sort::Newest), "{not_a_page_end}");
        }
        for not_a_page_end in [
            "r3f800000-garbage",
            "rzz-1800000000000abc",
            "r7fc00000-1800000000000abc",
        ] {
            assert!(!cursor_fits(not_a_page_end, Sort::Relevance), "{not_a_page_end}");
        }
    }
}
