//! What the operators run: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::admin;
use super::mta_export;
use super::removal;
use crate::auth::Access::*;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, delete, get, io, post, tool};
use crate::validate::NoInput;

pub static ADMIN: Section = Section {
    operations: &[
        Operation {
            id: "requestDecision",
            rest: post("/admin/requestDecision"),
            tool: tool("operator_decide_request", Hints::SET),
            access: Operator,
            permission: None,
            summary: "Approve or deny a verified access request's account",
            description: "Operators only. approve makes the account ready; deny makes it unavailable and revokes \
                          its key.",
            errors: &[
                ID_REQUIRED,
                DECISION_INVALID,
                DECISION_ID_INVALID,
                NOT_FOUND,
                NOT_READY_FOR_DECISION,
            ],
            io: io!(admin::request_decision, admin::DecisionInput, admin::DecisionOutput),
        },
        Operation {
            id: "listDomainAllowlist",
            rest: get("/admin/domainAllowlist"),
            tool: tool("list_domain_allowlist", Hints::READ),
            access: Operator,
            permission: None,
            summary: "List the allowlisted domains",
            description: "Operators only. New accounts whose email is on one of these domains are ready at once.",
            errors: &[],
            io: io!(admin::list_allowlist, NoInput, admin::Allowlist),
        },
        Operation {
            id: "addDomainAllowlist",
            rest: post("/admin/domainAllowlist"),
            tool: tool("add_domain_allowlist", Hints::SET),
            access: Operator,
            permission: None,
            summary: "Allowlist a domain",
            description: "Operators only. New accounts with an email on this exact domain (not its subdomains) are \
                          ready at once. Adding it again changes nothing (added false).",
            errors: &[ALLOWLIST_DOMAIN_REQUIRED, DOMAIN_INVALID],
            io: io!(admin::add_allowlist, admin::DomainInput, admin::AllowlistAdded),
        },
        Operation {
            id: "removeDomainAllowlist",
            rest: delete("/admin/domainAllowlist"),
            tool: tool("remove_domain_allowlist", Hints::DESTROY),
            access: Operator,
            permission: None,
            summary: "Remove a domain from the allowlist",
            description: "Operators only. `domain` in the body or the query. Accounts already created are unchanged.",
            errors: &[ALLOWLIST_DOMAIN_REQUIRED, DOMAIN_INVALID],
            io: io!(admin::remove_allowlist, admin::DomainInput, admin::AllowlistRemoved),
        },
        Operation {
            id: "checkDomainAllowlist",
            rest: get("/admin/domainAllowlist/check"),
            tool: tool("check_domain_allowlist", Hints::READ),
            access: Operator,
            permission: None,
            summary: "Whether a domain is allowlisted",
            description: "Operators only. Whether new accounts with an email on this domain are ready at once.",
            errors: &[ALLOWLIST_DOMAIN_REQUIRED, DOMAIN_INVALID],
            io: io!(admin::check_allowlist, admin::DomainInput, admin::AllowlistCheck),
        },
        Operation {
            id: "requestDelete",
            rest: post("/admin/requestDelete"),
            tool: tool("operator_delete_request", Hints::DESTROY),
            access: Operator,
            permission: None,
            summary: "Delete access requests by id",
            description: "Operators only. Deletes exactly the named access requests (`id` and/or `ids`, at most 200), \
                          with no duplicate search; the account and its key stay. One audit row per id; clears the \
                          email's request rate counter.",
            errors: &[ID_TYPE, DELETE_IDS_REQUIRED, DELETE_IDS_TYPE, DELETE_IDS_TOO_MANY],
            io: io!(admin::request_delete, admin::DeleteInput, admin::DeleteOutput),
        },
        Operation {
            id: "requestDuplicates",
            rest: get("/admin/requestDuplicates"),
            tool: tool("operator_find_duplicate_requests", Hints::READ),
            access: Operator,
            permission: None,
            summary: "Preview access requests sharing an email or a domain",
            description: "Operators only. Query `email` and/or `domain`; newest first.",
            errors: &[DUPLICATES_FILTER_REQUIRED, EMAIL_INVALID, DOMAIN_INVALID],
            io: io!(
                admin::request_duplicates,
                admin::DuplicatesInput,
                admin::DuplicatesOutput
            ),
        },
    ],
};

/// The domains function's operations that operators holds.
pub static REMOVAL: Section = Section {
    operations: &[Operation {
        id: "operatorRemoveDomain",
        rest: post("/operatorRemoveDomain"),
        tool: tool("operator_remove_domain", Hints::DESTROY),
        access: Operator,
        permission: None,
        summary: "Remove a customer's domain and delete its stored mail",
        description: "Operators only. uid or ownerEmail, domainId, and confirm (the domain name, required when \
                          the domain has mailboxes). Marks the domain and its mailboxes removed, permanently deletes \
                          their stored mail, and releases the claim. The service domain is refused (system_domain).",
        errors: &[
            CONFIRM_TYPE,
            REMOVE_OWNER_REQUIRED,
            REMOVE_OWNER_MISMATCH,
            OWNER_EMAIL_INVALID,
            DOMAIN_ID_REQUIRED,
            DOMAIN_INVALID,
            CONFIRM_REQUIRED,
            UID_INVALID,
            NOT_FOUND,
            SYSTEM_DOMAIN,
            PROTECTED_DOMAIN,
        ],
        io: io!(
            removal::operator_remove_domain,
            removal::RemoveInput,
            removal::RemoveOutput
        ),
    }],
};

/// The mailboxes function's operations that operators holds.
pub static MAIL_HOST: Section = Section {
    operations: &[
        // The mail host's side: it reads the export and acknowledges what it applied.
        Operation {
            id: "getMtaMailboxExport",
            rest: get("/mtaMailboxExport"),
            tool: None,
            access: Sync,
            permission: None,
            summary: "The newest mailbox export for the mail host",
            description: "The mail host's sync token only. Postfix maps, Dovecot passwd-file lines and each mailbox's \
                          delivery plan, under a version. 404 before the first export.",
            errors: &[NOT_FOUND],
            io: io!(mta_export::latest, NoInput, mta_export::LatestExport),
        },
        Operation {
            id: "acknowledgeMtaMailboxExport",
            rest: post("/mtaMailboxExport"),
            tool: None,
            access: Sync,
            permission: None,
            summary: "Acknowledge the export version the mail host applied",
            description: "The mail host's sync token only. Marks the mailbox changes that version carried as live \
                          (mtaApplied). 404 for an unknown or forgotten version.",
            errors: &[VERSION_INVALID, NOT_FOUND],
            io: io!(
                mta_export::acknowledge_export,
                mta_export::AckInput,
                mta_export::Acknowledged
            ),
        },
    ],
};
