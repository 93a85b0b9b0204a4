//! Drafts (spec 2.5, 4.5): a signed-in operator's unsent messages, at most 50
//! each. Items: `DRAFTS#<uid>/<id>` (ids start with their creation time, so
//! the newest 25 are one backward Query) and `DRAFTS#<uid>/#` holding the
//! count, which a create raises and a delete lowers in the same transaction as
//! the draft, on condition it stays within the cap: concurrent creates cannot
//! pass 50 between them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::clock::iso;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::people::Person;
use crate::service::caller::Call;
use crate::service::sending::send::Addressees;
use crate::store::{Cond, Query, StoreError, StoreExt, Update, Write, item};
use crate::validate::Fields;
use crate::values::{Copies, DraftSubject, DraftText, EmailAddress, MessageId, MessageIds, Recipients, RowId};

pub const MAX_DRAFTS: i64 = 50;
pub const LIST: usize = 25;

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
    /// Beside the spec's fields, each only when the draft has it: the copies
    /// and the address to send from, as sendMail takes them (to, cc and bcc
    /// at most 5 distinct addresses together).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bcc: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
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

// ------------------------------------------------------------------- GET

crate::input! {
    pub struct DraftQuery {
        /// One draft; omitted: the newest 25.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
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

crate::input! {
    #[schemars(extend("anyOf" = [
        {"required": ["to"], "properties": {"to": {"anyOf": [{"type": "string", "pattern": "@"}, {"type": "array", "minItems": 1}]}}},
        {"required": ["subject"], "properties": {"subject": {"type": "string", "pattern": "\\S"}}},
        {"required": ["text"], "properties": {"text": {"type": "string", "pattern": "\\S"}}},
        {"required": ["inReplyTo"], "properties": {"inReplyTo": {"type": "string"}}}
    ]))]
    pub struct DraftInput {
        /// One line.
        pub subject: Option<DraftSubject> = (),
        /// At most 100KB.
        pub text: Option<DraftText> = (),
        pub in_reply_to: Option<MessageId> = error::IN_REPLY_TO_INVALID,
        /// Updates this draft of the caller's; omitted creates one.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// Addresses, as a string or an array; at most 5.
        pub to: Option<Recipients> = (),
        /// Message-IDs, as a string or an array; at most 100.
        pub references: Option<MessageIds> = (),
        /// Cc, as sendMail takes it; to, cc and bcc hold at most 5 distinct
        /// addresses together.
        pub cc: Option<Copies> = (error::CC_TYPE, error::CC_ITEMS),
        /// Bcc, as sendMail takes it.
        pub bcc: Option<Copies> = (error::BCC_TYPE, error::BCC_ITEMS),
        /// The address to send from, as sendMail takes it (checked when sent).
        pub from: Option<EmailAddress> = error::FROM_INVALID,
    }
    check DraftInput::not_empty;
}

impl DraftInput {
    fn not_empty(self, _: &Fields) -> Result<Self, ApiError> {
        let blank = |t: Option<&DraftText>| t.is_none_or(DraftText::is_blank);
        let no_one = self.to.as_ref().is_none_or(|to| to.0.is_empty());
        if no_one
            && blank(self.subject.as_ref().map(|s| &s.0))
            && blank(self.text.as_ref())
            && self.in_reply_to.is_none()
        {
            return Err(error::DRAFT_EMPTY.into());
        }
        // Counted as a send counts them (each distinct address once).
        let list = |l: Option<&Vec<String>>| l.cloned().unwrap_or_default();
        let bare = |l: Vec<String>| l.into_iter().map(Person::bare).collect();
        Addressees::new(
            bare(list(self.to.as_ref().map(|r| &r.0))),
            bare(list(self.cc.as_ref().map(|c| &c.0))),
            list(self.bcc.as_ref().map(|c| &c.0)),
        )?;
        Ok(self)
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
            (id.to_string(), existing.created_at)
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
        to: input.to.unwrap_or_default().0,
        subject: input.subject.unwrap_or_default().0.0,
        text: input.text.unwrap_or_default().0,
        in_reply_to: input.in_reply_to.map(MessageId::into_string),
        references: input.references.unwrap_or_default().0,
        cc: input.cc.unwrap_or_default().0,
        bcc: input.bcc.unwrap_or_default().0,
        from: input.from.map(|a| a.to_string()),
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

crate::input! {
    pub struct DraftTarget {
        pub id: RowId = (error::ID_REQUIRED, error::INBOX_ID_INVALID),
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
        Ok(()) => Ok(DraftDeleted {
            ok: true,
            id: input.id.into_string(),
        }),
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}
