//! THE CATALOGUE: every operation of the service, declared once.
//!
//! An [`Operation`] names its typed input and output (with their JSON
//! Schemas), its REST method and path, its MCP tool, its access rule, and the
//! service function it calls. Operations are grouped in one [`Section`] per
//! Lambda family. The axum router (`http`), the MCP `tools/list` and
//! `tools/call` (`mcp`) and the OpenAPI document (`openapi`) are all built
//! from [`CATALOGUE`]; none of them holds a rule of its own. A family's
//! function names only its own section, so it links only its own services.

mod catalogue;

use std::future::Future;
use std::pin::Pin;

use axum::http::Method;
use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::auth::{Access, Permission};
use crate::error::{ApiError, Problem};
use crate::service::caller::Call;
use crate::validate::Fields;

pub use catalogue::*;

/// The API description and MCP server version (spec part 9).
pub const VERSION: &str = "0.7.0";
/// The MCP protocol revision this endpoint speaks.
pub const MCP_PROTOCOL_VERSION: &str = "2024-11-05";
/// The most messages one JSON-RPC batch to POST /mcp may hold.
pub const MCP_MAX_BATCH: usize = 20;

/// Which Lambda function serves a route (one binary per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Onboarding,
    Credits,
    Admin,
    Domains,
    Mailboxes,
    /// GET/POST /inbox and GET /attachment: reading stored mail.
    Inbox,
    /// GET/POST/DELETE /drafts.
    Drafts,
    /// /webhooks, its delivery log and replay.
    Webhooks,
    Send,
    /// `POST /mcp` (every tool), `GET /mcp`, and the API description.
    Mcp,
}

impl Family {
    pub const ALL: &[Family] = &[
        Family::Onboarding,
        Family::Credits,
        Family::Admin,
        Family::Domains,
        Family::Mailboxes,
        Family::Inbox,
        Family::Drafts,
        Family::Webhooks,
        Family::Send,
        Family::Mcp,
    ];

    /// The function crate under `functions/` that serves this family.
    pub fn function(self) -> &'static str {
        match self {
            Family::Onboarding => "onboarding",
            Family::Credits => "credits",
            Family::Admin => "admin",
            Family::Domains => "domains",
            Family::Mailboxes => "mailboxes",
            Family::Inbox => "inbox",
            Family::Drafts => "drafts",
            Family::Webhooks => "webhooks",
            Family::Send => "send",
            Family::Mcp => "mcp",
        }
    }
}

/// Where a REST route reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Body,
    Query,
    /// Body fields, and query parameters for the names the body lacks.
    BodyOrQuery,
}

#[derive(Debug, Clone)]
pub struct Rest {
    pub method: Method,
    /// The root path; every route also answers under `/api`.
    pub path: &'static str,
    pub source: Source,
    /// The largest body accepted, refused with 413 before it is parsed.
    pub max_body: usize,
}

/// Most bodies are a few small fields; only a send carries attachments.
pub const SMALL_BODY: usize = 64 * 1024;
/// A send with three 2MB attachments in base64, and room for the rest.
pub const SEND_BODY: usize = 8 * 1024 * 1024;

pub const fn get(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::GET,
        path,
        source: Source::Query,
        max_body: SMALL_BODY,
    })
}

pub const fn post(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: SMALL_BODY,
    })
}

/// A body that may carry a whole message text (100KB, up to six times that
/// once JSON escapes it) but no attachments: drafts.
pub const TEXT_BODY: usize = 1024 * 1024;

/// A POST whose body may carry a message text.
pub const fn post_text(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: TEXT_BODY,
    })
}

/// A POST whose body may carry attachments.
pub const fn post_large(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: SEND_BODY,
    })
}

pub const fn delete(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::DELETE,
        path,
        source: Source::BodyOrQuery,
        max_body: SMALL_BODY,
    })
}

/// What an MCP client may assume about a tool (MCP tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    /// Reaches beyond this service (sends mail, looks up DNS).
    pub open_world: bool,
}

impl Hints {
    /// Reads only.
    pub const READ: Hints = Hints {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Adds or sets something; the same call again changes nothing more.
    pub const SET: Hints = Hints {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Creates something new each time.
    pub const CREATE: Hints = Hints {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
    /// Removes or replaces what was there.
    pub const DESTROY: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    };

    pub const fn open_world(self) -> Hints {
        Hints {
            open_world: true,
            ..self
        }
    }
    pub const fn not_idempotent(self) -> Hints {
        Hints {
            idempotent: false,
            ..self
        }
    }
}

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: &'static str,
    pub hints: Hints,
}

pub const fn tool(name: &'static str, hints: Hints) -> Option<Tool> {
    Some(Tool { name, hints })
}

pub type Reply<'a> = Pin<Box<dyn Future<Output = Result<Output, ApiError>> + Send + 'a>>;

/// What an operation gives: JSON (REST and MCP), or file bytes that the REST
/// layer writes as they are (an operation that gives bytes has no tool).
#[derive(Debug)]
pub enum Output {
    /// Encoded once, by the service's output type: REST writes the text as
    /// it is, MCP embeds it.
    Json(Box<RawValue>),
    /// JSON for a request accepted to finish later (HTTP 202): a send that
    /// waits for approval or its time.
    Accepted(Box<RawValue>),
    Bytes(Download),
}

pub use crate::service::caller::Download;

/// Parses the fields (or carries their parse error), calls the service, and
/// encodes its output.
pub type Handler = for<'a> fn(&'a Call<'a>, Result<Fields, ApiError>) -> Reply<'a>;

/// What an operation takes, gives and calls: generated by [`io!`] from the
/// service function and its two types, so the three always agree.
pub struct Io {
    pub input_schema: fn(&mut SchemaGenerator) -> Schema,
    pub output_schema: fn(&mut SchemaGenerator) -> Schema,
    pub run: Handler,
    /// The output is file bytes ([`Download`]), not JSON.
    pub binary: bool,
}

/// The operations one Lambda family serves.
pub struct Section {
    pub family: Family,
    pub operations: &'static [Operation],
}

/// Every operation, in catalogue order.
pub fn operations() -> impl Iterator<Item = &'static Operation> {
    CATALOGUE.iter().flat_map(|section| section.operations)
}

pub struct Operation {
    /// The OpenAPI operationId.
    pub id: &'static str,
    pub rest: Option<Rest>,
    pub tool: Option<Tool>,
    pub access: Access,
    /// What a scoped key needs to call it (none: the access rule admits no
    /// scoped key, or every caller it admits may).
    pub permission: Option<Permission>,
    /// One line; the MCP tool's title and the OpenAPI summary.
    pub summary: &'static str,
    /// What an agent needs to act on it: the MCP description and OpenAPI's.
    pub description: &'static str,
    /// The errors this operation itself can give, beyond its access rule's
    /// and the body rules every route shares.
    pub errors: &'static [Problem],
    pub io: Io,
}

/// The `Io` of a service `async fn(&Call, In) -> Result<Out, ApiError>`.
macro_rules! io {
    ($service:path, $input:ty, $output:ty) => {{
        fn run<'a>(
            call: &'a $crate::service::caller::Call<'a>,
            fields: Result<$crate::validate::Fields, $crate::error::ApiError>,
        ) -> $crate::api::Reply<'a> {
            Box::pin(async move {
                let input = <$input as $crate::validate::Input>::from_request(fields)?;
                let output: $output = $service(call, input).await?;
                $crate::api::encode(&output)
            })
        }
        $crate::api::Io {
            input_schema: |g| g.subschema_for::<$input>(),
            output_schema: |g| g.subschema_for::<$output>(),
            run,
            binary: false,
        }
    }};
    // A service whose output may say it was only accepted (202): its
    // output type has an `accepted(&self) -> bool`.
    (accepted $service:path, $input:ty, $output:ty) => {{
        fn run<'a>(
            call: &'a $crate::service::caller::Call<'a>,
            fields: Result<$crate::validate::Fields, $crate::error::ApiError>,
        ) -> $crate::api::Reply<'a> {
            Box::pin(async move {
                let input = <$input as $crate::validate::Input>::from_request(fields)?;
                let output: $output = $service(call, input).await?;
                match (output.accepted(), $crate::api::encode(&output)?) {
                    (true, $crate::api::Output::Json(text)) => Ok($crate::api::Output::Accepted(text)),
                    (_, encoded) => Ok(encoded),
                }
            })
        }
        $crate::api::Io {
            input_schema: |g| g.subschema_for::<$input>(),
            output_schema: |g| g.subschema_for::<$output>(),
            run,
            binary: false,
        }
    }};
    // A service giving file bytes: `async fn(&Call, In) -> Result<Download, ApiError>`.
    (bytes $service:path, $input:ty) => {{
        fn run<'a>(
            call: &'a $crate::service::caller::Call<'a>,
            fields: Result<$crate::validate::Fields, $crate::error::ApiError>,
        ) -> $crate::api::Reply<'a> {
            Box::pin(async move {
                let input = <$input as $crate::validate::Input>::from_request(fields)?;
                let output: $crate::api::Download = $service(call, input).await?;
                Ok($crate::api::Output::Bytes(output))
            })
        }
        $crate::api::Io {
            input_schema: |g| g.subschema_for::<$input>(),
            output_schema: |_| schemars::json_schema!({ "type": "string", "format": "binary" }),
            run,
            binary: true,
        }
    }};
}
pub(crate) use io;

pub fn encode(output: &impl Serialize) -> Result<Output, ApiError> {
    serde_json::value::to_raw_value(output)
        .map(Output::Json)
        .map_err(ApiError::internal)
}

impl Operation {
    /// Runs the operation for an admitted caller: the one path REST and MCP
    /// share. A customer route's account must have its setup complete before
    /// its input is even read (403 before 400, as the route matrix says).
    pub async fn execute(&self, call: &Call<'_>, fields: Result<Fields, ApiError>) -> Result<Output, ApiError> {
        if !self.audited() {
            return self.run(call, fields).await;
        }
        let target = crate::service::guardrails::audit::target_of(fields.as_ref().ok());
        let outcome = self.run(call, fields).await;
        // What happened, and who was refused for want of a permission or a
        // mailbox; a malformed request changed nothing and leaves no row.
        if outcome.as_ref().map_or_else(|e| e.status == 403, |_| true) {
            crate::service::guardrails::audit::note(call, self.id, target, outcome.as_ref().map(|_| ())).await;
        }
        outcome
    }

    async fn run(&self, call: &Call<'_>, fields: Result<Fields, ApiError>) -> Result<Output, ApiError> {
        if let Some(permission) = self.permission {
            call.caller.permits(permission)?;
        }
        if self.access == Access::Customer {
            call.account().await?;
        }
        (self.io.run)(call, fields).await
    }

    /// Whether a call goes in the audit log: a change (not a read, not a
    /// draft, not the inbox's read flags and folders) by a caller the log can
    /// name (not a public or mail-host route).
    pub fn audited(&self) -> bool {
        let changes = match (&self.tool, &self.rest) {
            (Some(tool), _) => !tool.hints.read_only,
            (None, Some(rest)) => rest.method != Method::GET,
            (None, None) => false,
        };
        changes
            && !matches!(self.access, Access::Public | Access::Sync)
            && !matches!(self.permission, Some(Permission::Read | Permission::Draft))
    }

    /// Who it refuses, and why: its access rule's refusals, and a scoped
    /// key's without the permission it needs.
    pub fn refusals(&self) -> Vec<Problem> {
        let mut refusals = self.access.refusals();
        refusals.extend(self.permission.map(Permission::missing));
        refusals
    }

    pub fn by_tool(name: &str) -> Option<&'static Operation> {
        operations().find(|op| op.tool.as_ref().is_some_and(|t| t.name == name))
    }
}

/// A path without the `/api` prefix the spec's second and third hosts use.
pub fn strip_api(path: &str) -> &str {
    path.strip_prefix("/api").filter(|p| p.starts_with('/')).unwrap_or(path)
}
