//! Sending: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::api_keys;
use super::pending;
use super::send;
use super::submission;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{
    Hints, Operation, Rest, Section, Source, Tool, delete, get, io, post, post_send, tool,
};
use crate::validate::{Later, NoInput};

pub static SEND: Section = Section {
    operations: &[
        Operation {
            id: "sendMail",
            rest: post_send("/sendMail"),
            tool: Some(Tool {
                name: "send_mail",
                hints: Hints::CREATE.open_world(),
            }),
            access: Mail,
            permission: Some(Permission::Send),
            summary: "Send a plain-text email",
            description: "to, subject, text (at most 100KB); cc and bcc in the same forms as to (at most 5 \
                          recipients across to, cc and bcc; bcc goes in the envelope alone, never in a header); html \
                          (optional, at most 100KB) goes as the multipart/alternative beside text, scripts, event \
                          handlers and forms removed first; from must be a hosted mailbox on your \
                          verified domain (optional with exactly one; the agent key sends as noreply@ the service \
                          domain). inReplyTo/references thread it onto a stored conversation. Costs 1 credit for \
                          keys; 5 per minute and 50 per UTC day. Attachments are REST only. With an \
                          idempotencyKey (REST: the Idempotency-Key header) a retry within 24 hours returns the \
                          first answer without sending or charging again. sendAt (up to 30 days ahead) and \
                          undoSeconds (0 to 600) answer 202 {status: scheduled, sendAt} (the tool: the same body): \
                          the credit is taken now and POST /outbox/cancel (tool cancel_send) gives it back until it \
                          leaves. A scoped key whose approval rule \
                          holds the send answers 202 {status: held, holdId}: the owner is mailed a code, and the \
                          mail goes out (and is charged) only when they approve it.",
            errors: &[
                SUBJECT_TYPE,
                TEXT_TYPE,
                SENDING_PAUSED,
                AGENT_KEY_DISABLED,
                RATE_LIMITED,
                SEND_REQUIRED,
                TOO_MANY_RECIPIENTS,
                TEXT_TOO_LARGE,
                CHOOSE_FROM,
                TO_TYPE,
                TO_ITEMS,
                RECIPIENT_INVALID,
                SUBJECT_INVALID,
                FROM_INVALID,
                FROM_NOT_ALLOWED,
                IN_REPLY_TO_INVALID,
                REFERENCES_INVALID,
                REFERENCES_TYPE,
                REFERENCES_TOO_MANY,
                ATTACHMENTS_TYPE,
                TOO_MANY_ATTACHMENTS,
                ATTACHMENTS_TOO_LARGE,
                ATTACHMENT_NOT_OBJECT,
                ATTACHMENT_FILENAME_MISSING,
                ATTACHMENT_FILENAME_INVALID,
                ATTACHMENT_TYPE_NOT_STRING,
                ATTACHMENT_CONTENT_MISSING,
                ATTACHMENT_DATA_URL_INVALID,
                ATTACHMENT_DATA_URL_NOT_BASE64,
                ATTACHMENT_TOO_LARGE,
                ATTACHMENT_BASE64_INVALID,
                ATTACHMENT_EMPTY,
                ATTACHMENT_KIND_NOT_ALLOWED,
                ATTACHMENT_TYPE_NOT_ALLOWED,
                ATTACHMENT_CONTENT_MISMATCH,
                TOOL_NO_ATTACHMENTS,
                MESSAGE_NOT_BUILT,
                NO_HOSTED_MAILBOX,
                INSUFFICIENT_CREDITS,
                SEND_FAILED,
                NO_OUTBOUND_HOST,
                IDEMPOTENCY_KEY_INVALID,
                IDEMPOTENCY_KEY_REUSED,
                IDEMPOTENCY_IN_PROGRESS,
                RECIPIENT_SUPPRESSED,
                RECIPIENT_BLOCKED,
                RECIPIENT_NOT_ALLOWED,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_DAILY_CAP,
                SEND_AT_INVALID,
                UNDO_SECONDS_INVALID,
                CC_TYPE,
                CC_ITEMS,
                BCC_TYPE,
                BCC_ITEMS,
                HTML_TYPE,
                HTML_TOO_LARGE,
            ],
            io: io!(accepted send::send_mail, Later<send::SendInput>, send::SendOutput),
        },
        // The mail host's side: a mailbox's SMTP submission, handed over by its milter.
        Operation {
            id: "submitMtaMessage",
            rest: Some(Rest {
                method: http::Method::POST,
                path: "/mtaSubmission",
                source: Source::Body,
                max_body: submission::SUBMISSION_BODY,
                starts_on_known_key: false,
            }),
            tool: None,
            access: Sync,
            permission: None,
            summary: "Send a message a mailbox submitted over SMTP",
            description: "The mail host's sync token only: its milter hands over each message a mailbox's app password \
                          submits (login, envelope sender, recipients, the raw message in base64). It is checked and \
                          sent like POST /sendMail (kill switch, freeze, rate windows, at most 5 recipients, the \
                          sender must be that mailbox, one credit), DKIM-signed with the domain's key. A password a \
                          scoped key issued acts as that key (its send permission, mailboxes, daily cap and approval \
                          rule: a held message answers 202 with holdId); once the key is revoked it sends nothing. \
                          The milter answers the client with the result.",
            errors: &[
                SUBMISSION_FIELDS,
                SUBMISSION_UNREADABLE,
                SUBMISSION_TOO_LARGE,
                SUBMISSION_NOT_SENDABLE,
                SUBMISSION_SENDER,
                SENDING_PAUSED,
                AGENT_KEY_DISABLED,
                RATE_LIMITED,
                TOO_MANY_RECIPIENTS,
                RECIPIENT_INVALID,
                INSUFFICIENT_CREDITS,
                RECIPIENT_SUPPRESSED,
                RECIPIENT_BLOCKED,
                RECIPIENT_NOT_ALLOWED,
                SEND_FAILED,
                NO_OUTBOUND_HOST,
                KEY_LACKS_SEND,
                KEY_EXPIRED,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_DAILY_CAP,
                PASSWORD_KEY_REVOKED,
            ],
            io: io!(
                accepted submission::submit,
                Later<submission::SubmissionInput>,
                submission::SubmissionOutput
            ),
        },
    ],
};

/// The delivery function's operations that sending holds.
pub static HOLDS: Section = Section {
    operations: &[
        Operation {
            id: "listHolds",
            rest: get("/holds"),
            tool: tool("list_holds", Hints::READ),
            access: Owner,
            permission: None,
            summary: "Sends held for the owner's approval, newest first",
            description: "{ok, holds}: the last 100, each {id, kind, status (waiting, sending, sent, denied, \
                          expired, failed), messageId, from, to, subject, preview, requestedBy, createdAt, \
                          expiresAt, dueAt?, delivery?}. The account key or an operator only.",
            errors: &[SETUP_INCOMPLETE],
            io: io!(pending::list_holds, NoInput, pending::HoldList),
        },
        Operation {
            id: "approveHold",
            rest: post("/holds/approve"),
            tool: tool("approve_hold", Hints::SET.open_world()),
            access: OwnerOrCode,
            permission: None,
            summary: "Approve a held send: it goes out once",
            description: "{holdId, code?}. With the account key (or an operator token) no code is needed; with \
                          no credential, the 8-digit code emailed to the account's owner decides (5 wrong codes \
                          lock it). The mail goes out now, or at its sendAt, exactly once however many approvals \
                          arrive; the credit is taken then. While sending is paused (or the agent key frozen) an \
                          approved hold waits as a scheduled send and goes when they allow, within 24 hours. Holds \
                          lapse after 24 hours.",
            errors: &[
                HOLD_ID_REQUIRED,
                HOLD_ID_INVALID,
                HOLD_CODE_INVALID,
                HOLD_CODE_REQUIRED,
                HOLD_CODE_WRONG,
                HOLD_CODE_LOCKED,
                HOLD_NOT_FOUND,
                HOLD_DECIDED,
                HOLD_EXPIRED,
                SETUP_INCOMPLETE,
                INSUFFICIENT_CREDITS,
                RECIPIENT_SUPPRESSED,
                SEND_FAILED,
                NO_OUTBOUND_HOST,
            ],
            io: io!(pending::approve, pending::Decision, pending::HoldView),
        },
        Operation {
            id: "denyHold",
            rest: post("/holds/deny"),
            tool: tool("deny_hold", Hints::SET),
            access: OwnerOrCode,
            permission: None,
            summary: "Deny a held send: it never goes out",
            description: "{holdId, code?}, decided as approveHold is. Nothing is sent or charged.",
            errors: &[
                HOLD_ID_REQUIRED,
                HOLD_ID_INVALID,
                HOLD_CODE_INVALID,
                HOLD_CODE_REQUIRED,
                HOLD_CODE_WRONG,
                HOLD_CODE_LOCKED,
                HOLD_NOT_FOUND,
                HOLD_DECIDED,
                HOLD_EXPIRED,
                SETUP_INCOMPLETE,
            ],
            io: io!(pending::deny, pending::Decision, pending::HoldView),
        },
        Operation {
            id: "cancelSend",
            rest: post("/outbox/cancel"),
            tool: tool("cancel_send", Hints::SET),
            access: Mail,
            permission: Some(Permission::Send),
            summary: "Cancel a scheduled or held send before it leaves",
            description: "{messageId}: the send sendMail accepted with 202. Until it goes out it is cancelled and \
                          a scheduled send's credit comes back: {ok, cancelled, creditsRemaining?}. Once it left: \
                          409.",
            errors: &[INBOX_MESSAGE_ID_INVALID, WAITING_SEND_NOT_FOUND, HOLD_DECIDED],
            io: io!(pending::cancel, pending::CancelInput, pending::Cancelled),
        },
        Operation {
            id: "listWaitingSends",
            rest: get("/outbox/waiting"),
            tool: tool("list_waiting_sends", Hints::READ),
            access: Owner,
            permission: None,
            summary: "Every send not yet gone out: held for approval or scheduled",
            description: "{ok, sends, nextCursor?}: newest first, every send of the account still waiting, by any of \
                          its keys, each {id, kind (held, scheduled), status, messageId, from, to, subject, preview, \
                          requestedBy, createdAt, dueAt?, expiresAt?}. Cancel one with POST /outbox/cancel (tool cancel_send) \
                          and its messageId. limit 1 to 100 (default 50). A scheduled send that sending being paused kept \
                          from going expires 24 hours past its dueAt. The account key or an operator only.",
            errors: &[LIMIT_TO_100_INVALID, CURSOR_INVALID, SETUP_INCOMPLETE],
            io: io!(pending::list_waiting, pending::WaitingQuery, pending::WaitingSends),
        },
    ],
};

/// The guardrails' scoped keys: create, list, revoke (served by the
/// onboarding function, beside the account's status).
pub static KEYS: Section = Section {
    operations: &[
        Operation {
            id: "createKey",
            rest: post("/keys"),
            tool: tool("create_key", Hints::CREATE),
            access: Owner,
            permission: None,
            summary: "Mint a scoped key for an agent: some permissions, some mailboxes, its own limits",
            description: "The account key or an operator only; a scoped key cannot mint keys. {name, permissions: \
                          subset of [read, send, draft, manage], mailboxes?: [addresses of this account] (default \
                          all), dailySendCap?: 1 to 50, expiresAt?: RFC 3339 (within a year), approval?: none | \
                          first_contact | always}. Returns {ok, key, apiKey}: apiKey is shown this once. read covers \
                          the inbox, attachments, threads and the outbox; send covers sendMail; draft drafts; manage \
                          domains, mailboxes, suppressions and webhooks. At most 20 keys per account.",
            errors: &[
                KEY_NAME_REQUIRED,
                KEY_NAME_INVALID,
                KEY_PERMISSIONS_INVALID,
                KEY_MAILBOXES_INVALID,
                KEY_MAILBOX_UNKNOWN,
                KEY_CAP_INVALID,
                KEY_EXPIRY_INVALID,
                KEY_APPROVAL_INVALID,
                KEY_TOO_MANY,
                SETUP_INCOMPLETE,
            ],
            io: io!(api_keys::create, api_keys::CreateKeyInput, api_keys::CreatedKey),
        },
        Operation {
            id: "listKeys",
            rest: get("/keys"),
            tool: tool("list_keys", Hints::READ),
            access: Owner,
            permission: None,
            summary: "The account's scoped keys, never the keys themselves",
            description: "{ok, keys}: newest first, each {id, name, last4, scope {mailboxes?, permissions, \
                          dailySendCap?, expiresAt?, approval}, createdAt, lastUsedAt?}. The account key or an \
                          operator only.",
            errors: &[SETUP_INCOMPLETE],
            io: io!(api_keys::list, NoInput, api_keys::KeyList),
        },
        Operation {
            id: "revokeKey",
            rest: delete("/keys"),
            tool: tool("revoke_key", Hints::DESTROY),
            access: Owner,
            permission: None,
            summary: "Revoke a scoped key at once",
            description: "id (key_ and 12 hex digits, from GET /keys). The key's next request is 401, the mailbox \
                          passwords it issued stop working (gone from the next mail-server export), and every send \
                          it asked for that has not gone out (held or scheduled) is cancelled, its credit back. \
                          {ok, revoked, cancelledSends}. The account key or an operator only.",
            errors: &[ID_REQUIRED, KEY_ID_INVALID, KEY_NOT_FOUND, SETUP_INCOMPLETE],
            io: io!(api_keys::revoke, api_keys::RevokeKeyInput, api_keys::RevokedKey),
        },
    ],
};
