//! Drafts (spec 4.5): a signed-in person's unsent mail.

use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, delete, get, io, post_text, tool};
use crate::service::receiving::drafts;

pub static DRAFTS: Section = Section {
    operations: &[
        Operation {
            id: "getDrafts",
            rest: get("/drafts"),
            tool: tool("list_drafts", Hints::READ),
            access: Drafting,
            permission: Some(Permission::Draft),
            summary: "Read one draft, or the newest 25",
            description: "With id: {ok, draft}; without: {ok, drafts}, the caller's newest 25. A signed-in operator's \
                          own drafts only; another user's draft is 404. No credits.",
            errors: &[INBOX_ID_INVALID, NOT_FOUND],
            io: io!(drafts::get, drafts::DraftQuery, drafts::DraftsOutput),
        },
        Operation {
            id: "saveDraft",
            rest: post_text("/drafts"),
            tool: tool("save_draft", Hints::SET.not_idempotent()),
            access: Drafting,
            permission: Some(Permission::Draft),
            summary: "Create a draft, or replace the content of one",
            description: "to (at most 5 addresses), subject (one line, at most 998 characters), text (at most 100KB), \
                          inReplyTo, references (at most 100): at least one of to, subject, text or inReplyTo; and, \
                          kept when given, cc, bcc and from as sendMail takes them (to, cc and bcc at most 5 distinct \
                          addresses together; from is checked when sent). Without id creates one (at most 50 per \
                          user); with id replaces that draft's content. Returns {ok, draft}. Send it with POST \
                          /sendMail, then delete it. No credits.",
            errors: &[
                SUBJECT_TYPE,
                TEXT_TYPE,
                DRAFT_EMPTY,
                INBOX_ID_INVALID,
                SUBJECT_INVALID,
                TEXT_TOO_LARGE,
                TOO_MANY_RECIPIENTS,
                RECIPIENT_INVALID,
                TO_TYPE,
                TO_ITEMS,
                CC_TYPE,
                CC_ITEMS,
                BCC_TYPE,
                BCC_ITEMS,
                FROM_INVALID,
                IN_REPLY_TO_INVALID,
                REFERENCES_INVALID,
                REFERENCES_TOO_MANY,
                REFERENCES_TYPE,
                DRAFTS_FULL,
                NOT_FOUND,
            ],
            io: io!(drafts::save, drafts::DraftInput, drafts::DraftSaved),
        },
        Operation {
            id: "deleteDraft",
            rest: delete("/drafts"),
            tool: tool("delete_draft", Hints::DESTROY),
            access: Drafting,
            permission: Some(Permission::Draft),
            summary: "Delete a draft",
            description: "Deletes the caller's draft id: {ok, id}. 404 when it is not theirs or is gone.",
            errors: &[ID_REQUIRED, INBOX_ID_INVALID, NOT_FOUND],
            io: io!(drafts::delete, drafts::DraftTarget, drafts::DraftDeleted),
        },
    ],
};
