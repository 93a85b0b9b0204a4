//! The error catalogue (spec part 7 and every other sentence a client can read).
//!
//! A [`Problem`] is a status, a fixed sentence and an optional machine `code`;
//! this file is the only place a sentence is written. Services name a problem
//! (`Err(errors::NOT_FOUND.into())`), never a status number. `ApiError` is what
//! reaches a client: a problem, possibly with its `{}` placeholders filled and a
//! `retryAfter`. A 500 carries a fixed sentence; its cause goes to the log.

use std::borrow::Cow;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::store::StoreError;

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    pub status: u16,
    /// The sentence; `{}` marks where [`Problem::with`] puts a detail.
    pub sentence: &'static str,
    pub code: Option<&'static str>,
}

macro_rules! catalogue {
    ($($(#[$doc:meta])* $name:ident = $status:literal $sentence:literal $(code $code:literal)?;)*) => {
        $($(#[$doc])* pub const $name: Problem = Problem {
            status: $status,
            sentence: $sentence,
            code: catalogue!(@code $($code)?),
        };)*
        /// Every entry, for the OpenAPI document and the catalogue tests.
        pub const ALL: &[Problem] = &[$($name),*];
    };
    (@code) => { None };
    (@code $code:literal) => { Some($code) };
}

catalogue! {
    // ----------------------------------------------------------- authentication (5.2, 5.3)
    MISSING_CREDENTIAL = 401 "Missing Authorization Bearer token or X-Api-Key";
    INVALID_KEY = 401 "Invalid API key";
    INVALID_TOKEN = 401 "Invalid or expired ID token";
    MCP_AGENT_KEY_ONLY = 401 "MCP requires agent API key (Bearer svc_...)";
    /// A browser page of another site calling POST /mcp (the streamable HTTP
    /// transport's DNS-rebinding rule).
    MCP_ORIGIN = 403 "This Origin may not call the MCP endpoint";
    FIREBASE_REQUIRED = 401 "Firebase sign-in required";
    OPERATOR_MAILBOX = 403 "This mailbox requires an operator account";
    DRAFTS_SIGNED_IN = 403 "Drafts require a signed-in user";
    WEBHOOKS_AGENT_KEY = 403 "Webhooks require an agent API key";
    CONTROL_REFUSED = 403 "Operator control requires the agent key or an operator account";
    SETUP_INCOMPLETE = 403 "Account setup is not complete yet";
    OPERATOR_ONLY = 403 "This action is limited to operator accounts.";
    ACCOUNT_KEY_ONLY = 403 "This action is limited to the account key, or this key can only read its own account.";
    SYNC_ONLY = 403 "This route is limited to the mail server's sync token.";
    /// A scoped key past its `expiresAt`.
    KEY_EXPIRED = 401 "This API key has expired; ask the account owner for a new one";
    KEY_LACKS_READ = 403 "This API key lacks the read permission (inbox, attachments, outbox, threads)" code "permission_missing";
    KEY_LACKS_SEND = 403 "This API key lacks the send permission" code "permission_missing";
    KEY_LACKS_DRAFT = 403 "This API key lacks the draft permission" code "permission_missing";
    KEY_LACKS_MANAGE = 403 "This API key lacks the manage permission (domains, mailboxes, lists, webhooks)" code "permission_missing";
    /// The mailbox is named in `addresses`.
    KEY_MAILBOX_OUT_OF_SCOPE = 403 "This API key may not use this mailbox (see addresses)" code "mailbox_out_of_scope";
    KEY_OWNER_MAILBOX = 403 "A scoped key cannot change the owner's own mailbox, where the account's access codes arrive; use the account key (see addresses)" code "mailbox_out_of_scope";
    /// Keys, holds and the audit log are the owner's.
    OWNER_ONLY = 403 "This action needs the account key or an operator account, not a scoped key";
    /// Guardrails the owner set are the owner's to loosen (`Caller::may_loosen`).
    KEY_OWNER_GUARDRAIL = 403 "A scoped key may tighten guardrails but not loosen them (add an allow entry, remove an entry it did not add or a suppression, accept spoofed mail); use the account key" code "owner_guardrail";
    /// A mailbox password a scoped key issued dies with that key.
    PASSWORD_KEY_REVOKED = 403 "This mailbox password was issued by an API key that has since been revoked; ask the account owner for a new password";

    // ------------------------------------------------------------------- HTTP and bodies
    NOT_FOUND = 404 "Message not found";
    NO_ROUTE = 404 "Not found";
    METHOD_NOT_ALLOWED = 405 "Method not allowed";
    BODY_TOO_LARGE = 413 "Request body too large";
    BODY_UNREADABLE = 400 "The request body could not be read";
    INVALID_JSON = 400 "Invalid JSON body";
    NOT_AN_OBJECT = 400 "The request body must be a JSON object";
    RATE_LIMITED = 429 "Rate limit exceeded";
    MCP_BATCH_TOO_LARGE = 400 "A batch holds at most 20 messages";
    INTERNAL = 500 "Internal error";
    /// The store throttled, failed or did not answer through its retries:
    /// with Retry-After, and what the request wrote may stand (docs/decisions.md).
    STORE_UNAVAILABLE = 503 "The service is busy; try again in a moment";

    // ---------------------------------------------------------------------- onboarding
    ACCESS_FIELDS_REQUIRED = 400 "contactEmail, domain, agentName, and intendedUse are required";
    CONTACT_EMAIL_INVALID = 400 "contactEmail is not a valid email address";
    ORG_DOMAIN_INVALID = 400 "domain is not a valid hostname";
    AGENT_NAME_TOO_LONG = 400 "agentName must be at most 100 characters";
    INTENDED_USE_TOO_LONG = 400 "intendedUse must be at most 1000 characters";
    VERIFY_FIELDS_REQUIRED = 400 "requestId and code are required";
    STATUS_FIELDS_TYPE = 400 "requestId, email and contactEmail must be strings";
    ACCOUNT_FIELDS_TYPE = 400 "uid and email must be strings";
    REQUEST_ID_INVALID = 400 "requestId is not valid";
    CODE_NOT_VALID = 401 "That code is not valid";
    CODE_NOT_A_STRING = 400 "code must be a string";
    /// Spec part 7 writes it in lower case.
    CODE_NO_LONGER_VALID = 401 "that code is no longer valid";
    CODE_EXPIRED = 410 "That code has expired";
    ALREADY_COMPLETE = 409 "This request is already complete. Get a key through a fresh request and verify." code "already_complete";
    CODE_NOT_SENT = 500 "Could not send the access code";
    REQUEST_BUSY = 500 "The request is busy; try again";

    // --------------------------------------------------------------------------- admin
    /// An `id` field that is missing (a request decision, an inbox message).
    ID_REQUIRED = 400 "id is required";
    ID_TYPE = 400 "id must be a string";
    DECISION_INVALID = 400 "decision must be approve or deny";
    DECISION_ID_INVALID = 400 "id is not a valid request id";
    NOT_READY_FOR_DECISION = 409 "This request is not ready for a decision.";
    ALLOWLIST_DOMAIN_REQUIRED = 400 "domain is required";
    DELETE_IDS_REQUIRED = 400 "id or ids is required";
    DELETE_IDS_TYPE = 400 "ids must be an array of request ids";
    DELETE_IDS_TOO_MANY = 400 "At most 200 ids per request";
    DUPLICATES_FILTER_REQUIRED = 400 "email or domain is required";
    EMAIL_INVALID = 400 "email is not a valid email address";

    // ------------------------------------------------------------------------- credits
    FROZEN_UNTIL_INVALID = 400 "frozenUntil must be an ISO time string or null";
    DISABLED_TYPE = 400 "disabled must be a boolean";
    SENDING_ENABLED_TYPE = 400 "sendingEnabled must be a boolean";
    INSUFFICIENT_CREDITS = 429 "Insufficient credits";

    // ------------------------------------------------------------------------- domains
    DOMAIN_REQUIRED = 400 "Enter a domain you own, such as example.com";
    DOMAIN_INVALID = 400 "That domain name is not valid";
    PRODUCT_DOMAIN = 400 "product domain cannot be added";
    DOMAIN_ID_REQUIRED = 400 "domainId is required";
    ONE_DOMAIN_PER_ACCOUNT = 409 "This account already has a domain. Each account may hold one domain." code "one_domain_per_account";
    DOMAIN_CLAIMED = 409 "That domain is already claimed by another account." code "domain_claimed";
    DOMAIN_CHANGED = 500 "The domain changed while adding it; try again";
    UID_INVALID = 400 "uid is not a valid account id";
    REMOVE_OWNER_REQUIRED = 400 "uid or ownerEmail is required";
    REMOVE_OWNER_MISMATCH = 400 "uid and ownerEmail name different accounts";
    OWNER_EMAIL_INVALID = 400 "ownerEmail is not valid";
    /// `{}` is the domain name.
    CONFIRM_TYPE = 400 "confirm must be a string";
    CONFIRM_REQUIRED = 400 "confirm must equal {} to remove a domain with mailboxes";
    SYSTEM_DOMAIN = 409 "The service domain cannot be removed." code "system_domain";
    PROTECTED_DOMAIN = 409 "That domain holds a protected address and cannot be removed." code "protected";
    /// DMARC reports are about the whole domain, so a key held to some of
    /// its mailboxes does not read them.
    DMARC_KEY_MAILBOXES = 403 "This API key is limited to some mailboxes; DMARC reports cover the whole domain" code "mailbox_out_of_scope";
    WEBHOOK_KEY_MAILBOXES = 403 "This API key is limited to some mailboxes; the webhook announces every mailbox's mail" code "mailbox_out_of_scope";

    // ----------------------------------------------------------------------- mailboxes
    MAILBOX_ADDRESS_INVALID = 400 "That mailbox address is not valid";
    LOCAL_PART_REQUIRED = 400 "localPart is required";
    MODE_INVALID = 400 "mode must be hosted, forward, or both";
    FORWARD_TO_TYPE = 400 "forwardTo must be an array of addresses";
    FORWARD_TO_REQUIRED = 400 "forwardTo is required for forward and both";
    FORWARD_TO_HOSTED = 400 "forwardTo must be empty for a hosted mailbox";
    FORWARD_TO_TOO_MANY = 400 "forwardTo may hold at most 5 addresses";
    /// `{}` is the address as given.
    ACCEPT_SPOOFED_TYPE = 400 "acceptSpoofed must be a boolean";
    SPAM_FILTER_TYPE = 400 "spamFilter must be a boolean";
    SPAM_THRESHOLD_INVALID = 400 "spamThreshold must be a number from -50 to 100, or null";
    FORWARD_ADDRESS_INVALID = 400 "Invalid forwarding address: {}";
    FORWARD_TO_SELF = 400 "A mailbox cannot forward to itself";
    /// `{}` is the service domain.
    FORWARD_TO_SERVICE = 400 "Forwarding to {} is not allowed";
    /// The target address, then its domain.
    FORWARD_TO_MISSING = 400 "{} is not a mailbox on {}";
    FORWARDING_LOOP = 400 "That forwarding would create a forwarding loop";
    FORWARDING_BUSY = 409 "Forwarding is changing; try again.";
    DOMAIN_NOT_VERIFIED = 409 "Verify the domain before adding mailboxes.";
    MAILBOX_EXISTS = 409 "That mailbox already exists on this domain.";
    PROTECTED_MODE = 409 "That address is protected; it stays hosted." code "protected";
    PROTECTED_DELETE = 409 "That address is protected and cannot be deleted." code "protected";
    /// `{}` is the domain name.
    LAST_MAILBOX = 409 "This is the last mailbox on {}. Add another mailbox first, or contact support to remove the domain." code "last_mailbox";
    /// `{}` is the service domain.
    HOSTED_ONLY = 400 "Only hosted mailboxes can be added on {}";
    DELETE_TARGET_REQUIRED = 400 "address, or domain and localPart, is required";
    DELETE_TARGET_MISMATCH = 400 "address does not match domain and localPart";
    MAILBOX_ID_MISMATCH = 400 "mailboxId does not match domainId and localPart";
    ADDRESS_REQUIRED = 400 "address is required";
    FORWARD_ONLY_NO_LOGIN = 400 "Forward-only mailboxes have no IMAP/SMTP login";

    // ----------------------------------------------------------------- mail-host export
    VERSION_INVALID = 400 "version must be a positive integer";

    // ---------------------------------------------------------------------------- send
    SEND_REQUIRED = 400 "to, subject, and text are required";
    TOO_MANY_RECIPIENTS = 400 "Max 5 recipients per request";
    TEXT_TOO_LARGE = 400 "Body too large (max 100KB)";
    CHOOSE_FROM = 400 "Choose the address to send from";
    TO_TYPE = 400 "to must be a string or an array of addresses";
    TO_ITEMS = 400 "to must be addresses";
    /// `{}` is the address as given.
    RECIPIENT_INVALID = 400 "Invalid recipient address: {}";
    FROM_INVALID = 400 "from is not a valid email address";
    FROM_NOT_ALLOWED = 400 "from must be a hosted mailbox on your verified domain";
    SUBJECT_INVALID = 400 "subject must be one line of at most 998 characters";
    SUBJECT_TYPE = 400 "subject must be a string";
    TEXT_TYPE = 400 "text must be a string";
    REFERENCES_TYPE = 400 "references must be a string or an array of Message-IDs";
    REFERENCES_TOO_MANY = 400 "references may hold at most 100 Message-IDs";
    IN_REPLY_TO_INVALID = 400 "inReplyTo is not a valid Message-ID";
    REFERENCES_INVALID = 400 "references must be Message-IDs";
    ATTACHMENTS_TYPE = 400 "attachments must be an array";
    TOO_MANY_ATTACHMENTS = 400 "Max 3 attachments per request";
    ATTACHMENTS_TOO_LARGE = 400 "Attachments too large (max 4MB total)";
    // Each `{}` below is the attachment's position, from 1.
    ATTACHMENT_NOT_OBJECT = 400 "Attachment {} must be an object";
    ATTACHMENT_FILENAME_MISSING = 400 "Attachment {} needs a filename";
    ATTACHMENT_FILENAME_INVALID = 400 "Attachment {} has an invalid filename";
    ATTACHMENT_TYPE_NOT_STRING = 400 "Attachment {} contentType must be a string";
    ATTACHMENT_CONTENT_MISSING = 400 "Attachment {} needs contentBase64";
    ATTACHMENT_DATA_URL_INVALID = 400 "Attachment {} is not a valid data URL";
    ATTACHMENT_DATA_URL_NOT_BASE64 = 400 "Attachment {} data URL must be base64";
    ATTACHMENT_TOO_LARGE = 400 "Attachment {} is too large (max 2MB)";
    ATTACHMENT_BASE64_INVALID = 400 "Attachment {} is not valid base64";
    ATTACHMENT_EMPTY = 400 "Attachment {} is empty";
    ATTACHMENT_KIND_NOT_ALLOWED = 400 "Attachment {} is not an allowed file type";
    /// The second `{}` is the extension (`.exe`) or the type given.
    ATTACHMENT_TYPE_NOT_ALLOWED = 400 "Attachment {} type is not allowed: {}";
    ATTACHMENT_CONTENT_MISMATCH = 400 "Attachment {} content does not match its type";
    TOOL_NO_ATTACHMENTS = 400 "send_mail does not accept attachments";
    /// `{}` is the builder's reason.
    MESSAGE_NOT_BUILT = 400 "The message could not be built: {}";
    NO_HOSTED_MAILBOX = 403 "Add a fully hosted mailbox on a verified domain before sending.";
    IDEMPOTENCY_KEY_INVALID = 400 "Idempotency-Key must be 1 to 255 printable ASCII characters";
    IDEMPOTENCY_KEY_REUSED = 409 "This Idempotency-Key was used with a different request" code "idempotency_key_reused";
    IDEMPOTENCY_IN_PROGRESS = 409 "A request with this Idempotency-Key is still in progress" code "idempotency_in_progress";
    SENDING_PAUSED = 503 "Sending temporarily disabled";
    AGENT_KEY_DISABLED = 503 "Agent key disabled";
    SEND_FAILED = 500 "Send failed";
    NO_OUTBOUND_HOST = 500 "outbound host not configured";
    CC_TYPE = 400 "cc must be a string or an array of addresses";
    CC_ITEMS = 400 "cc must be addresses";
    BCC_TYPE = 400 "bcc must be a string or an array of addresses";
    BCC_ITEMS = 400 "bcc must be addresses";
    HTML_TYPE = 400 "html must be a string";
    HTML_TOO_LARGE = 400 "html too large (max 100KB)";
    // Replies and forwards (POST /reply, POST /forward and their tools).
    REPLY_TEXT_REQUIRED = 400 "text is required";
    ALL_TYPE = 400 "all must be a boolean";
    QUOTE_TYPE = 400 "quote must be a boolean";
    INCLUDE_ATTACHMENTS_TYPE = 400 "includeAttachments must be a boolean";
    REPLY_TOOL_NO_ATTACHMENTS = 400 "reply_to_message does not accept attachments";
    REPLY_NO_RECIPIENT = 400 "This message names no address to reply to";
    FORWARD_RECIPIENTS_REQUIRED = 400 "to is required: the addresses to forward the message to";
    /// `{}`: the send limit the original's files pass (an attachment's own sentence).
    FORWARD_FILES = 400 "The original's files cannot be carried ({}); forward it with includeAttachments false to leave them out";

    // ---------------------------------------------------------------- delivery
    /// `{}`: each address with why and since when.
    RECIPIENT_SUPPRESSED = 400 "Not sent: {}. Nothing was sent and no credit spent. Remove an address with DELETE /suppressions?address=<address> (MCP remove_suppression) once it can receive mail again." code "recipient_suppressed";
    SUPPRESSION_ADDRESS_INVALID = 400 "address must be an email address";
    SUPPRESSION_REASON_INVALID = 400 "reason must be text of at most 200 characters";
    SUPPRESSION_NOT_FOUND = 404 "That address is not on the suppression list";
    DELIVERY_EVENTS_INVALID = 400 "events must be an array of 1 to 100 delivery events, each with id, returnPath, status (delivered, deferred or bounced) and at";
    MAILBOX_SYNC_INVALID = 400 "after, limit, mark and applied must name marks of this service's changes: applied is an array of 1 to 200 {mark, stamp}";
    IMAP_CHANGES_INVALID = 400 "changes must be an array of 1 to 100 IMAP changes, each with seq, mailbox, messageId and one of seen, place or raw";
    WEBHOOK_EVENTS_INVALID = 400 "events must be a non-empty array of: inbound.received, outbound.delivered, outbound.deferred, outbound.bounced, outbound.complained, suppression.added, message.spam";

    // ---------------------------------------------------------------------- scoped keys
    KEY_NAME_REQUIRED = 400 "name is required: a label for the key (at most 64 characters)";
    KEY_NAME_INVALID = 400 "name must be one line of at most 64 characters";
    KEY_PERMISSIONS_INVALID = 400 "permissions must be a non-empty list of read, send, draft and manage";
    KEY_MAILBOXES_INVALID = 400 "mailboxes must be a list of at most 20 mailbox addresses";
    /// The addresses that are not the account's mailboxes are in `addresses`.
    KEY_MAILBOX_UNKNOWN = 400 "Every mailbox a key is scoped to must be a mailbox of this account (see addresses)";
    KEY_CAP_INVALID = 400 "dailySendCap must be an integer from 1 to 50 (the account's own daily limit)";
    KEY_EXPIRY_INVALID = 400 "expiresAt must be an RFC 3339 time in the future, at most a year ahead";
    KEY_APPROVAL_INVALID = 400 "approval must be none, first_contact or always";
    KEY_ID_INVALID = 400 "id must be a key id (key_ and 12 hex digits)";
    KEY_NOT_FOUND = 404 "Key not found";
    KEY_TOO_MANY = 409 "An account holds at most 20 scoped keys; revoke one first";
    KEY_DAILY_CAP = 429 "This API key's daily send cap is reached; it resets at 00:00 UTC";

    // ------------------------------------------------------------- holds and schedules
    HOLD_ID_REQUIRED = 400 "holdId is required";
    HOLD_ID_INVALID = 400 "holdId must be a hold id (snd_ and 16 hex digits)";
    HOLD_CODE_INVALID = 400 "code must be the 8-digit approval code from the email";
    /// The local server's operator sign-in for the web app (`http::web_sign_in`).
    SIGN_IN_CODE_INVALID = 401 "This sign-in code is not valid or has expired; ask for a new one";
    HOLD_NOT_FOUND = 404 "Hold not found";
    /// Without a credential, only the emailed code decides.
    HOLD_CODE_REQUIRED = 401 "code is required: the approval code emailed to the account's owner, or call with the account key";
    HOLD_CODE_WRONG = 401 "That approval code is not valid for this hold";
    HOLD_CODE_LOCKED = 403 "Too many wrong codes: approve or deny this hold with the account key";
    HOLD_DECIDED = 409 "This send was already decided or has gone out";
    HOLD_EXPIRED = 410 "This hold expired unanswered after 24 hours; nothing was sent";
    SEND_AT_INVALID = 400 "sendAt must be an RFC 3339 time in the future, at most 30 days ahead";
    UNDO_SECONDS_INVALID = 400 "undoSeconds must be an integer from 0 to 600";
    WAITING_SEND_NOT_FOUND = 404 "No scheduled or held send has that Message-ID";

    // -------------------------------------------------------------- allow and block lists
    LIST_DIRECTION_REQUIRED = 400 "direction is required: send or receive";
    LIST_DIRECTION_INVALID = 400 "direction must be send or receive";
    LIST_KIND_REQUIRED = 400 "kind is required: allow or block";
    LIST_KIND_INVALID = 400 "kind must be allow or block";
    LIST_ENTRY_REQUIRED = 400 "entry is required: an email address or a domain";
    LIST_ENTRY_INVALID = 400 "entry must be an email address or a domain name such as example.com";
    LIST_MAILBOX_INVALID = 400 "mailbox must be a mailbox address of this account";
    /// The mailbox is named in `addresses`.
    LIST_MAILBOX_UNKNOWN = 400 "mailbox must be an active mailbox of this account (see addresses)";
    /// A key narrowed to some mailboxes adding or removing an account-wide entry.
    LIST_MAILBOX_NEEDED = 403 "This API key is narrowed to some mailboxes: name one of them in mailbox" code "mailbox_out_of_scope";
    LIST_ENTRY_NOT_FOUND = 404 "That entry is not on the list";
    LIST_FULL = 409 "An account holds at most 500 list entries; remove one first" code "lists_full";
    /// `{}`: the blocked addresses.
    RECIPIENT_BLOCKED = 400 "Not sent: {} on your block list. Nothing was sent and no credit spent. See GET /lists?direction=send (MCP get_lists)." code "recipient_blocked";
    /// `{}`: the addresses no allow list entry matches.
    RECIPIENT_NOT_ALLOWED = 400 "Not sent: {} not on your allow list. Nothing was sent and no credit spent. See GET /lists?direction=send (MCP get_lists)." code "recipient_not_allowed";

    // ------------------------------------------------------------------------ audit log
    AUDIT_ACTOR_INVALID = 400 "actor must be a key id (key_...) or an email address";
    AUDIT_OPERATION_INVALID = 400 "operation must be an operationId of the API (such as sendMail)";

    // ------------------------------------------------------------- SMTP submission
    SUBMISSION_FIELDS = 400 "login, sender, recipients and raw are required";
    SUBMISSION_UNREADABLE = 400 "The submitted message could not be read";
    SUBMISSION_TOO_LARGE = 400 "The submitted message is too large (max 4MB)";
    SUBMISSION_NOT_SENDABLE = 403 "This mailbox cannot send: it must be a hosted mailbox on a verified domain";
    SUBMISSION_SENDER = 400 "A mailbox password sends only as its own address: the envelope sender and From: must both be that mailbox";

    // --------------------------------------------------------------------------- pages
    /// A page's limit names the range its route takes (`values::page::Limit`):
    /// most lists page up to 50 rows, `GET /audit` and `GET /outbox/waiting` up to 100.
    LIMIT_TO_50_INVALID = 400 "limit must be an integer from 1 to 50";
    LIMIT_TO_100_INVALID = 400 "limit must be an integer from 1 to 100";
    /// Any list's `cursor` (the nextCursor of its previous page), and the inbox's `after`.
    CURSOR_INVALID = 400 "cursor and after must be a cursor or message id from this API";

    // --------------------------------------------------------------------------- inbox
    INBOX_MAILBOX_INVALID = 400 "mailbox must be an address at the service domain, and only the agent key or an operator may name one";
    INBOX_ID_INVALID = 400 "id must match ^[A-Za-z0-9_-]{1,128}$";
    UNREAD_TYPE = 400 "unread must be a boolean";
    ATTACHMENT_INDEX_INVALID = 400 "index is required and must be an integer from 0 to 2";
    FILE_INDEX_INVALID = 400 "index is required and must be an integer from 0 to 19";
    INBOX_MESSAGE_ID_INVALID = 400 "messageId must be a Message-ID such as <id@example.com>";
    INBOX_THREAD_INVALID = 400 "thread must be 64 lowercase hex characters";
    INBOX_VIEW_INVALID = 400 "view must be threads, quarantine or spam";
    /// list_inbox's: its threads are another tool's.
    LIST_VIEW_INVALID = 400 "view must be quarantine or spam (threads: list_threads)";
    INBOX_ENVELOPE_INVALID = 400 "envelope must be true or false";
    INBOX_QUERY_INVALID = 400 "q must be 2 to 200 characters";
    INBOX_FOLDER_INVALID = 400 "folder must be inbox, archive or trash";
    INBOX_WAIT_INVALID = 400 "wait must be an integer from 1 to 25";
    WAITS_BUSY = 429 "This key already holds 5 waits for mail; let one finish first";
    INBOX_FILTER_INVALID = 400 "from and subject must be strings of at most 200 characters";
    INBOX_TARGET_REQUIRED = 400 "thread, id or messageId is required";
    /// Emptying the whole trash is asked for by name, never by a body that
    /// happened to name no message (a client's bug would lose every one).
    MAIL_TO_DELETE_REQUIRED = 400 "Name the mail to delete (id, messageId or thread), or set emptyTrash to true to empty the trash";
    EMPTY_TRASH_TYPE = 400 "emptyTrash must be a boolean";
    INBOX_NOT_IN_TRASH = 409 "Only mail in the trash can be deleted for good: move it to trash first." code "not_in_trash";
    INBOX_CHANGE_REQUIRED = 400 "unread, folder or spam is required";
    SPAM_TYPE = 400 "spam must be a boolean";
    SPAM_ALONE = 400 "spam is reported alone, for one message: id or messageId, without thread, unread or folder";
    SPAM_OUTBOUND = 400 "Only received mail can be reported as spam or not spam";
    SPAM_QUARANTINED = 409 "This message is in the quarantine, not the inbox or the spam folder: it cannot be reported";
    SPAM_TRAINING_DONE_INVALID = 400 "done must be an array of at most 100 training job ids";
    MESSAGE_TARGET_REQUIRED = 400 "id or messageId is required";
    MAX_CHARS_INVALID = 400 "maxChars must be an integer from 100 to 1000000";
    ATTACHMENT_BOX_INVALID = 400 "box must be inbound or outbound";
    ATTACHMENT_DISPOSITION_INVALID = 400 "disposition must be inline";

    // -------------------------------------------------------------------------- search
    SEARCH_QUERY_INVALID = 400 "q must be 1 to 500 characters";
    /// `{}` names the part of the query that cannot be read, and why.
    SEARCH_QUERY_UNREADABLE = 400 "q could not be read: {}" code "query_unreadable";
    SEARCH_SORT_INVALID = 400 "sort must be newest or relevance";
    SEARCH_CURSOR_INVALID = 400 "cursor must be the nextCursor of a search in the same order";

    // -------------------------------------------------------------------------- drafts
    DRAFT_EMPTY = 400 "A draft needs at least one of to, subject, text or inReplyTo";
    DRAFTS_FULL = 400 "Max 50 drafts per user";

    // ------------------------------------------------------------------------ webhooks
    WEBHOOK_URL_HTTPS = 400 "url must be https";
    WEBHOOK_HOST = 400 "url host is not allowed";
    WEBHOOK_HOST_UNRESOLVED = 400 "url host did not resolve to an address";
    ENABLED_TYPE = 400 "enabled must be a boolean";
    ROTATE_SECRET_TYPE = 400 "rotateSecret must be a boolean";
    WEBHOOK_URL_REQUIRED = 400 "url is required to register a webhook";
    WEBHOOK_NONE = 409 "Register an enabled webhook before replaying";
    EVENT_ID_INVALID = 400 "eventId must be an event id from the delivery log (evt_...)";
    REPLAY_TARGET = 400 "eventId, or from and to (ISO 8601, at most 24 hours apart), is required";
}

impl Problem {
    /// This problem with its `{}` replaced by `detail`.
    pub fn with(self, detail: impl std::fmt::Display) -> ApiError {
        self.with_each(&[&detail])
    }

    /// This problem with each `{}` replaced by the next detail, in order.
    pub fn with_each(self, details: &[&dyn std::fmt::Display]) -> ApiError {
        ApiError {
            error: Cow::Owned(fill(self.sentence, details)),
            ..ApiError::from(self)
        }
    }

    /// This problem, logging the cause a client never sees (for 500s).
    pub fn caused_by(self, cause: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, sentence = self.sentence, "request failed");
        self.into()
    }
}

/// `sentence` with each `{}` replaced by the next detail, in order (an empty
/// one past the last detail).
pub fn fill(sentence: &str, details: &[&dyn std::fmt::Display]) -> String {
    let mut filled = String::new();
    let mut parts = sentence.split("{}");
    filled.push_str(parts.next().unwrap_or_default());
    let details = details
        .iter()
        .map(|d| d.to_string())
        .chain(std::iter::repeat_with(String::new));
    for (part, detail) in parts.zip(details) {
        filled.push_str(&detail);
        filled.push_str(part);
    }
    filled
}

/// What a client reads: `{ok: false, error, code?, retryAfter?}` and a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub error: Cow<'static, str>,
    pub code: Option<&'static str>,
    pub retry_after: Option<u64>,
    /// The addresses a refusal is about (a suppressed recipient's).
    pub addresses: Option<Vec<String>>,
}

impl From<Problem> for ApiError {
    fn from(p: Problem) -> Self {
        ApiError {
            status: p.status,
            error: Cow::Borrowed(p.sentence),
            code: p.code,
            retry_after: None,
            addresses: None,
        }
    }
}

/// The error body of part 2.3.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody<'a> {
    /// Always false.
    pub ok: bool,
    pub error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The recipients a refusal names (recipient_suppressed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addresses: Option<&'a [String]>,
}

impl ApiError {
    pub fn rate_limited(retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after.max(1)),
            ..RATE_LIMITED.into()
        }
    }

    /// A failure the client cannot act on: the cause goes to the log line, the
    /// client reads the fixed sentence.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        INTERNAL.caused_by(cause)
    }

    pub fn is(&self, problem: Problem) -> bool {
        self.status == problem.status && self.code == problem.code && {
            // Each fixed piece of the sentence, in order, around the details.
            let mut rest: &str = &self.error;
            let pieces: Vec<&str> = problem.sentence.split("{}").collect();
            pieces.iter().enumerate().all(|(i, piece)| {
                let found = match i {
                    0 => rest.starts_with(piece).then_some(0),
                    _ if i == pieces.len() - 1 => rest.ends_with(piece).then(|| rest.len() - piece.len()),
                    _ => rest.find(piece),
                };
                found.is_some_and(|at| {
                    rest = &rest[at + piece.len()..];
                    true
                })
            })
        }
    }

    pub fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            ok: false,
            error: &self.error,
            code: self.code,
            retry_after: self.retry_after,
            addresses: self.addresses.as_deref(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.error)
    }
}

impl std::error::Error for ApiError {}

/// Seconds a client waits before retrying when the store is unavailable.
pub const STORE_RETRY_AFTER: u64 = 1;

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(_) => ApiError {
                retry_after: Some(STORE_RETRY_AFTER),
                ..STORE_UNAVAILABLE.caused_by(format_args!("storage request failed: {err}"))
            },
            // A condition that fails here was not expected by the caller: the service
            // layer handles every condition it means to branch on before this point.
            _ => INTERNAL.caused_by(format_args!("storage request failed: {err}")),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(retry_after) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sentence_is_written_once() {
        let mut seen = std::collections::HashSet::new();
        for p in ALL {
            assert!(
                seen.insert((p.sentence, p.code)),
                "{:?} is in the catalogue twice",
                p.sentence
            );
            // A detail fills a sentence; it never is one.
            assert!(
                !p.sentence.replace("{}", "").trim().is_empty(),
                "{:?} is only a placeholder",
                p.sentence
            );
            assert!((400..600).contains(&p.status));
        }
    }

    #[test]
    fn a_backend_failure_shows_a_fixed_sentence() {
        let e = ApiError::from(StoreError::Backend("ValidationException: table secret-name".into()));
        assert_eq!((e.status, e.error.as_ref()), (500, "Internal error"));
        let e = SEND_FAILED.caused_by("535 5.7.8 auth failed for relay-user");
        assert_eq!(e.error, "Send failed");
        assert_eq!(ApiError::internal("s3: AccessDenied").error, "Internal error");
        let e = ApiError::from(StoreError::Unavailable("ThrottlingException: slow down".into()));
        assert_eq!(
            (e.status, e.error.as_ref(), e.retry_after),
            (503, "The service is busy; try again in a moment", Some(1))
        );
    }

    #[test]
    fn details_fill_the_placeholder() {
        let e = LAST_MAILBOX.with("example.com");
        assert_eq!(
            e.error,
            "This is the last mailbox on example.com. Add another mailbox first, or contact support to remove the domain."
        );
        assert_eq!(e.code, Some("last_mailbox"));
        assert!(e.is(LAST_MAILBOX));
        let e = ATTACHMENT_TYPE_NOT_ALLOWED.with_each(&[&2, &".exe"]);
        assert_eq!(e.error, "Attachment 2 type is not allowed: .exe");
        assert!(e.is(ATTACHMENT_TYPE_NOT_ALLOWED));
        assert!(!e.is(ATTACHMENT_EMPTY));
    }
}
