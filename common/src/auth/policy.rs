//! The admission rules of the route matrix (spec 5.3). Each route in
//! `http::routes` names one `Access`; this is the only place that says which
//! credential classes it admits and what the others get.

use super::{Authenticated, Caller, INVALID_KEY, Via};
use crate::error::ApiError;

pub const OPERATOR_ONLY: &str = "This action is limited to operator accounts.";
pub const OPERATOR_MAILBOX: &str = "This mailbox requires an operator account";
pub const CONTROL_REFUSED: &str = "Operator control requires the agent key or an operator account";
pub const ACCOUNT_KEY_ONLY: &str =
    "This action is limited to the account key, or this key can only read its own account.";
pub const FIREBASE_REQUIRED: &str = "Firebase sign-in required";
pub const SYNC_ONLY: &str = "This route is limited to the mail server's sync token.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credential is checked at all.
    Public,
    /// A standard customer key reading its own account.
    AccountKey,
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
    /// The mail host's sync token.
    Sync,
}

impl Access {
    /// Admits or refuses an authenticated caller. Missing and invalid
    /// credentials were already refused with 401 during authentication.
    pub fn admit(self, auth: &Authenticated) -> Result<(), ApiError> {
        use Caller::*;
        let caller = &auth.caller;
        let refuse = |msg: &str| Err(ApiError::forbidden(msg));
        match self {
            Access::Public => Ok(()),
            Access::AccountKey => match caller {
                Standard(_) => Ok(()),
                Sync => Err(ApiError::unauthorized(INVALID_KEY)),
                _ => refuse(ACCOUNT_KEY_ONLY),
            },
            Access::CreditsRead => match caller {
                Agent | Standard(_) | Identity(_) => Ok(()),
                _ => Err(ApiError::unauthorized(INVALID_KEY)),
            },
            Access::CreditsControl => match caller {
                Agent => Ok(()),
                Identity(user) if user.operator => Ok(()),
                Sync => Err(ApiError::unauthorized(INVALID_KEY)),
                _ => refuse(CONTROL_REFUSED),
            },
            Access::Operator => match caller {
                Identity(user) if user.operator => Ok(()),
                _ => refuse(OPERATOR_ONLY),
            },
            Access::Customer => match caller {
                Standard(_) | Identity(_) => Ok(()),
                Agent if auth.via == Via::Bearer => Err(ApiError::unauthorized(FIREBASE_REQUIRED)),
                _ => Err(ApiError::unauthorized(INVALID_KEY)),
            },
            Access::Mail => match caller {
                Agent | Standard(_) => Ok(()),
                Identity(user) if user.operator => Ok(()),
                Identity(_) => refuse(OPERATOR_MAILBOX),
                _ => Err(ApiError::unauthorized(INVALID_KEY)),
            },
            Access::Sync => match caller {
                Sync => Ok(()),
                _ => refuse(SYNC_ONLY),
            },
        }
    }
}
