//! MCP over stateless JSON-RPC 2.0 (spec 4.12): one POST carries one message,
//! or an array of them as a batch; no session, no event stream. The tools are
//! the catalogue's operations that name one; `tools/call` runs the same
//! operation, with the same typed input, as its REST route.

use std::sync::OnceLock;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use schemars::generate::Contract;
use serde_json::{Map, Value, json};

use super::AppState;
use super::extract::{discard, gateway_origin};
use super::preamble::{Door, receive};
use crate::api::{self, Operation};
use crate::auth::{Access, Authenticated, Caller};
use crate::config::Config;
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::validate::{Fields, Origin};

/// The largest JSON-RPC body: a send's 100KB text, escaped, with room to spare.
const MAX_BODY: usize = 1024 * 1024;

/// The JSON-RPC 2.0 error codes this endpoint answers with.
mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// A tool failed (spec 4.12): `data.status` holds the HTTP status.
    pub const TOOL_FAILED: i64 = -32000;
}

/// The tool failures answered as a tool result with `isError`, not as a
/// JSON-RPC error (spec 4.12).
const TOOL_RESULT_STATUSES: [u16; 3] = [404, 429, 503];

const AUTH_NOTE: &str = "POST takes the agent key or a standard customer key, as `Authorization: Bearer svc_...` \
                         or `X-Api-Key`. Without a credential: initialize, ping, tools/list and the onboarding \
                         tools (request_access, verify_access_request, get_request_status). An identity token \
                         may also call the domain, mailbox and operator tools.";

pub fn endpoint() -> MethodRouter<AppState> {
    axum::routing::get(describe).post(handle)
}

/// `GET /mcp`: what this endpoint is, without a credential. A client asking
/// for an event stream (`Accept: text/event-stream` only) learns there is
/// none: 405, as the streamable HTTP transport expects of a stateless server.
async fn describe(headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.contains("text/event-stream") && !accept.contains("application/json") {
        return ApiError::from(error::METHOD_NOT_ALLOWED).into_response();
    }
    axum::Json(json!({
        "ok": true,
        "name": SERVER_NAME,
        "version": api::VERSION,
        "transport": "json-rpc-2.0",
        "protocolVersion": api::MCP_PROTOCOL_VERSION,
        "tools": tools().map(|(_, tool)| tool.name).collect::<Vec<_>>(),
        "auth": AUTH_NOTE,
    }))
    .into_response()
}

const SERVER_NAME: &str = "mailhost";

fn tools() -> impl Iterator<Item = (&'static Operation, &'static api::Tool)> {
    api::operations().filter_map(|op| op.tool.as_ref().map(|tool| (op, tool)))
}

/// `POST /mcp`. Authentication comes first, so a bad key is an HTTP 401
/// before any tool runs and spends nothing.
async fn handle(State(ctx): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if !origin_allowed(&parts, &ctx.config) {
        discard(body).await;
        return ApiError::from(error::MCP_ORIGIN).into_response();
    }
    let received = match receive(&ctx, Door::Credential, &parts, body, Some(MAX_BODY)).await {
        Ok(received) => received,
        Err(e) => return e.into_response(),
    };
    // A body that is not JSON-RPC at all is refused with 400, the JSON-RPC
    // error in its body (as the streamable HTTP transport asks).
    let Ok(message) = serde_json::from_slice::<Value>(&received.body) else {
        return refuse(failure(Value::Null, code::PARSE_ERROR, "Parse error", None));
    };
    if let Err(e) = admit(&received.auth, &message) {
        return e.into_response();
    }
    let call = received.call(&ctx, "mcp");
    respond(&call, &received.auth, message).await
}

/// Answers one message or a batch: 204 when only notifications came, 400 for
/// an empty or oversized batch or a lone invalid request.
async fn respond(call: &Call<'_>, auth: &Authenticated, message: Value) -> Response {
    let answer = match message {
        Value::Array(batch) if batch.is_empty() => {
            return refuse(failure(
                Value::Null,
                code::INVALID_REQUEST,
                "Invalid Request: empty batch",
                None,
            ));
        }
        Value::Array(batch) if batch.len() > crate::api::MCP_MAX_BATCH => {
            return refuse(failure(
                Value::Null,
                code::INVALID_REQUEST,
                error::MCP_BATCH_TOO_LARGE.sentence,
                None,
            ));
        }
        // A batch's calls run at once (JSON-RPC 2.0 leaves the order to the
        // server), so waits for mail in one batch take the longest wait, not
        // their sum, and the batch answers inside API Gateway's 29 seconds.
        // The answers keep the batch's order.
        Value::Array(batch) => {
            let answers: Vec<Value> = futures::future::join_all(batch.into_iter().map(|m| answer(call, auth, m)))
                .await
                .into_iter()
                .flatten()
                .collect();
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        message => match answer(call, auth, message).await {
            Some(one) if one.pointer("/error/code") == Some(&json!(code::INVALID_REQUEST)) => return refuse(one),
            one => one,
        },
    };
    match answer {
        Some(answer) => axum::Json(answer).into_response(),
        // Only notifications: nothing to answer.
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// The streamable HTTP transport's rule against DNS rebinding: a request
/// without an Origin (not from a browser) passes; a browser's must be one of
/// the service's own origins or one the operator allowed. The service's own
/// are never read from the Host header, which a name rebound to this server
/// sets to itself: they are the configured public URL's, and the address the
/// request came in on, as API Gateway tells it under Lambda, or else the
/// local server's listen address (with `localhost`, `127.0.0.1` and `[::1]`
/// at its port when it listens on loopback or on every address).
fn origin_allowed(parts: &Parts, config: &Config) -> bool {
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return true;
    };
    let Some(origin) = origin.to_str().ok().and_then(origin_of) else {
        return false;
    };
    let arrived = match gateway_origin(parts) {
        Some(api) => vec![api],
        None => listen_origins(config.addr),
    };
    config
        .public_url
        .iter()
        .chain(&arrived)
        .chain(&config.mcp_allowed_origins)
        .filter_map(|own| origin_of(own))
        .any(|own| own == origin)
}

/// The origin (scheme, host, port) of a URL, default ports made explicit;
/// none for what is not a URL with a host (`null`, an empty entry).
fn origin_of(url: &str) -> Option<url::Origin> {
    let origin = url::Url::parse(url.trim()).ok()?.origin();
    origin.is_tuple().then_some(origin)
}

/// The origins a browser on this machine reaches the local server at.
fn listen_origins(addr: std::net::SocketAddr) -> Vec<String> {
    let mut origins = vec![format!("http://{addr}")];
    if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        let port = addr.port();
        origins.extend(["localhost", "127.0.0.1", "[::1]"].map(|host| format!("http://{host}:{port}")));
    }
    origins
}

/// Who may send what to POST /mcp. The agent key and standard keys may send
/// anything (each tool then applies its own access rule). Without a
/// credential, or with an identity token, only what needs no key is
/// admitted: the protocol methods, and `tools/call` of the public tools
/// (request_access, verify_access_request, get_request_status), so a new
/// agent can onboard through MCP alone; an identity token may also call the
/// tools whose REST route takes one (the domain, mailbox and operator tools).
/// Anything else is refused for the whole body, before any tool runs.
fn admit(auth: &Authenticated, message: &Value) -> Result<(), ApiError> {
    let refusal = match &auth.caller {
        Caller::Agent | Caller::Standard(_) => return Ok(()),
        Caller::Public => error::MISSING_CREDENTIAL,
        Caller::Identity(_) => error::MCP_AGENT_KEY_ONLY,
        Caller::Sync => return Access::Mcp.admit(auth),
    };
    let messages = match message {
        Value::Array(batch) => batch.iter().collect(),
        one => vec![one],
    };
    let keyless = |m: &&Value| match m.get("method").and_then(Value::as_str) {
        Some("initialize" | "initialized" | "ping" | "tools/list") => true,
        Some(method) if method.starts_with("notifications/") => true,
        Some("tools/call") => m
            .pointer("/params/name")
            .and_then(Value::as_str)
            .and_then(Operation::by_tool)
            .is_some_and(|op| {
                matches!(op.access, Access::Public | Access::OwnerOrCode)
                    || (matches!(auth.caller, Caller::Identity(_)) && op.access.takes_identity_token())
            }),
        _ => false,
    };
    if !messages.is_empty() && messages.iter().all(keyless) {
        Ok(())
    } else {
        Err(refusal.into())
    }
}

/// The answer to one message, or none for a notification.
async fn answer(call: &Call<'_>, auth: &Authenticated, message: Value) -> Option<Value> {
    let Value::Object(message) = message else {
        return Some(failure(Value::Null, code::INVALID_REQUEST, "Invalid Request", None));
    };
    // A request has an id (a string, a number, or null); a notification has none.
    let id = message.get("id").cloned();
    let valid_id = matches!(id, None | Some(Value::String(_) | Value::Number(_) | Value::Null));
    let method = message.get("method").and_then(Value::as_str);
    let (true, Some(method), true) = (message.get("jsonrpc") == Some(&json!("2.0")), method, valid_id) else {
        let id = id.filter(|_| valid_id).unwrap_or(Value::Null);
        return Some(failure(id, code::INVALID_REQUEST, "Invalid Request", None));
    };
    // Notifications change nothing here and are never answered; a tool is
    // never run for one, since its caller could not learn the outcome.
    // JSON-RPC 2.0: params, when given, are structured; a message whose are
    // not is no request (a notification's too is answered, with id null).
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        let id = id.unwrap_or(Value::Null);
        return Some(failure(
            id,
            code::INVALID_REQUEST,
            "Invalid Request: params must be an object or an array",
            None,
        ));
    }
    let id = id?;
    let outcome = match method {
        "initialize" => Ok(initialize()),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tool_list() })),
        "tools/call" => call_tool(call, auth, params).await,
        _ => Err(Failure {
            code: code::METHOD_NOT_FOUND,
            message: format!("Method not found: {method}"),
            data: None,
        }),
    };
    Some(match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(f) => failure(id, f.code, &f.message, f.data),
    })
}

fn refuse(answer: Value) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(answer)).into_response()
}

struct Failure {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl Failure {
    fn params(message: impl Into<String>) -> Self {
        Failure {
            code: code::INVALID_PARAMS,
            message: message.into(),
            data: None,
        }
    }
}

fn failure(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

fn initialize() -> Value {
    json!({
        "protocolVersion": api::MCP_PROTOCOL_VERSION,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": SERVER_NAME, "version": api::VERSION },
        "instructions": "Hosted mailboxes and mail sending on your own domain. Onboard with request_access and \
                         verify_access_request (the emailed 8-digit code), then add_domain, publish the DNS \
                         records it lists, verify_domain, add_mailbox, and send_mail. Errors carry the HTTP \
                         status in structuredContent.status or error.data.status.",
    })
}

/// `tools/list`: built once from the catalogue.
fn tool_list() -> &'static Value {
    static LIST: OnceLock<Value> = OnceLock::new();
    LIST.get_or_init(|| {
        let tools = tools()
            .map(|(op, tool)| {
                let mut input = crate::openapi::standalone_schema(op.io.input_schema, Contract::Deserialize);
                if let Some(props) = input.get_mut("properties").and_then(Value::as_object_mut) {
                    props.retain(|_, schema| schema.get(crate::values::REST_ONLY).is_none());
                }
                json!({
                    "name": tool.name,
                    "title": op.summary,
                    "description": op.description,
                    "inputSchema": input,
                    "outputSchema": output_schema(op),
                    "annotations": {
                        "title": op.summary,
                        "readOnlyHint": tool.hints.read_only,
                        "destructiveHint": tool.hints.destructive,
                        "idempotentHint": tool.hints.idempotent,
                        "openWorldHint": tool.hints.open_world,
                    },
                })
            })
            .collect();
        Value::Array(tools)
    })
}

/// A tool's `outputSchema`: its output, or the error result that 404, 429
/// and 503 come back as (`{ok: false, error, status}`), so a client that
/// checks `structuredContent` against it (MCP Inspector does, even with
/// `isError`) reads both.
fn output_schema(op: &Operation) -> Value {
    let mut output = crate::openapi::standalone_schema(op.io.output_schema, Contract::Serialize);
    let defs = output.as_object_mut().and_then(|o| o.remove("$defs"));
    let mut error = crate::openapi::standalone_schema(
        |g| g.subschema_for::<crate::error::ErrorBody<'static>>(),
        Contract::Serialize,
    );
    error["properties"]["status"] = json!({ "type": "integer", "description": "The HTTP status." });
    error["properties"]["ok"] = json!({ "const": false });
    if let Some(required) = error["required"].as_array_mut() {
        required.push(json!("status"));
    }
    let mut schema = json!({ "type": "object", "anyOf": [output, error] });
    if let Some(defs) = defs {
        schema["$defs"] = defs;
    }
    schema
}

/// `tools/call`: the operation's access rule, then the operation itself. Its
/// failures map as spec 4.12 says: 404, 429 and 503 are a tool result with
/// `isError`; everything else is JSON-RPC error -32000 with `data.status`.
async fn call_tool(call: &Call<'_>, auth: &Authenticated, params: Value) -> Result<Value, Failure> {
    let Value::Object(params) = params else {
        return Err(Failure::params(
            "Invalid params: expected an object with name and arguments",
        ));
    };
    let name = match params.get("name") {
        Some(Value::String(name)) => name.as_str(),
        None | Some(Value::Null) => return Err(Failure::params("Invalid params: name is required")),
        Some(_) => return Err(Failure::params("Invalid params: name must be a string")),
    };
    let Some(op) = Operation::by_tool(name) else {
        return Err(Failure::params(format!("Unknown tool: {name}")));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Err(Failure::params("Invalid params: arguments must be an object")),
    };
    let outcome = match op.access.admit(auth) {
        Ok(()) => match op.execute(call, Ok(Fields::new(arguments, Origin::Tool))).await {
            Ok(crate::api::Output::Json(text) | crate::api::Output::Accepted(text)) => Ok(text),
            // No tool gives file bytes; the catalogue test holds it so.
            Ok(crate::api::Output::Bytes(_)) => Err(crate::error::INTERNAL.into()),
            Err(e) => Err(e),
        },
        Err(refused) => Err(refused),
    };
    match outcome {
        // The text is the output as encoded; the structure, that text read.
        Ok(output) => Ok(json!({
            "content": [{ "type": "text", "text": output.get() }],
            "structuredContent": output,
            "isError": false,
        })),
        Err(e) if TOOL_RESULT_STATUSES.contains(&e.status) => {
            let mut content = serde_json::to_value(e.body()).unwrap_or_default();
            content["status"] = json!(e.status);
            // The sentence on its own first, for a client that shows text.
            Ok(json!({
                "content": [
                    { "type": "text", "text": e.error },
                    { "type": "text", "text": content.to_string() },
                ],
                "structuredContent": content,
                "isError": true,
            }))
        }
        Err(e) => {
            let mut data = serde_json::to_value(e.body()).unwrap_or_default();
            data["status"] = json!(e.status);
            Err(Failure {
                code: code::TOOL_FAILED,
                message: e.error.to_string(),
                data: Some(data),
            })
        }
    }
}

#[cfg(test)]
mod origin_tests {
    use super::*;
    use clap::{Args, Command, FromArgMatches};
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
    use lambda_http::request::RequestContext;

    /// The configuration the flags give, reading no variable.
    fn config(args: &[&str]) -> Config {
        let command = Config::augment_args(Command::new("mailhost")).mut_args(|arg| arg.env(None));
        let matches = command
            .try_get_matches_from(std::iter::once("mailhost").chain(args.iter().copied()))
            .unwrap();
        Config::from_arg_matches(&matches).unwrap()
    }

    /// A browser's request: its Origin, and the Host it names (a rebound
    /// name names itself); under Lambda, API Gateway's domain.
    fn request(origin: &str, host: &str, gateway: Option<&str>) -> Parts {
        let mut request = axum::http::Request::new(());
        if let Some(domain) = gateway {
            let mut context = ApiGatewayV2httpRequestContext::default();
            context.domain_name = Some(domain.into());
            context.stage = Some("Prod".into());
            request.extensions_mut().insert(RequestContext::ApiGatewayV2(context));
        }
        request.headers_mut().insert(header::HOST, host.parse().unwrap());
        request.headers_mut().insert(header::ORIGIN, origin.parse().unwrap());
        request.into_parts().0
    }

    #[test]
    fn a_browsers_origin_is_one_of_the_services_own_never_the_host_it_named() {
        let local = config(&[
            "--addr",
            "127.0.0.1:8080",
            "--public-url",
            "https://mail.example.com/app/",
        ]);
        for own in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "http://LOCALHOST:8080/",
            "http://[::1]:8080",
            "https://mail.example.com",
            "https://mail.example.com:443",
        ] {
            assert!(origin_allowed(&request(own, "127.0.0.1:8080", None), &local), "{own}");
        }
        for (other, host) in [
            ("http://rebind.example:8080", "rebind.example:8080"),
            ("http://localhost:8081", "localhost:8081"),
            ("https://localhost:8080", "localhost:8080"),
            ("http://mail.example.com", "mail.example.com"),
            ("null", "127.0.0.1:8080"),
        ] {
            assert!(!origin_allowed(&request(other, host, None), &local), "{other}");
        }
        let no_origin = axum::http::Request::new(()).into_parts().0;
        assert!(origin_allowed(&no_origin, &local), "not a browser");

        // On every address: the loopback names at its port; a LAN name only
        // when the operator allows it.
        let wildcard = config(&["--addr", "0.0.0.0:9000"]);
        assert!(origin_allowed(
            &request("http://localhost:9000", "localhost:9000", None),
            &wildcard
        ));
        let lan = request("http://192.168.1.5:9000", "192.168.1.5:9000", None);
        assert!(!origin_allowed(&lan, &wildcard));
        let allowed = config(&[
            "--addr",
            "0.0.0.0:9000",
            "--mcp-allowed-origins",
            "http://192.168.1.5:9000",
        ]);
        assert!(origin_allowed(&lan, &allowed));
        let elsewhere = config(&["--addr", "192.168.1.5:9000"]);
        assert!(origin_allowed(&lan, &elsewhere));
        assert!(!origin_allowed(
            &request("http://localhost:9000", "localhost:9000", None),
            &elsewhere
        ));

        // Under Lambda: the API's own address as API Gateway tells it, not
        // the local forms.
        let api = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com";
        let lambda = config(&[]);
        assert!(origin_allowed(
            &request(&format!("https://{api}"), api, Some(api)),
            &lambda
        ));
        let rebound = request("https://rebind.example", "rebind.example", Some(api));
        assert!(!origin_allowed(&rebound, &lambda));
        let local_form = request("http://127.0.0.1:8080", "127.0.0.1:8080", Some(api));
        assert!(!origin_allowed(&local_form, &lambda));
    }
}
