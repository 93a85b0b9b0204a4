//! What one message gives the index: its searchable texts (as written, then
//! as normalized words), what it is (sent, with attachments, owner-only) and
//! where it is (folder, unread), and the compact form a fresh message waits
//! in, in the store, until a segment holds it.

use std::io::{Read, Write as _};

use base64::Engine;

use super::Field;
use super::text;

/// The message was sent (an outbound row).
pub const OUTBOUND: u8 = 1;
/// The message has at least one attachment.
pub const ATTACHMENT: u8 = 2;
/// Mail the service sent the owner: no scoped key finds it.
pub const OWNER_ONLY: u8 = 4;

/// Where a message is, in one byte: its folder (the low two bits), whether
/// it is unread, and whether it is gone (deleted for good: left out of every
/// answer and dropped when its segment is next merged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct State(pub u8);

/// A folder, as the index codes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    Inbox = 0,
    Archive = 1,
    Trash = 2,
    /// Received mail filed or reported as spam (`in:spam`).
    Spam = 3,
}

impl Folder {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// A folder by its stored name (`inbox`, `archive`, `trash`, `spam`).
    pub fn named(name: &str) -> Option<Folder> {
        match name {
            "inbox" => Some(Folder::Inbox),
            "archive" => Some(Folder::Archive),
            "trash" => Some(Folder::Trash),
            "spam" => Some(Folder::Spam),
            _ => None,
        }
    }
}

const FOLDER_BITS: u8 = 3;
const UNREAD: u8 = 4;
const GONE: u8 = 8;

impl State {
    pub fn new(folder: Folder, unread: bool) -> State {
        State(folder.code() | if unread { UNREAD } else { 0 })
    }
    pub fn folder(self) -> u8 {
        self.0 & FOLDER_BITS
    }
    pub fn unread(self) -> bool {
        self.0 & UNREAD != 0
    }
    pub fn with_folder(self, folder: u8) -> State {
        State((self.0 & !FOLDER_BITS) | (folder & FOLDER_BITS))
    }
    pub fn with_unread(self, unread: bool) -> State {
        State(if unread { self.0 | UNREAD } else { self.0 & !UNREAD })
    }
    pub fn gone(self) -> bool {
        self.0 & GONE != 0
    }
    pub fn with_gone(self) -> State {
        State(self.0 | GONE)
    }
}

/// A message's searchable parts as written.
#[derive(Debug, Clone, Default)]
pub struct Message<'a> {
    pub subject: &'a str,
    pub from: &'a str,
    pub from_names: &'a [String],
    pub to: &'a [String],
    pub to_names: &'a [String],
    pub cc: &'a [String],
    pub cc_names: &'a [String],
    pub text: &'a str,
    /// The HTML body as written (it is read as text).
    pub html: Option<&'a str>,
    pub filenames: Vec<&'a str>,
}

/// The most normalized text one message gives the index; beyond it, the rest
/// of a (very) long body is not searchable.
pub const MAX_WORDS_BYTES: usize = 512 * 1024;

/// The texts of each field, as written, in [`Field`] order: what the index
/// reads, and what the reference test gives SQLite FTS5.
pub fn texts(m: &Message<'_>) -> [String; 6] {
    let people = |names: &[String], addresses: &[String]| {
        names
            .iter()
            .chain(addresses)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut body = m.text.to_string();
    if let Some(html) = m.html {
        // An HTML alternative usually says what the text says: read it only
        // when its words differ.
        let rendered = crate::mail::html::to_text(html);
        if text::normalize(&rendered) != text::normalize(m.text) {
            body.push('\n');
            body.push_str(&rendered);
        }
    }
    let mut fields: [String; 6] = Default::default();
    fields[Field::Subject.code() as usize] = m.subject.to_string();
    fields[Field::From.code() as usize] = people(m.from_names, std::slice::from_ref(&m.from.to_string()));
    fields[Field::To.code() as usize] = people(m.to_names, m.to);
    fields[Field::Cc.code() as usize] = people(m.cc_names, m.cc);
    fields[Field::Body.code() as usize] = body;
    fields[Field::Filename.code() as usize] = m.filenames.join("\n");
    fields
}

/// One message as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The row id: its first 13 digits are when it was filed (epoch ms).
    pub id: String,
    pub mailbox: String,
    pub flags: u8,
    pub state: State,
    /// Each field's normalized words, space-separated, in [`Field`] order.
    pub words: [String; 6],
}

impl Doc {
    pub fn new(id: &str, mailbox: &str, flags: u8, state: State, texts: &[String; 6]) -> Doc {
        let mut words: [String; 6] = Default::default();
        let mut room = MAX_WORDS_BYTES;
        for field in Field::ALL {
            let i = field.code() as usize;
            let mut normalized = text::normalize(&texts[i]);
            cut_words(&mut normalized, room);
            room -= normalized.len();
            words[i] = normalized;
        }
        Doc {
            id: id.to_string(),
            mailbox: mailbox.to_string(),
            flags,
            state,
            words,
        }
    }

    /// When it was filed (epoch ms), from its id.
    pub fn ms(&self) -> i64 {
        filed_ms(&self.id)
    }

    /// Its words, compressed, as text (base64 of deflate): what the store
    /// keeps for a fresh message.
    pub fn packed_words(&self) -> String {
        let joined = self.words.join("\n");
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing to a Vec cannot fail.
        enc.write_all(joined.as_bytes()).ok();
        let bytes = enc.finish().unwrap_or_default();
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes)
    }

    /// The words [`Doc::packed_words`] packed.
    pub fn unpack_words(packed: &str) -> Option<[String; 6]> {
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD.decode(packed).ok()?;
        let mut joined = String::new();
        flate2::read::DeflateDecoder::new(bytes.as_slice())
            .take(8 * MAX_WORDS_BYTES as u64)
            .read_to_string(&mut joined)
            .ok()?;
        let parts: Vec<&str> = joined.split('\n').collect();
        let parts: [&str; 6] = parts.try_into().ok()?;
        Some(parts.map(str::to_string))
    }

    /// Cuts the body's words until the packed form is at most `max` bytes
    /// (a store item's limit leaves room for the rest of a filing).
    pub fn fit(&mut self, max: usize) {
        let body = Field::Body.code() as usize;
        while self.packed_words().len() > max && !self.words[body].is_empty() {
            let half = self.words[body].len() / 2;
            cut_words(&mut self.words[body], half);
        }
    }
}

/// Cuts normalized words to at most `max` bytes, at a word's end.
fn cut_words(words: &mut String, max: usize) {
    if words.len() <= max {
        return;
    }
    let mut end = max;
    while end > 0 && !words.is_char_boundary(end) {
        end -= 1;
    }
    let end = words[..end].rfind(' ').unwrap_or(0);
    words.truncate(end);
}

/// When a row was filed (epoch ms), from its id's first 13 digits.
pub fn filed_ms(id: &str) -> i64 {
    id.get(..13).and_then(|ms| ms.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Doc {
        let texts = texts(&Message {
            subject: "Résumé for the role",
            from: "ann@example.org",
            from_names: &["Ann Lee".to_string()],
            to: &["me@example.com".to_string()],
            text: "Please find it attached.",
            html: Some("<p>Please find it <b>attached</b>.</p>"),
            filenames: vec!["cv-2026.pdf"],
            ..Message::default()
        });
        Doc::new(
            "1800000000000aaaaaaaaaaaaaaaa",
            "me@example.com",
            ATTACHMENT,
            State::new(Folder::Inbox, true),
            &texts,
        )
    }

    #[test]
    fn a_doc_holds_each_fields_words_and_packs_them() {
        let d = doc();
        assert_eq!(d.words[Field::Subject.code() as usize], "resume for the role");
        assert_eq!(d.words[Field::From.code() as usize], "ann lee ann example org");
        // The HTML says what the text says: read once.
        assert_eq!(d.words[Field::Body.code() as usize], "please find it attached");
        assert_eq!(d.words[Field::Filename.code() as usize], "cv 2026 pdf");
        assert_eq!(Doc::unpack_words(&d.packed_words()).unwrap(), d.words);
        assert_eq!(d.ms(), 1_800_000_000_000);
    }

    #[test]
    fn state_keeps_folder_and_flag_apart() {
        let s = State::new(Folder::Archive, true);
        assert_eq!((s.folder(), s.unread()), (1, true));
        let s = s.with_unread(false).with_folder(Folder::Trash.code());
        assert_eq!((s.folder(), s.unread()), (2, false));
        let s = s.with_folder(Folder::Spam.code()).with_gone();
        assert_eq!((s.folder(), s.unread(), s.gone()), (3, false, true));
    }

    #[test]
    fn a_body_too_large_to_keep_is_cut_at_a_word() {
        let mut words = "alpha beta gamma".to_string();
        cut_words(&mut words, 12);
        assert_eq!(words, "alpha beta");
        let mut d = doc();
        d.words[Field::Body.code() as usize] = (0..50_000).map(|i| format!("w{i} ")).collect::<String>();
        d.fit(20_000);
        assert!(d.packed_words().len() <= 20_000);
        assert!(d.words[Field::Body.code() as usize].starts_with("w0 w1 "));
    }
}
