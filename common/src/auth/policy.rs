//! The admission rules of the route matrix (spec 5.3). Each route in
//! `http::routes` names one `Access`; this is the only place that says which
//! credential classes it admits and what the others get.

use super::{Authenticated, Caller, Via};
use crate::error::{
    ACCOUNT_KEY_ONLY, ApiError, CONTROL_REFUSED, DRAFTS_SIGNED_IN, FIREBASE_REQUIRED, INVALID_KEY, KEY_EXPIRED,
    MCP_AGENT_KEY_ONLY, OPERATOR_MAILBOX, OPERATOR_ONLY, OWNER_ONLY, Problem, SYNC_ONLY, WEBHOOKS_AGENT_KEY,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credential is checked at all.
    Public,
    /// A standard customer key reading its own account.
    AccountKey,
    /// The owner as [`Access::Owner`], or no credential at all: the operation
    /// then needs a code the owner was mailed (a hold's approval).
    OwnerOrCode,
    /// The account's own key (not a scoped key), or an operator identity
    /// token acting for the operators' account: keys, holds, the audit log.
    Owner,
    /// The agent key, a standard key (its own balance), or any identity token.
    CreditsRead,
    /// The agent key, or an operator identity token.
    CreditsControl,
    /// An operator identity token.
    Operator,
    /// A standard key or an identity token whose account setup is complete
    /// (the setup check needs the account and is made by the service).
    Customer,
    /// The agent key, a standard key, or an operator identity token.
    Mail,
    /// An operator identity token (drafts are a signed-in person's); the keys
    /// are told drafts need one, other people the mailbox sentence.
    Drafting,
    /// The agent key or a standard key (each its own registration).
    WebhookKey,
    /// The mail host's sync token.
    Sync,
    /// `POST /mcp`: the agent key or a standard key. Identity tokens are
    /// refused here; the endpoint admits them per message for the tools that
    /// take them (see `mcp::admit`).
    Mcp,
}

impl Access {
    /// The refusals this rule can answer with (authentication's own included),
    /// for the API description.
    pub fn refusals(self) -> &'static [Problem] {
        use crate::error::{INVALID_TOKEN, MISSING_CREDENTIAL};
        match self {
            Access::Public => &[],
            Access::AccountKey => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                ACCOUNT_KEY_ONLY,
            ],
            Access::Owner => &[MISSING_CREDENTIAL, INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN, OWNER_ONLY],
            Access::OwnerOrCode => &[INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN, OWNER_ONLY],
            Access::CreditsRead => &[MISSING_CREDENTIAL, INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN],
            Access::CreditsControl => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                CONTROL_REFUSED,
            ],
            Access::Operator => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                OPERATOR_ONLY,
            ],
            Access::Customer => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                FIREBASE_REQUIRED,
            ],
            Access::Mail => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                OPERATOR_MAILBOX,
            ],
            Access::Drafting => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                DRAFTS_SIGNED_IN,
                OPERATOR_MAILBOX,
            ],
            Access::WebhookKey => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                WEBHOOKS_AGENT_KEY,
            ],
            Access::Sync => &[MISSING_CREDENTIAL, INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN, SYNC_ONLY],
            Access::Mcp => &[
                MISSING_CREDENTIAL,
                INVALID_KEY,
                KEY_EXPIRED,
                INVALID_TOKEN,
                MCP_AGENT_KEY_ONLY,
            ],
        }
    }

    /// Whether an identity token is one of the credentials this rule admits
    /// as a class of its own (the customer and operator routes): on `/mcp`
    /// only such tools take one.
    pub fn takes_identity_token(self) -> bool {
        matches!(
            self,
            Access::Customer | Access::Operator | Access::Drafting | Access::Owner | Access::OwnerOrCode
        )
    }

    /// Admits or refuses an authenticated caller. Missing and invalid
    /// credentials were already refused with 401 during authentication.
    pub fn admit(self, auth: &Authenticated) -> Result<(), ApiError> {
        use Caller::*;
        let caller = &auth.caller;
        let refuse = |p: Problem| Err(ApiError::from(p));
        match self {
            Access::Public => Ok(()),
            Access::OwnerOrCode if *caller == Public => Ok(()),
            Access::AccountKey => match caller {
                Standard(_) => Ok(()),
                Sync => refuse(INVALID_KEY),
                _ => refuse(ACCOUNT_KEY_ONLY),
            },
            Access::Owner | Access::OwnerOrCode => match caller {
                Standard(key) if key.scope.is_none() => Ok(()),
                Identity(user) if user.operator => Ok(()),
                Sync => refuse(INVALID_KEY),
                _ => refuse(OWNER_ONLY),
            },
            Access::CreditsRead => match caller {
                Agent | Standard(_) | Identity(_) => Ok(()),
                _ => refuse(INVALID_KEY),
            },
            Access::CreditsControl => match caller {
                Agent => Ok(()),
                Identity(user) if user.operator => Ok(()),
                Sync => refuse(INVALID_KEY),
                _ => refuse(CONTROL_REFUSED),
            },
            Access::Operator => match caller {
                Identity(user) if user.operator => Ok(()),
                _ => refuse(OPERATOR_ONLY),
            },
            Access::Customer => match caller {
                Standard(_) | Identity(_) => Ok(()),
                Agent if auth.via == Via::Bearer => refuse(FIREBASE_REQUIRED),
                _ => refuse(INVALID_KEY),
            },
            Access::Mail => match caller {
                Agent | Standard(_) => Ok(()),
                Identity(user) if user.operator => Ok(()),
                Identity(_) => refuse(OPERATOR_MAILBOX),
                _ => refuse(INVALID_KEY),
            },
            Access::Drafting => match caller {
                Identity(user) if user.operator => Ok(()),
                Identity(_) => refuse(OPERATOR_MAILBOX),
                Agent | Standard(_) => refuse(DRAFTS_SIGNED_IN),
                _ => refuse(INVALID_KEY),
            },
            Access::WebhookKey => match caller {
                Agent | Standard(_) => Ok(()),
                Identity(_) => refuse(WEBHOOKS_AGENT_KEY),
                _ => refuse(INVALID_KEY),
            },
            Access::Sync => match caller {
                Sync => Ok(()),
                _ => refuse(SYNC_ONLY),
            },
            Access::Mcp => match caller {
                Agent | Standard(_) => Ok(()),
                Identity(_) => refuse(MCP_AGENT_KEY_ONLY),
                _ => refuse(INVALID_KEY),
            },
        }
    }
}
