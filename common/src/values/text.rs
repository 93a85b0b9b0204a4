//! Text the API takes as it is written: free text and one line of at most
//! so many characters, text of a length range, and text to look for.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::{Field, Origin, Value};

/// Control characters (Unicode Cc), which no one-line text may hold.
const CONTROL: &str = r"\u0000-\u001F\u007F-\u009F";

/// Free text: not blank, at most `MAX` characters once trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<const MAX: usize>(String);

/// One line of text: as [`Text`], without control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<const MAX: usize>(String);

impl<const MAX: usize> Value for Text<MAX> {
    fn parse(raw: &str) -> Option<Self> {
        let text = raw.trim();
        (!text.is_empty() && raw.chars().count() <= MAX).then(|| Text(text.to_string()))
    }
}

impl<const MAX: usize> Value for Line<MAX> {
    fn parse(text: &str) -> Option<Self> {
        let text = Text::<MAX>::parse(text)?.0;
        (!text.chars().any(char::is_control)).then_some(Line(text))
    }
}

impl<const MAX: usize> JsonSchema for Text<MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Text{MAX}").into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": format!("Text, not blank, at most {MAX} characters."),
            "pattern": r"\S",
            "maxLength": MAX,
        })
    }
}

impl<const MAX: usize> JsonSchema for Line<MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Line{MAX}").into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let char = format!("[^{CONTROL}]");
        let visible = format!(r"[^\s{CONTROL}]");
        json_schema!({
            "type": "string",
            "description": format!("One line of text, not blank, at most {MAX} characters."),
            "pattern": format!(r"^\s*{visible}(?:{char}*{visible})?\s*$"),
            "maxLength": MAX,
        })
    }
}

/// Text of `MIN` to `MAX` characters once trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chars<const MIN: usize, const MAX: usize>(String);

impl<const MIN: usize, const MAX: usize> Value for Chars<MIN, MAX> {
    fn parse(raw: &str) -> Option<Self> {
        let text = raw.trim();
        (MIN..=MAX)
            .contains(&text.chars().count())
            .then(|| Chars(text.to_string()))
    }
}

impl<const MIN: usize, const MAX: usize> JsonSchema for Chars<MIN, MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Chars{MIN}To{MAX}").into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": format!("Text of {MIN} to {MAX} characters."),
            "minLength": MIN,
            "maxLength": MAX,
        })
    }
}

/// Text to look for, in lower case: at most 200 characters; blank looks
/// for nothing (the field counts as not given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needle(String);

impl Field for Needle {
    type Problems = crate::error::Problem;
    fn read(
        value: &serde_json::Value,
        origin: Origin,
        invalid: crate::error::Problem,
    ) -> Result<Option<Self>, crate::error::ApiError> {
        let text = <String as Field>::read(value, origin, invalid)?;
        match text {
            Some(t) if t.chars().count() > 200 => Err(invalid.into()),
            t => Ok(t.map(|t| Needle(t.to_lowercase()))),
        }
    }
}

impl JsonSchema for Needle {
    fn schema_name() -> Cow<'static, str> {
        "Needle".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Text to look for (case-insensitive), at most 200 characters.",
            "maxLength": 200,
        })
    }
}

macro_rules! text_access {
    ($($name:ident),*) => {$(
        impl<const MAX: usize> $name<MAX> {
            pub fn as_str(&self) -> &str {
                &self.0
            }
            pub fn into_string(self) -> String {
                self.0
            }
        }
        impl<const MAX: usize> std::ops::Deref for $name<MAX> {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
    )*};
}
text_access!(Text, Line);

impl<const MIN: usize, const MAX: usize> std::ops::Deref for Chars<MIN, MAX> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Needle {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}
