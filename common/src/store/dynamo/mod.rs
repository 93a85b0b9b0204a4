//! The DynamoDB backend: one table keyed by `pk` (hash) and `sk` (range).
//!
//! Conditions and updates compile to DynamoDB expressions, so DynamoDB itself
//! evaluates them atomically with the write; nothing here reads before writing.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, KeysAndAttributes, ReturnValue,
    ScalarAttributeType, TimeToLiveSpecification,
};

mod expr;
mod retry;

use expr::{Attrs, Expr, from_attrs, key_attrs, key_condition, to_attrs, transact_item};
use retry::{ATTEMPTS, backoff, failure, retrying, transact_failure};

use super::{Cond, Item, Key, PK, Page, Query, SK, Store, StoreError, StoreResult, TTL, Update, Write};

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
                    return Err(StoreError::Unavailable("BatchGetItem left keys unprocessed".into()));
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
            .map(|w| transact_item(&self.table, w))
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
