//! Content verdicts: what rspamd on the mail host made of a received
//! message's content (its score, the action it would take, the rules that
//! fired), carried to the service the way the envelope is, never read from
//! a header a sender could have written.
//!
//! On the mail host, rspamd's milter adds one header to each message it
//! scans, named `X-Mailhost-Verdict-<secret>` (a per-host secret only rspamd's
//! configuration and the spool pipe know, `mail-host/rspamd/`), after
//! removing any header of that name the message came with. `mailhost
//! deliver --verdict-header <name>` takes that header out of the message
//! ([`take_header`]) and writes the verdict into the envelope line, as its
//! `spam` member ([`prepend`]), which only `deliver` writes; the poller reads
//! it back from there ([`verdict_in`]). `X-Spam-*`, `X-Spamd-*` and
//! `X-Rspamd-*` headers are never read by anything here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::inbound::{ENVELOPE_HEADER, Envelope};

/// The most rules kept of one verdict (the heaviest first).
pub const MAX_SYMBOLS: usize = 40;

/// What rspamd would do with the message (its action names, in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpamAction {
    NoAction,
    Greylist,
    AddHeader,
    RewriteSubject,
    SoftReject,
    Reject,
}

impl SpamAction {
    /// rspamd's own name for an action (`add header`, `no action`, ...).
    pub fn from_rspamd(name: &str) -> Option<SpamAction> {
        Some(match name.trim().to_ascii_lowercase().replace('_', " ").as_str() {
            "no action" => SpamAction::NoAction,
            "greylist" => SpamAction::Greylist,
            "add header" => SpamAction::AddHeader,
            "rewrite subject" => SpamAction::RewriteSubject,
            "soft reject" => SpamAction::SoftReject,
            "reject" => SpamAction::Reject,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SpamAction::NoAction => "no_action",
            SpamAction::Greylist => "greylist",
            SpamAction::AddHeader => "add_header",
            SpamAction::RewriteSubject => "rewrite_subject",
            SpamAction::SoftReject => "soft_reject",
            SpamAction::Reject => "reject",
        }
    }

    /// Whether rspamd would keep the message from an inbox: reject it, or
    /// mark it as spam (a header or a rewritten subject). Greylisting and a
    /// soft reject only ask the sender to try again.
    pub fn marks_spam(self) -> bool {
        matches!(
            self,
            SpamAction::Reject | SpamAction::AddHeader | SpamAction::RewriteSubject
        )
    }
}

/// One rule that fired, with what it added to the score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpamSymbol {
    pub name: String,
    pub score: f64,
}

/// rspamd's verdict on a received message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpamVerdict {
    /// The message's score (higher is spammier; rspamd's stock thresholds:
    /// 6 marks spam, 15 rejects).
    pub score: f64,
    pub action: SpamAction,
    /// The rules that fired, heaviest first (a read of one message; list
    /// rows carry score and action only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<SpamSymbol>,
}

impl SpamVerdict {
    /// Score and action alone, as a list row shows them.
    pub fn compact(&self) -> SpamVerdict {
        SpamVerdict {
            symbols: Vec::new(),
            ..self.clone()
        }
    }

    /// The verdict header's value, as the mail host's rspamd writes it:
    /// `{"score": 15, "action": "reject", "symbols": {"GTUBE": 15, ...}}`.
    /// The rules are kept heaviest first (the mail host sends those that
    /// weighed, or, when none did, those that fired).
    pub fn from_header(value: &str) -> Option<SpamVerdict> {
        #[derive(Deserialize)]
        struct Written {
            score: f64,
            action: String,
            #[serde(default)]
            symbols: std::collections::BTreeMap<String, f64>,
        }
        let written: Written = serde_json::from_str(value.trim()).ok()?;
        if !written.score.is_finite() {
            return None;
        }
        let mut symbols: Vec<SpamSymbol> = written
            .symbols
            .into_iter()
            .filter(|(name, score)| score.is_finite() && is_symbol_name(name))
            .map(|(name, score)| SpamSymbol {
                name,
                score: round(score),
            })
            .collect();
        symbols.sort_by(|a, b| b.score.abs().total_cmp(&a.score.abs()).then(a.name.cmp(&b.name)));
        symbols.truncate(MAX_SYMBOLS);
        Some(SpamVerdict {
            score: round(written.score),
            action: SpamAction::from_rspamd(&written.action)?,
            symbols,
        })
    }

    /// Whether this verdict files the message into spam: above the
    /// mailbox's threshold when it sets one, else when rspamd would reject
    /// it or mark it as spam.
    pub fn is_spam(&self, threshold: Option<f64>) -> bool {
        match threshold {
            Some(threshold) => self.score > threshold,
            None => self.action.marks_spam(),
        }
    }
}

fn round(score: f64) -> f64 {
    (score * 100.0).round() / 100.0
}

/// rspamd's symbol names: letters, digits and `_`, a few dozen characters.
fn is_symbol_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The raw message behind its envelope line, the verdict in that line (what
/// `mailhost deliver` drops).
pub fn prepend(envelope: &Envelope, verdict: Option<&SpamVerdict>, raw: &[u8]) -> Vec<u8> {
    let Some(verdict) = verdict else {
        return envelope.prepend(raw);
    };
    let mut line = serde_json::to_value(envelope).unwrap_or_else(|_| serde_json::json!({}));
    line["spam"] = serde_json::to_value(verdict).unwrap_or_default();
    let mut out = format!("{ENVELOPE_HEADER}: {line}\r\n").into_bytes();
    out.extend_from_slice(raw);
    out
}

/// The verdict a spool file's envelope line carries (none without the line,
/// or when it holds none). A message's own headers are never looked at.
pub fn verdict_in(raw: &[u8]) -> Option<SpamVerdict> {
    let end = raw.iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&raw[..end]).ok()?.trim_end_matches('\r');
    let (name, value) = line.split_once(':')?;
    if !name.eq_ignore_ascii_case(ENVELOPE_HEADER) {
        return None;
    }
    #[derive(Deserialize)]
    struct Line {
        spam: Option<SpamVerdict>,
    }
    serde_json::from_str::<Line>(value.trim()).ok()?.spam
}

/// What [`take_header`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// The verdict, when the message carries exactly one header of the name
    /// and it reads as one.
    pub verdict: Option<SpamVerdict>,
    /// How many headers of the name there were (rspamd removes any a sender
    /// wrote before adding its own: more than one is never believed).
    pub found: usize,
    /// The message without them.
    pub message: Vec<u8>,
}

/// Takes every header named `name` (any case, with its folded lines) out of
/// the message's header block and reads the verdict of the one there should
/// be. The body and the other headers are left byte for byte.
pub fn take_header(raw: &[u8], name: &str) -> Taken {
    let mut message = Vec::with_capacity(raw.len());
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut rest = raw;
    let mut dropping = false;
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
        if bare.is_empty() {
            // The end of the header block: the body goes as it is.
            message.extend_from_slice(rest);
            break;
        }
        let continued = matches!(bare.first(), Some(b' ' | b'\t'));
        if continued {
            if dropping && let Some(value) = values.last_mut() {
                value.extend_from_slice(bare);
            }
        } else {
            dropping = header_name(bare).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()));
            if dropping {
                let colon = bare.iter().position(|&b| b == b':').unwrap_or(0);
                values.push(bare[colon + 1..].to_vec());
            }
        }
        if !dropping {
            message.extend_from_slice(line);
        }
        rest = after;
    }
    let verdict = match values.as_slice() {
        [one] => std::str::from_utf8(one).ok().and_then(SpamVerdict::from_header),
        _ => None,
    };
    Taken {
        verdict,
        found: values.len(),
        message,
    }
}

/// A header line's field name (what is before its colon), if it is one.
fn header_name(line: &[u8]) -> Option<&[u8]> {
    let colon = line.iter().position(|&b| b == b':')?;
    let name = &line[..colon];
    (!name.is_empty() && name.iter().all(|b| b.is_ascii_graphic())).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "X-Mailhost-Verdict-0123abcd";

    #[test]
    fn the_header_rspamd_writes_reads_as_a_verdict_heaviest_rule_first() {
        let v = SpamVerdict::from_header(
            r#"{"score":8.734,"action":"add header","symbols":{"MIME_GOOD":-0.1,"MISSING_MID":2.5,"ZERO":0,"DATE_IN_PAST":1}}"#,
        )
        .unwrap();
        assert_eq!(v.score, 8.73);
        assert_eq!(v.action, SpamAction::AddHeader);
        let names: Vec<&str> = v.symbols.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["MISSING_MID", "DATE_IN_PAST", "MIME_GOOD", "ZERO"]);
        assert!(v.is_spam(None));
        assert!(!v.is_spam(Some(9.0)));
        assert!(v.is_spam(Some(8.0)));
        assert_eq!(v.compact().symbols, []);
        // An action rspamd has no word for, or a score that is no number,
        // is no verdict.
        assert_eq!(SpamVerdict::from_header(r#"{"score":1,"action":"obey me"}"#), None);
        assert_eq!(SpamVerdict::from_header(r#"{"score":"high","action":"reject"}"#), None);
        assert_eq!(SpamVerdict::from_header("not json"), None);
    }

    #[test]
    fn only_reject_and_marking_actions_are_spam_by_default() {
        let at = |action| SpamVerdict {
            score: 5.0,
            action,
            symbols: Vec::new(),
        };
        assert!(at(SpamAction::Reject).is_spam(None));
        assert!(at(SpamAction::RewriteSubject).is_spam(None));
        assert!(!at(SpamAction::Greylist).is_spam(None));
        assert!(!at(SpamAction::SoftReject).is_spam(None));
        assert!(!at(SpamAction::NoAction).is_spam(None));
        // A threshold of the owner's judges by score alone.
        assert!(at(SpamAction::NoAction).is_spam(Some(4.5)));
        assert!(!at(SpamAction::Reject).is_spam(Some(5.0)));
    }

    #[test]
    fn the_verdict_header_is_taken_out_and_the_rest_left_byte_for_byte() {
        let raw = format!(
            "Return-Path: <a@example.org>\r\nSubject: hi\r\nx-mailhost-verdict-0123ABCD: {{\"score\":15,\r\n \"action\":\"reject\",\"symbols\":{{\"GTUBE\":15}}}}\r\nTo: me@example.com\r\n\r\nbody\r\n{NAME}: not a header here\r\n"
        );
        let taken = take_header(raw.as_bytes(), NAME);
        assert_eq!(taken.found, 1);
        let verdict = taken.verdict.unwrap();
        assert_eq!((verdict.score, verdict.action), (15.0, SpamAction::Reject));
        assert_eq!(verdict.symbols[0].name, "GTUBE");
        assert_eq!(
            String::from_utf8(taken.message).unwrap(),
            format!(
                "Return-Path: <a@example.org>\r\nSubject: hi\r\nTo: me@example.com\r\n\r\nbody\r\n{NAME}: not a header here\r\n"
            )
        );
    }

    #[test]
    fn the_verdict_travels_in_the_envelope_line_and_nowhere_else() {
        let envelope = Envelope {
            recipient: Some("me@example.com".into()),
            ..Envelope::default()
        };
        let gtube = SpamVerdict::from_header(r#"{"score":15,"action":"reject","symbols":{"GTUBE":15}}"#);
        let message = b"X-Spam: No\r\nSubject: x\r\n\r\nbody\r\n";
        let dropped = prepend(&envelope, gtube.as_ref(), message);
        assert_eq!(verdict_in(&dropped), gtube);
        // The envelope reads as it did, and the message after it is the same.
        let (read, rest) = Envelope::split(&dropped);
        assert_eq!(read.unwrap().recipient.as_deref(), Some("me@example.com"));
        assert_eq!(rest, message);
        // No verdict: the line deliver always wrote.
        assert_eq!(prepend(&envelope, None, message), envelope.prepend(message));
        assert_eq!(verdict_in(&envelope.prepend(message)), None);
        // A message that is its own first line names nothing, whatever it says.
        let forged = br#"X-Spam-Verdict: {"spam":{"score":-9,"action":"no action"}}"#;
        assert_eq!(verdict_in(forged), None);
        assert_eq!(verdict_in(message), None);
    }

    #[test]
    fn two_verdict_headers_or_none_give_no_verdict() {
        let one = r#"{"score":-5,"action":"no action"}"#;
        let raw = format!("{NAME}: {one}\nSubject: x\n{NAME}: {one}\n\nbody\n");
        let taken = take_header(raw.as_bytes(), NAME);
        assert_eq!((taken.found, taken.verdict), (2, None));
        assert_eq!(taken.message, b"Subject: x\n\nbody\n");
        let raw = b"Subject: x\nX-Spam: Yes\nX-Spamd-Result: default: True [99 / 15]\n\nbody\n";
        let taken = take_header(raw, NAME);
        assert_eq!((taken.found, taken.verdict), (0, None));
        assert_eq!(taken.message, raw);
    }
}
