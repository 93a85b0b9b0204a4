//! Mailboxes: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::{credential, routes};
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, io, post, tool};

/// What adding a mailbox or changing its mode can answer: the rules of 4.8.
const MAILBOX_ERRORS: &[crate::error::Problem] = &[
    DOMAIN_ID_REQUIRED,
    DOMAIN_INVALID,
    LOCAL_PART_REQUIRED,
    MAILBOX_ADDRESS_INVALID,
    MAILBOX_ID_MISMATCH,
    MODE_INVALID,
    FORWARD_TO_TYPE,
    FORWARD_TO_REQUIRED,
    FORWARD_TO_HOSTED,
    FORWARD_TO_TOO_MANY,
    FORWARD_ADDRESS_INVALID,
    ACCEPT_SPOOFED_TYPE,
    SPAM_FILTER_TYPE,
    SPAM_THRESHOLD_INVALID,
    FORWARD_TO_SELF,
    FORWARD_TO_SERVICE,
    FORWARD_TO_MISSING,
    FORWARDING_LOOP,
    HOSTED_ONLY,
    SETUP_INCOMPLETE,
    NOT_FOUND,
    DOMAIN_NOT_VERIFIED,
    MAILBOX_EXISTS,
    PROTECTED_MODE,
    FORWARDING_BUSY,
    KEY_MAILBOX_OUT_OF_SCOPE,
    KEY_OWNER_MAILBOX,
    KEY_OWNER_GUARDRAIL,
];

pub static MAILBOXES: Section = Section {
    operations: &[
        Operation {
            id: "addMailbox",
            rest: post("/addMailbox"),
            tool: tool("add_mailbox", Hints::CREATE),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Create a mailbox on the verified domain",
            description: "Step 5 of onboarding. mode hosted (stored; IMAP), forward (relay only; forwardTo required) \
                          or both; at most 5 forwardTo targets, no loops, no self-forward. Live on the mail server \
                          within about a minute (mtaApplied). Takes a standard key or a signed-in person, not the \
                          agent key. Free.",
            errors: MAILBOX_ERRORS,
            io: io!(routes::add_mailbox, routes::MailboxInput, routes::MailboxOutput),
        },
        Operation {
            id: "setMailboxMode",
            rest: post("/setMailboxMode"),
            tool: tool("set_mailbox_mode", Hints::SET),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Change a mailbox's mode and forwarding",
            description: "Same rules as add_mailbox. Stored mail is kept; forward removes the IMAP/SMTP login and \
                          hosted or both restores it.",
            errors: MAILBOX_ERRORS,
            io: io!(routes::set_mailbox_mode, routes::MailboxInput, routes::MailboxOutput),
        },
        Operation {
            id: "deleteMailbox",
            rest: post("/deleteMailbox"),
            tool: tool("delete_mailbox", Hints::DESTROY),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Delete a mailbox",
            description: "address, or domain and localPart. Routing drops at the next sync; stored mail is kept \
                          (maildir leave). Refused for a protected address and for the last active mailbox of a \
                          verified domain.",
            errors: &[
                DELETE_TARGET_REQUIRED,
                DELETE_TARGET_MISMATCH,
                MAILBOX_ADDRESS_INVALID,
                SETUP_INCOMPLETE,
                NOT_FOUND,
                PROTECTED_DELETE,
                LAST_MAILBOX,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_OWNER_MAILBOX,
            ],
            io: io!(routes::delete_mailbox, routes::DeleteTarget, routes::DeleteOutput),
        },
        Operation {
            id: "issueMailboxCredential",
            rest: post("/issueMailboxCredential"),
            tool: tool("issue_mailbox_credential", Hints::DESTROY.not_idempotent()),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Issue or reset a mailbox's IMAP/SMTP app password",
            description: "Returns the password once (only its SHA512-CRYPT hash is kept) with the IMAP and SMTP \
                          settings; a new call replaces the old password. Refused for forward-only mailboxes. A \
                          scoped key needs read as well as manage, and its password carries its scope: each SMTP \
                          submission needs its send permission, counts in its daily cap and waits for approval as \
                          its sends do; revoking the key takes the password away.",
            errors: &[
                ADDRESS_REQUIRED,
                MAILBOX_ADDRESS_INVALID,
                SETUP_INCOMPLETE,
                NOT_FOUND,
                FORWARD_ONLY_NO_LOGIN,
                KEY_LACKS_READ,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_OWNER_MAILBOX,
            ],
            io: io!(
                credential::issue_credential,
                credential::CredentialInput,
                credential::CredentialOutput
            ),
        },
    ],
};
