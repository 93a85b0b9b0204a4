//! Phrases: the messages where a phrase's words follow on, from the words'
//! postings in one field of one segment.
//!
//! The positions of two of the commonest words are most of a segment's
//! bytes, so a phrase reads as little of them as it can: only the messages
//! holding every word (found by galloping through the lists of messages),
//! each word's positions decoded one at a time as the match needs them
//! (leapfrogging: every word's cursor jumps to where the phrase would have
//! to be), and, when only whether a message matches is asked (not how
//! often, which relevance needs), nothing past its first match: the rest is
//! stepped over, eight bytes at a time, without being decoded.

use super::segment::{Corrupt, Postings};

/// (message, occurrences) of the phrase whose words' postings are `lists`,
/// in message order. Without `counts`, a message's occurrences are 1
/// however often the phrase is in it.
pub fn occurrences(lists: &[Postings<'_>], counts: bool) -> Result<Vec<(u32, u32)>, Corrupt> {
    let Some(shortest) = lists.iter().min_by_key(|p| p.docs.len()) else {
        return Ok(Vec::new());
    };
    let mut from = vec![0usize; lists.len()];
    let mut cursors: Vec<Cursor<'_>> = lists.iter().map(Cursor::new).collect();
    let mut out = Vec::new();
    'docs: for &d in &shortest.docs {
        for (p, from) in lists.iter().zip(from.iter_mut()) {
            match gallop(&p.docs, *from, d) {
                Ok(i) => *from = i,
                Err(i) => {
                    *from = i;
                    if i == p.docs.len() {
                        break 'docs;
                    }
                    continue 'docs;
                }
            }
        }
        for (cursor, i) in cursors.iter_mut().zip(&from) {
            cursor.seek(*i)?;
        }
        let count = follow_on(&mut cursors, counts)?;
        if count > 0 {
            out.push((d, count));
        }
    }
    Ok(out)
}

/// How often the words follow on in the message the cursors are at (at
/// most once without `counts`).
fn follow_on(cursors: &mut [Cursor<'_>], counts: bool) -> Result<u32, Corrupt> {
    let mut count = 0;
    let mut start = 0u32;
    'starts: loop {
        let mut i = 0;
        while i < cursors.len() {
            let Some(want) = start.checked_add(i as u32) else {
                break 'starts;
            };
            match cursors[i].advance_to(want)? {
                None => break 'starts,
                Some(p) if p == want => i += 1,
                // Word i is first at p: the phrase can start no sooner than
                // p - i (no lower than `start`, as p > start + i).
                Some(p) => {
                    start = p - i as u32;
                    i = 0;
                }
            }
        }
        count += 1;
        if !counts {
            break;
        }
        start += 1;
    }
    Ok(count)
}

/// The index of `d` in `docs` at or past `from` (`Err`: where it would be),
/// by steps doubling from `from`: a phrase's candidates are near each other
/// in a common word's list.
fn gallop(docs: &[u32], from: usize, d: u32) -> Result<usize, usize> {
    // Every message in from..lo is below d; so is the one at hi, if any,
    // while the loop runs.
    let (mut lo, mut hi, mut step) = (from, from, 1);
    while hi < docs.len() && docs[hi] < d {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let end = hi.saturating_add(1).min(docs.len());
    match docs[lo..end].binary_search(&d) {
        Ok(i) => Ok(lo + i),
        Err(i) => Err(lo + i),
    }
}

/// One word's positions, read a message at a time in increasing order.
struct Cursor<'p> {
    tfs: &'p [u32],
    bytes: &'p [u8],
    /// The message after the one being read.
    next: usize,
    /// Where its next position's bytes start, and how many are left.
    at: usize,
    left: u32,
    /// The position last decoded (none before the first of a message).
    current: Option<u32>,
}

impl<'p> Cursor<'p> {
    fn new(postings: &'p Postings<'p>) -> Cursor<'p> {
        Cursor {
            tfs: &postings.tfs,
            bytes: postings.position_bytes(),
            next: 0,
            at: 0,
            left: 0,
            current: None,
        }
    }

    /// To the `i`th message of the postings (past the one being read).
    fn seek(&mut self, i: usize) -> Result<(), Corrupt> {
        if i < self.next || i >= self.tfs.len() {
            return Err(Corrupt("positions asked out of order"));
        }
        let skip = self.left as usize + self.tfs[self.next..i].iter().map(|t| *t as usize).sum::<usize>();
        skip_varints(self.bytes, &mut self.at, skip)?;
        self.next = i + 1;
        self.left = self.tfs[i];
        self.current = None;
        Ok(())
    }

    /// The message's first position at or past `target` (none: there is none).
    fn advance_to(&mut self, target: u32) -> Result<Option<u32>, Corrupt> {
        loop {
            if let Some(p) = self.current
                && p >= target
            {
                return Ok(Some(p));
            }
            if self.left == 0 {
                return Ok(None);
            }
            let delta = next_var(self.bytes, &mut self.at)?;
            self.left -= 1;
            let p = match self.current {
                None => delta,
                Some(last) => last.checked_add(delta).ok_or(Corrupt("a position overflows"))?,
            };
            self.current = Some(p);
        }
    }
}

/// A varint of at most 32 bits.
#[inline]
fn next_var(bytes: &[u8], at: &mut usize) -> Result<u32, Corrupt> {
    let mut v = 0u32;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*at).ok_or(Corrupt("positions run past the end"))?;
        *at += 1;
        if shift == 28 && byte & 0x70 != 0 {
            return Err(Corrupt("a position overflows"));
        }
        v |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 28 {
            return Err(Corrupt("a position overflows"));
        }
    }
}

/// Steps over `n` varints: a varint ends at a byte below 0x80, so eight
/// bytes at a time while fewer than `n` end in them.
fn skip_varints(bytes: &[u8], at: &mut usize, mut n: usize) -> Result<(), Corrupt> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while n > 8 {
        let Some(chunk) = bytes.get(*at..*at + 8) else {
            break;
        };
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let ends = (!word & HIGH).count_ones() as usize;
        if ends >= n {
            break;
        }
        n -= ends;
        *at += 8;
    }
    while n > 0 {
        let byte = *bytes.get(*at).ok_or(Corrupt("positions run past the end"))?;
        *at += 1;
        if byte & 0x80 == 0 {
            n -= 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::segment::PostingsBuf;

    fn encoded(docs: &[u32], positions: &[Vec<u32>]) -> Vec<u8> {
        let buf = PostingsBuf {
            docs: docs.to_vec(),
            positions: positions.to_vec(),
        };
        let mut bytes = Vec::new();
        buf.encode(&mut bytes);
        bytes
    }

    /// The phrase's occurrences, counted the plain way.
    fn plain(lists: &[(Vec<u32>, Vec<Vec<u32>>)]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (i, d) in lists[0].0.iter().enumerate() {
            let mut at = vec![i];
            for (docs, _) in &lists[1..] {
                match docs.iter().position(|x| x == d) {
                    Some(j) => at.push(j),
                    None => break,
                }
            }
            if at.len() < lists.len() {
                continue;
            }
            let count = lists[0].1[i]
                .iter()
                .filter(|s| (1..lists.len()).all(|w| lists[w].1[at[w]].contains(&(**s + w as u32))))
                .count() as u32;
            if count > 0 {
                out.push((*d, count));
            }
        }
        out
    }

    #[test]
    fn a_phrase_is_found_where_its_words_follow_on() {
        // Positions past 127 take two bytes; long lists are stepped over
        // eight bytes at a time.
        let mut seed = 7u64;
        let mut next = move |m: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        for words in [2, 3] {
            let lists: Vec<(Vec<u32>, Vec<Vec<u32>>)> = (0..words)
                .map(|_| {
                    let docs: Vec<u32> = (0..400u32).filter(|_| next(3) > 0).collect();
                    let positions = docs
                        .iter()
                        .map(|_| {
                            let mut p: Vec<u32> = (0..1 + next(60)).map(|_| next(160) as u32).collect();
                            p.sort_unstable();
                            p.dedup();
                            p
                        })
                        .collect();
                    (docs, positions)
                })
                .collect();
            let bytes: Vec<Vec<u8>> = lists.iter().map(|(d, p)| encoded(d, p)).collect();
            let postings: Vec<Postings<'_>> = bytes.iter().map(|b| Postings::decode(b).unwrap()).collect();
            let want = plain(&lists);
            assert!(
                want.len() > 10,
                "{words} words: too few matches to test ({})",
                want.len()
            );
            assert_eq!(occurrences(&postings, true).unwrap(), want);
            let once: Vec<(u32, u32)> = want.iter().map(|(d, _)| (*d, 1)).collect();
            assert_eq!(occurrences(&postings, false).unwrap(), once);
        }
    }

    #[test]
    fn a_repeated_word_follows_itself() {
        let bytes = encoded(&[1, 2], &[vec![0, 1, 2, 9], vec![4, 6]]);
        let p = Postings::decode(&bytes).unwrap();
        let lists = [p.clone(), p.clone()];
        assert_eq!(occurrences(&lists, true).unwrap(), vec![(1, 2)]);
        let three = [p.clone(), p.clone(), p];
        assert_eq!(occurrences(&three, true).unwrap(), vec![(1, 1)]);
    }

    #[test]
    fn galloping_finds_what_a_binary_search_finds() {
        let docs: Vec<u32> = (0..300).map(|i| i * 3).collect();
        for from in [0, 1, 17, 150, 299] {
            for d in 0..905 {
                let want = match docs[from..].binary_search(&d) {
                    Ok(i) => Ok(from + i),
                    Err(i) => Err(from + i),
                };
                assert_eq!(gallop(&docs, from, d), want, "from {from}, {d}");
            }
        }
    }

    #[test]
    fn stepping_over_varints_lands_where_decoding_them_does() {
        let mut bytes = Vec::new();
        for v in 0..500u64 {
            crate::search::segment::put_var(&mut bytes, v * v * 37);
        }
        for n in [0, 1, 7, 8, 9, 63, 64, 65, 499, 500] {
            let mut decoded = 0;
            for _ in 0..n {
                crate::search::segment::get_var(&bytes, &mut decoded).unwrap();
            }
            let mut at = 0;
            skip_varints(&bytes, &mut at, n).unwrap();
            assert_eq!(at, decoded, "{n}");
        }
        assert!(skip_varints(&bytes, &mut 0, 501).is_err());
    }
}
