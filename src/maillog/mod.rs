//! Postfix's delivery log, read for the service's per-recipient delivery
//! status. `mailhost mta-sync` reads the lines added since its last run and
//! reports each delivery attempt of mail whose envelope sender is on the
//! service's bounce domain (the VERP return path the service gives each
//! recipient's transaction): delivered (`status=sent`), deferred or bounced,
//! as our Postfix saw it. The service decides what each report means.
//!
//! Two kinds of line matter, matched by queue id:
//!
//! ```text
//! Nov 25 02:39:41 mx postfix/qmgr[19467]: B8A8B98E223: from=<b-d1-1-bbbb@bounce.svc.test>, size=358, nrcpt=1 (queue active)
//! Nov 25 02:39:41 mx postfix/smtp[19633]: B8A8B98E223: to=<bounce-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=0.01, delays=0/0/0/0.01, dsn=5.1.1, status=bounced (host 127.0.0.1[127.0.0.1] said: 550 5.1.1 User unknown (in reply to RCPT TO command))
//! ```
//!
//! The sender comes from qmgr's `from=` line (after canonical rewriting, so
//! what actually left), each attempt from a delivery agent's `to=` line
//! (smtp, lmtp, error, and the others that log one). qmgr's `removed` line
//! forgets a queue id. Lines are read in Postfix's own `maillog_file` format
//! and classic syslog's (`Mmm dd hh:mm:ss host tag[pid]: ...`, no year, so an
//! event's time is the time it was read), and in RFC 3339 syslog
//! (`2026-11-25T02:39:41.123456+00:00 host tag[pid]: ...`, whose time is
//! kept).
//!
//! [`State`] is what a run leaves for the next: which file (inode, and a hash
//! of its first bytes) and how far into it, and the senders of queue ids still
//! in flight. Only complete lines are read; a rotated log is finished under its
//! new name when it is still beside the live one, then the new file is read
//! from its start.

use serde_json::{Value, json};

mod state;
mod time;

pub use state::{Chunk, Pending, State, read_new};
use time::rfc3339_ms;
pub use time::{iso_ms, now_ms};

/// The longest reply kept, in characters.
pub const REPLY_LIMIT: usize = 1000;
/// The longest `relay=` kept, in characters.
pub const REMOTE_HOST_LIMIT: usize = 300;
/// A return path or recipient longer than this (in bytes) is not an address
/// the service gave out: its line is skipped.
pub const ADDRESS_LIMIT: usize = 254;
/// A sender is forgotten a day after its queue id was last seen.
pub const SENDER_TTL_SECS: i64 = 86_400;
/// At most this many queue ids' senders are kept (the oldest go first).
pub const MAX_SENDERS: usize = 50_000;
/// The bytes of a file's start whose hash tells it from another with the
/// same inode.
const HEAD_BYTES: u64 = 256;

/// What Postfix's log says happened to one recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `status=sent`: the remote (or a local delivery agent) took it.
    Delivered,
    /// `status=deferred`: Postfix will try again.
    Deferred,
    /// `status=bounced`: Postfix gave up; a report goes to the return path.
    Bounced,
}

impl Status {
    fn from_log(word: &str) -> Option<Self> {
        match word {
            "sent" => Some(Self::Delivered),
            "deferred" => Some(Self::Deferred),
            "bounced" => Some(Self::Bounced),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Deferred => "deferred",
            Self::Bounced => "bounced",
        }
    }
}

/// One delivery attempt, as `POST /mtaDeliveryEvents` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Hex SHA-256 of the whole log line: the same line is the same event.
    pub id: String,
    pub return_path: String,
    /// The address the mail was sent to (`orig_to` when Postfix rewrote it,
    /// say to a forwarding target).
    pub recipient: String,
    pub status: Status,
    /// ISO 8601 UTC: the line's own time when it has a year and a zone, else
    /// the time it was read.
    pub at: String,
    /// The SMTP reply code the text starts with, if it is one.
    pub smtp_code: Option<u16>,
    /// Postfix's `dsn=` (the remote's enhanced status code, or Postfix's own).
    pub enhanced_status: Option<String>,
    /// The remote's reply (after `said:`, without Postfix's `(in reply to ...
    /// command)`), or else Postfix's own words; at most [`REPLY_LIMIT`]
    /// characters.
    pub reply: Option<String>,
    /// `relay=`: `host[address]:port`, or a transport's name; `None` for
    /// `relay=none`.
    pub remote_host: Option<String>,
    pub queue_id: String,
}

impl Event {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "returnPath": self.return_path,
            "recipient": self.recipient,
            "status": self.status.as_str(),
            "at": self.at,
            "smtpCode": self.smtp_code,
            "enhancedStatus": self.enhanced_status,
            "reply": self.reply,
            "remoteHost": self.remote_host,
            "queueId": self.queue_id,
        })
    }
}

/// A line's Postfix record that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// qmgr: `QID: from=<sender>, size=..., nrcpt=... (queue active)`.
    Sender { queue_id: &'a str, sender: &'a str },
    /// A delivery agent: `QID: to=<rcpt>, [orig_to=<rcpt>, ]relay=..., ..., dsn=..., status=... (text)`.
    Delivery(Delivery<'a>),
    /// qmgr: `QID: removed`.
    Removed { queue_id: &'a str },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery<'a> {
    pub queue_id: &'a str,
    pub to: &'a str,
    pub orig_to: Option<&'a str>,
    pub relay: Option<&'a str>,
    pub dsn: Option<&'a str>,
    pub status: Status,
    /// The parenthesised text after the status, without its parentheses.
    pub text: &'a str,
}

/// A parsed line: its time (milliseconds since the epoch) when the line
/// carries a full one, and the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    pub at_ms: Option<i64>,
    pub program: &'a str,
    pub record: Record<'a>,
}

/// Splits off the first space-separated token (leading spaces skipped).
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(' ');
    if s.is_empty() {
        return None;
    }
    Some(match s.find(' ') {
        Some(end) => (&s[..end], &s[end + 1..]),
        None => (s, ""),
    })
}

/// Reads one log line; `None` for anything but the records above.
pub fn parse(line: &str) -> Option<Line<'_>> {
    let line = line.trim_end_matches(['\n', '\r']);
    let (first, rest) = token(line)?;
    // The time: RFC 3339 (rsyslog's default on Debian), or `Mmm dd hh:mm:ss`
    // (classic syslog and Postfix's maillog_file).
    let (at_ms, rest) = if first.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        (Some(rfc3339_ms(first)?), rest)
    } else {
        if first.len() != 3 || !first.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        let (day, rest) = token(rest)?;
        let (time, rest) = token(rest)?;
        if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) || time.len() < 8 {
            return None;
        }
        (None, rest)
    };
    let (_host, rest) = token(rest)?;
    let (tag, message) = token(rest)?;
    let tag = tag.strip_suffix(':')?;
    let program = tag.split_once('[').map_or(tag, |(name, _)| name);
    if !program.starts_with("postfix") {
        return None;
    }
    let (queue_id, body) = message.split_once(": ")?;
    if !(5..=20).contains(&queue_id.len()) || !queue_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let record = if let Some(after) = body.strip_prefix("from=<") {
        if !program.ends_with("/qmgr") {
            return None;
        }
        let (sender, _) = after.split_once(">, ")?;
        Record::Sender { queue_id, sender }
    } else if body == "removed" {
        Record::Removed { queue_id }
    } else if body.starts_with("to=<") {
        Record::Delivery(delivery(queue_id, body)?)
    } else {
        return None;
    };
    Some(Line { at_ms, program, record })
}

/// `to=<a@b>, orig_to=<c@d>, relay=..., delay=..., delays=..., dsn=5.1.1, status=bounced (text)`.
fn delivery<'a>(queue_id: &'a str, body: &'a str) -> Option<Delivery<'a>> {
    let at = body.find(", status=")?;
    let (fields, status) = (&body[..at], &body[at + ", status=".len()..]);
    let (word, text) = match status.split_once(' ') {
        Some((word, text)) => (word, text.trim()),
        None => (status, ""),
    };
    let status = Status::from_log(word)?;
    let text = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')).unwrap_or(text);
    let (to, mut fields) = fields.strip_prefix("to=<")?.split_once('>')?;
    let (mut orig_to, mut relay, mut dsn) = (None, None, None);
    while let Some(rest) = fields.strip_prefix(", ") {
        let (field, next) = match rest.find(", ") {
            Some(end) => (&rest[..end], &rest[end..]),
            None => (rest, ""),
        };
        fields = next;
        if let Some(address) = field.strip_prefix("orig_to=<").and_then(|a| a.strip_suffix('>')) {
            orig_to = Some(address);
        } else if let Some(value) = field.strip_prefix("relay=") {
            relay = Some(value);
        } else if let Some(value) = field.strip_prefix("dsn=") {
            dsn = Some(value);
        }
    }
    Some(Delivery {
        queue_id,
        to,
        orig_to,
        relay,
        dsn,
        status,
        text,
    })
}

/// The remote's reply in a status text, its SMTP code, or Postfix's own words.
fn reply(text: &str) -> (Option<u16>, Option<String>) {
    let said = text.split_once(" said: ").map(|(_, reply)| reply);
    let mut reply = said.unwrap_or(text).trim();
    if said.is_some()
        && let Some(at) = reply.rfind(" (in reply to ")
        && reply.ends_with(" command)")
    {
        reply = reply[..at].trim_end();
    }
    let bytes = reply.as_bytes();
    let code = (bytes.len() >= 3
        && (b'2'..=b'5').contains(&bytes[0])
        && bytes[1..3].iter().all(u8::is_ascii_digit)
        && matches!(bytes.get(3), None | Some(b' ') | Some(b'-')))
    .then(|| reply[..3].parse().ok())
    .flatten();
    let reply = (!reply.is_empty()).then(|| reply.chars().take(REPLY_LIMIT).collect());
    (code, reply)
}

fn dsn_code(dsn: &str) -> bool {
    let mut parts = dsn.split('.');
    let class = parts.next();
    matches!(class, Some("2" | "4" | "5"))
        && parts.clone().count() == 2
        && parts.all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

fn on_domain(address: &str, domain: &str) -> bool {
    address
        .rsplit_once('@')
        .is_some_and(|(local, d)| !local.is_empty() && d.eq_ignore_ascii_case(domain))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};

    use super::*;

    // Real lines: Postfix 3.7.11 (Debian 12) on the loopback mail host
    // (scripts/mail-host start ... --route remote.test=127.0.0.1:31025
    // --bounce-domain bounce.svc.test --retry-seconds 1), relaying through
    // submission to tests/api/support/remote_mx.py, its maillog_file
    // (DIR/postfix.log) as written, 2026-11-25. Connect and disconnect
    // lines are left out.
    const CAPTURED: &str = "\
Nov 25 02:39:33 mx postfix/postfix-script[19462]: starting the Postfix mail system
Nov 25 02:39:33 mx postfix/master[19464]: daemon started -- version 3.7.11, configuration /tmp/cap/mx/conf
Nov 25 02:39:41 mx postfix/submission/smtpd[19623]: warning: dict_nis_init: NIS domain name not set - NIS lookups disabled
Nov 25 02:39:41 mx postfix/submission/smtpd[19623]: B3BDE98E21E: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=relay
Nov 25 02:39:41 mx postfix/cleanup[19630]: B3BDE98E21E: message-id=<cap-0@svc.test>
Nov 25 02:39:41 mx postfix/qmgr[19467]: B3BDE98E21E: from=<b-d1-0-aaaa@bounce.svc.test>, size=360, nrcpt=1 (queue active)
Nov 25 02:39:41 mx postfix/smtp[19633]: B3BDE98E21E: to=<deliver-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=0.03, delays=0.02/0.01/0/0, dsn=2.0.0, status=sent (250 2.0.0 Message accepted for delivery)
Nov 25 02:39:41 mx postfix/qmgr[19467]: B3BDE98E21E: removed
Nov 25 02:39:41 mx postfix/submission/smtpd[19623]: B8A8B98E223: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=relay
Nov 25 02:39:41 mx postfix/cleanup[19630]: B8A8B98E223: message-id=<cap-1@svc.test>
Nov 25 02:39:41 mx postfix/qmgr[19467]: B8A8B98E223: from=<b-d1-1-bbbb@bounce.svc.test>, size=358, nrcpt=1 (queue active)
Nov 25 02:39:41 mx postfix/submission/smtpd[19623]: BA59498E21E: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=relay
Nov 25 02:39:41 mx postfix/cleanup[19630]: BA59498E21E: message-id=<cap-2@svc.test>
Nov 25 02:39:41 mx postfix/smtp[19633]: B8A8B98E223: to=<bounce-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=0.01, delays=0/0/0/0.01, dsn=5.1.1, status=bounced (host 127.0.0.1[127.0.0.1] said: 550 5.1.1 User unknown (in reply to RCPT TO command))
Nov 25 02:39:41 mx postfix/qmgr[19467]: BA59498E21E: from=<b-d1-2-cccc@bounce.svc.test>, size=356, nrcpt=1 (queue active)
Nov 25 02:39:41 mx postfix/cleanup[19630]: BB4B698E226: message-id=<20261125023941.BB4B698E226@mx.localhost>
Nov 25 02:39:41 mx postfix/qmgr[19467]: BB4B698E226: from=<>, size=2184, nrcpt=1 (queue active)
Nov 25 02:39:41 mx postfix/bounce[19634]: B8A8B98E223: sender non-delivery notification: BB4B698E226
Nov 25 02:39:41 mx postfix/submission/smtpd[19623]: BD93598E22A: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=relay
Nov 25 02:39:41 mx postfix/qmgr[19467]: B8A8B98E223: removed
Nov 25 02:39:41 mx postfix/smtp[19633]: BA59498E21E: to=<defer-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=0.02, delays=0/0/0/0.01, dsn=4.2.0, status=deferred (host 127.0.0.1[127.0.0.1] said: 450 4.2.0 Try again later (in reply to RCPT TO command))
Nov 25 02:39:41 mx postfix/cleanup[19630]: BD93598E22A: message-id=<cap-3@svc.test>
Nov 25 02:39:41 mx postfix/smtp[19633]: BB4B698E226: to=<b-d1-1-bbbb@bounce.svc.test>, relay=none, delay=0.02, delays=0.01/0/0/0, dsn=5.4.4, status=bounced (Host or domain name not found. Name service error for name=bounce.svc.test type=A: Host not found)
Nov 25 02:39:41 mx postfix/qmgr[19467]: BB4B698E226: removed
Nov 25 02:39:41 mx postfix/qmgr[19467]: BD93598E22A: from=<SRS0=Gp6a=JO=svc.test=someone@mx.localhost>, size=360, nrcpt=1 (queue active)
Nov 25 02:39:41 mx postfix/smtp[19633]: BD93598E22A: to=<deliver-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=0.02, delays=0.01/0/0/0, dsn=2.0.0, status=sent (250 2.0.0 Message accepted for delivery)
Nov 25 02:39:41 mx postfix/qmgr[19467]: BD93598E22A: removed
Nov 25 02:39:42 mx postfix/qmgr[19467]: BA59498E21E: from=<b-d1-2-cccc@bounce.svc.test>, size=356, nrcpt=1 (queue active)
Nov 25 02:39:42 mx postfix/smtp[19638]: BA59498E21E: to=<defer-me@remote.test>, relay=127.0.0.1[127.0.0.1]:31025, delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 2.0.0 Message accepted for delivery)
Nov 25 02:39:42 mx postfix/qmgr[19467]: BA59498E21E: removed
";

    const BOUNCE: &str = "bounce.svc.test";
    // 2026-11-25T03:00:00Z, the time "read".
    const NOW: i64 = 1_795_575_600_000;

    fn replay(text: &str) -> (Vec<Event>, State) {
        let mut state = State::default();
        let events = text
            .lines()
            .filter_map(|l| state.apply(l.as_bytes(), BOUNCE, NOW))
            .collect();
        (events, state)
    }

    fn line_of(text: &str, needle: &str) -> String {
        text.lines().find(|l| l.contains(needle)).unwrap().to_string()
    }

    #[test]
    fn the_captured_log_gives_sent_bounced_deferred_then_sent() {
        let (events, state) = replay(CAPTURED);
        let got: Vec<(&str, &str, &str)> = events
            .iter()
            .map(|e| (e.return_path.as_str(), e.recipient.as_str(), e.status.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("b-d1-0-aaaa@bounce.svc.test", "deliver-me@remote.test", "delivered"),
                ("b-d1-1-bbbb@bounce.svc.test", "bounce-me@remote.test", "bounced"),
                ("b-d1-2-cccc@bounce.svc.test", "defer-me@remote.test", "deferred"),
                ("b-d1-2-cccc@bounce.svc.test", "defer-me@remote.test", "delivered"),
            ]
        );
        // Every queue id was removed: nothing is left waiting.
        assert!(state.senders.is_empty(), "{:?}", state.senders);

        let bounced = &events[1];
        let line = line_of(CAPTURED, "status=bounced (host");
        assert_eq!(bounced.id, hex::encode(Sha256::digest(line.as_bytes())));
        assert_eq!(
            bounced.to_json(),
            json!({
                "id": bounced.id,
                "returnPath": "b-d1-1-bbbb@bounce.svc.test",
                "recipient": "bounce-me@remote.test",
                "status": "bounced",
                "at": "2026-11-25T03:00:00.000Z",
                "smtpCode": 550,
                "enhancedStatus": "5.1.1",
                "reply": "550 5.1.1 User unknown",
                "remoteHost": "127.0.0.1[127.0.0.1]:31025",
                "queueId": "B8A8B98E223",
            })
        );
        let deferred = &events[2];
        assert_eq!(deferred.smtp_code, Some(450));
        assert_eq!(deferred.enhanced_status.as_deref(), Some("4.2.0"));
        assert_eq!(deferred.reply.as_deref(), Some("450 4.2.0 Try again later"));
        let sent = &events[0];
        assert_eq!(sent.smtp_code, Some(250));
        assert_eq!(sent.enhanced_status.as_deref(), Some("2.0.0"));
        assert_eq!(sent.reply.as_deref(), Some("250 2.0.0 Message accepted for delivery"));
        assert_eq!(sent.queue_id, "B3BDE98E21E");
        // The retry is a line of its own: another id.
        assert_ne!(events[3].id, deferred.id);
    }

    #[test]
    fn senders_off_the_bounce_domain_give_nothing() {
        // The SRS-rewritten sender's delivery and Postfix's own bounce (from
        // <>, to the bounce domain) are in the capture and give no event.
        let (events, _) = replay(CAPTURED);
        assert!(
            events
                .iter()
                .all(|e| e.queue_id != "BD93598E22A" && e.queue_id != "BB4B698E226")
        );
        // Another domain that merely ends like it is not it.
        let (events, _) = replay(
            "Nov 25 02:39:41 mx postfix/qmgr[1]: AAAAA1: from=<b-1@xbounce.svc.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/smtp[2]: AAAAA1: to=<a@remote.test>, relay=none, delay=0, delays=0/0/0/0, dsn=5.0.0, status=bounced (x)\n",
        );
        assert!(events.is_empty());
        // A sender on the domain, in another case, is on it.
        let (events, _) = replay(
            "Nov 25 02:39:41 mx postfix/qmgr[1]: AAAAA1: from=<B-1@Bounce.SVC.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/smtp[2]: AAAAA1: to=<a@remote.test>, relay=none, delay=0, delays=0/0/0/0, dsn=4.4.1, status=deferred (connect to mx.remote.test[192.0.2.1]:25: Connection refused)\n",
        );
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].return_path, "B-1@Bounce.SVC.test");
        assert_eq!(events[0].smtp_code, None);
        assert_eq!(events[0].remote_host, None);
        assert_eq!(
            events[0].reply.as_deref(),
            Some("connect to mx.remote.test[192.0.2.1]:25: Connection refused")
        );
    }

    #[test]
    fn a_queue_id_taken_by_another_sender_or_removed_is_forgotten() {
        let (events, state) = replay(
            "Nov 25 02:39:41 mx postfix/qmgr[1]: AAAAA1: from=<b-1@bounce.svc.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/qmgr[1]: AAAAA1: from=<someone@else.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/smtp[2]: AAAAA1: to=<a@remote.test>, relay=none, delay=0, delays=0/0/0/0, dsn=5.0.0, status=bounced (x)\n\
             Nov 25 02:39:41 mx postfix/qmgr[1]: BBBBB2: from=<b-2@bounce.svc.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/qmgr[1]: CCCCC3: from=<b-3@bounce.svc.test>, size=1, nrcpt=1 (queue active)\n\
             Nov 25 02:39:41 mx postfix/qmgr[1]: BBBBB2: removed\n",
        );
        assert!(events.is_empty());
        assert_eq!(state.senders.keys().collect::<Vec<_>>(), ["CCCCC3"]);
    }

    // From Postfix's documentation and the field's usual shapes: RFC 3339
    // syslog (rsyslog on Debian), a multi-line reply, orig_to, the error
    // agent, and a reply past the bound.
    #[test]
    fn other_formats_and_replies() {
        let from = "2026-11-25T04:05:06.789123+01:00 mx postfix/qmgr[10]: 4ABC123: from=<b-x-1-m@bounce.svc.test>, size=10, nrcpt=2 (queue active)";
        let gmail = "2026-11-25T04:05:07.5+01:00 mx postfix/smtp[11]: 4ABC123: to=<nobody@gmail.example>, relay=gmail-smtp-in.l.google.com[142.250.1.26]:25, delay=1.2, delays=0.1/0/0.5/0.6, dsn=5.1.1, status=bounced (host gmail-smtp-in.l.google.com[142.250.1.26] said: 550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1 double-checking the recipient's email address for typos or 550 5.1.1 https://support.google.com/mail/?p=NoSuchUser a1si2 - gsmtp (in reply to RCPT TO command))";
        let forwarded = "2026-11-25T03:05:08Z mx postfix/smtp[12]: 4ABC123: to=<out@elsewhere.test>, orig_to=<fwd@tom.example>, relay=mx.elsewhere.test[192.0.2.7]:25, delay=0.3, delays=0/0/0.1/0.2, dsn=2.0.0, status=sent (250 2.0.0 OK queued as 77)";
        let error = "Nov  5 03:05:09 mx postfix/error[13]: 4ABC123: to=<a@remote.test>, relay=none, delay=300, delays=300/0/0/0, dsn=4.4.1, status=deferred (delivery temporarily suspended: connect to mx.remote.test[192.0.2.1]:25: Connection timed out)";
        let long = format!(
            "Nov 25 03:05:10 mx postfix/lmtp[14]: 4ABC123: to=<b@remote.test>, relay=lmtp.remote.test[192.0.2.9]:24, delay=0.1, delays=0/0/0/0.1, dsn=5.2.2, status=bounced (host lmtp.remote.test[192.0.2.9] said: 552 5.2.2 {} (in reply to end of DATA command))",
            "x".repeat(3000)
        );
        let text = [from, gmail, forwarded, error, &long].join("\n");
        let (events, _) = replay(&text);
        assert_eq!(events.len(), 4);
        assert_eq!(events[0].at, "2026-11-25T03:05:07.500Z");
        assert_eq!(events[0].smtp_code, Some(550));
        let reply = events[0].reply.as_deref().unwrap();
        assert!(
            reply.starts_with("550-5.1.1 The email account") && reply.ends_with("- gsmtp"),
            "{reply}"
        );
        assert_eq!(
            events[0].remote_host.as_deref(),
            Some("gmail-smtp-in.l.google.com[142.250.1.26]:25")
        );
        assert_eq!(events[1].at, "2026-11-25T03:05:08.000Z");
        assert_eq!(events[1].recipient, "fwd@tom.example");
        assert_eq!(events[1].status, Status::Delivered);
        assert_eq!(events[2].status, Status::Deferred);
        assert_eq!(events[2].at, iso_ms(NOW), "no year: the time read");
        assert_eq!(events[2].smtp_code, None);
        assert_eq!(events[3].smtp_code, Some(552));
        assert_eq!(events[3].reply.as_deref().unwrap().chars().count(), REPLY_LIMIT);
    }

    #[test]
    fn times() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(NOW), "2026-11-25T03:00:00.000Z");
        assert_eq!(rfc3339_ms("2026-11-25T03:00:00Z"), Some(NOW));
        assert_eq!(rfc3339_ms("2026-11-25T05:30:00.25+0230"), Some(NOW + 250));
        assert_eq!(rfc3339_ms("2024-02-29T23:59:59.999-00:00"), Some(1_709_251_199_999));
        assert_eq!(iso_ms(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-11-25T03:00:00",
            "2026-11-25 03:00:00Z",
            "2026-11-25T03:00:00.Z",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad}");
        }
        // A line whose time is not one is not read.
        assert!(parse("Nov xx 03:00:00 mx postfix/qmgr[1]: AAAAA1: removed").is_none());
        assert!(parse("Nov 25 03:00:00 mx postfix/qmgr[1]: AAAAA1: removed").is_some());
        assert!(parse("Nov 25 03:00:00 mx sshd[1]: AAAAA1: removed").is_none());
    }

    #[test]
    fn senders_older_than_a_day_or_beyond_the_bound_are_dropped() {
        let mut state = State::default();
        let from = |q: &str| {
            format!(
                "Nov 25 02:39:41 mx postfix/qmgr[1]: {q}: from=<b-1@bounce.svc.test>, size=1, nrcpt=1 (queue active)"
            )
        };
        state.apply(from("OLD0001").as_bytes(), BOUNCE, NOW - 86_401_000);
        state.apply(from("NEW0001").as_bytes(), BOUNCE, NOW);
        state.prune(NOW);
        assert_eq!(state.senders.keys().collect::<Vec<_>>(), ["NEW0001"]);
        for i in 0..MAX_SENDERS + 10 {
            state.senders.insert(
                format!("Q{i:08}"),
                Pending {
                    sender: "b@bounce.svc.test".into(),
                    seen: NOW / 1000 - (i % 7) as i64,
                },
            );
        }
        state.prune(NOW);
        assert_eq!(state.senders.len(), MAX_SENDERS);
        assert!(state.senders.contains_key("NEW0001"));
    }

    struct Dir(PathBuf);
    impl Dir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("mailhost-maillog-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn append(path: &Path, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    const FROM_1: &str =
        "Nov 25 02:39:41 mx postfix/qmgr[1]: AAAAA1: from=<b-1@bounce.svc.test>, size=1, nrcpt=1 (queue active)\n";
    const SENT_1: &str = "Nov 25 02:39:41 mx postfix/smtp[2]: AAAAA1: to=<a@remote.test>, relay=mx.remote.test[192.0.2.1]:25, delay=0, delays=0/0/0/0, dsn=2.0.0, status=sent (250 2.0.0 Ok)\n";
    const FROM_2: &str =
        "Nov 25 02:39:42 mx postfix/qmgr[1]: BBBBB2: from=<b-2@bounce.svc.test>, size=1, nrcpt=1 (queue active)\n";
    const BOUNCED_2: &str = "Nov 25 02:39:43 mx postfix/smtp[2]: BBBBB2: to=<c@remote.test>, relay=mx.remote.test[192.0.2.1]:25, delay=0, delays=0/0/0/0, dsn=5.1.1, status=bounced (host mx.remote.test[192.0.2.1] said: 550 5.1.1 no (in reply to RCPT TO command))\n";

    fn read(path: &Path, state: &State) -> Chunk {
        read_new(path, state, BOUNCE, NOW, 1 << 20).unwrap()
    }

    #[test]
    fn only_complete_lines_are_read_and_a_sender_from_an_earlier_run_is_kept() {
        let dir = Dir::new("partial");
        let log = dir.0.join("postfix.log");
        let saved = dir.0.join("state.json");
        // No log yet: nothing, and no error.
        let first = read(&log, &State::default());
        assert!(first.events.is_empty() && first.state.offset == 0);

        append(&log, FROM_1);
        append(&log, &SENT_1[..40]);
        let one = read(&log, &State::default());
        assert!(one.events.is_empty());
        assert_eq!(one.state.offset, FROM_1.len() as u64, "the partial line waits");
        assert!(one.state.senders.contains_key("AAAAA1"));
        one.state.save(&saved).unwrap();

        // The next run, from the saved state: the line completed.
        append(&log, &SENT_1[40..]);
        let state = State::load(&saved).unwrap();
        assert_eq!(state, one.state);
        let two = read(&log, &state);
        assert_eq!(two.events.len(), 1);
        assert_eq!(two.events[0].return_path, "b-1@bounce.svc.test");
        assert_eq!(two.state.offset, (FROM_1.len() + SENT_1.len()) as u64);
        // Nothing new: nothing again.
        let three = read(&log, &two.state);
        assert!(three.events.is_empty() && three.bytes == 0 && !three.more);
        // Not saved (the service refused): the same events again.
        assert_eq!(read(&log, &state).events, two.events);
    }

    #[test]
    fn the_budget_reads_in_pieces() {
        let dir = Dir::new("budget");
        let log = dir.0.join("postfix.log");
        append(&log, &[FROM_1, SENT_1, FROM_2, BOUNCED_2].concat());
        let in_pieces = |budget: u64| {
            let (mut state, mut got, mut reads) = (State::default(), Vec::new(), 0);
            while reads < 20 {
                let read = read_new(&log, &state, BOUNCE, NOW, budget).unwrap();
                got.extend(read.events.into_iter().map(|e| e.recipient));
                state = read.state;
                reads += 1;
                if !read.more {
                    break;
                }
            }
            assert_eq!(state.offset, std::fs::metadata(&log).unwrap().len());
            (got, reads)
        };
        // The longest line (BOUNCED_2, 233 bytes) fits: every event, a few
        // lines at a time.
        let (got, reads) = in_pieces(240);
        assert_eq!(got, ["a@remote.test", "c@remote.test"]);
        assert!(reads >= 4, "{reads}");
        // A line longer than the budget is passed over, not read in part.
        let (got, _) = in_pieces(200);
        assert_eq!(got, ["a@remote.test"]);
    }

    #[test]
    fn a_rotated_log_is_finished_then_the_new_one_read_from_its_start() {
        let dir = Dir::new("rotated");
        let log = dir.0.join("postfix.log");
        append(&log, FROM_1);
        let one = read(&log, &State::default());
        // More was written, then the log was renamed (logrotate, postfix
        // logrotate) and a new one started.
        append(&log, SENT_1);
        std::fs::rename(&log, dir.0.join("postfix.log.1")).unwrap();
        append(&log, FROM_2);
        append(&log, BOUNCED_2);
        let two = read(&log, &one.state);
        assert_eq!(two.events.len(), 1, "the rest of the old file first");
        assert_eq!(two.events[0].recipient, "a@remote.test");
        assert!(two.more);
        let three = read(&log, &two.state);
        assert_eq!(three.events.len(), 1);
        assert_eq!(three.events[0].recipient, "c@remote.test");
        assert_eq!(three.state.offset, (FROM_2.len() + BOUNCED_2.len()) as u64);
        assert_eq!(three.state.inode, Some(std::fs::metadata(&log).unwrap().ino()));

        // Gone (compressed): the new file from its start.
        let four_state = State {
            inode: Some(u64::MAX),
            offset: 10,
            head: "x".into(),
            ..three.state.clone()
        };
        let four = read(&log, &four_state);
        assert_eq!(four.events.len(), 1);
        assert_eq!(four.events[0].recipient, "c@remote.test");

        // Truncated in place (copytruncate): shorter, so from the start.
        std::fs::write(&log, "").unwrap();
        append(&log, FROM_1);
        append(&log, SENT_1);
        let five = read(&log, &three.state);
        assert_eq!(five.events.len(), 1);
        assert_eq!(five.events[0].recipient, "a@remote.test");

        // Replaced by a file as long that starts otherwise: from the start.
        std::fs::write(&log, [FROM_2, BOUNCED_2, FROM_1, SENT_1].concat()).unwrap();
        let six = read(&log, &five.state);
        assert_eq!(six.events.len(), 2);
    }
}
