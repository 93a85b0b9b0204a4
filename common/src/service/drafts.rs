//! Drafts (spec 2.5, 4.5): a signed-in operator's unsent messages, at most 50
//! each. Items: `DRAFTS#<uid>/<id>` (ids start with their creation time, so
//! the newest 25 are one backward Query) and `DRAFTS#<uid>/#` holding the
//! count, which a create raises and a delete lowers in the same transaction as
//! the draft, on condition it stays within the cap: concurrent creates cannot
//! pass 50 between them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::send::{self, MAX_TEXT_BYTES};
use super::{Call, keys};
use crate::auth::Caller;
use crate::clock::iso;
use crate::error::{self, ApiError};
use crate::store::{Cond, Query, StoreError, StoreExt, Update, Write, item};
use crate::validate::{Fields, Input};
use crate::values::{MessageId, MessageIds, Recipients, RowId};

pub const MAX_DRAFTS: i64 = 50;
pub const LIST: usize = 25;
pub const MAX_SUBJECT: usize = 998;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub id: String,
    /// At most 5 addresses.
    pub to: Vec<String>,
    pub subject: String,
    /// At most 100KB.
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<String>,
    /// At most 100 Message-IDs.
    pub references: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// The signed-in user whose drafts these are (the access rule admitted only
/// operators' identity tokens).
fn owner(call: &Call<'_>) -> Result<String, ApiError> {
    match call.caller {
        Caller::Identity(user) => Ok(user.uid.clone()),
        _ => Err(error::DRAFTS_SIGNED_IN.into()),
    }
}

fn parse_id(fields: &Fields, name: &str) -> Result<Option<String>, ApiError> {
    Ok(fields
        .value::<RowId>(name, error::INBOX_ID_INVALID)?
        .map(RowId::into_string))
}

// ------------------------------------------------------------------- GET

#[derive(Debug, JsonSchema)]
pub struct DraftQuery {
    /// One draft; omitted: the newest 25.
    #[schemars(with = "Option<RowId>")]
    pub id: Option<String>,
}

impl Input for DraftQuery {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        Ok(DraftQuery {
            id: parse_id(fields, "id")?,
        })
    }
}

/// `{ok, draft}` for one id, `{ok, drafts}` for the list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DraftsOutput {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<Draft>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drafts: Option<Vec<Draft>>,
}

pub async fn get(call: &Call<'_>, input: DraftQuery) -> Result<DraftsOutput, ApiError> {
    let uid = owner(call)?;
    if let Some(id) = input.id {
        let draft: Draft = call
            .ctx
            .store
            .read(&keys::draft(&uid, &id))
            .await?
            .ok_or(error::NOT_FOUND)?;
        return Ok(DraftsOutput {
            ok: true,
            draft: Some(draft),
            drafts: None,
        });
    }
    let query = Query::partition(keys::drafts_of(&uid))
        .between("0", "~")
        .backward()
        .limit(LIST);
    let drafts = call
        .ctx
        .store
        .query(&query)
        .await?
        .items
        .into_iter()
        .map(crate::store::record)
        .collect::<Result<_, _>>()?;
    Ok(DraftsOutput {
        ok: true,
        draft: None,
        drafts: Some(drafts),
    })
}

// ------------------------------------------------------------------ POST

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("anyOf" = [
    {"required": ["to"], "properties": {"to": {"anyOf": [{"type": "string", "pattern": "@"}, {"type": "array", "minItems": 1}]}}},
    {"required": ["subject"], "properties": {"subject": {"type": "string", "pattern": "\\S"}}},
    {"required": ["text"], "properties": {"text": {"type": "string", "pattern": "\\S"}}},
    {"required": ["inReplyTo"], "properties": {"inReplyTo": {"type": "string"}}}
]))]
pub struct DraftInput {
    /// Updates this draft of the caller's; omitted creates one.
    #[schemars(with = "Option<RowId>")]
    pub id: Option<String>,
    /// Addresses, as a string or an array; at most 5.
    #[schemars(with = "Option<Recipients>")]
    pub to: Vec<String>,
    /// One line.
    #[schemars(length(max = 998), regex(pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"))]
    pub subject: Option<String>,
    /// At most 100KB.
    #[schemars(length(max = 102400))]
    pub text: Option<String>,
    #[schemars(with = "Option<MessageId>")]
    pub in_reply_to: Option<String>,
    /// Message-IDs, as a string or an array; at most 100.
    #[schemars(with = "Option<MessageIds>")]
    pub references: Vec<String>,
}

fn optional_text(fields: &Fields, name: &str) -> Result<Option<String>, ApiError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(error::FIELD_TYPE.with(format_args!("{name} must be a string"))),
    }
}

impl Input for DraftInput {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let subject = optional_text(fields, "subject")?;
        if subject
            .as_ref()
            .is_some_and(|s| s.chars().any(|c| c.is_control()) || s.chars().count() > MAX_SUBJECT)
        {
            return Err(error::SUBJECT_INVALID.into());
        }
        let text = optional_text(fields, "text")?;
        if text.as_ref().is_some_and(|t| t.len() > MAX_TEXT_BYTES) {
            return Err(error::TEXT_TOO_LARGE.into());
        }
        let in_reply_to = fields
            .value::<MessageId>("inReplyTo", error::IN_REPLY_TO_INVALID)?
            .map(MessageId::into_string);
        let input = DraftInput {
            id: parse_id(fields, "id")?,
            to: send::parse_recipients(fields.get("to"))?,
            subject,
            text,
            in_reply_to,
            references: send::parse_references(fields)?,
        };
        let blank = |s: &Option<String>| s.as_ref().is_none_or(|s| s.trim().is_empty());
        if input.to.is_empty() && blank(&input.subject) && blank(&input.text) && input.in_reply_to.is_none() {
            return Err(error::DRAFT_EMPTY.into());
        }
        Ok(input)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DraftSaved {
    pub ok: bool,
    pub draft: Draft,
}

/// Creates a draft (within the cap), or replaces the content of one of the
/// caller's drafts.
pub async fn save(call: &Call<'_>, input: DraftInput) -> Result<DraftSaved, ApiError> {
    let uid = owner(call)?;
    let ctx = call.ctx;
    let now = iso(ctx.clock.now());
    let (id, created_at) = match &input.id {
        Some(id) => {
            let existing: Draft = ctx.store.read(&keys::draft(&uid, id)).await?.ok_or(error::NOT_FOUND)?;
            (id.clone(), existing.created_at)
        }
        None => (
            format!(
                "{:013}{}",
                ctx.clock.now().timestamp_millis().max(0),
                hex::encode(rand::random::<[u8; 8]>())
            ),
            now.clone(),
        ),
    };
    let draft = Draft {
        id: id.clone(),
        to: input.to,
        subject: input.subject.unwrap_or_default(),
        text: input.text.unwrap_or_default(),
        in_reply_to: input.in_reply_to,
        references: input.references,
        created_at,
        updated_at: now,
    };
    let key = keys::draft(&uid, &id);
    let result = if input.id.is_some() {
        // Only a draft that still exists is replaced (a delete may have won).
        ctx.store.put(item(&key, &draft), Some(Cond::Exists)).await
    } else {
        let under = Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), MAX_DRAFTS)]);
        ctx.store
            .transact(vec![
                Write::Update {
                    key: keys::drafts_count(&uid),
                    update: Update::new().add("count", 1),
                    cond: Some(under),
                },
                Write::Put {
                    item: item(&key, &draft),
                    cond: Some(Cond::NotExists),
                },
            ])
            .await
    };
    match result {
        Ok(()) => Ok(DraftSaved { ok: true, draft }),
        Err(StoreError::ConditionFailed) if input.id.is_some() => Err(error::NOT_FOUND.into()),
        Err(StoreError::ConditionFailed) => Err(error::DRAFTS_FULL.into()),
        Err(e) => Err(e.into()),
    }
}

// ---------------------------------------------------------------- DELETE

#[derive(Debug, JsonSchema)]
pub struct DraftTarget {
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,128}$"))]
    pub id: String,
}

impl Input for DraftTarget {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        Ok(DraftTarget {
            id: parse_id(fields, "id")?.ok_or(error::ID_REQUIRED)?,
        })
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DraftDeleted {
    pub ok: bool,
    pub id: String,
}

pub async fn delete(call: &Call<'_>, input: DraftTarget) -> Result<DraftDeleted, ApiError> {
    let uid = owner(call)?;
    let writes = vec![
        Write::Delete {
            key: keys::draft(&uid, &input.id),
            cond: Some(Cond::Exists),
        },
        Write::Update {
            key: keys::drafts_count(&uid),
            update: Update::new().add("count", -1),
            cond: None,
        },
    ];
    match call.ctx.store.transact(writes).await {
        Ok(()) => Ok(DraftDeleted { ok: true, id: input.id }),
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}
