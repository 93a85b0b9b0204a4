//! What owners' spam reports teach rspamd on the mail host.
//!
//! The service runs in Lambda (or locally) and rspamd's controller listens
//! on the mail host's loopback, so the mail host fetches the lessons, as it
//! fetches the mailbox export: a report that moves a message queues a job
//! in the move's own transaction (`SPAMLEARN/<ms>-<row id>`); `mailhost
//! mta-sync` reads the oldest jobs with the sync token (GET
//! /mtaSpamTraining, each with the received message), posts each to its
//! controller's /learnspam or /learnham for that account's classifier
//! (`Deliver-To: <the mailbox's domain>`, mail-host/rspamd) and acknowledges
//! them (POST /mtaSpamTraining), which deletes them. A job whose received
//! file is gone (the spool keeps it 30 days) is handed out without it, to be
//! acknowledged untaught; a job never fetched goes after 30 days.

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{self, ApiError};
use crate::mail::inbound::Envelope;
use crate::service::caller::Call;
use crate::service::mail_store::Row;
use crate::store::{Key, Query, StoreExt, TTL, Write, item};
use crate::validate::NoInput;
use crate::values::{List, RowId};

/// The partition of the jobs waiting for the mail host, oldest first.
pub const PARTITION: &str = "SPAMLEARN";
/// How long a job waits for the mail host (its message is kept as long).
pub const KEPT_DAYS: i64 = 30;
/// Jobs handed out at most per page.
pub const PAGE: usize = 10;
/// The most of one message handed out (Bayes reads the headers and the
/// text; a longer message is cut, and says so).
pub const MESSAGE_CAP: usize = 2 * 1024 * 1024;
/// Message bytes per page at most (at least one job): a page stays under
/// Lambda's 6 MB response once in base64.
pub const PAGE_BYTES: usize = 3 * 1024 * 1024;

/// Which class a report teaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Learn {
    Spam,
    Ham,
}

/// One lesson waiting for the mail host.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub id: String,
    pub learn: Learn,
    /// The classifier's user: the mailbox's domain (an account's one domain).
    pub user: String,
    /// The received file (`Row::raw`: a spool file's kept version, or
    /// `inbound/done/<name>`).
    pub raw: String,
    pub mailbox: String,
    pub message_id: String,
    pub at: String,
}

/// The job a report queues (none for a row without its received file: a
/// send, or mail filed before the file was kept on the row).
pub fn job(ctx: &crate::context::Context, row: &Row, learn: Learn) -> Option<Write> {
    let raw = row.raw.as_ref()?;
    let now = ctx.clock.now();
    let id = format!("{:013}-{}", now.timestamp_millis().max(0), row.id);
    let job = Job {
        id: id.clone(),
        learn,
        user: crate::values::email_domain(&row.mailbox).to_ascii_lowercase(),
        raw: raw.clone(),
        mailbox: row.mailbox.clone(),
        message_id: row.message_id.clone(),
        at: crate::clock::iso(now),
    };
    let mut stored = item(&Key::new(PARTITION, id), &job);
    stored.insert(TTL.into(), (now.timestamp() + KEPT_DAYS * 86_400).into());
    Some(Write::Put {
        item: stored,
        cond: None,
    })
}

/// One lesson as the mail host reads it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lesson {
    /// What to acknowledge.
    pub id: String,
    pub learn: Learn,
    /// rspamd's classifier user (the request's Deliver-To).
    pub user: String,
    /// The message as received (base64), without the mail host's envelope
    /// line; absent when the spool no longer keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The message was longer than 2 MB and is cut there.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Lessons {
    pub ok: bool,
    /// Oldest first, at most 10 (and about 3 MB of messages).
    pub jobs: Vec<Lesson>,
}

/// GET /mtaSpamTraining: the oldest jobs, with their messages.
pub async fn lessons(call: &Call<'_>, _: NoInput) -> Result<Lessons, ApiError> {
    let ctx = call.ctx;
    let page = ctx.store.query(&Query::partition(PARTITION).limit(PAGE)).await?;
    let mut jobs = Vec::new();
    let mut bytes = 0;
    for found in page.items {
        let job: Job = crate::store::record(found)?;
        if bytes >= PAGE_BYTES {
            break;
        }
        let raw = ctx
            .blobs
            .get(&job.raw)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let (message, truncated) = match raw {
            Some(raw) => {
                let (_, body) = Envelope::split(&raw);
                let cut = body.len().min(MESSAGE_CAP);
                bytes += cut;
                (
                    Some(base64::engine::general_purpose::STANDARD.encode(&body[..cut])),
                    cut < body.len(),
                )
            }
            None => (None, false),
        };
        jobs.push(Lesson {
            id: job.id,
            learn: job.learn,
            user: job.user,
            message,
            truncated,
        });
    }
    Ok(Lessons { ok: true, jobs })
}

crate::input! {
    /// POST /mtaSpamTraining.
    pub struct DoneInput {
        /// The ids of the jobs taught (or that could not be), at most 100.
        pub done: List<RowId, 100> = (
            error::SPAM_TRAINING_DONE_INVALID,
            (error::SPAM_TRAINING_DONE_INVALID, error::SPAM_TRAINING_DONE_INVALID)
        ),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Done {
    pub ok: bool,
    /// Jobs named (each once); those already gone count too.
    pub removed: usize,
}

/// POST /mtaSpamTraining: forgets the jobs the mail host is done with.
pub async fn done(call: &Call<'_>, input: DoneInput) -> Result<Done, ApiError> {
    let mut ids: Vec<String> = input.done.0.into_iter().map(RowId::into_string).collect();
    ids.sort();
    ids.dedup();
    if !ids.is_empty() {
        let writes = ids
            .iter()
            .map(|id| Write::Delete {
                key: Key::new(PARTITION, id),
                cond: None,
            })
            .collect();
        call.ctx.store.transact(writes).await?;
    }
    Ok(Done {
        ok: true,
        removed: ids.len(),
    })
}

/// Every job waiting (for tests and the operator's look), oldest first.
pub async fn waiting(ctx: &crate::context::Context) -> Result<Vec<Job>, ApiError> {
    Ok(ctx.store.all_records(Query::partition(PARTITION)).await?)
}
