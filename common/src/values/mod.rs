//! The values the API takes, each parsing itself once and describing itself
//! once: the JSON Schema a type gives (the MCP `inputSchema`, the OpenAPI
//! document) admits exactly what its `parse` accepts, so a value the schema
//! allows is never refused for its shape, and one it forbids never passes.
//! Inputs hold these types; the services they reach receive them valid.
//!
//! Each reads the field's string with its surrounding whitespace trimmed
//! (what the patterns' `\s*` ends allow).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

mod field;
mod lists;
mod message;
pub mod page;
mod text;

pub use field::{Bounded, Field, List, Named, Nullable, Origin, REST_ONLY, RestOnly, without_null};
pub use lists::{
    Copies, MAX_RECIPIENTS, MAX_REFERENCES, MessageIds, Recipients, SomeRecipients, message_id, recipients,
};
pub use message::{Body, DraftSubject, DraftText, Html, MAX_SUBJECT, MAX_TEXT_BYTES, Subject};
pub use page::{Limit, Page};
pub use text::{Chars, Line, Needle, Text};

/// A value read from one field's text, as sent (each type trims it, and
/// counts its length as sent, as the schema's `maxLength` does).
pub trait Value: Sized + JsonSchema {
    fn parse(raw: &str) -> Option<Self>;
}

pub const MAX_EMAIL: usize = 254;

/// Lowercased hostname with the trailing dot stripped, if it is a valid DNS name
/// with at least two labels, the last starting with a letter (every top-level
/// domain does; it also tells a name from an IPv4 address).
pub fn hostname(input: &str) -> Option<String> {
    let trimmed = input.trim();
    // One trailing dot is a fully qualified name; two are no name.
    let name = trimmed.strip_suffix('.').unwrap_or(trimmed).to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let valid_label = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let tld_ok = labels
        .last()
        .is_some_and(|t| t.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()));
    (trimmed.len() <= 253 && labels.len() >= 2 && labels.iter().all(valid_label) && tld_ok).then_some(name)
}

/// A lowercased address `local@domain` with a plain local part and a valid domain.
pub fn email(input: &str) -> Option<String> {
    let input = input.trim();
    if input.len() > MAX_EMAIL || input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (local, domain) = input.rsplit_once('@')?;
    // RFC 5321's 64-character limit on the local part is the receiving
    // server's to apply: a schema pattern cannot say it (docs/decisions.md).
    let local_ok = !local.is_empty()
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b));
    let domain = hostname(domain)?;
    local_ok.then(|| format!("{}@{domain}", local.to_ascii_lowercase()))
}

pub fn email_domain(email: &str) -> &str {
    email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default()
}

/// One DNS label: letters, digits and inner hyphens, at most 63.
const LABEL: &str = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
/// The last label: as any, starting with a letter.
const TOP_LABEL: &str = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
/// A dot-atom local part (RFC 5322): no leading, trailing or double dot.
const LOCAL: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*";

pub(crate) fn hostname_pattern() -> String {
    format!(r"(?:{LABEL}\.)+{TOP_LABEL}\.?")
}

pub(crate) fn email_pattern() -> String {
    format!("{LOCAL}@{}", hostname_pattern())
}

/// One Message-ID: printable ASCII without `<>(),;"\` and with an `@`
/// inside, brackets optional (each side bounded so the whole stays within the
/// 250 characters a send accepts).
pub(crate) const MESSAGE_ID: &str = r#"<*[!#-'*+\-.-:=?-\[\]-~]{0,124}@[!#-'*+\-.-:=?-\[\]-~]{0,125}>*"#;

/// A string value whose text is kept as parsed.
macro_rules! text_value {
    ($(#[$doc:meta])* $name:ident, $description:literal, $pattern:expr, $max:expr, $parse:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(raw: &str) -> Result<Self, String> {
                <$name as Value>::parse(raw).ok_or_else(|| format!("not {}", $description))
            }
        }

        impl Value for $name {
            fn parse(raw: &str) -> Option<Self> {
                let parse: fn(&str) -> Option<String> = $parse;
                let max: Option<u64> = $max;
                if max.is_some_and(|max| raw.chars().count() as u64 > max) {
                    return None;
                }
                parse(raw.trim()).map($name)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let pattern: String = $pattern;
                let max: Option<u64> = $max;
                let mut schema = json_schema!({
                    "type": "string",
                    "description": $description,
                    "pattern": format!(r"^\s*{pattern}\s*$"),
                });
                if let Some(max) = max {
                    schema.insert("maxLength".into(), max.into());
                }
                schema
            }
        }
    };
}

/// An id this service mints: a prefix and lower-case hex digits (`key_`
/// and 12). Parsed, described and minted in one place, so an id's shape is
/// written once.
macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident = $prefix:literal + $hex:literal hex, $description:literal) => {
        text_value!(
            $(#[$doc])*
            $name,
            $description,
            format!("{}[0-9a-f]{{{}}}", $prefix, $hex),
            None,
            |t| $name::is_one(t).then(|| t.to_string())
        );

        impl $name {
            /// Whether `text` is one, exactly as written.
            pub fn is_one(text: &str) -> bool {
                text.strip_prefix($prefix)
                    .is_some_and(|hex| hex.len() == $hex && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            }

            /// A new one, random.
            pub fn mint() -> Self {
                let mut hex = hex::encode(rand::random::<[u8; ($hex as usize).div_ceil(2)]>());
                hex.truncate($hex);
                $name(format!("{}{hex}", $prefix))
            }
        }
    };
}

text_value!(
    /// A domain name: at least two labels, the last starting with a letter;
    /// lower case, without its trailing dot.
    DomainName,
    "A domain name such as example.com (at least two labels).",
    hostname_pattern(),
    Some(253),
    hostname
);

text_value!(
    /// An address `local@domain` a send accepts: a dot-atom local part of at
    /// most 64 characters and a domain name; lower case.
    EmailAddress,
    "An email address such as name@example.com.",
    email_pattern(),
    Some(254),
    email
);

impl EmailAddress {
    /// (local part, domain).
    pub fn parts(&self) -> (&str, &str) {
        self.0.rsplit_once('@').unwrap_or((&self.0, ""))
    }
}

/// 1 to `max` letters, digits, `_` and `-`: the ids and cursors this API gives.
fn token(t: &str, max: usize) -> Option<String> {
    (!t.is_empty() && t.len() <= max && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .then(|| t.to_string())
}

text_value!(
    /// A stored row's id.
    RowId,
    "A message id from this API.",
    r"[A-Za-z0-9_-]{1,128}".to_string(),
    None,
    |t| token(t, 128)
);

text_value!(
    /// A thread id: 64 lowercase hex characters.
    ThreadId,
    "A thread id: 64 lowercase hex characters.",
    r"[a-f0-9]{64}".to_string(),
    None,
    |t| (t.len() == 64 && t.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then(|| t.to_string())
);

text_value!(
    /// Where the previous page ended (its `nextCursor`), or a message id to
    /// wait past.
    Cursor,
    "A nextCursor (or message id) from this API.",
    r"[A-Za-z0-9_-]{1,100}".to_string(),
    None,
    |t| token(t, 100)
);

/// The webhook event types, as a registration names them.
pub const WEBHOOK_EVENTS: [&str; 7] = [
    "inbound.received",
    "outbound.delivered",
    "outbound.deferred",
    "outbound.bounced",
    "outbound.complained",
    "suppression.added",
    "message.spam",
];

text_value!(
    /// One webhook event type.
    WebhookEvent,
    "A webhook event type.",
    r"(?:inbound\.received|outbound\.(?:delivered|deferred|bounced|complained)|suppression\.added|message\.spam)".to_string(),
    Some(32),
    |t| WEBHOOK_EVENTS.contains(&t).then(|| t.to_string())
);

text_value!(
    /// A Message-ID to look a stored message up by, as received mail writes
    /// them: `<...>` with any printable characters inside (the brackets may
    /// be left off); kept with its brackets.
    StoredMessageId,
    "A Message-ID such as <id@example.com> (brackets optional).",
    r"<*[!-;=?-~]{1,500}>*".to_string(),
    None,
    |t| {
        let inner = t.trim_start_matches('<').trim_end_matches('>');
        (!inner.is_empty() && inner.len() <= 500 && inner.bytes().all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>'))
            .then(|| format!("<{inner}>"))
    }
);

prefixed_id!(
    /// A webhook event's id: `evt_` and 29 hex characters.
    EventId = "evt_" + 29 hex,
    "A webhook event id from the delivery log: evt_ and 29 lowercase hex characters."
);

prefixed_id!(
    /// An access request's id: `ar_` and 24 hex characters.
    RequestId = "ar_" + 24 hex,
    "An access request id: ar_ and 24 lowercase hex characters."
);
/// Letters, digits, `.`, `_`, `+` and `-`, no leading, trailing or double
/// dot; lower case.
fn local_part(t: &str) -> Option<String> {
    let local = t.to_ascii_lowercase();
    let ok = !local.is_empty()
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    ok.then_some(local)
}

const LOCAL_PART: &str = r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*";

text_value!(
    /// The part of a mailbox address before the @: letters, digits, `.`, `_`,
    /// `+` and `-`, no leading, trailing or double dot, at most 64; lower case.
    LocalPart,
    "The part of a mailbox address before the @ (letters, digits, . _ + -).",
    LOCAL_PART.to_string(),
    Some(64),
    |t| local_part(t).filter(|l| l.len() <= 64)
);

/// A hosted mailbox's address: a local part (as [`LocalPart`]; its length
/// is not judged here, so a longer one names no mailbox) at a
/// [`DomainName`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailboxAddress {
    local: String,
    domain: DomainName,
}

impl MailboxAddress {
    pub fn local(&self) -> &str {
        &self.local
    }
    pub fn domain(&self) -> &DomainName {
        &self.domain
    }
}

impl Value for MailboxAddress {
    fn parse(raw: &str) -> Option<Self> {
        if raw.chars().count() > 254 {
            return None;
        }
        let (local, domain) = raw.trim().rsplit_once('@')?;
        Some(MailboxAddress {
            local: local_part(local)?,
            domain: DomainName::parse(domain)?,
        })
    }
}

impl JsonSchema for MailboxAddress {
    fn schema_name() -> Cow<'static, str> {
        "MailboxAddress".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A mailbox address: a local part (letters, digits, . _ + -) at a domain name.",
            "pattern": format!(r"^\s*{LOCAL_PART}@{}\s*$", hostname_pattern()),
            "maxLength": 254,
        })
    }
}

/// `mailboxId`: a mailbox's address, or its local part alone (the domain
/// given beside it); the local part at most 64 characters either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailboxId {
    Address(LocalPart, DomainName),
    Local(LocalPart),
}

impl MailboxId {
    pub fn local(&self) -> &LocalPart {
        match self {
            MailboxId::Address(local, _) | MailboxId::Local(local) => local,
        }
    }
    pub fn domain(&self) -> Option<&DomainName> {
        match self {
            MailboxId::Address(_, domain) => Some(domain),
            MailboxId::Local(_) => None,
        }
    }
}

impl Value for MailboxId {
    fn parse(raw: &str) -> Option<Self> {
        if !raw.contains('@') {
            return LocalPart::parse(raw).map(MailboxId::Local);
        }
        let address = MailboxAddress::parse(raw)?;
        let local = LocalPart::parse(&address.local)?;
        Some(MailboxId::Address(local, address.domain))
    }
}

impl JsonSchema for MailboxId {
    fn schema_name() -> Cow<'static, str> {
        "MailboxId".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // The lookahead bounds the local part as LocalPart's maxLength does.
        let address = format!(r"^\s*(?=[^@\s]{{1,64}}@){LOCAL_PART}@{}\s*$", hostname_pattern());
        json_schema!({
            "description": "A mailbox's address, or its local part alone.",
            "anyOf": [
                LocalPart::json_schema(generator),
                { "type": "string", "pattern": address, "maxLength": 254 },
            ],
        })
    }
}

text_value!(
    /// A Message-ID a send names (`inReplyTo`, `references`): kept with its
    /// brackets.
    MessageId,
    "A Message-ID such as <id@example.com> (brackets optional).",
    MESSAGE_ID.to_string(),
    Some(252),
    message_id
);

/// The operators' account: owns the service domain and its protected mailboxes.
pub const OPS_UID: &str = "ops";

/// A uid this service could have issued (checked before one becomes part of a key).
pub fn valid_uid(uid: &str) -> bool {
    uid == OPS_UID
        || (uid.len() == 26
            && uid.starts_with("u_")
            && uid[2..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// An access request id: `ar_` and 24 lowercase hex characters.
pub fn valid_request_id(id: &str) -> bool {
    RequestId::is_one(id)
}

text_value!(
    /// An account id: `u_` and 24 hex characters, or `ops`.
    Uid,
    "An account id: u_ and 24 lowercase hex characters, or ops.",
    r"(?:u_[0-9a-f]{24}|ops)".to_string(),
    None,
    |t| valid_uid(t).then(|| t.to_string())
);

/// A point in time as RFC 3339 writes it (`2026-11-24T10:00:00Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoTime(pub chrono::DateTime<chrono::Utc>);

impl Value for IsoTime {
    fn parse(raw: &str) -> Option<Self> {
        chrono::DateTime::parse_from_rfc3339(raw.trim())
            .ok()
            .map(|t| IsoTime(t.to_utc()))
    }
}

impl JsonSchema for IsoTime {
    fn schema_name() -> Cow<'static, str> {
        "IsoTime".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 time, such as 2026-11-24T10:00:00Z.",
        })
    }
}

/// An idempotency key: 1 to 255 printable ASCII characters (spaces too),
/// trimmed; blank reads as not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl Field for IdempotencyKey {
    type Problems = crate::error::Problem;
    fn read(
        value: &serde_json::Value,
        origin: Origin,
        invalid: crate::error::Problem,
    ) -> Result<Option<Self>, crate::error::ApiError> {
        match <String as Field>::read(value, origin, invalid)? {
            Some(k) if k.len() > 255 || !k.bytes().all(|b| b.is_ascii_graphic() || b == b' ') => Err(invalid.into()),
            k => Ok(k.map(IdempotencyKey)),
        }
    }
}

impl JsonSchema for IdempotencyKey {
    fn schema_name() -> Cow<'static, str> {
        "IdempotencyKey".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "1 to 255 printable ASCII characters.",
            "minLength": 1,
            "maxLength": 255,
            "pattern": "^ *[!-~][ -~]*$",
        })
    }
}

impl std::ops::Deref for IdempotencyKey {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

prefixed_id!(
    /// A key id: `key_` and 12 lower-case hex digits.
    KeyId = "key_" + 12 hex,
    "A scoped API key's id: key_ and 12 lowercase hex characters."
);

prefixed_id!(
    /// A waiting send's id: `snd_` and 16 lower-case hex digits.
    HoldId = "snd_" + 16 hex,
    "A waiting send's id: snd_ and 16 lowercase hex characters."
);

/// An emailed approval code: 8 digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalCode(String);

impl ApprovalCode {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Value for ApprovalCode {
    fn parse(raw: &str) -> Option<ApprovalCode> {
        let raw = raw.trim();
        (raw.len() == 8 && raw.bytes().all(|b| b.is_ascii_digit())).then(|| ApprovalCode(raw.to_string()))
    }
}

impl JsonSchema for ApprovalCode {
    fn schema_name() -> Cow<'static, str> {
        "ApprovalCode".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^\\s*[0-9]{8}\\s*$" })
    }
}

/// A word a field takes as its only value (`view=threads`,
/// `disposition=inline`).
macro_rules! word {
    ($(#[$doc:meta])* $name:ident = $word:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl Value for $name {
            fn parse(raw: &str) -> Option<Self> {
                (raw.trim() == $word).then_some($name)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "string", "enum": [$word] })
            }
        }
    };
}

word!(
    /// `disposition=inline`: show the file in the browser.
    Inline = "inline"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_are_normalized_and_checked() {
        assert_eq!(hostname(" Example.COM. ").as_deref(), Some("example.com"));
        assert_eq!(hostname("a-b.example.co.uk").as_deref(), Some("a-b.example.co.uk"));
        for bad in [
            "",
            "localhost",
            "-a.com",
            "a..com",
            "a.com..",
            "a_b.com",
            "exa mple.com",
            "1.2.3.4",
            "é.com",
        ] {
            assert_eq!(hostname(bad), None, "{bad}");
        }
    }

    #[test]
    fn emails_are_lowercased_and_checked() {
        assert_eq!(email("Ann.Lee+x@Example.com").as_deref(), Some("ann.lee+x@example.com"));
        for bad in [
            "",
            "a",
            "@x.com",
            "a@",
            "a b@x.com",
            "a@@x.com",
            ".a@x.com",
            "a@x",
            "a\u{0}@x.com",
        ] {
            assert_eq!(email(bad), None, "{bad:?}");
        }
    }

    /// Each type's pattern, as a client's validator reads it (anchored),
    /// against its parse, on values near every rule's edge.
    fn agree<T: Value>(samples: &[&str]) {
        let schema = serde_json::to_value(T::json_schema(&mut SchemaGenerator::default())).unwrap();
        let pattern = schema["pattern"].as_str().unwrap();
        let regex = regex_lite::Regex::new(pattern).unwrap();
        let max = schema["maxLength"].as_u64().map(|m| m as usize);
        for sample in samples {
            let admitted = regex.is_match(sample) && max.is_none_or(|m| sample.chars().count() <= m);
            let parsed = T::parse(sample).is_some();
            assert_eq!(admitted, parsed, "{}: {sample:?}", T::schema_name());
        }
    }

    /// A minted id is one its type reads back, of the length it names.
    #[test]
    fn a_minted_id_reads_back() {
        for _ in 0..20 {
            let (key, hold, event, request) = (KeyId::mint(), HoldId::mint(), EventId::mint(), RequestId::mint());
            assert_eq!(KeyId::parse(&key), Some(key.clone()));
            assert_eq!(HoldId::parse(&hold), Some(hold.clone()));
            assert_eq!(EventId::parse(&event), Some(event.clone()));
            assert_eq!(RequestId::parse(&request), Some(request.clone()));
            assert_eq!((key.len(), hold.len(), event.len(), request.len()), (16, 20, 33, 27));
        }
    }

    #[test]
    fn a_mailbox_id_is_an_address_or_a_local_part() {
        let local = |l: &str| LocalPart::parse(l).unwrap();
        let address = MailboxId::Address(local("ann"), DomainName::parse("example.com").unwrap());
        assert_eq!(MailboxId::parse(" Ann@Example.com "), Some(address));
        assert_eq!(MailboxId::parse("Ann"), Some(MailboxId::Local(local("ann"))));
        let long = "a".repeat(65);
        for bad in [
            "",
            " ",
            "a@",
            "@example.com",
            "a b@example.com",
            "a..b",
            &long,
            &format!("{long}@example.com"),
        ] {
            assert_eq!(MailboxId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_recipients_pattern_admits_what_a_send_reads() {
        let schema = serde_json::to_value(SomeRecipients::json_schema(&mut SchemaGenerator::default())).unwrap();
        let regex = regex_lite::Regex::new(schema["anyOf"][0]["pattern"].as_str().unwrap()).unwrap();
        for sample in [
            "a@x.org",
            " A@x.org; b@y.org,c@z.org ",
            "a@x.org,,b@y.org;",
            "a@x.org b@y.org",
            "a@x.org,b@x.org,c@x.org,d@x.org,e@x.org",
            "a@x.org,b@x.org,c@x.org,d@x.org,e@x.org,f@x.org",
            "not an address",
            "",
        ] {
            let read = recipients(&serde_json::json!(sample));
            let admitted = regex.is_match(sample);
            assert_eq!(admitted, read.is_ok_and(|r| !r.is_empty()), "{sample:?}");
        }
    }

    #[test]
    fn each_schema_admits_exactly_what_its_type_parses() {
        agree::<DomainName>(&[
            "example.com",
            " Example.COM. ",
            "example.com..",
            "a-b.example.co.uk",
            "xn--bcher-kva.example",
            "a.b",
            "a.b1",
            "a.1b",
            "1.2.3.4",
            "localhost",
            "-a.com",
            "a-.com",
            "a..com",
            "a_b.com",
            "exa mple.com",
            "é.com",
            "",
            &format!("{}.com", "a".repeat(63)),
            &format!("{}.com", "a".repeat(64)),
        ]);
        agree::<EmailAddress>(&[
            "ann@example.com",
            "Ann.Lee+x@Example.com",
            " a@b.co ",
            "a@b.co.",
            "a@b.co..",
            ".a@x.com",
            "a.@x.com",
            "a..b@x.com",
            "a b@x.com",
            "a@@x.com",
            "a@x",
            "@x.com",
            "a@",
            "\"q\"@x.com",
        ]);
        agree::<RowId>(&["m1", "A_b-9", "", "a b", "é", &"a".repeat(128), &"a".repeat(129)]);
        agree::<ThreadId>(&[&"ab".repeat(32), &"AB".repeat(32), &"a".repeat(63), "zz"]);
        agree::<Cursor>(&["0000000001abc-x_", "", "a/b", &"a".repeat(100), &"a".repeat(101)]);
        agree::<WebhookEvent>(&[
            "inbound.received",
            "outbound.bounced",
            "suppression.added",
            "outbound.sent",
            "inbound.receivedx",
            "",
        ]);
        agree::<StoredMessageId>(&["<a@b>", "a@b", "<<a@b>>", "<>", "<a b@c>", "<a<b@c>", "<é@x>"]);
        agree::<MailboxAddress>(&[
            "me@example.com",
            "Me.Two+x@Example.COM",
            "a!b@example.com",
            ".me@example.com",
            "me@localhost",
            "me@@example.com",
            &format!("{}@example.com", "a".repeat(65)),
            &format!("{}@example.com", "a".repeat(250)),
        ]);
        agree::<LocalPart>(&[
            "me",
            "Me.Two+x",
            ".me",
            "me.",
            "a..b",
            "a b",
            "a@b",
            &"a".repeat(64),
            &"a".repeat(65),
        ]);
        agree::<MessageId>(&[
            "<a@b>",
            "a@b",
            "<ab>",
            "<a b@c>",
            "<a,b@c>",
            "<a@b>>",
            &format!("<{}@b>", "a".repeat(124)),
        ]);
        agree::<Uid>(&[
            "ops",
            "u_0123456789abcdef01234567",
            "u_0123456789ABCDEF01234567",
            "u_1",
            "opss",
        ]);
        agree::<RequestId>(&["ar_0123456789abcdef01234567", "ar_0123456789ABCDEF01234567", "ar_1", ""]);
        agree::<KeyId>(&[
            "key_0123456789ab",
            " key_0123456789ab ",
            "key_0123456789AB",
            "key_0123",
            "snd_0123456789ab",
        ]);
        agree::<HoldId>(&["snd_0123456789abcdef", "snd_0123456789abcde", "key_0123456789abcdef"]);
        agree::<EventId>(&[
            &format!("evt_{}", "a".repeat(29)),
            &format!("evt_{}", "a".repeat(28)),
            "evt_",
        ]);
        agree::<Text<5>>(&["hello", " hi ", "", "   ", "toolong", "a\u{1}b", "é"]);
        agree::<Line<5>>(&["hello", " hi ", "", "   ", "toolong", "a\u{1}b", "a\nb", "\tab\n", "é"]);
    }
}
