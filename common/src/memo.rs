//! A memo of what stored rows encode to, by the exact text of each row.
//!
//! The inbox list answers each stored row with its summary, encoded from
//! the row's text, and agents poll the same page again and again: the
//! encoding was three quarters of a page's CPU (benches/http.sh). So each
//! encoding is kept beside the text it came from, under the row's key, and
//! used again while a read finds that same text: a row whose flag or folder
//! changed has new text and is encoded again. The whole text decides a hit,
//! never a hash of it, so what a hit answers is what encoding would.
//!
//! Each process keeps its own, up to a budget of bytes (text and encodings,
//! `MAILHOST_LIST_MEMO_BYTES`); past it the memo starts over empty, and a
//! budget of 0 keeps nothing (every page is encoded as on its first read).
//! Every read still reads its rows from the store, so a row removed there is
//! never answered from here.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::value::RawValue;

use crate::store::RawItem;

pub struct EncodingMemo {
    budget: usize,
    memo: Mutex<Memo>,
}

#[derive(Default)]
struct Memo {
    /// By `<partition>\n<sort key>`.
    rows: HashMap<String, Encoded>,
    bytes: usize,
}

struct Encoded {
    text: Vec<u8>,
    encoding: Box<RawValue>,
    flagged: bool,
}

impl EncodingMemo {
    pub fn with_budget(budget: usize) -> Self {
        EncodingMemo {
            budget,
            memo: Mutex::new(Memo::default()),
        }
    }

    /// The encodings of a page's rows of partition `pk`, in order, and how
    /// many of them are flagged (for the inbox: unread). `encode` gives a
    /// row's encoding and flag from its text; it runs, outside the lock, only
    /// for rows the memo holds no encoding of that text for.
    pub fn page<E>(
        &self,
        pk: &str,
        items: Vec<RawItem>,
        encode: impl Fn(&[u8]) -> Result<(Box<RawValue>, bool), E>,
    ) -> Result<(Vec<Box<RawValue>>, usize), E> {
        // Keys built by hand: `format!` was a tenth of the instructions of a
        // page read again (benches/instructions.sh).
        let keys: Vec<String> = items
            .iter()
            .map(|item| {
                let mut key = String::with_capacity(pk.len() + 1 + item.sk.len());
                key.push_str(pk);
                key.push('\n');
                key.push_str(&item.sk);
                key
            })
            .collect();
        let known: Vec<Option<(Box<RawValue>, bool)>> = {
            let memo = self.lock();
            keys.iter()
                .zip(&items)
                .map(|(key, item)| match memo.rows.get(key) {
                    Some(e) if e.text == item.json => Some((e.encoding.clone(), e.flagged)),
                    _ => None,
                })
                .collect()
        };
        let mut encodings = Vec::with_capacity(items.len());
        let mut flagged = 0;
        let mut fresh = Vec::new();
        for ((key, item), known) in keys.into_iter().zip(items).zip(known) {
            let (encoding, is_flagged) = match known {
                Some(hit) => hit,
                None => {
                    let (encoding, is_flagged) = encode(&item.json)?;
                    fresh.push((
                        key,
                        Encoded {
                            text: item.json,
                            encoding: encoding.clone(),
                            flagged: is_flagged,
                        },
                    ));
                    (encoding, is_flagged)
                }
            };
            flagged += usize::from(is_flagged);
            encodings.push(encoding);
        }
        if !fresh.is_empty() && self.budget > 0 {
            let mut memo = self.lock();
            for (key, encoded) in fresh {
                memo.insert(key, encoded, self.budget);
            }
        }
        Ok((encodings, flagged))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        // The memo holds no invariant a panic could break halfway.
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Memo {
    fn insert(&mut self, key: String, encoded: Encoded, budget: usize) {
        let size = |key: &str, e: &Encoded| key.len() + e.text.len() + e.encoding.get().len();
        let added = size(&key, &encoded);
        if self.bytes + added > budget {
            self.rows.clear();
            self.bytes = 0;
        }
        if let Some(old) = self.rows.remove(&key) {
            self.bytes -= size(&key, &old);
        }
        self.bytes += added;
        self.rows.insert(key, encoded);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn item(sk: &str, text: &str) -> RawItem {
        RawItem {
            sk: sk.into(),
            json: text.as_bytes().to_vec(),
        }
    }

    /// The test's encoding: the text itself, unread when it says so.
    fn encoder(calls: &Cell<usize>) -> impl Fn(&[u8]) -> Result<(Box<RawValue>, bool), serde_json::Error> + '_ {
        move |text| {
            calls.set(calls.get() + 1);
            let text = std::str::from_utf8(text).unwrap();
            Ok((RawValue::from_string(text.to_string())?, text.contains("true")))
        }
    }

    fn texts(summaries: &[Box<RawValue>]) -> Vec<&str> {
        summaries.iter().map(|s| s.get()).collect()
    }

    #[test]
    fn a_row_read_again_with_the_same_text_is_not_encoded_again() {
        let cache = EncodingMemo::with_budget(8 << 20);
        let calls = Cell::new(0);
        let page = || vec![item("2", r#"{"u":true}"#), item("1", r#"{"u":false}"#)];
        let (first, unread) = cache.page("P", page(), encoder(&calls)).unwrap();
        assert_eq!(
            (texts(&first), unread, calls.get()),
            (vec![r#"{"u":true}"#, r#"{"u":false}"#], 1, 2)
        );
        let (again, unread) = cache.page("P", page(), encoder(&calls)).unwrap();
        assert_eq!((texts(&again), unread, calls.get()), (texts(&first), 1, 2));
    }

    #[test]
    fn a_row_whose_text_changed_is_encoded_again() {
        let cache = EncodingMemo::with_budget(8 << 20);
        let calls = Cell::new(0);
        cache
            .page("P", vec![item("1", r#"{"u":true}"#)], encoder(&calls))
            .unwrap();
        let (read, unread) = cache
            .page("P", vec![item("1", r#"{"u":false}"#)], encoder(&calls))
            .unwrap();
        assert_eq!((texts(&read), unread, calls.get()), (vec![r#"{"u":false}"#], 0, 2));
        // The same key in another partition is another row.
        let (other, _) = cache
            .page("Q", vec![item("1", r#"{"u":true}"#)], encoder(&calls))
            .unwrap();
        assert_eq!((texts(&other), calls.get()), (vec![r#"{"u":true}"#], 3));
    }

    #[test]
    fn past_its_budget_the_memo_starts_over_and_answers_alike() {
        // Room for about two rows of this size.
        let cache = EncodingMemo::with_budget(60);
        let calls = Cell::new(0);
        let rows = |n: usize| {
            (0..n)
                .map(|i| item(&i.to_string(), r#"{"u":true}"#))
                .collect::<Vec<_>>()
        };
        let (first, unread) = cache.page("P", rows(5), encoder(&calls)).unwrap();
        assert_eq!((first.len(), unread, calls.get()), (5, 5, 5));
        assert!(cache.lock().bytes <= 60, "{}", cache.lock().bytes);
        let (again, _) = cache.page("P", rows(5), encoder(&calls)).unwrap();
        assert_eq!(texts(&again), texts(&first));
    }

    #[test]
    fn a_budget_of_nothing_keeps_nothing() {
        let cache = EncodingMemo::with_budget(0);
        let calls = Cell::new(0);
        let page = || vec![item("1", r#"{"u":true}"#)];
        cache.page("P", page(), encoder(&calls)).unwrap();
        let (again, unread) = cache.page("P", page(), encoder(&calls)).unwrap();
        assert_eq!((texts(&again), unread, calls.get()), (vec![r#"{"u":true}"#], 1, 2));
        assert!(cache.lock().rows.is_empty());
    }

    #[test]
    fn an_encoding_error_is_the_pages_and_nothing_is_kept() {
        let cache = EncodingMemo::with_budget(8 << 20);
        let refused = cache.page("P", vec![item("1", "{")], |text: &[u8]| {
            serde_json::from_slice::<Box<RawValue>>(text).map(|v| (v, false))
        });
        assert!(refused.is_err());
        assert!(cache.lock().rows.is_empty());
    }
}
