//! Words as search sees them: SQLite FTS5's `unicode61 remove_diacritics 2`
//! tokenizer, to the code point (its table is measured from FTS5 itself, see
//! `unicode61.rs`). A word is a run of letters, digits and private-use
//! characters; it is folded to lower case and its Latin diacritics dropped,
//! so `Résumé` is `resume`. Everything else separates words.

use super::unicode61::{DROP, RUNS, SEP};

/// The longest word kept, in bytes (UTF-8). A longer run (a base64 line, a
/// hash) still takes its place in the text, so a phrase never spans it, but
/// is not searchable.
pub const MAX_WORD: usize = 128;

/// Stands for a word too long to keep in normalized text: a character no
/// word holds.
pub const TOO_LONG: &str = "\u{1}";

/// What the tokenizer does with one character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// It separates words.
    Sep,
    /// It belongs to a word and is dropped (a combining diacritic).
    Drop,
    /// It belongs to a word as this character.
    Char(char),
}

fn fold(c: char) -> Fold {
    if c.is_ascii() {
        return match c {
            'a'..='z' | '0'..='9' => Fold::Char(c),
            'A'..='Z' => Fold::Char(c.to_ascii_lowercase()),
            _ => Fold::Sep,
        };
    }
    let cp = c as u32;
    let at = RUNS.partition_point(|(start, _)| *start <= cp) - 1;
    match RUNS[at].1 {
        SEP => Fold::Sep,
        DROP => Fold::Drop,
        delta => char::from_u32(cp.wrapping_add_signed(delta)).map_or(Fold::Sep, Fold::Char),
    }
}

/// One word of a text, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word<'a> {
    Kept(&'a str),
    /// Longer than [`MAX_WORD`]: it takes a position and matches nothing.
    TooLong,
}

/// Calls `each` with every word of `text`, folded. A run of characters that
/// all drop (a lone combining mark) is no word and takes no position, as in
/// FTS5.
pub fn words(text: &str, mut each: impl FnMut(Word<'_>)) {
    spans(text, |w, _| each(w));
}

/// [`words`], with where each word is in `text` (a byte range).
pub fn spans(text: &str, mut each: impl FnMut(Word<'_>, std::ops::Range<usize>)) {
    let mut word = String::new();
    let mut start = None;
    let mut flush = |word: &mut String, start: &mut Option<usize>, end: usize| {
        if let Some(at) = start.take()
            && !word.is_empty()
        {
            if word.len() > MAX_WORD {
                each(Word::TooLong, at..end);
            } else {
                each(Word::Kept(word), at..end);
            }
        }
        word.clear();
    };
    for (at, c) in text.char_indices() {
        match fold(c) {
            Fold::Sep => flush(&mut word, &mut start, at),
            Fold::Drop => {
                start.get_or_insert(at);
            }
            Fold::Char(f) => {
                start.get_or_insert(at);
                word.push(f);
            }
        }
    }
    flush(&mut word, &mut start, text.len());
}

/// The words of `text`, folded, each too-long word as [`TOO_LONG`], joined by
/// single spaces: the form the index keeps.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    words(text, |w| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(match w {
            Word::Kept(w) => w,
            Word::TooLong => TOO_LONG,
        });
    });
    out
}

/// The searchable words of `text` (too-long words left out).
pub fn kept_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    words(text, |w| {
        if let Word::Kept(w) = w {
            out.push(w.to_string());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        words(text, |w| {
            out.push(match w {
                Word::Kept(w) => w.to_string(),
                Word::TooLong => "<long>".to_string(),
            })
        });
        out
    }

    /// The same answers Python's sqlite3 gives for FTS5 `unicode61
    /// remove_diacritics 2` on these texts.
    #[test]
    fn words_fold_as_fts5_folds_them() {
        assert_eq!(all("Résumé café"), ["resume", "cafe"]);
        assert_eq!(all("x\u{301}y"), ["xy"]);
        assert_eq!(all("a \u{301} b"), ["a", "b"]);
        assert_eq!(
            all("naïve ß ǅ İstanbul Ωmega"),
            ["naive", "ß", "ǆ", "istanbul", "ωmega"]
        );
        assert_eq!(all("don't e-mail foo_bar"), ["don", "t", "e", "mail", "foo", "bar"]);
        assert_eq!(all("日本語 テスト"), ["日本語", "テスト"]);
        assert_eq!(all("x😀y"), ["x", "y"]);
        assert_eq!(all("Ⅻ ½ ²"), ["ⅻ", "½", "²"]);
    }

    #[test]
    fn spans_say_where_each_word_is() {
        let text = "Hé, Résumé!";
        let mut out = Vec::new();
        spans(text, |w, r| {
            if let Word::Kept(w) = w {
                out.push((w.to_string(), &text[r]))
            }
        });
        assert_eq!(out, [("he".to_string(), "Hé"), ("resume".to_string(), "Résumé")]);
    }

    #[test]
    fn a_word_past_the_limit_keeps_its_place_but_not_its_text() {
        let long = "a".repeat(MAX_WORD + 1);
        assert_eq!(all(&format!("one {long} two")), ["one", "<long>", "two"]);
        assert_eq!(normalize(&format!("One {long} TWO")), format!("one {TOO_LONG} two"));
        assert_eq!(kept_words(&format!("one {long} two")), ["one", "two"]);
    }
}
