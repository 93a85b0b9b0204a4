//! Who a sender knows: everyone it mailed (written with each delivery
//! record). Mail received from someone makes them no contact: anyone can
//! write in, so a stranger who did (a prompt injection's author) is still a
//! first contact, and a first-contact hold asks about them.
//!
//! Items: `CONTACT#<owner>/<address>` {address, at, sent}. Rows without
//! `sent` were written for received mail before that stopped, and count
//! for nothing.

use serde_json::json;

use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Write, item};

/// Whether the sender knows every recipient.
pub async fn all_known(ctx: &Context, owner: &str, recipients: &[String]) -> Result<bool, ApiError> {
    let keys: Vec<_> = recipients.iter().map(|r| keys::contact(owner, r)).collect();
    if keys.is_empty() {
        return Ok(true);
    }
    let sent_to = |row: &Option<crate::store::Item>| {
        row.as_ref()
            .is_some_and(|r| r.get("sent").and_then(serde_json::Value::as_bool) == Some(true))
    };
    Ok(ctx.store.get_many(&keys).await?.iter().all(sent_to))
}

/// The writes that remember a send's recipients, for its record's transaction.
pub fn contact_writes(owner: &str, recipients: &[String], at: &str) -> Vec<Write> {
    recipients
        .iter()
        .map(|r| Write::Put {
            item: item(
                &keys::contact(owner, r),
                &json!({ "address": r, "at": at, "sent": true }),
            ),
            cond: None,
        })
        .collect()
}
