//! An owner's report: this received message is spam, or it is not. The
//! message moves (into the spam folder, or back into the inbox, unread),
//! the move queues what rspamd learns from it ([`super::training`]) in its
//! own transaction, and the report is written to the audit log.

use serde_json::{Map, Value, json};

use super::training::{self, Learn};
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::service::mail_store::{self, Moved, Quarantine, Row};

/// What a report did.
#[derive(Debug)]
pub struct Reported {
    /// The message as it now is: in the spam folder (`quarantine {reason:
    /// spam}`), or back in the inbox, unread, on its thread.
    pub row: Row,
    /// False when it was where the report puts it already (nothing changed,
    /// nothing is taught).
    pub moved: bool,
    /// The mail host's rspamd will learn from it (a move of a message whose
    /// received file the spool still keeps).
    pub learning: bool,
}

/// The operation a report is written to the audit log as, whichever door
/// it came through (POST /inbox with `spam`, or the tool `mark_spam`): the
/// inbox's read-level operations write no audit row of their own.
pub const AUDITED_AS: &str = "markSpam";

/// Reports `row` (found in `scope`, readable by the caller) as spam or not.
pub async fn apply(call: &Call<'_>, scope: &str, row: Row, spam: bool) -> Result<Reported, ApiError> {
    if row.outbound() {
        return Err(error::SPAM_OUTBOUND.into());
    }
    if row.quarantine.as_ref().is_some_and(|q| q.reason != Quarantine::Spam) {
        return Err(error::SPAM_QUARANTINED.into());
    }
    let learn = if spam { Learn::Spam } else { Learn::Ham };
    let job: Vec<_> = training::job(call.ctx, &row, learn).into_iter().collect();
    let moved = match spam {
        true => mail_store::to_spam(call.ctx, scope, row, &job).await?,
        false => mail_store::to_inbox(call.ctx, scope, row, &job).await?,
    };
    let (row, moved) = match moved {
        Moved::Done(row) => (row, true),
        Moved::Already(row) => (row, false),
    };
    let learning = moved && !job.is_empty();
    note(call, &row, spam, moved, learning).await;
    Ok(Reported { row, moved, learning })
}

/// The audit row: which message, which way, and what it changed.
async fn note(call: &Call<'_>, row: &Row, spam: bool, moved: bool, learning: bool) {
    let mut target = Map::new();
    target.insert("id".into(), Value::String(row.id.clone()));
    target.insert("messageId".into(), Value::String(row.message_id.clone()));
    target.insert("mailbox".into(), Value::String(row.mailbox.clone()));
    target.insert("spam".into(), Value::Bool(spam));
    call.touched(json!({"moved": moved, "learning": learning}));
    crate::service::guardrails::audit::note(call, AUDITED_AS, target, Ok(())).await;
}
