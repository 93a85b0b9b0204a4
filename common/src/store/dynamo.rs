//! The DynamoDB backend: one table keyed by `pk` (hash) and `sk` (range).
//!
//! Conditions and updates compile to DynamoDB expressions, so DynamoDB itself
//! evaluates them atomically with the write; nothing here reads before writing.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, KeySchemaElement, KeyType,
    KeysAndAttributes, Put, ReturnValue, ScalarAttributeType, TimeToLiveSpecification, TransactWriteItem,
};
use serde_json::Value;

use super::{Cond, Item, Key, PK, Page, Query, SK, SortRange, Store, StoreError, StoreResult, TTL, Update, Write};

type Attrs = HashMap<String, AttributeValue>;

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// A client configured from the environment (AWS_ENDPOINT_URL points it at
    /// DynamoDB Local).
    pub async fn from_env(table: &str) -> Self {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await;
        Self::new(Client::new(&config), table)
    }

    /// Creates the table when it is missing and waits until it is ACTIVE. For local
    /// mode and tests; production tables come from template.yaml.
    pub async fn ensure_table(&self) -> StoreResult<()> {
        let described = self.client.describe_table().table_name(&self.table).send().await;
        let created = match described {
            Ok(_) => false,
            Err(e) if e.code() == Some("ResourceNotFoundException") => self.create_table().await?,
            Err(e) => return Err(backend_sdk(&e)),
        };
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(Duration::from_secs(120))
            .await
            .map_err(|e| backend_sdk(&e))?;
        // TTL can only be switched on once the table is ACTIVE.
        if created {
            let ttl = TimeToLiveSpecification::builder()
                .attribute_name(TTL)
                .enabled(true)
                .build();
            self.client
                .update_time_to_live()
                .table_name(&self.table)
                .time_to_live_specification(ttl.map_err(backend)?)
                .send()
                .await
                .map_err(|e| backend_sdk(&e))?;
        }
        Ok(())
    }

    /// Returns false when someone else created the table first.
    async fn create_table(&self) -> StoreResult<bool> {
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
        };
        let key = |name: &str, kind: KeyType| KeySchemaElement::builder().attribute_name(name).key_type(kind).build();
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .attribute_definitions(attr(PK).map_err(backend)?)
            .attribute_definitions(attr(SK).map_err(backend)?)
            .key_schema(key(PK, KeyType::Hash).map_err(backend)?)
            .key_schema(key(SK, KeyType::Range).map_err(backend)?)
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await;
        match created {
            Ok(_) => Ok(true),
            Err(e) if e.code() == Some("ResourceInUseException") => Ok(false),
            Err(e) => Err(backend_sdk(&e)),
        }
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// The SDK's plain Display says only "service error"; the context carries the
/// code and message worth logging.
fn backend_sdk(e: &(impl std::error::Error + 'static)) -> StoreError {
    let text = DisplayErrorContext(e).to_string();
    if text.contains("ValidationException") {
        StoreError::Invalid(text)
    } else {
        StoreError::Backend(text)
    }
}

fn to_attrs(item: &Item) -> StoreResult<Attrs> {
    serde_dynamo::to_item(item).map_err(backend)
}

fn from_attrs(attrs: Attrs) -> StoreResult<Item> {
    serde_dynamo::from_item(attrs).map_err(backend)
}

fn key_attrs(key: &Key) -> Attrs {
    HashMap::from([
        (PK.to_string(), AttributeValue::S(key.pk.clone())),
        (SK.to_string(), AttributeValue::S(key.sk.clone())),
    ])
}

/// Placeholders for one request's expressions. Every attribute name goes through
/// `#n` placeholders so reserved words (`name`, `count`, `ttl`...) need no care.
#[derive(Default)]
struct Expr {
    names: HashMap<String, String>,
    values: Attrs,
}

impl Expr {
    fn name(&mut self, attr: &str) -> String {
        if let Some((placeholder, _)) = self.names.iter().find(|(_, a)| a.as_str() == attr) {
            return placeholder.clone();
        }
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attr.to_string());
        placeholder
    }

    fn value(&mut self, value: AttributeValue) -> String {
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

    fn cond(&mut self, cond: &Cond) -> StoreResult<String> {
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
    fn update(&mut self, key: &Key, update: &Update) -> StoreResult<Option<String>> {
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
    fn into_maps(self) -> (Option<HashMap<String, String>>, Option<Attrs>) {
        (
            (!self.names.is_empty()).then_some(self.names),
            (!self.values.is_empty()).then_some(self.values),
        )
    }
}

/// Why an attempt failed: a conflict with a concurrent transaction is worth
/// another try, anything else is the answer.
enum Failure {
    Conflict(String),
    Final(StoreError),
}

fn failure<E>(err: SdkError<E>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match err.code() {
        Some("ConditionalCheckFailedException") => Failure::Final(StoreError::ConditionFailed),
        // A single-item write on an item inside an ongoing transaction is refused
        // with this, and the SDK does not retry it.
        Some("TransactionConflictException") => Failure::Conflict(DisplayErrorContext(&err).to_string()),
        _ => Failure::Final(backend_sdk(&err)),
    }
}

fn transact_failure(err: SdkError<TransactWriteItemsError>) -> Failure {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = err.as_service_error() {
        let codes: Vec<&str> = cancelled
            .cancellation_reasons()
            .iter()
            .filter_map(|r| r.code())
            .collect();
        // A false condition decides the outcome even when another write conflicted.
        if codes.contains(&"ConditionalCheckFailed") {
            return Failure::Final(StoreError::ConditionFailed);
        }
        if codes.contains(&"TransactionConflict") {
            return Failure::Conflict(DisplayErrorContext(&err).to_string());
        }
    }
    failure(err)
}

const ATTEMPTS: u32 = 6;

/// 10-20ms after the first try, doubling up to 160-320ms.
fn backoff(tries: u32) -> Duration {
    let ceiling = 10u64 << tries.min(5);
    Duration::from_millis(rand::random_range(ceiling / 2..=ceiling))
}

/// Runs `attempt` again while it fails on a conflict, with jittered exponential
/// backoff so racing writers spread out instead of colliding again.
async fn retrying<T, F, Fut>(mut attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Ok(out) => return Ok(out),
            Err(Failure::Final(e)) => return Err(e),
            Err(Failure::Conflict(message)) if tries >= ATTEMPTS => {
                return Err(StoreError::Backend(message));
            }
            Err(Failure::Conflict(_)) => {
                tokio::time::sleep(backoff(tries)).await;
                tries += 1;
            }
        }
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        let got = retrying(|| async {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(key)))
                .consistent_read(true)
                .send()
                .await
                .map_err(failure)
        })
        .await?;
        got.item.map(from_attrs).transpose()
    }

    async fn get_many(&self, keys: &[Key]) -> StoreResult<Vec<Option<Item>>> {
        super::limits::batch_get(keys)?;
        let mut found: HashMap<(String, String), Item> = HashMap::new();
        let mut pending: Vec<Attrs> = keys.iter().map(key_attrs).collect();
        let mut tries = 1;
        // BatchGetItem may hand back some keys unprocessed (throttling):
        // those are asked again, with the same backoff as a conflict.
        while !pending.is_empty() {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(pending.clone()))
                .consistent_read(true)
                .build()
                .map_err(backend)?;
            let out = retrying(|| async {
                self.client
                    .batch_get_item()
                    .request_items(&self.table, request.clone())
                    .send()
                    .await
                    .map_err(failure)
            })
            .await?;
            for attrs in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                let item = from_attrs(attrs)?;
                if let Some(key) = super::key_of(&item) {
                    found.insert((key.pk, key.sk), item);
                }
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
            if !pending.is_empty() {
                if tries >= ATTEMPTS {
                    return Err(StoreError::Backend("BatchGetItem left keys unprocessed".into()));
                }
                tokio::time::sleep(backoff(tries)).await;
                tries += 1;
            }
        }
        Ok(keys
            .iter()
            .map(|k| found.remove(&(k.pk.clone(), k.sk.clone())))
            .collect())
    }

    async fn put(&self, item: Item, cond: Option<Cond>) -> StoreResult<()> {
        let attrs = to_attrs(&item)?;
        let mut expr = Expr::default();
        let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
        let (names, values) = expr.into_maps();
        retrying(|| async {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(attrs.clone()))
                .set_condition_expression(condition.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(values.clone())
                .send()
                .await
                .map_err(failure)
        })
        .await?;
        Ok(())
    }

    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item> {
        let mut expr = Expr::default();
        let update_expression = expr.update(key, &update)?;
        let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
        let (names, values) = expr.into_maps();
        let out = retrying(|| async {
            self.client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(key)))
                .set_update_expression(update_expression.clone())
                .set_condition_expression(condition.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(values.clone())
                .return_values(ReturnValue::AllNew)
                .send()
                .await
                .map_err(failure)
        })
        .await?;
        // An update that changes nothing still creates the key-only item.
        from_attrs(out.attributes.unwrap_or_else(|| key_attrs(key)))
    }

    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>> {
        let mut expr = Expr::default();
        let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
        let (names, values) = expr.into_maps();
        let out = retrying(|| async {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(key)))
                .set_condition_expression(condition.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(values.clone())
                .return_values(ReturnValue::AllOld)
                .send()
                .await
                .map_err(failure)
        })
        .await?;
        out.attributes.map(from_attrs).transpose()
    }

    async fn query(&self, query: &Query) -> StoreResult<Page> {
        // DynamoDB's Limit must be at least 1; a zero limit asks for nothing.
        if query.limit == 0 {
            return Ok(Page::default());
        }
        let mut expr = Expr::default();
        let key_condition = key_condition(query, &mut expr);
        let (names, values) = expr.into_maps();
        let start = query.after.as_ref().map(|sk| key_attrs(&Key::new(&query.pk, sk)));
        let out = retrying(|| async {
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&key_condition)
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(values.clone())
                .scan_index_forward(query.forward)
                .limit(i32::try_from(query.limit).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.clone())
                .consistent_read(true)
                .send()
                .await
                .map_err(failure)
        })
        .await?;
        // The token is just the last sort key: the partition is already in the
        // query, and a plain string is what `Query::after` carries.
        let next = match out.last_evaluated_key() {
            Some(last) => match last.get(SK) {
                Some(AttributeValue::S(sk)) => Some(sk.clone()),
                _ => {
                    return Err(StoreError::Backend("LastEvaluatedKey without a string sort key".into()));
                }
            },
            None => None,
        };
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_attrs)
            .collect::<StoreResult<_>>()?;
        Ok(Page { items, next })
    }

    async fn transact(&self, writes: Vec<Write>) -> StoreResult<()> {
        // TransactWriteItems needs at least one write; none is trivially applied.
        if writes.is_empty() {
            return Ok(());
        }
        let items = writes
            .iter()
            .map(|w| self.transact_item(w))
            .collect::<StoreResult<Vec<_>>>()?;
        // Each attempt builds a new request and so gets its own idempotency token
        // from the SDK: a retry is a new transaction, not a repeat of the cancelled one.
        retrying(|| async {
            self.client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await
                .map_err(transact_failure)
        })
        .await?;
        Ok(())
    }
}

/// A query's key condition: its partition, and the range of sort keys.
fn key_condition(query: &Query, expr: &mut Expr) -> String {
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

impl DynamoStore {
    fn transact_item(&self, write: &Write) -> StoreResult<TransactWriteItem> {
        let mut expr = Expr::default();
        let item = match write {
            Write::Put { item, cond } => {
                let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
                let (names, values) = expr.into_maps();
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(to_attrs(item)?))
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(backend)?;
                TransactWriteItem::builder().put(put)
            }
            Write::Update { key, update, cond } => {
                // Unlike UpdateItem, a transaction's Update requires an expression.
                let Some(update_expression) = expr.update(key, update)? else {
                    return Err(StoreError::Backend("a transaction update that changes nothing".into()));
                };
                let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
                let (names, values) = expr.into_maps();
                let update = aws_sdk_dynamodb::types::Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(key)))
                    .update_expression(update_expression)
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .build()
                    .map_err(backend)?;
                TransactWriteItem::builder().update(update)
            }
            Write::Delete { key, cond } => {
                let condition = cond.as_ref().map(|c| expr.cond(c)).transpose()?;
                let (names, values) = expr.into_maps();
                let delete = Delete::builder()
                    .table_name(&self.table)
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
                    .table_name(&self.table)
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

    #[tokio::test]
    async fn conflicts_are_retried_until_an_answer_or_the_last_attempt() {
        let mut tries = 0;
        let answer: StoreResult<()> = retrying(|| {
            tries += 1;
            let outcome = if tries < 3 {
                Failure::Conflict("busy".into())
            } else {
                Failure::Final(StoreError::ConditionFailed)
            };
            async move { Err(outcome) }
        })
        .await;
        assert!(matches!(answer, Err(StoreError::ConditionFailed)));
        assert_eq!(tries, 3);

        tries = 0;
        let gave_up: StoreResult<()> = retrying(|| {
            tries += 1;
            async { Err(Failure::Conflict("busy".into())) }
        })
        .await;
        assert!(matches!(gave_up, Err(StoreError::Backend(m)) if m == "busy"));
        assert_eq!(tries, ATTEMPTS);
    }
}
