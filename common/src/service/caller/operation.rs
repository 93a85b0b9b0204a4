//! What an operation is: its typed input and output (with their JSON
//! Schemas), its REST method and path, its MCP tool, its access rule and the
//! service it calls. Each capability declares its own operations with these
//! words (its `section.rs`), beside the services they run; the api module
//! gathers the sections into the catalogue and runs them.

use std::future::Future;
use std::pin::Pin;

use http::Method;
use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::value::RawValue;

use super::call::{Call, Download};
use crate::auth::{Access, Permission};
use crate::error::{ApiError, Problem};
use crate::validate::Fields;

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
    /// The service may start on a standard key's record as this process
    /// last read it, its reads beside the key's: it confirms the caller
    /// (`Call::confirmed`) before its first write (a send).
    pub starts_on_known_key: bool,
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
        starts_on_known_key: false,
    })
}

pub const fn post(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: SMALL_BODY,
        starts_on_known_key: false,
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
        starts_on_known_key: false,
    })
}

/// A POST whose body may carry attachments.
pub const fn post_large(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: SEND_BODY,
        starts_on_known_key: false,
    })
}

/// sendMail: a POST whose body may carry attachments, whose service starts
/// on the caller's key as last read (its reads then go out beside the
/// key's, one round trip fewer).
pub const fn post_send(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::POST,
        path,
        source: Source::Body,
        max_body: SEND_BODY,
        starts_on_known_key: true,
    })
}

pub const fn delete(path: &'static str) -> Option<Rest> {
    Some(Rest {
        method: Method::DELETE,
        path,
        source: Source::BodyOrQuery,
        max_body: SMALL_BODY,
        starts_on_known_key: false,
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

/// Parses the fields (or carries their parse error), calls the service, and
/// encodes its output.
pub type Handler = for<'a> fn(&'a Call<'a>, Result<Fields, ApiError>) -> Reply<'a>;

/// What an operation takes, gives and calls: generated by [`io!`] from the
/// service function and its two types, so the three always agree.
pub struct Io {
    pub input_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The problems the input's fields are declared with
    /// ([`crate::validate::Input::problems`]).
    pub input_problems: fn() -> Vec<Problem>,
    pub output_schema: fn(&mut SchemaGenerator) -> Schema,
    pub run: Handler,
    /// The output is file bytes ([`Download`]), not JSON.
    pub binary: bool,
}

/// Operations of one capability that one function serves (`functions` in the api module).
pub struct Section {
    pub operations: &'static [Operation],
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

/// The `Io` of a service `async fn(&Call, In) -> Result<Out, ApiError>`:
/// `io!(service, In, Out)` answers JSON; `io!(accepted service, In, Out)`
/// answers 202 when the output's `accepted()` says it was only accepted (a
/// send that waits); `io!(bytes service, In)` answers the file a
/// [`Download`] holds. The three differ only in how the output is answered.
macro_rules! io {
    ($service:path, $input:ty, $output:ty) => {
        $crate::service::caller::operation::io!(@ $service, $input, $output,
            |output: $output| $crate::service::caller::operation::encode(&output),
            |g| g.subschema_for::<$output>(), false)
    };
    (accepted $service:path, $input:ty, $output:ty) => {
        $crate::service::caller::operation::io!(@ $service, $input, $output,
            |output: $output| match (output.accepted(), $crate::service::caller::operation::encode(&output)?) {
                (true, $crate::service::caller::operation::Output::Json(text)) => {
                    Ok($crate::service::caller::operation::Output::Accepted(text))
                }
                (_, encoded) => Ok(encoded),
            },
            |g| g.subschema_for::<$output>(), false)
    };
    (bytes $service:path, $input:ty) => {
        $crate::service::caller::operation::io!(@ $service, $input, $crate::service::caller::Download,
            |output| Ok($crate::service::caller::operation::Output::Bytes(output)),
            |_| schemars::json_schema!({ "type": "string", "format": "binary" }), true)
    };
    (@ $service:path, $input:ty, $output:ty, $answer:expr, $output_schema:expr, $binary:expr) => {{
        fn run<'a>(
            call: &'a $crate::service::caller::Call<'a>,
            fields: Result<$crate::validate::Fields, $crate::error::ApiError>,
        ) -> $crate::service::caller::operation::Reply<'a> {
            Box::pin(async move {
                let input = <$input as $crate::validate::Input>::from_request(fields)?;
                let output: $output = $service(call, input).await?;
                let answer: fn($output) -> Result<$crate::service::caller::operation::Output, $crate::error::ApiError> =
                    $answer;
                answer(output)
            })
        }
        $crate::service::caller::operation::Io {
            input_schema: |g| g.subschema_for::<$input>(),
            input_problems: <$input as $crate::validate::Input>::problems,
            output_schema: $output_schema,
            run,
            binary: $binary,
        }
    }};
}
pub(crate) use io;

pub fn encode(output: &impl Serialize) -> Result<Output, ApiError> {
    serde_json::value::to_raw_value(output)
        .map(Output::Json)
        .map_err(ApiError::internal)
}
