//! DynamoDB expressions: conditions, updates and key conditions compiled to
//! placeholders, and items to attribute maps.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::builders::TransactWriteItemBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem};
use serde_json::Value;

use super::backend;
use crate::store::{Cond, Item, Key, PK, Query, SK, SortRange, StoreError, StoreResult, Update, Write};

pub(super) type Attrs = HashMap<String, AttributeValue>;

pub(super) fn to_attrs(item: &Item) -> StoreResult<Attrs> {
    serde_dynamo::to_item(item).map_err(backend)
}

pub(super) fn from_attrs(attrs: Attrs) -> StoreResult<Item> {
    serde_dynamo::from_item(attrs).map_err(backend)
}

pub(super) fn key_attrs(key: &Key) -> Attrs {
    HashMap::from([
        (PK.to_string(), AttributeValue::S(key.pk.clone())),
        (SK.to_string(), AttributeValue::S(key.sk.clone())),
    ])
}

/// Placeholders for one request's expressions. Every attribute name goes through
/// `#n` placeholders so reserved words (`name`, `count`, `ttl`...) need no care.
#[derive(Default)]
pub(super) struct Expr {
    names: HashMap<String, String>,
    values: Attrs,
}

impl Expr {
    pub(super) fn name(&mut self, attr: &str) -> String {
        if let Some((placeholder, _)) = self.names.iter().find(|(_, a)| a.as_str() == attr) {
            return placeholder.clone();
        }
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attr.to_string());
        placeholder
    }

    pub(super) fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn json(&mut self, value: &Value) -> StoreResult<String> {
        Ok(self.value(serde_dynamo::to_attribute_value(value).map_err(backend)?))
    }

    fn number(&mut self, n: i64) -> String {
        self.value(AttributeValue::N(n.to_string()))
    }

    pub(super) fn cond(&mut self, cond: &Cond) -> StoreResult<String> {
        let compare = |e: &mut Self, attr: &str, op: &str, n: i64| format!("{} {op} {}", e.name(attr), e.number(n));
        Ok(match cond {
            Cond::Exists => format!("attribute_exists({})", self.name(PK)),
            Cond::NotExists => format!("attribute_not_exists({})", self.name(PK)),
            Cond::Missing(a) => format!("attribute_not_exists({})", self.name(a)),
            Cond::Eq(a, v) => format!("{} = {}", self.name(a), self.json(v)?),
            Cond::Ne(a, v) => format!("{} <> {}", self.name(a), self.json(v)?),
            Cond::Lt(a, n) => compare(self, a, "<", *n),
            Cond::Le(a, n) => compare(self, a, "<=", *n),
            Cond::Ge(a, n) => compare(self, a, ">=", *n),
            Cond::TextAtMost(a, t) => format!("{} <= {}", self.name(a), self.value(AttributeValue::S(t.clone()))),
            // Expressions have no literal true or false; these always hold or fail.
            Cond::And(all) if all.is_empty() => {
                let pk = self.name(PK);
                format!("(attribute_exists({pk}) OR attribute_not_exists({pk}))")
            }
            Cond::Or(any) if any.is_empty() => {
                let pk = self.name(PK);
                format!("(attribute_exists({pk}) AND attribute_not_exists({pk}))")
            }
            Cond::And(all) => self.join(all, " AND ")?,
            Cond::Or(any) => self.join(any, " OR ")?,
        })
    }

    fn join(&mut self, conds: &[Cond], op: &str) -> StoreResult<String> {
        let parts = conds.iter().map(|c| self.cond(c)).collect::<StoreResult<Vec<_>>>()?;
        Ok(format!("({})", parts.join(op)))
    }

    /// The UpdateExpression for `update`, or None when it changes nothing.
    ///
    /// DynamoDB refuses an expression that touches one attribute twice, while
    /// `Update::apply` (the reference) sets, then removes, then adds. So each
    /// attribute's final effect is worked out here and written once.
    pub(super) fn update(&mut self, key: &Key, update: &Update) -> StoreResult<Option<String>> {
        let mut adds: Vec<(&str, i64)> = Vec::new();
        for (attr, by) in &update.add {
            match adds.iter_mut().find(|(a, _)| a == attr) {
                Some((_, total)) => *total += by,
                None => adds.push((attr, *by)),
            }
        }
        let added = |attr: &str| adds.iter().any(|(a, _)| *a == attr);
        let removed = |attr: &str| update.remove.iter().any(|a| a == attr);

        let mut set = Vec::new();
        let mut remove = Vec::new();
        for (attr, value) in &update.set {
            // The key is written by UpdateItem itself and may not appear in SET;
            // restating it is harmless, so drop it rather than fail.
            let restates_key = (attr == PK && value.as_str() == Some(key.pk.as_str()))
                || (attr == SK && value.as_str() == Some(key.sk.as_str()));
            if restates_key || removed(attr) || added(attr) {
                continue;
            }
            set.push(format!("{} = {}", self.name(attr), self.json(value)?));
        }
        for attr in &update.remove {
            let name = self.name(attr);
            if !added(attr) && !remove.contains(&name) {
                remove.push(name);
            }
        }
        for &(attr, by) in &adds {
            let name = self.name(attr);
            let base = if removed(attr) {
                Some(0)
            } else {
                update.set.get(attr).map(|v| v.as_i64().unwrap_or(0))
            };
            set.push(match base {
                Some(base) => format!("{name} = {}", self.number(base + by)),
                None => {
                    let zero = self.number(0);
                    format!("{name} = if_not_exists({name}, {zero}) + {}", self.number(by))
                }
            });
        }

        let mut clauses = Vec::new();
        if !set.is_empty() {
            clauses.push(format!("SET {}", set.join(", ")));
        }
        if !remove.is_empty() {
            clauses.push(format!("REMOVE {}", remove.join(", ")));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" ")))
    }

    /// DynamoDB rejects empty placeholder maps, so absent ones are None.
    pub(super) fn into_maps(self) -> (Option<HashMap<String, String>>, Option<Attrs>) {
        (
            (!self.names.is_empty()).then_some(self.names),
            (!self.values.is_empty()).then_some(self.values),
        )
    }
}

/// A query's key condition: its partition, and the range of sort keys.
pub(super) fn key_condition(query: &Query, expr: &mut Expr) -> String {
    let mut condition = format!(
        "{} = {}",
        expr.name(PK),
        expr.value(AttributeValue::S(query.pk.clone()))
    );
    match &query.range {
        SortRange::All => {}
        SortRange::Prefix(prefix) => {
            let sk = expr.name(SK);
            let prefix = expr.value(AttributeValue::S(prefix.clone()));
            condition += &format!(" AND begins_with({sk}, {prefix})");
        }
        SortRange::Between(from, to) => {
            let sk = expr.name(SK);
            let from = expr.value(AttributeValue::S(from.clone()));
            let to = expr.value(AttributeValue::S(to.clone()));
            condition += &format!(" AND {sk} BETWEEN {from} AND {to}");
        }
    }
    condition
}

/// One write of a transaction, its expressions compiled.
pub(super) fn transact_item(table: &str, write: &Write) -> StoreResult<TransactWriteItem> {
    let mut expr = Expr::default();
    let item = match write {
        Write::Put { item, cond } => {
            let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
            let (names, values) = expr.into_maps();
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(to_attrs(item)?))
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(backend)?;
            TransactWriteItem::builder().put(put)
        }
        Write::Update { key, update, cond } => transact_update(table, key, update, cond.as_ref(), expr)?,
        Write::Delete { key, cond } => {
            let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
            let (names, values) = expr.into_maps();
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(key_attrs(key)))
                .set_condition_expression(condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(backend)?;
            TransactWriteItem::builder().delete(delete)
        }
        Write::Check { key, cond } => {
            let condition = expr.cond(cond)?;
            let (names, values) = expr.into_maps();
            let check = ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(key_attrs(key)))
                .condition_expression(condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(values)
                .build()
                .map_err(backend)?;
            TransactWriteItem::builder().condition_check(check)
        }
    };
    Ok(item.build())
}

pub(super) fn transact_update(
    table: &str,
    key: &Key,
    update: &Update,
    cond: Option<&Cond>,
    mut expr: Expr,
) -> StoreResult<TransactWriteItemBuilder> {
    // Unlike UpdateItem, a transaction's Update requires an expression.
    let Some(update_expression) = expr.update(key, update)? else {
        return Err(StoreError::Backend("a transaction update that changes nothing".into()));
    };
    let condition = cond.map(|c| expr.cond(c)).transpose()?;
    let (names, values) = expr.into_maps();
    let update = aws_sdk_dynamodb::types::Update::builder()
        .table_name(table)
        .set_key(Some(key_attrs(key)))
        .update_expression(update_expression)
        .set_condition_expression(condition)
        .set_expression_attribute_names(names)
        .set_expression_attribute_values(values)
        .build()
        .map_err(backend)?;
    Ok(TransactWriteItem::builder().update(update))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Item {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn integers_survive_the_attribute_value_round_trip() {
        let item = obj(
            json!({"pk": "p", "sk": "s", "n": 1, "neg": -7, "big": i64::MAX, "f": 1.5, "l": ["x", 2], "m": {"k": 3}}),
        );
        let back = from_attrs(to_attrs(&item).unwrap()).unwrap();
        assert_eq!(back, item);
        assert!(back["n"].is_i64());
    }

    #[test]
    fn conditions_compile_to_placeholders() {
        let mut expr = Expr::default();
        let cond = Cond::And(vec![
            Cond::eq("name", "x"),
            Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), 5)]),
            Cond::Exists,
        ]);
        assert_eq!(
            expr.cond(&cond).unwrap(),
            "(#n0 = :v0 AND (attribute_not_exists(#n1) OR #n1 < :v1) AND attribute_exists(#n2))"
        );
        assert_eq!(expr.names["#n2"], PK);
        assert_eq!(expr.values[":v1"], AttributeValue::N("5".into()));
    }

    #[test]
    fn updates_touch_each_attribute_once() {
        let key = Key::new("p", "s");
        let mut expr = Expr::default();
        let update = Update::new()
            .set("pk", "p")
            .set("a", 1)
            .set("b", 2)
            .remove("b")
            .add("n", 1)
            .add("n", 2)
            .add("a", 4);
        assert_eq!(
            expr.update(&key, &update).unwrap().unwrap(),
            "SET #n1 = if_not_exists(#n1, :v0) + :v1, #n2 = :v2 REMOVE #n0"
        );
        assert_eq!((expr.names["#n1"].as_str(), expr.names["#n2"].as_str()), ("n", "a"));
        assert_eq!(expr.values[":v1"], AttributeValue::N("3".into()));
        assert_eq!(expr.values[":v2"], AttributeValue::N("5".into()));
        assert_eq!(
            Expr::default().update(&key, &Update::new().set("sk", "s")).unwrap(),
            None
        );
    }
}
