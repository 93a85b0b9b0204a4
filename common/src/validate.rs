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

/// The input of an operation that takes none; any fields are ignored.
#[derive(Debug, Clone, Copy, Default, schemars::JsonSchema)]
pub struct NoInput {}

impl Input for NoInput {
    fn parse(_: &Fields) -> Result<Self, ApiError> {
        Ok(NoInput {})
    }
}

/// How one field's JSON becomes a typed value. `invalid` is the problem the
/// input names for this field; a type with finer problems (an attachment's)
/// answers with those instead.
pub trait Field: Sized + schemars::JsonSchema {
    /// What a wrong value is answered with: one problem for most types.
    type Problems: Copy;
    /// `Ok(None)`: the value counts as not given (null; for free text, a
    /// blank string).
    fn read(value: &Value, origin: Origin, invalid: Self::Problems) -> Result<Option<Self>, ApiError>;
}

/// Every [`crate::values::Value`] is a field given as a string.
impl<T: crate::values::Value> Field for T {
    type Problems = Problem;
    fn read(value: &Value, _: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) => T::parse(s).map(Some).ok_or_else(|| invalid.into()),
            _ => Err(invalid.into()),
        }
    }
}

/// Free text, trimmed; blank counts as not given.
impl Field for String {
    type Problems = Problem;
    fn read(value: &Value, _: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) => Ok(Some(s.trim().to_string())),
            _ => Err(invalid.into()),
        }
    }
}

/// `true` or `false`; a query string's text of either.
impl Field for bool {
    type Problems = Problem;
    fn read(value: &Value, origin: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        match (value, origin) {
            (Value::Null, _) => Ok(None),
            (Value::Bool(b), _) => Ok(Some(*b)),
            (Value::String(s), Origin::Query) if s == "true" || s == "false" => Ok(Some(s == "true")),
            _ => Err(invalid.into()),
        }
    }
}

/// An integer from `MIN` to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bounded<const MIN: i64, const MAX: i64>(i64);

impl<const MIN: i64, const MAX: i64> Bounded<MIN, MAX> {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl<const MIN: i64, const MAX: i64> Field for Bounded<MIN, MAX> {
    type Problems = Problem;
    fn read(value: &Value, origin: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        let n = match (value, origin) {
            (Value::Null, _) => return Ok(None),
            (Value::Number(n), _) => n.as_i64(),
            (Value::String(s), Origin::Query) => s.trim().parse().ok(),
            _ => None,
        };
        n.filter(|n| (MIN..=MAX).contains(n))
            .map(|n| Some(Bounded(n)))
            .ok_or_else(|| invalid.into())
    }
}

impl<const MIN: i64, const MAX: i64> schemars::JsonSchema for Bounded<MIN, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Integer{MIN}To{MAX}").into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "integer", "minimum": MIN, "maximum": MAX })
    }
}

/// A field only REST takes: the MCP tool's `inputSchema` leaves it out (its
/// schema says `x-rest-only`), and a tool call that gives it anyway is
/// answered with the first problem.
#[derive(Debug, Default)]
pub struct RestOnly<T>(pub T);

/// The schema keyword that marks a [`RestOnly`] property.
pub const REST_ONLY: &str = "x-rest-only";

impl<T: Field> Field for RestOnly<T> {
    type Problems = (Problem, T::Problems);
    fn read(value: &Value, origin: Origin, (tool, invalid): Self::Problems) -> Result<Option<Self>, ApiError> {
        match (value, origin) {
            (Value::Null, _) => Ok(None),
            (_, Origin::Tool) => Err(tool.into()),
            (value, _) => Ok(T::read(value, origin, invalid)?.map(RestOnly)),
        }
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for RestOnly<T> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = T::json_schema(generator);
        schema.insert(REST_ONLY.into(), true.into());
        schema
    }
}

/// A field whose `null` says something: `Nullable(None)` clears what it
/// names (an omitted field leaves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nullable<T>(pub Option<T>);

impl<T: Field> Field for Nullable<T> {
    type Problems = T::Problems;
    fn read(value: &Value, origin: Origin, invalid: T::Problems) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(Some(Nullable(None))),
            value => Ok(Some(Nullable(T::read(value, origin, invalid)?))),
        }
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Nullable<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Option<T>>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T>>::json_schema(generator)
    }
}

/// An array of at most `MAX` values; problems `(wrong entry, too many)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T, const MAX: usize>(pub Vec<T>);

impl<T: Field<Problems = Problem>, const MAX: usize> Field for List<T, MAX> {
    type Problems = (Problem, Problem);
    fn read(value: &Value, origin: Origin, (wrong, too_many): (Problem, Problem)) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::Array(list) if list.len() > MAX => Err(too_many.into()),
            Value::Array(list) => list
                .iter()
                .map(|v| T::read(v, origin, wrong)?.ok_or_else(|| wrong.into()))
                .collect::<Result<_, _>>()
                .map(|l| Some(List(l))),
            _ => Err(wrong.into()),
        }
    }
}

impl<T: schemars::JsonSchema, const MAX: usize> schemars::JsonSchema for List<T, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("ListOf{}Max{MAX}", T::schema_name()).into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "array", "items": generator.subschema_for::<T>(), "maxItems": MAX })
    }
}

/// A field as an input declares it: `Option<T>` may be left out and names
/// the problem for a wrong value; a bare `T` must be given and names two,
/// `(missing, invalid)`.
pub trait Slot: Sized {
    type Problems: Copy;
    fn pick(fields: &Fields, name: &str, problems: Self::Problems) -> Result<Self, ApiError>;
}

impl<T: Field> Slot for Option<T> {
    type Problems = T::Problems;
    fn pick(fields: &Fields, name: &str, invalid: T::Problems) -> Result<Self, ApiError> {
        match fields.get(name) {
            None => Ok(None),
            Some(value) => T::read(value, fields.origin, invalid),
        }
    }
}

impl<T: Field> Slot for T {
    type Problems = (Problem, T::Problems);
    fn pick(fields: &Fields, name: &str, (missing, invalid): (Problem, T::Problems)) -> Result<Self, ApiError> {
        match fields.get(name) {
            None | Some(Value::Null) => Err(missing.into()),
            Some(Value::String(s)) if s.trim().is_empty() => Err(missing.into()),
            Some(value) => T::read(value, fields.origin, invalid)?.ok_or_else(|| missing.into()),
        }
    }
}

/// A field's name on the wire: the Rust name in camelCase (what
/// `rename_all = "camelCase"` gives the schema).
pub fn wire_name(rust: &'static str) -> std::borrow::Cow<'static, str> {
    let rust = rust.trim_start_matches("r#");
    if !rust.contains('_') {
        return rust.into();
    }
    let mut out = String::with_capacity(rust.len());
    let mut upper = false;
    for c in rust.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out.into()
}

/// Declares an operation's input: the struct, its schema and its parse, from
/// one list of fields, each with its type and the problems it answers with
/// (see [`Slot`]); `name or "other": T` also reads `other` when `name` is
/// not given. Fields are read in the order written, so the first bad
/// one names the error. An optional `before` function looks at the raw
/// fields first (`fn(&Fields) -> Result<(), ApiError>`, for a rule the spec
/// puts ahead of the fields'); an optional `check` function then applies
/// the rules between fields: `fn(Self, &Fields) -> Result<Self, ApiError>`.
#[macro_export]
macro_rules! input {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$field_meta:meta])* $field_vis:vis $field:ident $(or $alias:literal)? : $ty:ty = $problems:expr),* $(,)?
        }
        $(before $before:path;)?
        $(check $check:path;)?
    ) => {
        #[derive(Debug, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase")]
        $(#[$meta])*
        $vis struct $name {
            $($(#[$field_meta])* $field_vis $field: $ty,)*
        }

        impl $crate::validate::Input for $name {
            fn parse(fields: &$crate::validate::Fields) -> Result<Self, $crate::error::ApiError> {
                $($before(fields)?;)?
                $(let $field = <$ty as $crate::validate::Slot>::pick(
                    fields,
                    fields.given_as(&$crate::validate::wire_name(stringify!($field)), &[$($alias)?]),
                    $problems,
                )?;)*
                let input = $name { $($field),* };
                $(let input = $check(input, fields)?;)?
                Ok(input)
            }
        }
    };
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

    /// The first of `name` and `aliases` that is given (not null), else
    /// `name`.
    pub fn given_as<'a>(&self, name: &'a str, aliases: &[&'a str]) -> &'a str {
        std::iter::once(name)
            .chain(aliases.iter().copied())
            .find(|n| self.has(n))
            .unwrap_or(name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.map.get(name).is_some_and(|v| !v.is_null())
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
        let bad = error::INBOX_LIMIT_INVALID;
        let f = Fields::parse(br#"{"a": 1, "b": " x ", "c": true, "d": "", "n": 7}"#).unwrap();
        assert!(<Option<String>>::pick(&f, "a", bad).is_err());
        assert_eq!(<Option<String>>::pick(&f, "b", bad).unwrap().as_deref(), Some("x"));
        assert_eq!(<Option<String>>::pick(&f, "d", bad).unwrap(), None);
        assert_eq!(<Option<bool>>::pick(&f, "c", bad).unwrap(), Some(true));
        assert!(<Option<bool>>::pick(&f, "b", bad).is_err());
        assert_eq!(<Bounded<1, 9>>::pick(&f, "n", (bad, bad)).unwrap().get(), 7);
        assert!(<Bounded<1, 5>>::pick(&f, "n", (bad, bad)).is_err());
        assert!(<Bounded<1, 9>>::pick(&f, "b", (bad, bad)).is_err());
        assert!(
            <String>::pick(&f, "d", (error::ID_REQUIRED, bad))
                .unwrap_err()
                .is(error::ID_REQUIRED)
        );
        assert!(Fields::parse(b"[1]").is_err());
        assert!(Fields::parse(b"{").is_err());
        assert!(Fields::parse(b"").unwrap().map.is_empty());
        // A query string carries text: numbers and booleans are read from it.
        let q = Fields::from_query([
            ("n".to_string(), "7".to_string()),
            ("b".to_string(), "true".to_string()),
        ]);
        assert_eq!(
            <Option<Bounded<1, 9>>>::pick(&q, "n", bad).unwrap().map(Bounded::get),
            Some(7)
        );
        assert_eq!(<Option<bool>>::pick(&q, "b", bad).unwrap(), Some(true));
        // A body's string is not a number.
        let f = Fields::parse(br#"{"n": "7"}"#).unwrap();
        assert!(<Option<Bounded<1, 9>>>::pick(&f, "n", bad).is_err());
    }

    #[test]
    fn wire_names_are_camel_case() {
        assert_eq!(wire_name("max_chars"), "maxChars");
        assert_eq!(wire_name("r#box"), "box");
        assert_eq!(wire_name("in_reply_to"), "inReplyTo");
    }
}
