//! Guardrails: scoped keys, the audit log, allow and block lists: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::audit;
use super::lists;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, delete, get, io, post, tool};

/// What lets an owner hand an agent a key safely: scoped keys, the audit
/// log, and allow and block lists (served by the onboarding function,
/// beside the account's status).
pub static GUARDRAILS: Section = Section {
    operations: &[
        Operation {
            id: "getAudit",
            rest: get("/audit"),
            tool: tool("list_audit", Hints::READ),
            access: Owner,
            permission: None,
            summary: "Who changed what: the account's audit log, newest first",
            description: "Every change made through the API or MCP (keys, domains, mailboxes, credentials, \
                          suppressions, webhooks, switches, sends), and every 403 refusal (a scoped key's missing \
                          permission or mailbox): {ok, changes, \
                          nextCursor?}, each {at, actor {kind, keyId?, name?, email?}, operation, target, status, \
                          error?, via, requestId, ip}. Filters: actor (a key id or an email), operation (an \
                          operationId); limit 1 to 100 (default 25), cursor. Kept 90 days; never holds a secret. \
                          The account key or an operator only.",
            errors: &[
                LIMIT_TO_100_INVALID,
                CURSOR_INVALID,
                AUDIT_ACTOR_INVALID,
                AUDIT_OPERATION_INVALID,
                SETUP_INCOMPLETE,
            ],
            io: io!(audit::list, audit::AuditQuery, audit::AuditPage),
        },
        Operation {
            id: "getLists",
            rest: get("/lists"),
            tool: tool("get_lists", Hints::READ),
            access: Customer,
            permission: Some(Permission::Read),
            summary: "The account's allow and block lists for sending and receiving",
            description: "{ok, entries}: each {direction (send or receive), kind (allow or block), entry (an address, \
                          or a domain that also matches its subdomains), mailbox? (absent: every mailbox of the \
                          account), createdAt}, sorted by direction, kind, mailbox (account-wide first) and entry. \
                          Filters: direction, kind. A send to a blocked recipient, or to one a non-empty allow list \
                          (the account-wide entries and the sending mailbox's) does not name, is refused whole \
                          before any credit is spent (recipient_blocked, recipient_not_allowed).",
            errors: &[LIST_DIRECTION_INVALID, LIST_KIND_INVALID, SETUP_INCOMPLETE],
            io: io!(lists::list, lists::ListQuery, lists::ListPage),
        },
        Operation {
            id: "addListEntry",
            rest: post("/lists"),
            tool: tool("add_list_entry", Hints::SET),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Allow or block an address or a domain, for sending or receiving",
            description: "{direction: send | receive, kind: allow | block, entry: an address or a domain (with its \
                          subdomains), mailbox?: one active mailbox of the account (default: all of them)}. {ok, \
                          entry, added}; an entry already there answers added false. A block wins over an allow; \
                          once an allow list holds an entry, only what it names passes. At most 500 entries per \
                          account. A scoped key may add block entries only (addedBy names it).",
            errors: &[
                LIST_DIRECTION_REQUIRED,
                LIST_DIRECTION_INVALID,
                LIST_KIND_REQUIRED,
                LIST_KIND_INVALID,
                LIST_ENTRY_REQUIRED,
                LIST_ENTRY_INVALID,
                LIST_MAILBOX_INVALID,
                LIST_MAILBOX_UNKNOWN,
                LIST_MAILBOX_NEEDED,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_OWNER_GUARDRAIL,
                LIST_FULL,
                SETUP_INCOMPLETE,
            ],
            io: io!(lists::add, lists::EntryInput, lists::Added),
        },
        Operation {
            id: "removeListEntry",
            rest: delete("/lists"),
            tool: tool("remove_list_entry", Hints::DESTROY),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Take an entry off an allow or block list",
            description: "direction, kind, entry and mailbox? as added (in the query or the body): {ok, removed}. 404 \
                          when the entry is not there. A scoped key removes only the entries it added.",
            errors: &[
                LIST_DIRECTION_REQUIRED,
                LIST_DIRECTION_INVALID,
                LIST_KIND_REQUIRED,
                LIST_KIND_INVALID,
                LIST_ENTRY_REQUIRED,
                LIST_ENTRY_INVALID,
                LIST_MAILBOX_INVALID,
                LIST_MAILBOX_NEEDED,
                KEY_MAILBOX_OUT_OF_SCOPE,
                KEY_OWNER_GUARDRAIL,
                LIST_ENTRY_NOT_FOUND,
                SETUP_INCOMPLETE,
            ],
            io: io!(lists::remove, lists::EntryInput, lists::Removed),
        },
    ],
};
