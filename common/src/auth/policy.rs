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
    pub fn refusals(self) -> Vec<Problem> {
        use crate::error::{INVALID_TOKEN, MISSING_CREDENTIAL};
        // Without a credential OwnerOrCode admits the code alone.
        let authentication: &[Problem] = match self {
            Access::Public => &[],
            Access::OwnerOrCode => &[INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN],
            _ => &[MISSING_CREDENTIAL, INVALID_KEY, KEY_EXPIRED, INVALID_TOKEN],
        };
        let own: &[Problem] = match self {
            Access::Public | Access::CreditsRead => &[],
            Access::AccountKey => &[ACCOUNT_KEY_ONLY],
            Access::Owner | Access::OwnerOrCode => &[OWNER_ONLY],
            Access::CreditsControl => &[CONTROL_REFUSED],
            Access::Operator => &[OPERATOR_ONLY],
            Access::Customer => &[FIREBASE_REQUIRED],
            Access::Mail => &[OPERATOR_MAILBOX],
            Access::Drafting => &[DRAFTS_SIGNED_IN, OPERATOR_MAILBOX],
            Access::WebhookKey => &[WEBHOOKS_AGENT_KEY],
            Access::Sync => &[SYNC_ONLY],
            Access::Mcp => &[MCP_AGENT_KEY_ONLY],
        };
        [authentication, own].concat()
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
        match self.refusal(&auth.caller, auth.via) {
            Some(problem) => Err(problem.into()),
            None => Ok(()),
        }
    }

    /// Why this rule refuses a caller, if it does.
    fn refusal(self, caller: &Caller, via: Via) -> Option<Problem> {
        use Caller::*;
        let operator = matches!(caller, Identity(user) if user.operator);
        let keyed = matches!(caller, Agent | Standard(_));
        let unless = |admitted: bool, why: Problem| (!admitted).then_some(why);
        // A key-holding agent or person, signed in but refused: the rule's
        // own reason; anyone else is not a caller of this rule at all.
        let for_keys = |signed_in_why: Problem| match caller {
            Agent | Standard(_) => None,
            Identity(_) => Some(signed_in_why),
            _ => Some(INVALID_KEY),
        };
        match self {
            Access::Public => None,
            Access::OwnerOrCode if *caller == Public => None,
            Access::Operator => unless(operator, OPERATOR_ONLY),
            Access::Sync => unless(*caller == Sync, SYNC_ONLY),
            // The mail host's sync token opens nothing else.
            _ if *caller == Sync => Some(INVALID_KEY),
            Access::AccountKey => unless(matches!(caller, Standard(_)), ACCOUNT_KEY_ONLY),
            Access::Owner | Access::OwnerOrCode => unless(
                operator || matches!(caller, Standard(key) if key.scope.is_none()),
                OWNER_ONLY,
            ),
            Access::CreditsRead => unless(keyed || matches!(caller, Identity(_)), INVALID_KEY),
            Access::CreditsControl => unless(operator || *caller == Agent, CONTROL_REFUSED),
            Access::Customer => match caller {
                Standard(_) | Identity(_) => None,
                Agent if via == Via::Bearer => Some(FIREBASE_REQUIRED),
                _ => Some(INVALID_KEY),
            },
            Access::Mail if operator => None,
            Access::Mail => for_keys(OPERATOR_MAILBOX),
            Access::Drafting if operator => None,
            Access::Drafting if keyed => Some(DRAFTS_SIGNED_IN),
            Access::Drafting => for_keys(OPERATOR_MAILBOX),
            Access::WebhookKey => for_keys(WEBHOOKS_AGENT_KEY),
            Access::Mcp => for_keys(MCP_AGENT_KEY_ONLY),
        }
    }
}
