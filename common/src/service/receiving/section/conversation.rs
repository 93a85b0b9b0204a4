//! Reply and forward: received mail answered (served by the send function).

use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, Tool, io, post_large, post_text};
use crate::service::receiving::conversation;
use crate::service::sending::send;
use crate::validate::Later;

/// The send function's operations that receiving holds.
pub static CONVERSATION: Section = Section {
    operations: &[
        Operation {
            id: "reply",
            rest: post_large("/reply"),
            tool: Some(Tool {
                name: "reply_to_message",
                hints: Hints::CREATE.open_world(),
            }),
            access: Mail,
            permission: Some(Permission::Send),
            summary: "Reply (or reply all) to a stored message by its id",
            description: "id or messageId of a message you can read, and text (html optional). The service fills in \
                          the rest: To is its sender (or its Reply-To), by name; all=true adds everyone on its To and \
                          Cc except the mailbox itself, each once; the subject gets `Re: ` once; In-Reply-To and \
                          References carry the chain; it is sent from the mailbox the message is in (the agent key \
                          always sends as noreply@) and filed on its thread (GET /inbox?thread=). The original is \
                          quoted below the text and the html (quote=false leaves it out). Every sendMail rule \
                          applies, with its sentences: at most 5 recipients, 1 credit for keys, the rate windows, \
                          lists, suppressions, holds, sendAt/undoSeconds (202), idempotencyKey. Needs the read and \
                          send permissions. Answers as sendMail, with the to, cc and subject it used. Attachments \
                          are REST only.",
            errors: &[
                MESSAGE_TARGET_REQUIRED,
                INBOX_ID_INVALID,
                INBOX_MESSAGE_ID_INVALID,
                INBOX_MAILBOX_INVALID,
                REPLY_TEXT_REQUIRED,
                TEXT_TYPE,
                TEXT_TOO_LARGE,
                HTML_TYPE,
                HTML_TOO_LARGE,
                ALL_TYPE,
                QUOTE_TYPE,
                REPLY_TOOL_NO_ATTACHMENTS,
                REPLY_NO_RECIPIENT,
                NOT_FOUND,
                KEY_LACKS_READ,
                SENDING_PAUSED,
                AGENT_KEY_DISABLED,
                RATE_LIMITED,
                TOO_MANY_RECIPIENTS,
                FROM_NOT_ALLOWED,
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
            ],
            io: io!(accepted conversation::reply, Later<conversation::ReplyInput>, send::SendOutput),
        },
        Operation {
            id: "forward",
            rest: post_text("/forward"),
            tool: Some(Tool {
                name: "forward_message",
                hints: Hints::CREATE.open_world(),
            }),
            access: Mail,
            permission: Some(Permission::Send),
            summary: "Forward a stored message by its id",
            description: "id or messageId of a message you can read, to (cc, bcc as sendMail's; at most 5 in all), an \
                          optional note as text and/or html. Sent from the mailbox the message is in, subject `Fwd: ` \
                          once, the original inline below the note (its sender, date, subject, To and Cc, then its \
                          text, and its HTML when it had one) with its files attached (within the send limits: 3 \
                          files, 2MB each, 4MB in all, the allowed types; otherwise refused, saying which; \
                          includeAttachments=false leaves them out). Its References keep it on the forwarded \
                          conversation's thread. Every sendMail rule applies, with its sentences. Needs the read and \
                          send permissions. Answers as sendMail, with the to, cc and subject it used.",
            errors: &[
                MESSAGE_TARGET_REQUIRED,
                INBOX_ID_INVALID,
                INBOX_MESSAGE_ID_INVALID,
                INBOX_MAILBOX_INVALID,
                FORWARD_RECIPIENTS_REQUIRED,
                TO_TYPE,
                TO_ITEMS,
                RECIPIENT_INVALID,
                CC_TYPE,
                CC_ITEMS,
                BCC_TYPE,
                BCC_ITEMS,
                TEXT_TYPE,
                TEXT_TOO_LARGE,
                HTML_TYPE,
                HTML_TOO_LARGE,
                INCLUDE_ATTACHMENTS_TYPE,
                FORWARD_FILES,
                NOT_FOUND,
                KEY_LACKS_READ,
                SENDING_PAUSED,
                AGENT_KEY_DISABLED,
                RATE_LIMITED,
                TOO_MANY_RECIPIENTS,
                FROM_NOT_ALLOWED,
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
            ],
            io: io!(accepted conversation::forward, Later<conversation::ForwardInput>, send::SendOutput),
        },
    ],
};
