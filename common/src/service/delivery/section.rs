//! Delivery: the outbox, suppressions, the mail host's log, DMARC reports: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::dmarc;
use super::mta_events;
use super::outbox;
use super::suppressions;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, delete, get, io, post, tool};

/// The domains function's operations that delivery holds.
pub static DMARC: Section = Section {
    operations: &[
        Operation {
            id: "listDmarcReports",
            rest: get("/dmarcReports"),
            tool: tool("list_dmarc_reports", Hints::READ),
            access: Customer,
            permission: Some(Permission::Read),
            summary: "The DMARC aggregate reports received about a domain",
            description: "The reports receivers sent about domainId (its DMARC record's rua names this service), \
                          newest period first, kept 180 days: per report the reporter (orgName, email, reportId), \
                          the period (begin, end), and per source IP the message count, the disposition, the \
                          aligned DKIM and SPF results, the header From and each DKIM and SPF check; the report \
                          mail's own verdict (mail {from, authentication}) and whether it proved its reporter \
                          (authenticated: DMARC pass for the reporter's own domain); and a summary of the listed \
                          authenticated reports (messages passing and failing, the 5 sources failing most; \
                          unauthenticated counts the others, left out). The tool wraps what a report's author wrote \
                          in envelope.delimiter. limit 1 to 50 (default 25), cursor. A key limited to some \
                          mailboxes may not read them.",
            errors: &[
                DOMAIN_ID_REQUIRED,
                DOMAIN_INVALID,
                LIMIT_TO_50_INVALID,
                CURSOR_INVALID,
                DMARC_KEY_MAILBOXES,
                SETUP_INCOMPLETE,
                NOT_FOUND,
            ],
            io: io!(
                dmarc::list_dmarc_reports,
                dmarc::DmarcReportsInput,
                dmarc::DmarcReportsOutput
            ),
        },
        Operation {
            id: "getDmarcSummary",
            rest: None,
            tool: tool("get_dmarc_summary", Hints::READ),
            access: Customer,
            permission: Some(Permission::Read),
            summary: "Who sends mail as a domain, and how much of it fails DMARC",
            description: "The summary of the DMARC reports about domainId that list_dmarc_reports would list with \
                          the same limit and cursor (default the newest 25): the period they cover, messages \
                          passing and failing DMARC, and the 5 source IPs with the most failing messages. Failing \
                          sources that are yours need SPF or DKIM set up; others may be forging the domain.",
            errors: &[
                DOMAIN_ID_REQUIRED,
                DOMAIN_INVALID,
                LIMIT_TO_50_INVALID,
                CURSOR_INVALID,
                DMARC_KEY_MAILBOXES,
                SETUP_INCOMPLETE,
                NOT_FOUND,
            ],
            io: io!(
                dmarc::get_dmarc_summary,
                dmarc::DmarcReportsInput,
                dmarc::DmarcSummaryOutput
            ),
        },
    ],
};

pub static DELIVERY: Section = Section {
    operations: &[
        Operation {
            id: "getOutbox",
            rest: get("/outbox"),
            tool: None,
            access: Mail,
            permission: Some(Permission::Read),
            summary: "Sent mail and what happened to it, per recipient",
            description: "Newest first: {ok, messages, nextCursor?}, each sent message with its recipients and their \
                          status: sent (the relay accepted it), delivered, deferred, bounced, complained or failed \
                          (the relay refused it), the last remote reply (smtpCode, enhancedStatus, text, remoteHost), \
                          the attempts seen and every change. messageId=<Message-ID> gives {ok, message} for one. \
                          limit 1 to 50 (default 25). A standard key sees its account's mail; the agent key and \
                          operators the service-domain sender's. Mail to delivered@, bounced@, deferred@, complained@ \
                          and autoreply@simulator.<service domain> (with any +label) never leaves the service and \
                          plays that outcome within a second, free of credit.",
            errors: &[INBOX_MESSAGE_ID_INVALID, LIMIT_TO_50_INVALID, CURSOR_INVALID, NOT_FOUND],
            io: io!(outbox::outbox, outbox::OutboxQuery, outbox::OutboxOutput),
        },
        Operation {
            id: "listOutbox",
            rest: None,
            tool: tool("list_outbox", Hints::READ),
            access: Mail,
            permission: Some(Permission::Read),
            summary: "List sent mail with each recipient's delivery status, newest first",
            description: "{ok, messages, nextCursor?}: as GET /outbox. Each recipient's status is sent, delivered, \
                          deferred, bounced, complained or failed, with the last remote reply, whose text and host \
                          come inside `<D>...</D>`, D being envelope.delimiter (random per response). Test outcomes \
                          without real mail by sending to delivered@, bounced@, deferred@, complained@ or \
                          autoreply@simulator.<service domain>.",
            errors: &[LIMIT_TO_50_INVALID, CURSOR_INVALID],
            io: io!(outbox::list, outbox::ListQuery, outbox::OutboxList),
        },
        Operation {
            id: "getDeliveryStatus",
            rest: None,
            tool: tool("get_delivery_status", Hints::READ),
            access: Mail,
            permission: Some(Permission::Read),
            summary: "What happened to one sent message, per recipient",
            description: "{ok, message}: the sent message with this Message-ID (as send_mail answered) and each \
                          recipient's status, last remote reply (its text and host inside `<D>...</D>`, D being \
                          envelope.delimiter), attempts and changes. 404 for mail this key did not send.",
            errors: &[INBOX_MESSAGE_ID_INVALID, NOT_FOUND],
            io: io!(outbox::status, outbox::StatusQuery, outbox::DeliveryStatus),
        },
        Operation {
            id: "listSuppressions",
            rest: get("/suppressions"),
            tool: tool("list_suppressions", Hints::READ),
            access: Mail,
            permission: Some(Permission::Read),
            summary: "The recipients your mail no longer goes to",
            description: "Newest first: {ok, suppressions, nextCursor?}, each with address, reason (hard_bounce, \
                          soft_bounces, complaint, manual), the remote reply and the Message-ID that caused it, and \
                          when. address= looks one up (any case). A hard bounce or a complaint adds an address; so do \
                          soft bounces on 3 sends in a row over at least 3 days. A send to a listed address is refused \
                          whole (recipient_suppressed) before any credit is spent. The tool wraps each remote \
                          reply's text and host in envelope.delimiter.",
            errors: &[LIMIT_TO_50_INVALID, CURSOR_INVALID, SUPPRESSION_ADDRESS_INVALID],
            io: io!(
                suppressions::list,
                suppressions::ListQuery,
                suppressions::SuppressionList
            ),
        },
        Operation {
            id: "addSuppression",
            rest: post("/suppressions"),
            tool: tool("add_suppression", Hints::SET),
            access: Mail,
            permission: Some(Permission::Manage),
            summary: "Stop mail to an address",
            description: "{address, reason?}: lists the address (reason manual, your note kept); {ok, suppression, \
                          added}. Already listed: the first entry, added false.",
            errors: &[
                ADDRESS_REQUIRED,
                SUPPRESSION_ADDRESS_INVALID,
                SUPPRESSION_REASON_INVALID,
            ],
            io: io!(
                suppressions::add_by_hand,
                suppressions::AddInput,
                suppressions::SuppressionView
            ),
        },
        Operation {
            id: "removeSuppression",
            rest: delete("/suppressions"),
            tool: tool("remove_suppression", Hints::DESTROY),
            access: Mail,
            permission: Some(Permission::Manage),
            summary: "Let mail go to a suppressed address again",
            description: "address in the query or the body: {ok, removed}. 404 when it is not listed. The account \
                          key's alone: a scoped key may add suppressions, not remove them.",
            errors: &[
                ADDRESS_REQUIRED,
                SUPPRESSION_ADDRESS_INVALID,
                SUPPRESSION_NOT_FOUND,
                KEY_OWNER_GUARDRAIL,
            ],
            io: io!(suppressions::remove, suppressions::RemoveQuery, suppressions::Removed),
        },
        // The mail host's side: what its delivery log says.
        Operation {
            id: "reportMtaDeliveryEvents",
            rest: post("/mtaDeliveryEvents"),
            tool: None,
            access: Sync,
            permission: None,
            summary: "The mail host's delivery log: delivered, deferred, bounced",
            description: "The mail host's sync token only: `mailhost mta-sync` reports each Postfix log line about \
                          our mail ({events: [{id, returnPath, recipient, status, at, smtpCode, enhancedStatus, \
                          reply, remoteHost, queueId}]}, at most 100). Each applies once; an event whose return \
                          path does not verify changes nothing. {ok, applied, ignored}.",
            errors: &[DELIVERY_EVENTS_INVALID],
            io: io!(mta_events::report, mta_events::EventsInput, mta_events::EventsApplied),
        },
    ],
};
