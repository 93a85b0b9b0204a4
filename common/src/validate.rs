//! Parsing what clients send: request bodies, query strings and MCP tool
//! arguments become typed inputs through one trait, [`Input`]; emails and
//! hostnames are checked here.

use serde_json::{Map, Value};

use crate::error::{self, ApiError, Problem};

/// Where a set of fields came from. Query strings carry only strings, so
/// numbers and booleans are also read from their text there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    #[default]
    Body,
    Query,
    /// The `arguments` of an MCP `tools/call`.
    Tool,
}

/// A JSON object from a body, a query string or tool arguments, with typed,
/// precise field access.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    pub map: Map<String, Value>,
    pub origin: Origin,
}

/// A typed operation input, parsed with the catalogue's exact 400 sentences.
/// Its JSON Schema (the wire shape) feeds the MCP tool list and OpenAPI.
pub trait Input: Sized + schemars::JsonSchema {
    fn parse(fields: &Fields) -> Result<Self, ApiError>;

    /// From what the request carried: its fields, or why they could not be
    /// read (broken JSON, say).
    fn from_request(fields: Result<Fields, ApiError>) -> Result<Self, ApiError> {
        Self::parse(&fields?)
    }
}

/// An input parsed when the service asks, not before it runs: for the routes
/// whose spec orders some checks before validation (sendMail: the kill
/// switch, the agent-key freeze and the rate limit come before a 400, even
/// for a body that is not JSON).
pub struct Later<T> {
    fields: Result<Fields, ApiError>,
    _input: std::marker::PhantomData<T>,
}

impl<T: Input> Later<T> {
    pub fn parse(self) -> Result<T, ApiError> {
        T::from_request(self.fields)
    }

    /// The raw fields, for checks that must read one before validation.
    pub fn fields(&self) -> Option<&Fields> {
        self.fields.as_ref().ok()
    }
}

impl<T: Input> schemars::JsonSchema for Later<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<T: Input> Input for Later<T> {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        Ok(Later {
            fields: Ok(fields.clone()),
            _input: std::marker::PhantomData,
        })
    }
    fn from_request(fields: Result<Fields, ApiError>) -> Result<Self, ApiError> {
        Ok(Later {
            fields,
            _input: std::marker::PhantomData,
        })
    }
}

/// A schema type for fields that take one string or a list of them.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// The input of an operation that takes none; any fields are ignored.
#[derive(Debug, Clone, Copy, Default, schemars::JsonSchema)]
pub struct NoInput {}

impl Input for NoInput {
    fn parse(_: &Fields) -> Result<Self, ApiError> {
        Ok(NoInput {})
    }
}

impl Fields {
    pub fn new(map: Map<String, Value>, origin: Origin) -> Self {
        Fields { map, origin }
    }

    /// A JSON object body; an empty body reads as `{}`.
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Fields::default());
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => Ok(Fields::new(map, Origin::Body)),
            Ok(_) => Err(error::NOT_AN_OBJECT.into()),
            Err(_) => Err(error::INVALID_JSON.into()),
        }
    }

    /// Query parameters; a repeated name keeps its last value.
    pub fn from_query(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let map = pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        Fields::new(map, Origin::Query)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.map.get(name).is_some_and(|v| !v.is_null())
    }

    /// A string field, trimmed; `None` when absent, null or empty.
    pub fn str(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(error::FIELD_TYPE.with(format_args!("{name} must be a string"))),
        }
    }

    /// A typed value: `None` when absent or null; otherwise it must parse
    /// (a blank string does not), or the field is `invalid`.
    pub fn value<T: crate::values::Value>(&self, name: &str, invalid: Problem) -> Result<Option<T>, ApiError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => T::parse(s).map(Some).ok_or_else(|| invalid.into()),
            Some(_) => Err(invalid.into()),
        }
    }

    /// A typed value that must be given: `missing` when absent, null or
    /// blank; `invalid` when it does not parse.
    pub fn required<T: crate::values::Value>(
        &self,
        name: &str,
        missing: Problem,
        invalid: Problem,
    ) -> Result<T, ApiError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Err(missing.into()),
            Some(Value::String(s)) if s.trim().is_empty() => Err(missing.into()),
            _ => self.value(name, invalid)?.ok_or_else(|| missing.into()),
        }
    }

    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match (self.map.get(name), self.origin) {
            (None, _) => Ok(None),
            (Some(Value::Bool(b)), _) => Ok(Some(*b)),
            (Some(Value::String(s)), Origin::Query) if s == "true" || s == "false" => Ok(Some(s == "true")),
            _ => Err(error::FIELD_TYPE.with(format_args!("{name} must be a boolean"))),
        }
    }

    /// An integer field; `None` when absent or null.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        let wrong = || error::FIELD_TYPE.with(format_args!("{name} must be an integer"));
        match (self.map.get(name), self.origin) {
            (None | Some(Value::Null), _) => Ok(None),
            (Some(Value::Number(n)), _) => n.as_i64().map(Some).ok_or_else(wrong),
            (Some(Value::String(s)), Origin::Query) => s.trim().parse().map(Some).map_err(|_| wrong()),
            _ => Err(wrong()),
        }
    }
}

pub const MAX_EMAIL: usize = 254;

/// Lowercased hostname with the trailing dot stripped, if it is a valid DNS name
/// with at least two labels, the last starting with a letter (every top-level
/// domain does; it also tells a name from an IPv4 address).
pub fn hostname(input: &str) -> Option<String> {
    let trimmed = input.trim();
    let name = trimmed.trim_end_matches('.').to_ascii_lowercase();
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

    #[test]
    fn fields_refuse_wrong_types() {
        let f = Fields::parse(br#"{"a": 1, "b": " x ", "c": true, "d": ""}"#).unwrap();
        assert!(f.str("a").is_err());
        assert_eq!(f.str("b").unwrap().as_deref(), Some("x"));
        assert_eq!(f.str("d").unwrap(), None);
        assert_eq!(f.bool("c").unwrap(), Some(true));
        assert!(Fields::parse(b"[1]").is_err());
        assert!(Fields::parse(b"{").is_err());
        assert!(Fields::parse(b"").unwrap().map.is_empty());
        let q = Fields::from_query([
            ("n".to_string(), "7".to_string()),
            ("b".to_string(), "true".to_string()),
        ]);
        assert_eq!(q.int("n").unwrap(), Some(7));
        assert_eq!(q.bool("b").unwrap(), Some(true));
        assert!(f.int("b").is_err());
    }
}
