//! Parsing what clients send: request bodies, query strings and MCP tool
//! arguments become typed inputs through one trait, [`Input`], which the
//! [`input!`](crate::input) macro implements from a list of typed fields
//! (the field types are in [`crate::values`]).

use serde_json::{Map, Value};

use crate::error::{self, ApiError, Problem};
use crate::values::{Field, Named};

pub use crate::values::Origin;

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

    /// The problems its fields are declared with: each is among its
    /// operation's `errors` (a unit test of the catalogue holds them to it).
    fn problems() -> Vec<Problem> {
        Vec::new()
    }

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
    fn problems() -> Vec<Problem> {
        T::problems()
    }
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

/// A field as an input declares it: `Option<T>` may be left out and names
/// the problem for a wrong value; a bare `T` must be given and names two,
/// `(missing, invalid)`.
pub trait Slot: Sized {
    type Problems: Copy + Named;
    fn pick(fields: &Fields, name: &str, problems: Self::Problems) -> Result<Self, ApiError>;

    /// Makes the field's schema admit what `pick` takes: `null` only where
    /// it reads as left out.
    fn describe(_schema: &mut schemars::Schema) {}
}

impl<T: Field> Slot for Option<T> {
    type Problems = T::Problems;
    fn pick(fields: &Fields, name: &str, invalid: T::Problems) -> Result<Self, ApiError> {
        match fields.get(name) {
            None => Ok(None),
            Some(value) => T::read(value, fields.origin, invalid),
        }
    }

    fn describe(schema: &mut schemars::Schema) {
        if let (false, Some(schema)) = (T::TAKES_NULL, schema.as_object_mut()) {
            crate::values::without_null(schema);
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

/// An input's schema: a field it requires (an `Option` one named in an
/// extended `required`, such as addMailbox's domainId) is not `null` there,
/// which every type that takes it reads as left out.
pub fn required_not_null(schema: &mut schemars::Schema) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for name in required {
        if let Some(Value::Object(property)) = properties.get_mut(&name) {
            crate::values::without_null(property);
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
/// (see [`Slot`]; left out for a type that names its own, such as a page's
/// [`crate::values::Limit`]); `name or "other": T` also reads `other` when
/// `name` is not given. Fields are read in the order written, so the first bad
/// one names the error. An optional `before` function looks at the raw
/// fields first (`fn(&Fields) -> Result<(), ApiError>`, for a rule the spec
/// puts ahead of the fields'); an optional `check` function then applies
/// the rules between fields: `fn(Self, &Fields) -> Result<Self, ApiError>`.
#[macro_export]
macro_rules! input {
    (@problems) => { ::core::default::Default::default() };
    (@problems $problems:expr) => { $problems };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$field_meta:meta])* $field_vis:vis $field:ident $(or $alias:literal)? : $ty:ty $(= $problems:expr)?),* $(,)?
        }
        $(before $before:path;)?
        $(check $check:path;)?
    ) => {
        #[derive(Debug, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase")]
        $(#[$meta])*
        #[schemars(transform = $crate::validate::required_not_null)]
        $vis struct $name {
            $(
                $(#[$field_meta])*
                #[schemars(transform = <$ty as $crate::validate::Slot>::describe)]
                $field_vis $field: $ty,
            )*
        }

        impl $crate::validate::Input for $name {
            fn problems() -> Vec<$crate::error::Problem> {
                let mut named = Vec::new();
                $({
                    let problems: <$ty as $crate::validate::Slot>::Problems = $crate::input!(@problems $($problems)?);
                    $crate::values::Named::name(&problems, &mut named);
                })*
                named
            }

            fn parse(fields: &$crate::validate::Fields) -> Result<Self, $crate::error::ApiError> {
                $($before(fields)?;)?
                $(let $field = <$ty as $crate::validate::Slot>::pick(
                    fields,
                    fields.given_as(&$crate::validate::wire_name(stringify!($field)), &[$($alias)?]),
                    $crate::input!(@problems $($problems)?),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Bounded;

    #[test]
    fn fields_refuse_wrong_types() {
        let bad = error::LIMIT_TO_50_INVALID;
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
        // 47.0 is an integer, as JSON Schema says; 4.5 is not.
        let f = Fields::parse(br#"{"n": 47.0, "m": 4.5}"#).unwrap();
        assert_eq!(<Bounded<1, 50>>::pick(&f, "n", (bad, bad)).unwrap().get(), 47);
        assert!(<Bounded<1, 50>>::pick(&f, "m", (bad, bad)).is_err());
        // A body's string is not a number.
        let f = Fields::parse(br#"{"n": "7"}"#).unwrap();
        assert!(<Option<Bounded<1, 9>>>::pick(&f, "n", bad).is_err());
    }

    crate::input! {
        #[schemars(extend("required" = ["label"]))]
        struct Switched {
            on: Option<bool> = error::ENABLED_TYPE,
            name: Option<String> = error::ID_TYPE,
            label: Option<String> = error::ID_TYPE,
            ids: Option<crate::values::List<String, 3, 1>> = (error::ID_TYPE, error::DELETE_IDS_TOO_MANY),
        }
    }

    /// An optional field's schema admits `null` exactly where its read takes
    /// it as left out: a switch refuses it, free text does not, and a field
    /// the schema requires is not left out; a list's schema says how many
    /// entries its read takes.
    #[test]
    fn schemas_admit_what_the_fields_read() {
        let schema = schemars::schema_for!(Switched).to_value();
        let properties = &schema["properties"];
        assert_eq!(properties["on"]["type"], "boolean", "{schema}");
        assert_eq!(
            properties["name"]["type"],
            serde_json::json!(["string", "null"]),
            "{schema}"
        );
        assert_eq!(properties["label"]["type"], "string", "{schema}");
        let ids = &schema["$defs"]["ListOfstringFrom1To3"];
        assert_eq!(
            (ids["minItems"].as_u64(), ids["maxItems"].as_u64()),
            (Some(1), Some(3)),
            "{schema}"
        );

        let read = |body: &[u8]| Switched::parse(&Fields::parse(body).unwrap());
        assert!(read(br#"{"on": null}"#).unwrap_err().is(error::ENABLED_TYPE));
        let left_out = read(br#"{"name": null, "ids": null}"#).unwrap();
        assert!(left_out.on.is_none() && left_out.name.is_none() && left_out.label.is_none() && left_out.ids.is_none());
        assert!(read(br#"{"ids": []}"#).unwrap_err().is(error::DELETE_IDS_TOO_MANY));
        assert!(
            read(br#"{"ids": ["a", "b", "c", "d"]}"#)
                .unwrap_err()
                .is(error::DELETE_IDS_TOO_MANY)
        );
        assert_eq!(read(br#"{"on": false, "ids": ["a"]}"#).unwrap().on, Some(false));
    }

    #[test]
    fn wire_names_are_camel_case() {
        assert_eq!(wire_name("max_chars"), "maxChars");
        assert_eq!(wire_name("r#box"), "box");
        assert_eq!(wire_name("in_reply_to"), "inReplyTo");
    }
}
