//! The text of a message a send or a draft carries. Each answers with its
//! own sentences (an input names none for them: `= ()`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::{Field, Origin};
use crate::error::{self, ApiError};

/// The longest subject: one header line (RFC 5322's 998).
pub const MAX_SUBJECT: usize = 998;
/// The largest text, in bytes of UTF-8.
pub const MAX_TEXT_BYTES: usize = 100 * 1024;

/// A send's subject: one line of at most 998 characters, trimmed; blank
/// reads as not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject(pub String);

/// A send's text: at most 100KB, kept as sent; blank reads as not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body(pub String);

/// A send's HTML alternative: at most 100KB, kept as sent until it is
/// sanitised; blank reads as not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Html(pub String);

/// A draft's subject or text, kept as sent (blank too), and checked against
/// the same limits as a send's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftText(pub String);

fn one_line(s: &str) -> bool {
    !s.chars().any(char::is_control) && s.chars().count() <= MAX_SUBJECT
}

impl Field for Subject {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) if one_line(s.trim()) => Ok(Some(Subject(s.trim().to_string()))),
            Value::String(_) => Err(error::SUBJECT_INVALID.into()),
            _ => Err(error::SUBJECT_TYPE.into()),
        }
    }
}

impl Field for Body {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) if s.len() > MAX_TEXT_BYTES => Err(error::TEXT_TOO_LARGE.into()),
            Value::String(s) => Ok(Some(Body(s.clone()))),
            _ => Err(error::TEXT_TYPE.into()),
        }
    }
}

impl Field for Html {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) if s.len() > MAX_TEXT_BYTES => Err(error::HTML_TOO_LARGE.into()),
            Value::String(s) => Ok(Some(Html(s.clone()))),
            _ => Err(error::HTML_TYPE.into()),
        }
    }
}

impl DraftText {
    pub fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }
}

/// `subject` of a draft.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftSubject(pub DraftText);

impl Field for DraftSubject {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if one_line(s) => Ok(Some(DraftSubject(DraftText(s.clone())))),
            Value::String(_) => Err(error::SUBJECT_INVALID.into()),
            _ => Err(error::SUBJECT_TYPE.into()),
        }
    }
}

impl Field for DraftText {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.len() > MAX_TEXT_BYTES => Err(error::TEXT_TOO_LARGE.into()),
            Value::String(s) => Ok(Some(DraftText(s.clone()))),
            _ => Err(error::TEXT_TYPE.into()),
        }
    }
}

const CONTROL: &str = r"\u0000-\u001F\u007F-\u009F";

impl JsonSchema for Subject {
    fn schema_name() -> Cow<'static, str> {
        "Subject".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        super::Line::<MAX_SUBJECT>::json_schema(generator)
    }
}

impl JsonSchema for DraftSubject {
    fn schema_name() -> Cow<'static, str> {
        "DraftSubject".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "One line, at most 998 characters.",
            "maxLength": MAX_SUBJECT,
            "pattern": format!("^[^{CONTROL}]*$"),
        })
    }
}

impl JsonSchema for Body {
    fn schema_name() -> Cow<'static, str> {
        "Body".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Plain text, at most 100KB of UTF-8.",
            "minLength": 1,
            "maxLength": MAX_TEXT_BYTES,
            "pattern": r"\S",
        })
    }
}

impl JsonSchema for Html {
    fn schema_name() -> Cow<'static, str> {
        "Html".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "HTML, at most 100KB: sent as the alternative to text, scripts, event handlers and forms removed.",
            "maxLength": MAX_TEXT_BYTES,
        })
    }
}

impl JsonSchema for DraftText {
    fn schema_name() -> Cow<'static, str> {
        "DraftText".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "At most 100KB.",
            "maxLength": MAX_TEXT_BYTES,
        })
    }
}
