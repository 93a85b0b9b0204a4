//! Conditions and updates, and how a backend without expressions evaluates them.

use serde_json::Value;

use super::{Item, Key, PK, SK};

/// A condition on the item a write targets.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// The item exists.
    Exists,
    /// The item does not exist.
    NotExists,
    /// The attribute is absent (or the item is).
    Missing(String),
    Eq(String, Value),
    Ne(String, Value),
    /// Numeric comparisons; false when the attribute is absent or not a number.
    Lt(String, i64),
    Le(String, i64),
    Ge(String, i64),
    /// A string attribute that sorts at or before the value, byte by byte
    /// (ISO times written alike compare as times); false when the attribute
    /// is absent or not a string.
    TextAtMost(String, String),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

impl Cond {
    pub fn ne(attr: &str, value: impl Into<Value>) -> Self {
        Cond::Ne(attr.into(), value.into())
    }
    pub fn eq(attr: &str, value: impl Into<Value>) -> Self {
        Cond::Eq(attr.into(), value.into())
    }
    pub fn missing(attr: &str) -> Self {
        Cond::Missing(attr.into())
    }

    /// Evaluates the condition against the item as it is now.
    pub fn holds(&self, item: Option<&Item>) -> bool {
        let attr = |name: &str| item.and_then(|i| i.get(name));
        let num = |name: &str| attr(name).and_then(Value::as_i64);
        match self {
            Cond::Exists => item.is_some(),
            Cond::NotExists => item.is_none(),
            Cond::Missing(a) => attr(a).is_none(),
            Cond::Eq(a, v) => attr(a) == Some(v),
            // DynamoDB's `<>` is true for an absent attribute.
            Cond::Ne(a, v) => attr(a) != Some(v),
            Cond::Lt(a, n) => num(a).is_some_and(|x| x < *n),
            Cond::Le(a, n) => num(a).is_some_and(|x| x <= *n),
            Cond::Ge(a, n) => num(a).is_some_and(|x| x >= *n),
            Cond::TextAtMost(a, t) => attr(a).and_then(Value::as_str).is_some_and(|x| x <= t.as_str()),
            Cond::And(all) => all.iter().all(|c| c.holds(item)),
            Cond::Or(any) => any.iter().any(|c| c.holds(item)),
        }
    }
}

/// An UpdateItem: set attributes, remove attributes, add to numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    pub set: Item,
    pub remove: Vec<String>,
    pub add: Vec<(String, i64)>,
}

impl Update {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn set(mut self, attr: &str, value: impl Into<Value>) -> Self {
        self.set.insert(attr.into(), value.into());
        self
    }
    pub fn remove(mut self, attr: &str) -> Self {
        self.remove.push(attr.into());
        self
    }
    pub fn add(mut self, attr: &str, by: i64) -> Self {
        self.add.push((attr.into(), by));
        self
    }

    /// Applies the update to the item (or a new one) the way UpdateItem does.
    pub fn apply(&self, key: &Key, current: Option<Item>) -> Item {
        let mut item = current.unwrap_or_default();
        item.insert(PK.into(), Value::String(key.pk.clone()));
        item.insert(SK.into(), Value::String(key.sk.clone()));
        for (k, v) in &self.set {
            item.insert(k.clone(), v.clone());
        }
        for k in &self.remove {
            item.remove(k);
        }
        for (k, by) in &self.add {
            let now = item.get(k).and_then(Value::as_i64).unwrap_or(0);
            item.insert(k.clone(), Value::from(now + by));
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(v: Value) -> Item {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn numeric_conditions_are_false_on_a_missing_attribute() {
        let i = item(json!({"a": 1}));
        assert!(Cond::Lt("a".into(), 2).holds(Some(&i)));
        assert!(!Cond::Lt("b".into(), 2).holds(Some(&i)));
        assert!(Cond::Or(vec![Cond::missing("b"), Cond::Lt("b".into(), 2)]).holds(Some(&i)));
        assert!(Cond::Ne("b".into(), json!(1)).holds(Some(&i)));
        assert!(!Cond::Exists.holds(None));
    }

    #[test]
    fn update_adds_to_a_missing_number_from_zero() {
        let key = Key::new("p", "s");
        let out = Update::new().add("n", 3).set("x", "y").apply(&key, None);
        assert_eq!(out.get("n"), Some(&json!(3)));
        assert_eq!(out.get("pk"), Some(&json!("p")));
    }
}
