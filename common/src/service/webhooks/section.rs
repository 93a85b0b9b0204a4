//! Webhooks: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::routes;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, delete, get, io, post, tool};
use crate::validate::NoInput;

pub static WEBHOOKS: Section = Section {
    operations: &[
        Operation {
            id: "getWebhook",
            rest: get("/webhooks"),
            tool: tool("get_webhook", Hints::READ),
            access: WebhookKey,
            permission: Some(Permission::Manage),
            summary: "The key's webhook registration",
            description: "{ok, webhook: {url, secret, enabled, createdAt, updatedAt}} or {ok, webhook: null}. The agent \
                          key has one registration (for the service-domain mailboxes), each standard key its \
                          account's. No credit.",
            errors: &[WEBHOOK_KEY_MAILBOXES],
            io: io!(routes::get, NoInput, routes::WebhookView),
        },
        Operation {
            id: "setWebhook",
            rest: post("/webhooks"),
            tool: tool("set_webhook", Hints::SET.open_world()),
            access: WebhookKey,
            permission: Some(Permission::Manage),
            summary: "Register or change the key's webhook",
            description: "url (https, a public host: private, loopback, link-local, CGNAT, multicast, documentation \
                          and metadata addresses are refused, by literal and by name), enabled (false keeps it and \
                          skips delivery), rotateSecret (true issues a new whsec_ secret). Returns the stored \
                          registration with its secret. Each new inbound message is POSTed as inbound.received, \
                          signed with X-SVC-Signature (sha256=hex HMAC of \"<X-SVC-Timestamp>.<body>\") and the \
                          Standard Webhooks headers. No credit.",
            errors: &[
                WEBHOOK_URL_HTTPS,
                WEBHOOK_HOST,
                WEBHOOK_HOST_UNRESOLVED,
                WEBHOOK_URL_REQUIRED,
                ENABLED_TYPE,
                ROTATE_SECRET_TYPE,
                WEBHOOK_EVENTS_INVALID,
                WEBHOOK_KEY_MAILBOXES,
            ],
            io: io!(routes::set, routes::WebhookInput, routes::WebhookView),
        },
        Operation {
            id: "deleteWebhook",
            rest: delete("/webhooks"),
            tool: tool("delete_webhook", Hints::DESTROY),
            access: WebhookKey,
            permission: Some(Permission::Manage),
            summary: "Remove the key's webhook",
            description: "{ok: true, webhook: null}. No credit.",
            errors: &[WEBHOOK_KEY_MAILBOXES],
            io: io!(routes::remove, NoInput, routes::WebhookView),
        },
        Operation {
            id: "listWebhookDeliveries",
            rest: get("/webhooks/deliveries"),
            tool: tool("list_webhook_deliveries", Hints::READ),
            access: WebhookKey,
            permission: Some(Permission::Manage),
            summary: "The webhook delivery log, newest first",
            description: "{ok, deliveries, nextCursor?}: every attempt of the last 7 days (eventId, the message's id \
                          and messageId, attempt, replay, at, url, status or error, latencyMs); limit 1 to 50 \
                          (default 25), cursor. No credit.",
            errors: &[LIMIT_TO_50_INVALID, CURSOR_INVALID, WEBHOOK_KEY_MAILBOXES],
            io: io!(routes::deliveries, routes::DeliveriesQuery, routes::Deliveries),
        },
        Operation {
            id: "replayWebhook",
            rest: post("/webhooks/replay"),
            tool: tool("replay_webhook", Hints::SET.open_world().not_idempotent()),
            access: WebhookKey,
            permission: Some(Permission::Manage),
            summary: "Send logged events again",
            description: "eventId, or from and to (ISO 8601, at most 24 hours apart, at most 50 events): each event \
                          is sent again with its own id and a fresh signature, to the registration as it is now \
                          (its URL checked again), all at once, so the answer comes within one event's two attempts (about 11 \
                          seconds at worst). {ok, replayed, deliveries}. 10 replays a minute; no credit.",
            errors: &[
                EVENT_ID_INVALID,
                REPLAY_TARGET,
                WEBHOOK_NONE,
                NOT_FOUND,
                RATE_LIMITED,
                WEBHOOK_KEY_MAILBOXES,
            ],
            io: io!(routes::replay, routes::ReplayInput, routes::Replayed),
        },
    ],
};
