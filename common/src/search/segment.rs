//! Segments: immutable blobs of the index, written once and read by any
//! process (a cold Lambda reads only the parts a query needs).
//!
//! A segment is a head and its postings. The head lists its messages in id
//! order (so filing time order): id, mailbox, flags, word count. Postings map
//! a key (a field's code, then a word) to the messages holding it, with how
//! often and where. They are split into `k` buckets by a hash of the word, so
//! one word's postings in every field are in one bucket blob; a small
//! segment keeps its one bucket inside the head (`k` = 0).
//!
//! Numbers are LEB128 varints; ids are front-coded; postings are the count,
//! the message deltas, the counts per message, then each message's positions
//! as deltas.

use std::collections::BTreeMap;

use super::Field;
use super::doc::{Doc, filed_ms};
use super::text::TOO_LONG;

const HEAD_MAGIC: &[u8; 4] = b"MHS1";
const BUCKET_MAGIC: &[u8; 4] = b"MHB1";

/// About how many bytes of postings one bucket blob holds.
pub const BUCKET_BYTES: usize = 256 * 1024;
/// A segment of at most this many messages whose postings fit one bucket
/// keeps them inside its head: one blob.
pub const INLINE_DOCS: usize = 4096;

#[derive(Debug, thiserror::Error)]
#[error("a search segment could not be read: {0}")]
pub struct Corrupt(pub &'static str);

// ------------------------------------------------------------ varints

pub fn put_var(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

pub fn get_var(bytes: &[u8], at: &mut usize) -> Result<u64, Corrupt> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*at).ok_or(Corrupt("a number runs past the end"))?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(Corrupt("a number is too long"));
        }
    }
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], Corrupt> {
    let end = at.checked_add(n).ok_or(Corrupt("a length overflows"))?;
    let out = bytes.get(*at..end).ok_or(Corrupt("a field runs past the end"))?;
    *at = end;
    Ok(out)
}

fn var_usize(bytes: &[u8], at: &mut usize) -> Result<usize, Corrupt> {
    usize::try_from(get_var(bytes, at)?).map_err(|_| Corrupt("a length overflows"))
}

// ------------------------------------------------------------ keys

/// A postings key: the field's code, then the word.
pub fn key(field: Field, word: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(word.len() + 1);
    k.push(field.code());
    k.extend_from_slice(word.as_bytes());
    k
}

/// 64-bit FNV-1a: a stable hash (the bucket a word is in must not change
/// between versions of the code).
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The bucket of `k` (a power of two) a word's postings are in.
pub fn bucket_of(word: &[u8], k: u32) -> u32 {
    (fnv(word) & u64::from(k.max(1) - 1)) as u32
}

// ------------------------------------------------------------ postings

/// One key's postings, being built or merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostingsBuf {
    pub docs: Vec<u32>,
    pub positions: Vec<Vec<u32>>,
}

impl PostingsBuf {
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_var(out, self.docs.len() as u64);
        let mut last = 0;
        for (i, d) in self.docs.iter().enumerate() {
            put_var(out, u64::from(if i == 0 { *d } else { d - last }));
            last = *d;
        }
        for p in &self.positions {
            put_var(out, p.len() as u64);
        }
        for p in &self.positions {
            let mut last = 0;
            for (i, at) in p.iter().enumerate() {
                put_var(out, u64::from(if i == 0 { *at } else { at - last }));
                last = *at;
            }
        }
    }
}

/// A key's postings as read: messages and counts decoded, positions when asked.
#[derive(Debug, Clone)]
pub struct Postings<'a> {
    pub docs: Vec<u32>,
    pub tfs: Vec<u32>,
    positions: &'a [u8],
}

impl<'a> Postings<'a> {
    pub fn decode(data: &'a [u8]) -> Result<Postings<'a>, Corrupt> {
        let mut at = 0;
        let n = var_usize(data, &mut at)?;
        if n > data.len() {
            return Err(Corrupt("a postings count exceeds its bytes"));
        }
        let mut docs = Vec::with_capacity(n);
        let mut last = 0u32;
        for i in 0..n {
            let delta = u32::try_from(get_var(data, &mut at)?).map_err(|_| Corrupt("a message number overflows"))?;
            last = if i == 0 {
                delta
            } else {
                last.checked_add(delta).ok_or(Corrupt("overflow"))?
            };
            docs.push(last);
        }
        let mut tfs = Vec::with_capacity(n);
        for _ in 0..n {
            tfs.push(u32::try_from(get_var(data, &mut at)?).map_err(|_| Corrupt("a count overflows"))?);
        }
        Ok(Postings {
            docs,
            tfs,
            positions: &data[at..],
        })
    }

    /// Each message's positions, in order.
    pub fn positions(&self) -> Result<Vec<Vec<u32>>, Corrupt> {
        let mut at = 0;
        let mut out = Vec::with_capacity(self.docs.len());
        for tf in &self.tfs {
            let mut p = Vec::with_capacity(*tf as usize);
            let mut last = 0u32;
            for i in 0..*tf {
                let delta = u32::try_from(get_var(self.positions, &mut at)?).map_err(|_| Corrupt("overflow"))?;
                last = if i == 0 {
                    delta
                } else {
                    last.checked_add(delta).ok_or(Corrupt("overflow"))?
                };
                p.push(last);
            }
            out.push(p);
        }
        Ok(out)
    }

    /// The positions' bytes: each message's positions as deltas, in
    /// message order (`phrase` reads them a message at a time).
    pub fn position_bytes(&self) -> &'a [u8] {
        self.positions
    }

    /// Back to a buffer (for a merge).
    pub fn to_buf(&self) -> Result<PostingsBuf, Corrupt> {
        Ok(PostingsBuf {
            docs: self.docs.clone(),
            positions: self.positions()?,
        })
    }
}

// ------------------------------------------------------------ buckets

/// One bucket: its keys, sorted, and each key's postings bytes.
#[derive(Debug)]
pub struct Bucket {
    bytes: Vec<u8>,
    /// (key start, key end, data start, data end) into `bytes`.
    entries: Vec<(u32, u32, u32, u32)>,
}

impl Bucket {
    pub fn encode(entries: &BTreeMap<Vec<u8>, PostingsBuf>) -> Vec<u8> {
        let mut data = Vec::new();
        let mut dir = Vec::new();
        put_var(&mut dir, entries.len() as u64);
        for (key, postings) in entries {
            let start = data.len();
            postings.encode(&mut data);
            put_var(&mut dir, key.len() as u64);
            dir.extend_from_slice(key);
            put_var(&mut dir, (data.len() - start) as u64);
        }
        let mut out = Vec::with_capacity(4 + dir.len() + data.len());
        out.extend_from_slice(BUCKET_MAGIC);
        out.extend_from_slice(&dir);
        out.extend_from_slice(&data);
        out
    }

    pub fn parse(bytes: Vec<u8>) -> Result<Bucket, Corrupt> {
        if bytes.get(..4) != Some(BUCKET_MAGIC) {
            return Err(Corrupt("not a bucket"));
        }
        let mut at = 4;
        let m = var_usize(&bytes, &mut at)?;
        if m > bytes.len() {
            return Err(Corrupt("a key count exceeds its bytes"));
        }
        let mut keys = Vec::with_capacity(m);
        for _ in 0..m {
            let len = var_usize(&bytes, &mut at)?;
            let start = at;
            take(&bytes, &mut at, len)?;
            let data_len = var_usize(&bytes, &mut at)?;
            keys.push((start, start + len, data_len));
        }
        let mut data_at = at;
        let mut entries = Vec::with_capacity(m);
        for (ks, ke, len) in keys {
            let end = data_at.checked_add(len).filter(|e| *e <= bytes.len());
            let end = end.ok_or(Corrupt("postings run past the end"))?;
            entries.push((ks as u32, ke as u32, data_at as u32, end as u32));
            data_at = end;
        }
        Ok(Bucket { bytes, entries })
    }

    fn key_at(&self, i: usize) -> &[u8] {
        let (s, e, _, _) = self.entries[i];
        &self.bytes[s as usize..e as usize]
    }

    fn data_at(&self, i: usize) -> &[u8] {
        let (_, _, s, e) = self.entries[i];
        &self.bytes[s as usize..e as usize]
    }

    /// A key's postings.
    pub fn get(&self, key: &[u8]) -> Result<Option<Postings<'_>>, Corrupt> {
        match self.entries.binary_search_by(|probe| {
            let (s, e, _, _) = *probe;
            self.bytes[s as usize..e as usize].cmp(key)
        }) {
            Ok(i) => Postings::decode(self.data_at(i)).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Every key with its postings bytes, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.entries.len()).map(|i| (self.key_at(i), self.data_at(i)))
    }

    pub fn size(&self) -> usize {
        self.bytes.len() + self.entries.len() * 16
    }
}

// ------------------------------------------------------------ heads

/// What the head says of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub id: String,
    pub mailbox: String,
    pub flags: u8,
    /// Its words in every field (relevance reads it).
    pub len: u32,
}

/// A segment's head, read.
#[derive(Debug)]
pub struct Head {
    pub n: usize,
    /// Bucket blobs; 0: the one bucket is `inline`.
    pub k: u32,
    mailboxes: Vec<String>,
    id_bytes: Vec<u8>,
    id_ends: Vec<u32>,
    pub ms: Vec<i64>,
    pub mailbox: Vec<u32>,
    pub flags: Vec<u8>,
    pub len: Vec<u32>,
    pub inline: Option<Bucket>,
}

impl Head {
    pub fn encode(metas: &[Meta], k: u32, inline: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + metas.len() * 32);
        out.extend_from_slice(HEAD_MAGIC);
        put_var(&mut out, metas.len() as u64);
        put_var(&mut out, u64::from(k));
        let mut mailboxes: Vec<&str> = metas.iter().map(|m| m.mailbox.as_str()).collect();
        mailboxes.sort_unstable();
        mailboxes.dedup();
        put_var(&mut out, mailboxes.len() as u64);
        for m in &mailboxes {
            put_var(&mut out, m.len() as u64);
            out.extend_from_slice(m.as_bytes());
        }
        let mut last: &[u8] = b"";
        for m in metas {
            let id = m.id.as_bytes();
            let shared = id.iter().zip(last).take_while(|(a, b)| a == b).count();
            put_var(&mut out, shared as u64);
            put_var(&mut out, (id.len() - shared) as u64);
            out.extend_from_slice(&id[shared..]);
            last = id;
        }
        for m in metas {
            let index = mailboxes.binary_search(&m.mailbox.as_str()).unwrap_or(0);
            put_var(&mut out, index as u64);
            out.push(m.flags);
            put_var(&mut out, u64::from(m.len));
        }
        if let Some(bucket) = inline {
            out.extend_from_slice(bucket);
        }
        out
    }

    pub fn parse(bytes: Vec<u8>) -> Result<Head, Corrupt> {
        if bytes.get(..4) != Some(HEAD_MAGIC) {
            return Err(Corrupt("not a segment head"));
        }
        let mut at = 4;
        let n = var_usize(&bytes, &mut at)?;
        if n > bytes.len() {
            return Err(Corrupt("a message count exceeds its bytes"));
        }
        let k = u32::try_from(get_var(&bytes, &mut at)?).map_err(|_| Corrupt("too many buckets"))?;
        let count = var_usize(&bytes, &mut at)?;
        if count > bytes.len() {
            return Err(Corrupt("a mailbox count exceeds its bytes"));
        }
        let mut mailboxes = Vec::with_capacity(count);
        for _ in 0..count {
            let len = var_usize(&bytes, &mut at)?;
            let text = take(&bytes, &mut at, len)?;
            mailboxes.push(String::from_utf8(text.to_vec()).map_err(|_| Corrupt("a mailbox is not UTF-8"))?);
        }
        let mut id_bytes = Vec::with_capacity(n * 30);
        let mut id_ends = Vec::with_capacity(n);
        let mut ms = Vec::with_capacity(n);
        let mut start = 0usize;
        for _ in 0..n {
            let shared = var_usize(&bytes, &mut at)?;
            let suffix_len = var_usize(&bytes, &mut at)?;
            let prev_len = id_bytes.len() - start;
            if shared > prev_len {
                return Err(Corrupt("an id shares more than the one before it"));
            }
            let new_start = id_bytes.len();
            id_bytes.extend_from_within(start..start + shared);
            id_bytes.extend_from_slice(take(&bytes, &mut at, suffix_len)?);
            id_ends.push(id_bytes.len() as u32);
            let id = std::str::from_utf8(&id_bytes[new_start..]).map_err(|_| Corrupt("an id is not UTF-8"))?;
            ms.push(filed_ms(id));
            start = new_start;
        }
        let mut mailbox = Vec::with_capacity(n);
        let mut flags = Vec::with_capacity(n);
        let mut len = Vec::with_capacity(n);
        for _ in 0..n {
            let index = var_usize(&bytes, &mut at)?;
            if index >= mailboxes.len() {
                return Err(Corrupt("a message names no mailbox"));
            }
            mailbox.push(index as u32);
            flags.push(*take(&bytes, &mut at, 1)?.first().unwrap_or(&0));
            len.push(u32::try_from(get_var(&bytes, &mut at)?).map_err(|_| Corrupt("a length overflows"))?);
        }
        let inline = if k == 0 {
            Some(Bucket::parse(bytes[at..].to_vec())?)
        } else {
            None
        };
        Ok(Head {
            n,
            k,
            mailboxes,
            id_bytes,
            id_ends,
            ms,
            mailbox,
            flags,
            len,
            inline,
        })
    }

    pub fn id(&self, d: usize) -> &str {
        let start = if d == 0 { 0 } else { self.id_ends[d - 1] as usize };
        let end = self.id_ends[d] as usize;
        // The bytes were checked as UTF-8 when the head was read.
        std::str::from_utf8(&self.id_bytes[start..end]).unwrap_or_default()
    }

    pub fn mailbox_of(&self, d: usize) -> &str {
        &self.mailboxes[self.mailbox[d] as usize]
    }

    pub fn mailboxes(&self) -> &[String] {
        &self.mailboxes
    }

    /// The message with this id.
    pub fn find(&self, id: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.id(mid).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    pub fn meta(&self, d: usize) -> Meta {
        Meta {
            id: self.id(d).to_string(),
            mailbox: self.mailbox_of(d).to_string(),
            flags: self.flags[d],
            len: self.len[d],
        }
    }

    pub fn size(&self) -> usize {
        self.id_bytes.len() + self.n * 21 + self.inline.as_ref().map_or(0, Bucket::size)
    }
}

// ------------------------------------------------------------ building

/// A segment's blobs: its head, and its bucket blobs (none when inline).
#[derive(Debug)]
pub struct Built {
    pub head: Vec<u8>,
    pub buckets: Vec<Vec<u8>>,
    pub docs: usize,
}

/// The number of buckets (a power of two) for about `bytes` of postings, and
/// whether they stay inline.
pub fn buckets_for(bytes: usize, docs: usize) -> u32 {
    if bytes <= BUCKET_BYTES && docs <= INLINE_DOCS {
        return 0;
    }
    (bytes.div_ceil(BUCKET_BYTES)).next_power_of_two().max(1) as u32
}

/// A segment of these messages (sorted by id here); `inline` keeps every
/// posting in the head (the fresh messages a query holds in memory).
pub fn build(docs: &[&Doc], inline: bool) -> Built {
    let mut docs: Vec<&Doc> = docs.to_vec();
    docs.sort_by(|a, b| a.id.cmp(&b.id));
    docs.dedup_by(|a, b| a.id == b.id);
    let mut postings: BTreeMap<Vec<u8>, PostingsBuf> = BTreeMap::new();
    let mut metas = Vec::with_capacity(docs.len());
    for (d, doc) in docs.iter().enumerate() {
        let mut len = 0u32;
        for field in Field::ALL {
            let mut here: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
            let words = &doc.words[field.code() as usize];
            if words.is_empty() {
                continue;
            }
            for (at, word) in words.split(' ').enumerate() {
                len += 1;
                if word.is_empty() || word == TOO_LONG {
                    continue;
                }
                here.entry(word).or_default().push(at as u32);
            }
            for (word, at) in here {
                let p = postings.entry(key(field, word)).or_default();
                p.docs.push(d as u32);
                p.positions.push(at);
            }
        }
        metas.push(Meta {
            id: doc.id.clone(),
            mailbox: doc.mailbox.clone(),
            flags: doc.flags,
            len,
        });
    }
    let bytes: usize = postings
        .iter()
        .map(|(k, p)| k.len() + p.docs.len() * 2 + p.positions.iter().map(Vec::len).sum::<usize>() * 2)
        .sum();
    let k = if inline { 0 } else { buckets_for(bytes, metas.len()) };
    lay_out(&metas, k, postings)
}

/// The blobs of a segment with these messages and postings in `k` buckets.
pub fn lay_out(metas: &[Meta], k: u32, postings: BTreeMap<Vec<u8>, PostingsBuf>) -> Built {
    if k == 0 {
        let bucket = Bucket::encode(&postings);
        return Built {
            head: Head::encode(metas, 0, Some(&bucket)),
            buckets: Vec::new(),
            docs: metas.len(),
        };
    }
    let mut split: Vec<BTreeMap<Vec<u8>, PostingsBuf>> = (0..k).map(|_| BTreeMap::new()).collect();
    for (key, p) in postings {
        split[bucket_of(&key[1..], k) as usize].insert(key, p);
    }
    Built {
        head: Head::encode(metas, k, None),
        buckets: split.iter().map(Bucket::encode).collect(),
        docs: metas.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::doc::{Folder, State};

    fn doc(id: &str, body: &str) -> Doc {
        let mut texts: [String; 6] = Default::default();
        texts[Field::Body.code() as usize] = body.to_string();
        texts[Field::Subject.code() as usize] = "hello".to_string();
        Doc::new(id, "me@example.com", 0, State::new(Folder::Inbox, false), &texts)
    }

    #[test]
    fn a_built_segment_reads_back() {
        let a = doc("1800000000001aaaaaaaaaaaaaaaa", "the cat sat on the mat");
        let b = doc("1800000000000bbbbbbbbbbbbbbbb", "a cat");
        let built = build(&[&a, &b], false);
        assert!(built.buckets.is_empty());
        let head = Head::parse(built.head).unwrap();
        assert_eq!(head.n, 2);
        assert_eq!(head.id(0), b.id);
        assert_eq!(head.id(1), a.id);
        assert_eq!(head.find(&a.id), Some(1));
        assert_eq!(head.find("1800000000000c"), None);
        assert_eq!(head.ms[1], 1_800_000_000_001);
        assert_eq!(head.len, vec![3, 7]);
        let bucket = head.inline.as_ref().unwrap();
        let cat = bucket.get(&key(Field::Body, "cat")).unwrap().unwrap();
        assert_eq!(cat.docs, vec![0, 1]);
        assert_eq!(cat.positions().unwrap(), vec![vec![1], vec![1]]);
        let the = bucket.get(&key(Field::Body, "the")).unwrap().unwrap();
        assert_eq!((the.docs.clone(), the.tfs.clone()), (vec![1], vec![2]));
        assert_eq!(the.positions().unwrap(), vec![vec![0, 4]]);
        assert!(bucket.get(&key(Field::Subject, "cat")).unwrap().is_none());
    }

    #[test]
    fn split_buckets_hold_every_field_of_a_word() {
        let docs: Vec<Doc> = (0..50)
            .map(|i| {
                doc(
                    &format!("{:013}{:016x}", 1_800_000_000_000u64 + i, i),
                    &format!("w{i} common"),
                )
            })
            .collect();
        let refs: Vec<&Doc> = docs.iter().collect();
        let built = build(&refs, false);
        let head = Head::parse(built.head).unwrap();
        let mut postings = BTreeMap::new();
        let bucket = head.inline.unwrap();
        for (k, data) in bucket.entries() {
            postings.insert(k.to_vec(), Postings::decode(data).unwrap().to_buf().unwrap());
        }
        let metas: Vec<Meta> = (0..50)
            .map(|i| Head::parse(build(&refs, false).head).unwrap().meta(i))
            .collect();
        let split = lay_out(&metas, 4, postings);
        assert_eq!(split.buckets.len(), 4);
        let b = bucket_of(b"common", 4) as usize;
        let common = Bucket::parse(split.buckets[b].clone()).unwrap();
        assert_eq!(common.get(&key(Field::Body, "common")).unwrap().unwrap().docs.len(), 50);
        let hello = Bucket::parse(split.buckets[bucket_of(b"hello", 4) as usize].clone()).unwrap();
        assert_eq!(
            hello.get(&key(Field::Subject, "hello")).unwrap().unwrap().docs.len(),
            50
        );
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_var(&mut out, v);
            let mut at = 0;
            assert_eq!(get_var(&out, &mut at).unwrap(), v);
            assert_eq!(at, out.len());
        }
        assert!(get_var(&[0x80], &mut 0).is_err());
    }
}
