//! What a scoped key may do: the permissions an operation needs, the
//! mailboxes it may touch, its own daily send cap and expiry, and whether its
//! sends wait for the owner's approval. The account key (from onboarding)
//! has no scope: it may do everything its account may.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{self, ApiError, Problem};

/// What an operation needs from a scoped key. Operations that admit no
/// standard key at all (public, operator, sync, owner-only) need none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// The inbox, attachments, threads, the outbox, account and domain status.
    Read,
    /// sendMail / send_mail, and cancelling a scheduled send.
    Send,
    /// Drafts (which also need a signed-in person, spec 5.3).
    Draft,
    /// Domains, mailboxes, lists, suppressions and webhooks.
    Manage,
}

impl Permission {
    pub const ALL: [Permission; 4] = [
        Permission::Read,
        Permission::Send,
        Permission::Draft,
        Permission::Manage,
    ];

    /// The refusal of a key that lacks it.
    pub fn missing(self) -> Problem {
        match self {
            Permission::Read => error::KEY_LACKS_READ,
            Permission::Send => error::KEY_LACKS_SEND,
            Permission::Draft => error::KEY_LACKS_DRAFT,
            Permission::Manage => error::KEY_LACKS_MANAGE,
        }
    }
}

impl crate::values::Value for Permission {
    fn parse(text: &str) -> Option<Permission> {
        match text.trim() {
            "read" => Some(Permission::Read),
            "send" => Some(Permission::Send),
            "draft" => Some(Permission::Draft),
            "manage" => Some(Permission::Manage),
            _ => None,
        }
    }
}

/// When a scoped key's sends wait for the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Sends go out at once.
    #[default]
    None,
    /// A send to a recipient this sender has never mailed or heard from waits.
    FirstContact,
    /// Every send waits.
    Always,
}

impl crate::values::Value for Approval {
    fn parse(text: &str) -> Option<Approval> {
        match text.trim() {
            "none" => Some(Approval::None),
            "first_contact" => Some(Approval::FirstContact),
            "always" => Some(Approval::Always),
            _ => None,
        }
    }
}

/// A scoped key's limits, as stored with the key and shown by GET /keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// The mailbox addresses it may use; absent means every mailbox of the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailboxes: Option<Vec<String>>,
    pub permissions: Vec<Permission>,
    /// Sends per UTC day, below the account's own limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_send_cap: Option<i64>,
    /// When it stops working (ISO 8601, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub approval: Approval,
}

impl Scope {
    pub fn permits(&self, permission: Permission) -> Result<(), ApiError> {
        if self.permissions.contains(&permission) {
            Ok(())
        } else {
            Err(permission.missing().into())
        }
    }

    /// Whether the key may use this mailbox (an address, any case).
    pub fn covers(&self, mailbox: &str) -> bool {
        self.mailboxes
            .as_ref()
            .is_none_or(|list| list.iter().any(|m| m.eq_ignore_ascii_case(mailbox)))
    }

    /// Whether it has expired at `now` (both ISO 8601 UTC, so text order is time order).
    pub fn expired(&self, now: &str) -> bool {
        self.expires_at.as_deref().is_some_and(|at| at <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(mailboxes: Option<&[&str]>, permissions: &[Permission]) -> Scope {
        Scope {
            mailboxes: mailboxes.map(|m| m.iter().map(|s| s.to_string()).collect()),
            permissions: permissions.to_vec(),
            daily_send_cap: None,
            expires_at: Some("2026-11-25T10:00:00.000Z".into()),
            approval: Approval::None,
        }
    }

    #[test]
    fn a_scope_permits_only_what_it_lists_and_names_the_missing_permission() {
        let s = scope(None, &[Permission::Read]);
        assert!(s.permits(Permission::Read).is_ok());
        let refused = s.permits(Permission::Send).unwrap_err();
        assert_eq!(
            (refused.status, refused.error),
            (403, error::KEY_LACKS_SEND.sentence.into())
        );
    }

    #[test]
    fn mailboxes_match_in_any_case_and_none_means_all() {
        assert!(scope(None, &[]).covers("a@x.com"));
        let s = scope(Some(&["agent@x.com"]), &[]);
        assert!(s.covers("Agent@X.com"));
        assert!(!s.covers("boss@x.com"));
    }

    #[test]
    fn a_key_expires_at_its_time() {
        let s = scope(None, &[]);
        assert!(!s.expired("2026-11-25T09:59:59.999Z"));
        assert!(s.expired("2026-11-25T10:00:00.000Z"));
    }
}
