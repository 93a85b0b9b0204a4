//! Fields that take several values: recipients and Message-IDs, as one
//! string or an array. Each answers with its own fixed sentences (so an
//! input names no problem for them: `= ()`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::{Field, Origin};
use super::{MESSAGE_ID, email_pattern};
use crate::error::{self, ApiError, Problem};

/// The most recipients one message may have.
pub const MAX_RECIPIENTS: usize = 5;
/// The most Message-IDs `references` may carry, however they are given.
pub const MAX_REFERENCES: usize = 100;

/// A draft's `to`: addresses as one string (separated by commas or
/// semicolons) or an array, at most 5, each valid, lower case, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recipients(pub Vec<String>);

/// A send's `to`: as [`Recipients`], at least one (none reads as not given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SomeRecipients(pub Vec<String>);

/// A send's `cc` or `bcc`: as [`Recipients`], with its own sentences for
/// a value of the wrong shape: (not a string or an array, an entry not a
/// string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copies(pub Vec<String>);

/// Message-IDs (`references`): one string, separated by spaces, or an array
/// of such strings; at most 100 however given; each kept with its brackets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageIds(pub Vec<String>);

/// `<local@domain>`, brackets added when missing.
pub fn message_id(raw: &str) -> Option<String> {
    let inner = raw.trim().trim_start_matches('<').trim_end_matches('>');
    let ok = inner.len() <= 250
        && inner.contains('@')
        && inner
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '<' | '>' | '(' | ')' | ',' | ';' | '"' | '\\'));
    ok.then(|| format!("<{inner}>"))
}

/// The addresses of a `to` value, in order, each once.
pub fn recipients(value: &Value) -> Result<Vec<String>, ApiError> {
    recipients_as(value, (error::TO_TYPE, error::TO_ITEMS))
}

/// The addresses of a recipients field, in order, each once; `(of_type,
/// items)` name a value that is no string or array, and an entry that is
/// no string.
fn recipients_as(value: &Value, (of_type, items): (Problem, Problem)) -> Result<Vec<String>, ApiError> {
    let split = |s: &str| -> Vec<String> {
        s.split([',', ';'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let raw: Vec<String> = match value {
        Value::Null => return Ok(Vec::new()),
        Value::String(s) => split(s),
        Value::Array(list) if list.len() > MAX_RECIPIENTS => return Err(error::TOO_MANY_RECIPIENTS.into()),
        Value::Array(list) => {
            let mut out = Vec::new();
            for v in list {
                out.extend(split(v.as_str().ok_or(items)?));
            }
            out
        }
        _ => return Err(of_type.into()),
    };
    if raw.len() > MAX_RECIPIENTS {
        return Err(error::TOO_MANY_RECIPIENTS.into());
    }
    let mut out: Vec<String> = Vec::new();
    for r in raw {
        let address = super::email(&r).ok_or_else(|| {
            let shown: String = r.chars().take(254).collect();
            error::RECIPIENT_INVALID.with(shown)
        })?;
        if !out.contains(&address) {
            out.push(address);
        }
    }
    Ok(out)
}

/// The Message-IDs of one `references` string (stops counting past the cap,
/// so a huge string costs no more than a refusal).
fn split_ids(s: &str) -> Result<Vec<String>, ApiError> {
    let ids: Vec<&str> = s.split_whitespace().take(MAX_REFERENCES + 1).collect();
    if ids.len() > MAX_REFERENCES {
        return Err(error::REFERENCES_TOO_MANY.into());
    }
    ids.into_iter()
        .map(|id| Ok(message_id(id).ok_or(error::REFERENCES_INVALID)?))
        .collect()
}

impl Field for Recipients {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        Ok(Some(Recipients(recipients(value)?)))
    }
}

impl Field for SomeRecipients {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let list = recipients(value)?;
        Ok((!list.is_empty()).then_some(SomeRecipients(list)))
    }
}

impl Field for Copies {
    type Problems = (Problem, Problem);
    fn read(value: &Value, _: Origin, problems: (Problem, Problem)) -> Result<Option<Self>, ApiError> {
        let list = recipients_as(value, problems)?;
        Ok((!list.is_empty()).then_some(Copies(list)))
    }
}

impl Field for MessageIds {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let ids = match value {
            Value::Null => return Ok(None),
            Value::String(s) => split_ids(s)?,
            Value::Array(list) if list.len() <= MAX_REFERENCES => {
                let mut ids = Vec::new();
                for v in list {
                    ids.extend(split_ids(v.as_str().ok_or(error::REFERENCES_INVALID)?)?);
                }
                ids
            }
            Value::Array(_) => return Err(error::REFERENCES_TOO_MANY.into()),
            _ => return Err(error::REFERENCES_TYPE.into()),
        };
        if ids.len() > MAX_REFERENCES {
            return Err(error::REFERENCES_TOO_MANY.into());
        }
        Ok(Some(MessageIds(ids)))
    }
}

/// Addresses, `least` to 5 of them, as one string or an array.
fn recipients_schema(least: u64) -> Schema {
    let one = email_pattern();
    let some = format!(r"{one}(?:\s*[,;][\s,;]*{one}){{0,4}}");
    let listed = if least == 0 { format!("(?:{some})?") } else { some };
    json_schema!({
        "description": format!("Addresses: one string, separated by commas or semicolons, or an array; {least} to 5."),
        "anyOf": [
            { "type": "string", "pattern": format!(r"^[\s,;]*{listed}[\s,;]*$") },
            {
                "type": "array",
                "items": { "type": "string", "pattern": format!(r"^\s*{one}\s*$") },
                "minItems": least,
                "maxItems": 5,
            },
        ],
    })
}

impl JsonSchema for Recipients {
    fn schema_name() -> Cow<'static, str> {
        "Recipients".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        recipients_schema(0)
    }
}

impl JsonSchema for SomeRecipients {
    fn schema_name() -> Cow<'static, str> {
        "SomeRecipients".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        recipients_schema(1)
    }
}

impl JsonSchema for Copies {
    fn schema_name() -> Cow<'static, str> {
        "Copies".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        recipients_schema(0)
    }
}

impl JsonSchema for MessageIds {
    fn schema_name() -> Cow<'static, str> {
        "MessageIds".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let list = format!(r"^\s*(?:{MESSAGE_ID}(?:\s+{MESSAGE_ID}){{0,99}})?\s*$");
        json_schema!({
            "description": "Message-IDs: one string, separated by spaces, or an array; at most 100.",
            "anyOf": [
                { "type": "string", "pattern": list },
                { "type": "array", "items": { "type": "string", "pattern": list }, "maxItems": 100 },
            ],
        })
    }
}
