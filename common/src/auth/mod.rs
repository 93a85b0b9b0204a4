//! Who is calling (part 5 of the spec): credential parsing, the credential
//! classes, and the per-route admission rules that the route table names.

pub mod identity;
pub mod keys;
pub mod policy;
pub mod scope;

use axum::http::HeaderMap;

pub use identity::IdentityUser;
pub use policy::Access;
pub use scope::{Approval, Permission, Scope};

/// What the request presented, before anything is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    None,
    /// The X-Api-Key header: when present, the only credential checked.
    ApiKeyHeader(String),
    /// `Authorization: Bearer <value>`.
    Bearer(String),
}

impl Presented {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        if let Some(value) = headers.get("x-api-key") {
            return Presented::ApiKeyHeader(value.to_str().unwrap_or_default().trim().to_string());
        }
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, value)| value.trim().to_string())
            .filter(|value| !value.is_empty());
        match bearer {
            Some(value) => Presented::Bearer(value),
            None => Presented::None,
        }
    }

    /// A Bearer value of exactly three dot-separated segments is an identity
    /// token (spec 5.2.3), an empty one among them too: it is then a bad token.
    pub fn is_identity_token(value: &str) -> bool {
        value.split('.').count() == 3
    }
}

/// How the credential arrived; some refusals depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    None,
    ApiKeyHeader,
    Bearer,
}

/// A standard customer key, resolved to its account: the account key, or a
/// scoped key the owner minted (POST /keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardKey {
    pub uid: String,
    pub key_id: String,
    pub last4: String,
    pub name: Option<String>,
    pub scope: Option<Scope>,
}

impl StandardKey {
    /// A scoped key past its expiry at `now`.
    pub fn is_expired(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.scope
            .as_ref()
            .is_some_and(|scope| scope.expired(&crate::clock::iso(now)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Public,
    Agent,
    Standard(StandardKey),
    Identity(IdentityUser),
    Sync,
}

impl Caller {
    pub fn is_operator(&self) -> bool {
        matches!(self, Caller::Identity(user) if user.operator)
    }

    /// A scoped key's limits; every other caller has none.
    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Caller::Standard(key) => key.scope.as_ref(),
            _ => None,
        }
    }

    /// The scoped key calling, if one is (not the account key).
    pub fn scoped_key(&self) -> Option<&StandardKey> {
        match self {
            Caller::Standard(key) if key.scope.is_some() => Some(key),
            _ => None,
        }
    }

    /// Refuses a scoped key without the permission an operation needs.
    pub fn permits(&self, permission: Permission) -> Result<(), crate::error::ApiError> {
        self.scope().map_or(Ok(()), |scope| scope.permits(permission))
    }

    /// Whether the caller may see or use this mailbox (only a scoped key
    /// is narrowed to some of its account's mailboxes).
    pub fn covers(&self, mailbox: &str) -> bool {
        self.scope().is_none_or(|scope| scope.covers(mailbox))
    }

    /// The one name a caller's own records are kept under (its waits, its
    /// Idempotency-Keys): each standard key by its id, the agent key, each
    /// signed-in person. Never the account: one key's records are not another's.
    pub fn holder(&self) -> String {
        match self {
            Caller::Agent => "agent".into(),
            Caller::Standard(key) => format!("key:{}", key.key_id),
            Caller::Identity(user) => format!("user:{}", user.uid),
            Caller::Public | Caller::Sync => "none".into(),
        }
    }

    /// Refuses a scoped key a change that loosens a guardrail (an allow
    /// entry, removing an entry it did not add or a suppression, accepting
    /// spoofed mail): those are the owner's. A scoped key may tighten.
    pub fn may_loosen(&self) -> Result<(), crate::error::ApiError> {
        match self.scope() {
            Some(_) => Err(crate::error::KEY_OWNER_GUARDRAIL.into()),
            None => Ok(()),
        }
    }

    /// Refuses a scoped key the mailbox it names but may not use.
    pub fn may_use(&self, mailbox: &str) -> Result<(), crate::error::ApiError> {
        if self.covers(mailbox) {
            return Ok(());
        }
        let mut refused: crate::error::ApiError = crate::error::KEY_MAILBOX_OUT_OF_SCOPE.into();
        refused.addresses = Some(vec![mailbox.to_ascii_lowercase()]);
        Err(refused)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub caller: Caller,
    pub via: Via,
}
