//! How one field's JSON becomes a typed value: the [`Field`] trait, and the
//! shapes beyond one string (integers in a range, lists, nullable values,
//! REST-only fields).

use serde_json::Value;

use crate::error::{ApiError, Problem};

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

/// How one field's JSON becomes a typed value. `invalid` is the problem the
/// input names for this field; a type with finer problems (an attachment's)
/// answers with those instead.
pub trait Field: Sized + schemars::JsonSchema {
    /// What a wrong value is answered with: one problem for most types.
    type Problems: Copy + Named;
    /// `Ok(None)`: the value counts as not given (null; for free text, a
    /// blank string).
    fn read(value: &Value, origin: Origin, invalid: Self::Problems) -> Result<Option<Self>, ApiError>;

    /// Whether `read` takes `null` as not given; where it does not, an
    /// optional field's schema leaves `null` out too.
    const TAKES_NULL: bool = true;
}

/// The problems a field is declared with, listed: one, none (a type that
/// names its own, such as a send's subject), or a tuple of them.
pub trait Named {
    fn name(&self, into: &mut Vec<Problem>);
}

impl Named for Problem {
    fn name(&self, into: &mut Vec<Problem>) {
        into.push(*self);
    }
}

impl Named for () {
    fn name(&self, _: &mut Vec<Problem>) {}
}

impl<A: Named, B: Named> Named for (A, B) {
    fn name(&self, into: &mut Vec<Problem>) {
        self.0.name(into);
        self.1.name(into);
    }
}

/// Every [`super::Value`] is a field given as a string.
impl<T: super::Value> Field for T {
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

/// `true` or `false`; a query string's text of either. A switch is never
/// null: `null` is refused, not read as left out (docs/decisions.md).
impl Field for bool {
    type Problems = Problem;
    const TAKES_NULL: bool = false;
    fn read(value: &Value, origin: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        match (value, origin) {
            (Value::Bool(b), _) => Ok(Some(*b)),
            (Value::String(s), Origin::Query) if s == "true" || s == "false" => Ok(Some(s == "true")),
            _ => Err(invalid.into()),
        }
    }
}

/// The schema without `null`: out of its `type` list and `enum`, or out of
/// its `anyOf` (a single branch left takes the place of the `anyOf`).
pub fn without_null(map: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if let [only] = branches.as_slice() {
            let Value::Object(only) = only.clone() else { return };
            map.remove("anyOf");
            for (key, value) in only {
                map.entry(key).or_insert(value);
            }
        }
    }
}

/// An integer from `MIN` to `MAX`; `47.0` is one, as JSON Schema's
/// `integer` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bounded<const MIN: i64, const MAX: i64>(i64);

impl<const MIN: i64, const MAX: i64> Bounded<MIN, MAX> {
    pub fn get(self) -> i64 {
        self.0
    }

    /// The same number under bounds that hold these (checked at compile time).
    pub fn widen<const LO: i64, const HI: i64>(self) -> Bounded<LO, HI> {
        const { assert!(LO <= MIN && MAX <= HI) };
        Bounded(self.0)
    }
}

impl<const MIN: i64, const MAX: i64> Field for Bounded<MIN, MAX> {
    type Problems = Problem;
    fn read(value: &Value, origin: Origin, invalid: Problem) -> Result<Option<Self>, ApiError> {
        let n = match (value, origin) {
            (Value::Null, _) => return Ok(None),
            (Value::Number(n), _) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                    .map(|f| f as i64)
            }),
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

/// An array of `MIN` (none unless given) to `MAX` values; problems
/// `(wrong entry, wrong count)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T, const MAX: usize, const MIN: usize = 0>(pub Vec<T>);

impl<T: Field<Problems = Problem>, const MAX: usize, const MIN: usize> Field for List<T, MAX, MIN> {
    type Problems = (Problem, Problem);
    fn read(value: &Value, origin: Origin, (wrong, count): (Problem, Problem)) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            Value::Array(list) if !(MIN..=MAX).contains(&list.len()) => Err(count.into()),
            Value::Array(list) => list
                .iter()
                .map(|v| T::read(v, origin, wrong)?.ok_or_else(|| wrong.into()))
                .collect::<Result<_, _>>()
                .map(|l| Some(List(l))),
            _ => Err(wrong.into()),
        }
    }
}

impl<T: schemars::JsonSchema, const MAX: usize, const MIN: usize> schemars::JsonSchema for List<T, MAX, MIN> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        match MIN {
            0 => format!("ListOf{}Max{MAX}", T::schema_name()).into(),
            _ => format!("ListOf{}From{MIN}To{MAX}", T::schema_name()).into(),
        }
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema =
            schemars::json_schema!({ "type": "array", "items": generator.subschema_for::<T>(), "maxItems": MAX });
        if MIN > 0 {
            schema.insert("minItems".into(), MIN.into());
        }
        schema
    }
}
