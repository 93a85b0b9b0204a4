//! Getting an account and what it may spend: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::credits;
use super::onboarding;
use super::status as account;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, get, io, post, tool};
use crate::validate::NoInput;

pub static ONBOARDING: Section = Section {
    operations: &[
        Operation {
            id: "requestAccess",
            rest: post("/requestAccess"),
            tool: tool("request_access", Hints::CREATE.open_world()),
            access: Public,
            permission: None,
            summary: "Ask for an account: an 8-digit code is emailed",
            description: "Step 1 of onboarding, no key needed. Emails an 8-digit code to contactEmail (valid 24 hours) \
                          and returns the requestId to verify it with. The answer never says whether an account \
                          exists. Limited to 5 per hour per IP and 3 per hour per email (429 with retryAfter).",
            errors: &[
                ACCESS_FIELDS_REQUIRED,
                CONTACT_EMAIL_INVALID,
                ORG_DOMAIN_INVALID,
                AGENT_NAME_TOO_LONG,
                INTENDED_USE_TOO_LONG,
                RATE_LIMITED,
                CODE_NOT_SENT,
            ],
            io: io!(
                onboarding::request_access,
                onboarding::RequestAccessInput,
                onboarding::RequestAccessOutput
            ),
        },
        Operation {
            id: "verifyAccessRequest",
            rest: post("/verifyAccessRequest"),
            tool: tool("verify_access_request", Hints::CREATE),
            access: Public,
            permission: None,
            summary: "Verify the emailed code and receive the API key once",
            description: "Step 2 of onboarding, no key needed. With the requestId and the emailed code: status ready \
                          returns apiKey exactly once (store it; send it as Authorization: Bearer svc_...); \
                          setting_up and unavailable return no key. Five wrong codes lock the request; 30 calls \
                          per hour per IP.",
            errors: &[
                VERIFY_FIELDS_REQUIRED,
                CODE_NOT_A_STRING,
                REQUEST_ID_INVALID,
                CODE_NOT_VALID,
                CODE_NO_LONGER_VALID,
                NOT_FOUND,
                ALREADY_COMPLETE,
                CODE_EXPIRED,
                REQUEST_BUSY,
                RATE_LIMITED,
            ],
            io: io!(
                onboarding::verify_access_request,
                onboarding::VerifyInput,
                onboarding::VerifyOutput
            ),
        },
        Operation {
            id: "getRequestStatus",
            rest: post("/getRequestStatus"),
            tool: tool("get_request_status", Hints::READ),
            access: Public,
            permission: None,
            summary: "Poll an access request's status",
            description: "No key needed. With requestId and email: pending, setting_up, ready or unavailable. Any \
                          mismatch reads as pending without requestId. Poll about every 20 minutes; limited to 10 \
                          per hour per IP and 6 per hour per email.",
            errors: &[STATUS_FIELDS_TYPE, RATE_LIMITED],
            io: io!(
                onboarding::get_request_status,
                onboarding::StatusInput,
                onboarding::StatusOutput
            ),
        },
        Operation {
            id: "getAccountStatus",
            rest: post("/getAccountStatus"),
            tool: tool("get_account_status", Hints::READ),
            access: AccountKey,
            permission: Some(Permission::Read),
            summary: "What the account has and what to do next",
            description: "For a standard key: the account's status, its domain with each DNS check, its mailboxes, \
                          whether it can send, and if not, the next step to take.",
            errors: &[ACCOUNT_FIELDS_TYPE, ACCOUNT_KEY_ONLY, NOT_FOUND],
            io: io!(
                account::get_account_status,
                account::AccountStatusInput,
                account::AccountStatusOutput
            ),
        },
    ],
};

pub static CREDITS: Section = Section {
    operations: &[
        Operation {
            id: "getCredits",
            rest: get("/credits"),
            tool: None,
            access: CreditsRead,
            permission: Some(Permission::Read),
            summary: "Read the credit balance and the sending switches",
            description: "The caller's credit balance (a standard key reads its own account's; the agent key and \
                          signed-in people read the agent key's), the agent key's state, and whether sending is on. \
                          Free.",
            errors: &[],
            io: io!(credits::get_credits, NoInput, credits::CreditsPayload),
        },
        Operation {
            id: "controlCredits",
            rest: post("/credits"),
            tool: tool("control_sending", Hints::SET),
            access: CreditsControl,
            permission: None,
            summary: "Freeze or unfreeze the agent key, or pause all sending",
            description: "The agent key may set `disabled` and `frozenUntil`; an operator may also set \
                          `sendingEnabled`. Takes effect on the next send. Free.",
            errors: &[
                DISABLED_TYPE,
                SENDING_ENABLED_TYPE,
                FROZEN_UNTIL_INVALID,
                CONTROL_REFUSED,
            ],
            io: io!(credits::control, credits::Control, credits::CreditsPayload),
        },
        Operation {
            id: "getRemainingCredits",
            rest: None,
            tool: tool("get_credits", Hints::READ),
            access: CreditsRead,
            permission: Some(Permission::Read),
            summary: "Read how many credits are left",
            description: "Credits left on the caller's balance: one is spent per send_mail. Free.",
            errors: &[],
            io: io!(credits::get_remaining, NoInput, credits::Remaining),
        },
    ],
};

/// The domains function's operations that accounts holds.
pub static DOMAIN_LIST: Section = Section {
    operations: &[Operation {
        id: "listDomains",
        rest: get("/listDomains"),
        tool: tool("list_domains", Hints::READ),
        access: Customer,
        permission: Some(Permission::Read),
        summary: "The account's domains, each with its mailboxes",
        description: "Each domain with its status and records, and its mailboxes with mode, forwardTo, \
                          delivery plan and mtaApplied (true once live on the mail server). Operators may pass uid \
                          to read another account.",
        errors: &[UID_INVALID, SETUP_INCOMPLETE],
        io: io!(account::list_domains, account::ListDomainsInput, account::DomainList),
    }],
};
