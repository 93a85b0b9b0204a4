//! Who a sender knows: everyone it mailed (written with each delivery
//! record) and everyone who wrote to one of its mailboxes (written by the
//! poller). A first-contact hold asks about anyone else.
//!
//! Items: `CONTACT#<owner>/<address>` {address, at}.

use serde_json::json;

use crate::clock::iso;
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
    Ok(ctx.store.get_many(&keys).await?.iter().all(Option::is_some))
}

/// The writes that remember a send's recipients, for its record's transaction.
pub fn contact_writes(owner: &str, recipients: &[String], at: &str) -> Vec<Write> {
    recipients
        .iter()
        .map(|r| Write::Put {
            item: item(&keys::contact(owner, r), &json!({ "address": r, "at": at })),
            cond: None,
        })
        .collect()
}

/// The write that remembers the sender of received mail (none for a sender
/// that is no address), for the filing's transaction.
pub fn heard_from_write(ctx: &Context, owner: &str, address: &str) -> Option<Write> {
    let address = crate::values::email(address)?;
    let at = iso(ctx.clock.now());
    Some(Write::Put {
        item: item(
            &keys::contact(owner, &address),
            &json!({ "address": address, "at": at }),
        ),
        cond: None,
    })
}
