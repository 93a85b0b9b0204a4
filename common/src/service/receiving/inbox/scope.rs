//! Whose mail a call reads, and finding a message or thread in it (another
//! scope's is 404).

use crate::auth::Caller;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::{self, Row, Thread};
use crate::values::{RowId, StoredMessageId, ThreadId};

/// The scope a caller reads: a standard key its account; the agent key and
/// operators a service-domain mailbox (`inbox@` by default).
pub(crate) fn scope(call: &Call<'_>, mailbox: Option<&str>) -> Result<String, ApiError> {
    match call.caller {
        Caller::Standard(key) => match mailbox {
            Some(_) => Err(error::INBOX_MAILBOX_INVALID.into()),
            None => Ok(keys::inbox_account_scope(&key.uid)),
        },
        _ => {
            let domain = call.ctx.config.service_domain.as_str();
            let address = match mailbox {
                Some(m) if crate::values::email_domain(m) == domain => m.to_string(),
                Some(_) => return Err(error::INBOX_MAILBOX_INVALID.into()),
                None => format!("inbox@{domain}"),
            };
            Ok(keys::inbox_mailbox_scope(&address))
        }
    }
}

/// A message by id, else by Message-ID.
pub(super) async fn find(call: &Call<'_>, scope: &str, target: &Target) -> Result<Row, ApiError> {
    let row = match target {
        Target::Id(id) => mail_store::by_id(call.ctx, scope, id).await?,
        Target::MessageId(mid) => {
            mail_store::by_message_id(call.ctx, scope, mid, None, |p| p.readable_by(call.caller)).await?
        }
        Target::Thread(_) => None,
    };
    row.filter(|r| r.readable_by(call.caller))
        .ok_or(error::NOT_FOUND.into())
}

/// A thread's summary; 404 when it is not there or, for a scoped key, in a
/// mailbox outside its scope (as another account's is).
pub(super) async fn find_thread(call: &Call<'_>, scope: &str, thread: &str) -> Result<Thread, ApiError> {
    mail_store::thread(call.ctx, scope, thread)
        .await?
        .filter(|t| t.readable_by(call.caller))
        .ok_or(error::NOT_FOUND.into())
}

/// Whether a stored row or thread summary is in a mailbox the caller may
/// read (a scoped key may be narrowed to some).
pub(super) fn visible<'c>(call: &'c Call<'_>) -> impl Fn(&crate::store::RawItem) -> bool + 'c {
    mail_store::covered(call.caller, "mailbox")
}

#[derive(Debug, Clone)]
pub(super) enum Target {
    Id(String),
    MessageId(String),
    Thread(String),
}

/// id wins over messageId, and both over thread (spec 4.2 rule 1, 4.3).
pub(super) fn target(
    id: Option<RowId>,
    message_id: Option<StoredMessageId>,
    thread: Option<ThreadId>,
) -> Option<Target> {
    id.map(|id| Target::Id(id.into_string()))
        .or(message_id.map(|m| Target::MessageId(m.into_string())))
        .or(thread.map(|t| Target::Thread(t.into_string())))
}
