//! The query language: Gmail's operators, read into a tree.
//!
//! ```text
//! query   := all
//! all     := any (["AND"] any)*         every part must match
//! any     := unary ("OR" unary)*        OR binds tighter than AND, as in Gmail
//! unary   := "-" unary | primary        - leaves out what follows
//! primary := "(" all ")" | "\"phrase\"" | word | name ":" value
//! value   := word | "\"phrase\"" | "(" all ")"   (the latter for text operators)
//! ```
//!
//! A word is matched whole (case and accents aside); a word the tokenizer
//! splits (`e-mail`, `alice@example.com`) is matched as a phrase, as a quoted
//! one is. An operator name Gmail has but this service does not (`label:`)
//! is refused; any other `name:` is plain text (`re:hello`).

use chrono::{NaiveDate, TimeZone, Utc};

use super::Field;
use super::text::{self, Word};

/// Where a message is (`in:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Received mail in the inbox.
    Inbox,
    /// Received mail in the archive.
    Archive,
    /// Any mail in the trash.
    Trash,
    /// Received mail filed or reported as spam.
    Spam,
    /// Sent mail, outside the trash.
    Sent,
    /// Everywhere, the trash and spam included.
    Anywhere,
}

const PLACES: &[(&str, Place)] = &[
    ("inbox", Place::Inbox),
    ("archive", Place::Archive),
    ("trash", Place::Trash),
    ("spam", Place::Spam),
    ("sent", Place::Sent),
    ("anywhere", Place::Anywhere),
];

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Words in one field, or in any when `field` is none: one word is a
    /// term, several a phrase (consecutive, in one field).
    Words {
        field: Option<Field>,
        words: Vec<String>,
    },
    HasAttachment,
    /// `is:unread` (true) or `is:read` (false).
    Unread(bool),
    In(Place),
    /// Filed before this instant (epoch ms), exclusive.
    Before(i64),
    /// Filed at or after this instant (epoch ms).
    After(i64),
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub root: Node,
    /// The query names the trash (`in:trash`, `in:anywhere`): without it,
    /// trashed mail is left out, as Gmail does.
    pub names_trash: bool,
    /// The query names spam (`in:spam`, `in:anywhere`): without it, spam is
    /// left out, as Gmail does.
    pub names_spam: bool,
}

/// Why a query could not be read: a sentence naming the part at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

/// The most words and operators one query holds, and how deep its
/// parentheses go.
pub const MAX_PARTS: usize = 64;
const MAX_DEPTH: usize = 16;

const DAY_MS: i64 = 86_400_000;

/// Reads a query; `now_ms` anchors `newer_than:` and `older_than:`.
pub fn parse(q: &str, now_ms: i64) -> Result<Query, Unreadable> {
    let lexemes = lex(q)?;
    let mut parser = Parser {
        lexemes,
        at: 0,
        depth: 0,
        parts: 0,
        now_ms,
        names_trash: false,
        names_spam: false,
    };
    let root = parser.all(None)?;
    if let Some(extra) = parser.lexemes.get(parser.at) {
        return Err(match extra {
            Lexeme::Close => Unreadable("\")\" closes no \"(\"".into()),
            other => Unreadable(format!("{} was not expected there", other.shown())),
        });
    }
    Ok(Query {
        root,
        names_trash: parser.names_trash,
        names_spam: parser.names_spam,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Lexeme {
    Open,
    Close,
    Or,
    And,
    /// `-` right before a term.
    Minus,
    Quoted(String),
    Word(String),
    /// `name:` right before its value.
    Operator(Operator),
}

impl Lexeme {
    fn shown(&self) -> String {
        match self {
            Lexeme::Open => "\"(\"".into(),
            Lexeme::Close => "\")\"".into(),
            Lexeme::Or => "\"OR\"".into(),
            Lexeme::And => "\"AND\"".into(),
            Lexeme::Minus => "\"-\"".into(),
            Lexeme::Quoted(q) => format!("\"\\\"{q}\\\"\""),
            Lexeme::Word(w) => format!("\"{w}\""),
            Lexeme::Operator(o) => format!("\"{}:\"", o.name()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Text(Field),
    Has,
    Is,
    In,
    Before,
    After,
    OlderThan,
    NewerThan,
}

impl Operator {
    fn name(self) -> &'static str {
        match self {
            Operator::Text(f) => f.operator(),
            Operator::Has => "has",
            Operator::Is => "is",
            Operator::In => "in",
            Operator::Before => "before",
            Operator::After => "after",
            Operator::OlderThan => "older_than",
            Operator::NewerThan => "newer_than",
        }
    }

    fn named(name: &str) -> Option<Operator> {
        Some(match name {
            "from" => Operator::Text(Field::From),
            "to" => Operator::Text(Field::To),
            "cc" => Operator::Text(Field::Cc),
            "subject" => Operator::Text(Field::Subject),
            "filename" => Operator::Text(Field::Filename),
            "has" => Operator::Has,
            "is" => Operator::Is,
            "in" => Operator::In,
            "before" | "older" => Operator::Before,
            "after" | "newer" => Operator::After,
            "older_than" => Operator::OlderThan,
            "newer_than" => Operator::NewerThan,
            _ => return None,
        })
    }
}

/// Gmail operators this service does not have: refused by name rather than
/// searched as text, so no one mistakes no results for an answer.
const NOT_HERE: &[&str] = &[
    "label",
    "category",
    "bcc",
    "list",
    "deliveredto",
    "size",
    "larger",
    "smaller",
    "rfc822msgid",
];

fn lex(q: &str) -> Result<Vec<Lexeme>, Unreadable> {
    let chars: Vec<char> = q.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        match c {
            '(' => {
                out.push(Lexeme::Open);
                i += 1;
            }
            ')' => {
                out.push(Lexeme::Close);
                i += 1;
            }
            '"' => {
                let end = chars[i + 1..].iter().position(|&c| c == '"');
                let Some(end) = end else {
                    let rest: String = chars[i..].iter().collect();
                    return Err(Unreadable(format!("the quote in {rest} is never closed")));
                };
                out.push(Lexeme::Quoted(chars[i + 1..i + 1 + end].iter().collect()));
                i += end + 2;
            }
            '-' => {
                match chars.get(i + 1) {
                    Some(next) if !next.is_whitespace() && *next != ')' => out.push(Lexeme::Minus),
                    _ => return Err(Unreadable("\"-\" needs a word right after it, such as -draft".into())),
                }
                i += 1;
            }
            _ => {
                let start = i;
                let mut operator = None;
                while i < chars.len() && !chars[i].is_whitespace() && !matches!(chars[i], '(' | ')' | '"') {
                    if chars[i] == ':' {
                        let name = chars[start..i].iter().collect::<String>().to_ascii_lowercase();
                        if let Some(op) = Operator::named(&name) {
                            let value_follows = chars.get(i + 1).is_some_and(|c| !c.is_whitespace() && *c != ')');
                            if !value_follows {
                                return Err(Unreadable(format!(
                                    "\"{name}:\" needs a value right after it, such as {}",
                                    example(op)
                                )));
                            }
                            operator = Some(op);
                            i += 1;
                            break;
                        }
                        if NOT_HERE.contains(&name.as_str()) {
                            return Err(Unreadable(format!("\"{name}:\" is not an operator this search has")));
                        }
                    }
                    i += 1;
                }
                if let Some(op) = operator {
                    out.push(Lexeme::Operator(op));
                    continue;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.as_str() {
                    "OR" | "|" => Lexeme::Or,
                    "AND" => Lexeme::And,
                    _ => Lexeme::Word(word),
                });
            }
        }
    }
    Ok(out)
}

fn example(op: Operator) -> &'static str {
    match op {
        Operator::Text(Field::From) => "from:alice@example.com",
        Operator::Text(Field::To) => "to:bob",
        Operator::Text(Field::Cc) => "cc:carol",
        Operator::Text(Field::Subject) => "subject:invoice",
        Operator::Text(Field::Filename) => "filename:pdf",
        Operator::Text(Field::Body) => "invoice",
        Operator::Has => "has:attachment",
        Operator::Is => "is:unread",
        Operator::In => "in:inbox",
        Operator::Before => "before:2026-03-01",
        Operator::After => "after:2026-03-01",
        Operator::OlderThan => "older_than:1y",
        Operator::NewerThan => "newer_than:7d",
    }
}

struct Parser {
    lexemes: Vec<Lexeme>,
    at: usize,
    depth: usize,
    parts: usize,
    now_ms: i64,
    names_trash: bool,
    names_spam: bool,
}

impl Parser {
    fn peek(&self) -> Option<&Lexeme> {
        self.lexemes.get(self.at)
    }

    fn next(&mut self) -> Option<Lexeme> {
        let l = self.lexemes.get(self.at).cloned();
        self.at += 1;
        l
    }

    fn part(&mut self) -> Result<(), Unreadable> {
        self.parts += 1;
        if self.parts > MAX_PARTS {
            return Err(Unreadable(format!(
                "it holds more than {MAX_PARTS} words and operators"
            )));
        }
        Ok(())
    }

    /// Parts that must all match, up to `)` or the end.
    fn all(&mut self, field: Option<Field>) -> Result<Node, Unreadable> {
        let mut parts = Vec::new();
        loop {
            match self.peek() {
                None | Some(Lexeme::Close) => break,
                Some(Lexeme::And) => {
                    if parts.is_empty() {
                        return Err(Unreadable("\"AND\" needs a term before it".into()));
                    }
                    self.at += 1;
                    if matches!(self.peek(), None | Some(Lexeme::Close | Lexeme::And | Lexeme::Or)) {
                        return Err(Unreadable("\"AND\" needs a term after it".into()));
                    }
                }
                Some(Lexeme::Or) => return Err(Unreadable("\"OR\" needs a term before it".into())),
                _ => parts.push(self.any(field)?),
            }
        }
        match parts.len() {
            0 => Err(Unreadable("there is nothing to search for".into())),
            1 => Ok(parts.pop().unwrap_or(Node::And(Vec::new()))),
            _ => Ok(Node::And(parts)),
        }
    }

    /// Terms joined by OR.
    fn any(&mut self, field: Option<Field>) -> Result<Node, Unreadable> {
        let mut parts = vec![self.unary(field)?];
        while self.peek() == Some(&Lexeme::Or) {
            self.at += 1;
            match self.peek() {
                None | Some(Lexeme::Close | Lexeme::Or | Lexeme::And) => {
                    return Err(Unreadable("\"OR\" needs a term after it".into()));
                }
                _ => parts.push(self.unary(field)?),
            }
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(Node::Or(Vec::new()))
        } else {
            Node::Or(parts)
        })
    }

    fn unary(&mut self, field: Option<Field>) -> Result<Node, Unreadable> {
        if self.peek() == Some(&Lexeme::Minus) {
            self.at += 1;
            return Ok(Node::Not(Box::new(self.unary(field)?)));
        }
        self.primary(field)
    }

    fn primary(&mut self, field: Option<Field>) -> Result<Node, Unreadable> {
        match self.next() {
            Some(Lexeme::Open) => self.group(field),
            Some(Lexeme::Quoted(q)) => {
                self.part()?;
                words(field, &q, &format!("\"{q}\""))
            }
            Some(Lexeme::Word(w)) => {
                self.part()?;
                words(field, &w, &w)
            }
            Some(Lexeme::Operator(op)) => {
                self.part()?;
                self.operator(op, field)
            }
            Some(other) => Err(Unreadable(format!("{} was not expected there", other.shown()))),
            None => Err(Unreadable("the query ends where a term was expected".into())),
        }
    }

    fn group(&mut self, field: Option<Field>) -> Result<Node, Unreadable> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unreadable(format!("its parentheses nest deeper than {MAX_DEPTH}")));
        }
        if self.peek() == Some(&Lexeme::Close) {
            return Err(Unreadable("\"()\" holds nothing to search for".into()));
        }
        let inner = self.all(field)?;
        match self.next() {
            Some(Lexeme::Close) => {
                self.depth -= 1;
                Ok(inner)
            }
            _ => Err(Unreadable("a \"(\" is never closed".into())),
        }
    }

    fn operator(&mut self, op: Operator, field: Option<Field>) -> Result<Node, Unreadable> {
        let name = op.name();
        if let Operator::Text(f) = op {
            if field.is_some_and(|outer| outer != f) {
                return Err(Unreadable(format!(
                    "\"{name}:\" cannot sit inside another field's parentheses"
                )));
            }
            return match self.next() {
                Some(Lexeme::Open) => self.group(Some(f)),
                Some(Lexeme::Quoted(q)) => words(Some(f), &q, &format!("{name}:\"{q}\"")),
                Some(Lexeme::Word(w)) => words(Some(f), &w, &format!("{name}:{w}")),
                _ => Err(Unreadable(format!(
                    "\"{name}:\" needs a value right after it, such as {}",
                    example(op)
                ))),
            };
        }
        let value = match self.next() {
            Some(Lexeme::Word(w)) => w,
            Some(Lexeme::Quoted(q)) => q,
            _ => {
                return Err(Unreadable(format!(
                    "\"{name}:\" takes one value, such as {}",
                    example(op)
                )));
            }
        };
        let lower = value.to_ascii_lowercase();
        let shown = format!("{name}:{value}");
        match op {
            Operator::Has => match lower.as_str() {
                "attachment" => Ok(Node::HasAttachment),
                _ => Err(Unreadable(format!(
                    "\"{shown}\" is not searchable: has: takes attachment"
                ))),
            },
            Operator::Is => match lower.as_str() {
                "unread" => Ok(Node::Unread(true)),
                "read" => Ok(Node::Unread(false)),
                _ => Err(Unreadable(format!(
                    "\"{shown}\" is not searchable: is: takes read or unread"
                ))),
            },
            Operator::In => match PLACES.iter().find(|(n, _)| *n == lower) {
                Some((_, place)) => {
                    if matches!(place, Place::Trash | Place::Anywhere) {
                        self.names_trash = true;
                    }
                    if matches!(place, Place::Spam | Place::Anywhere) {
                        self.names_spam = true;
                    }
                    Ok(Node::In(*place))
                }
                None => Err(Unreadable(format!(
                    "\"{shown}\" is not searchable: in: takes inbox, archive, trash, spam, sent or anywhere"
                ))),
            },
            Operator::Before | Operator::After => {
                let ms = day(&value).ok_or_else(|| {
                    Unreadable(format!(
                        "\"{shown}\" is not a date: {name}: takes YYYY-MM-DD, such as {}",
                        example(op)
                    ))
                })?;
                Ok(if op == Operator::Before {
                    Node::Before(ms)
                } else {
                    Node::After(ms)
                })
            }
            Operator::OlderThan | Operator::NewerThan => {
                let span = span(&lower).ok_or_else(|| {
                    Unreadable(format!(
                        "\"{shown}\" is not a span: {name}: takes a number and d, m or y, such as {}",
                        example(op)
                    ))
                })?;
                let at = self.now_ms - span;
                Ok(if op == Operator::OlderThan {
                    Node::Before(at)
                } else {
                    Node::After(at)
                })
            }
            Operator::Text(_) => unreachable!("text operators return above"),
        }
    }
}

/// Words of `text` as a term or a phrase.
fn words(field: Option<Field>, text: &str, shown: &str) -> Result<Node, Unreadable> {
    let mut out = Vec::new();
    let mut too_long = false;
    text::words(text, |w| match w {
        Word::Kept(w) => out.push(w.to_string()),
        Word::TooLong => too_long = true,
    });
    if too_long {
        return Err(Unreadable(format!(
            "{shown} holds a word longer than {} bytes, which is not searchable",
            text::MAX_WORD
        )));
    }
    if out.is_empty() {
        return Err(Unreadable(format!("{shown} has no letter or digit to search for")));
    }
    Ok(Node::Words { field, words: out })
}

/// Midnight UTC of `YYYY-MM-DD` (or Gmail's `YYYY/MM/DD`), in epoch ms.
fn day(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split(['-', '/']).collect();
    let [y, m, d] = parts.as_slice() else {
        return None;
    };
    if y.len() != 4 || !(1..=2).contains(&m.len()) || !(1..=2).contains(&d.len()) {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)?;
    let midnight = Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0)?);
    Some(midnight.timestamp_millis())
}

/// `7d`, `3m` (30 days each), `1y` (365 days), in ms.
fn span(text: &str) -> Option<i64> {
    let unit = text.chars().last()?;
    let days_per: i64 = match unit {
        'd' => 1,
        'm' => 30,
        'y' => 365,
        _ => return None,
    };
    let n: i64 = text[..text.len() - 1].parse().ok()?;
    (1..=100_000).contains(&n).then(|| n * days_per * DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn q(text: &str) -> Node {
        parse(text, NOW).unwrap_or_else(|e| panic!("{text}: {}", e.0)).root
    }

    fn err(text: &str) -> String {
        parse(text, NOW).expect_err(text).0
    }

    fn term(w: &str) -> Node {
        Node::Words {
            field: None,
            words: vec![w.into()],
        }
    }

    fn scoped(f: Field, ws: &[&str]) -> Node {
        Node::Words {
            field: Some(f),
            words: ws.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn bare_words_all_match_and_fold() {
        assert_eq!(q("Résumé"), term("resume"));
        assert_eq!(q("a b"), Node::And(vec![term("a"), term("b")]));
        assert_eq!(q("a AND b"), Node::And(vec![term("a"), term("b")]));
        assert_eq!(
            q("alice@example.com"),
            Node::Words {
                field: None,
                words: vec!["alice".into(), "example".into(), "com".into()]
            }
        );
        assert_eq!(q("re:hello"), q("\"re hello\""));
    }

    #[test]
    fn or_binds_tighter_than_and_as_in_gmail() {
        assert_eq!(
            q("a b OR c"),
            Node::And(vec![term("a"), Node::Or(vec![term("b"), term("c")])])
        );
        assert_eq!(
            q("(a b) OR c"),
            Node::Or(vec![Node::And(vec![term("a"), term("b")]), term("c")])
        );
    }

    #[test]
    fn operators_read_their_values() {
        assert_eq!(q("from:\"Alice Smith\""), scoped(Field::From, &["alice", "smith"]));
        assert_eq!(
            q("subject:(invoice march)"),
            Node::And(vec![
                scoped(Field::Subject, &["invoice"]),
                scoped(Field::Subject, &["march"])
            ])
        );
        assert_eq!(q("-has:attachment"), Node::Not(Box::new(Node::HasAttachment)));
        assert_eq!(q("is:unread"), Node::Unread(true));
        assert_eq!(q("IS:Read"), Node::Unread(false));
        assert_eq!(q("before:2026-03-01"), Node::Before(1_772_323_200_000));
        assert_eq!(q("after:2026/3/1"), Node::After(1_772_323_200_000));
        assert_eq!(q("newer_than:7d"), Node::After(NOW - 7 * DAY_MS));
        assert_eq!(q("older_than:1y"), Node::Before(NOW - 365 * DAY_MS));
        assert_eq!(q("filename:report.pdf"), scoped(Field::Filename, &["report", "pdf"]));
        let trash = parse("in:trash", NOW).unwrap();
        assert!(trash.names_trash);
        assert!(!parse("in:inbox -in:sent", NOW).unwrap().names_trash);
        let spam = parse("IN:Spam", NOW).unwrap();
        assert_eq!(spam.root, Node::In(Place::Spam));
        assert!(spam.names_spam && !spam.names_trash);
        let anywhere = parse("in:anywhere", NOW).unwrap();
        assert!(anywhere.names_spam && anywhere.names_trash);
        assert!(!parse("in:trash", NOW).unwrap().names_spam);
    }

    #[test]
    fn what_cannot_be_read_is_named() {
        assert!(
            err("\"unclosed words").contains("\"unclosed words"),
            "{}",
            err("\"unclosed")
        );
        assert_eq!(err("a )"), "\")\" closes no \"(\"");
        assert_eq!(err("(a b"), "a \"(\" is never closed");
        assert_eq!(err("OR a"), "\"OR\" needs a term before it");
        assert_eq!(err("a OR"), "\"OR\" needs a term after it");
        assert_eq!(err("a - b"), "\"-\" needs a word right after it, such as -draft");
        assert!(err("from: alice").starts_with("\"from:\" needs a value"));
        assert!(err("is:starred").contains("\"is:starred\""));
        assert!(err("in:junk").contains("\"in:junk\""));
        assert!(err("before:march").contains("\"before:march\" is not a date"));
        assert!(err("newer_than:7w").contains("\"newer_than:7w\""));
        assert_eq!(err("label:work"), "\"label:\" is not an operator this search has");
        assert_eq!(err("!!!"), "!!! has no letter or digit to search for");
        assert_eq!(err("()"), "\"()\" holds nothing to search for");
        assert!(err(&"a ".repeat(MAX_PARTS + 1)).contains("more than 64"));
        assert!(err(&format!("{}x{}", "(".repeat(20), ")".repeat(20))).contains("deeper"));
        assert!(err("subject:(from:x)").contains("another field"));
    }
}
