//! The OpenAPI 3.1 document (spec part 9), built from the catalogue: every
//! REST route at its root path (a second server entry carries the `/api`
//! prefix), its input and output schemas from the typed input and output, both
//! credential schemes, and the error sentences each route can answer with.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::response::{Html, IntoResponse, Response};
use schemars::generate::{Contract, SchemaSettings};
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::api::{self, CATALOGUE, Family, Operation, Source};
use crate::auth::Access;
use crate::error::{self, Problem};

/// `GET /docs/openapi.json`.
pub async fn serve() -> Response {
    axum::Json(document()).into_response()
}

/// `GET /docs`: the legacy documentation page, pointing to the current one.
pub async fn legacy_page() -> Html<String> {
    let mut rows = String::new();
    for op in api::operations() {
        let route = op
            .rest
            .as_ref()
            .map(|r| format!("{} {}", r.method, r.path))
            .unwrap_or_default();
        let tool = op.tool.as_ref().map(|t| t.name).unwrap_or_default();
        rows.push_str(&format!(
            "<tr><td><code>{route}</code></td><td><code>{tool}</code></td><td>{}</td></tr>\n",
            op.summary
        ));
    }
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mailhost API {version}</title></head><body>\
         <h1>mailhost API {version}</h1>\
         <p>This page is kept for old links. The current description is \
         <a href=\"/docs/openapi.json\">/docs/openapi.json</a> (OpenAPI 3.1); MCP clients use \
         <code>POST /mcp</code>.</p>\
         <table><tr><th>REST</th><th>MCP tool</th><th>What</th></tr>\n{rows}</table></body></html>",
        version = api::VERSION
    ))
}

fn settings(contract: Contract, inline: bool) -> SchemaSettings {
    let mut settings = SchemaSettings::draft2020_12();
    settings.contract = contract;
    settings.inline_subschemas = inline;
    settings.meta_schema = None;
    settings
}

/// schemars names Rust's integer types as formats (`uint`, `uint16`, ...)
/// that JSON Schema and OpenAPI do not define; the `minimum` it writes beside
/// them says what matters, and OpenAPI's own int32 and int64 stay.
fn standard_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let nonstandard = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint") || matches!(f, "int8" | "int16" | "int" | "int128"));
            if nonstandard {
                map.remove("format");
            }
            map.values_mut().for_each(standard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

/// A self-contained schema (no references), as an MCP tool's `inputSchema`
/// (`Contract::Deserialize`: what is read) or `outputSchema`
/// (`Contract::Serialize`: what is written).
pub fn standalone_schema(schema: fn(&mut SchemaGenerator) -> Schema, contract: Contract) -> Value {
    let mut generator = settings(contract, true).into_generator();
    let mut schema = schema(&mut generator).to_value();
    standard_formats(&mut schema);
    schema
}

/// The whole document, built once.
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut document = build();
        standard_formats(&mut document);
        document
    })
}

fn build() -> Value {
    let mut inputs = settings(Contract::Deserialize, false);
    inputs.definitions_path = "/components/schemas".into();
    let mut inputs = inputs.into_generator();
    let mut outputs = settings(Contract::Serialize, false);
    outputs.definitions_path = "/components/schemas".into();
    let mut outputs = outputs.into_generator();
    let paths = paths(&mut inputs, &mut outputs);
    let mut schemas = outputs.take_definitions(true);
    let mut input_schemas = inputs.take_definitions(true);
    input_schemas.values_mut().for_each(rules_under_all_of);
    schemas.extend(input_schemas);
    shared_schemas(&mut schemas);
    wrap(paths, schemas)
}

/// A rule between an input's fields (one of id, messageId or thread, say) is
/// an `anyOf` beside its `properties`. Under `allOf` it says the same, and
/// client generators (openapi-python-client) still read the properties as
/// one model rather than as a union of the rule's branches.
fn rules_under_all_of(schema: &mut Value) {
    let Some(map) = schema.as_object_mut().filter(|m| m.contains_key("properties")) else {
        return;
    };
    for keyword in ["anyOf", "oneOf"] {
        if let Some(rule) = map.remove(keyword) {
            let all_of = map.entry("allOf").or_insert_with(|| json!([]));
            if let Some(all_of) = all_of.as_array_mut() {
                all_of.push(json!({ keyword: rule }));
            }
        }
    }
}

/// Each catalogued REST route's operations by path and verb, and `/mcp`; the
/// schemas they name are collected in the two generators.
fn paths(inputs: &mut SchemaGenerator, outputs: &mut SchemaGenerator) -> BTreeMap<&'static str, Map<String, Value>> {
    let mut paths: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for section in CATALOGUE {
        for op in section.operations {
            let Some(rest) = &op.rest else { continue };
            let method = rest.method.as_str().to_ascii_lowercase();
            let described = operation(api::family_of(section), op, rest, inputs, outputs);
            paths.entry(rest.path).or_default().insert(method, described);
        }
    }
    paths.entry("/mcp").or_default().extend(mcp_path());
    paths
}

/// The schemas no type describes: a JSON-RPC message and the error body.
fn shared_schemas(schemas: &mut Map<String, Value>) {
    let json_rpc_message = json!({
        "type": "object",
        "required": ["jsonrpc", "method"],
        "properties": {
            "jsonrpc": { "const": "2.0" },
            "id": { "type": ["string", "number", "null"] },
            "method": { "type": "string", "examples": ["initialize", "ping", "tools/list", "tools/call"] },
            "params": { "type": ["object", "array", "null"], "items": {} },
        },
    });
    schemas.insert("JsonRpcMessage".into(), json_rpc_message);
    schemas.insert(
        "ErrorBody".into(),
        json!({
            "type": "object",
            "description": "Every error (spec 2.3). Branch on `error` when a status is shared.",
            "required": ["ok", "error"],
            "properties": {
                "ok": { "const": false },
                "error": { "type": "string", "description": "The sentence of the error catalogue." },
                "code": { "type": "string", "description": "A machine value such as one_domain_per_account." },
                "retryAfter": { "type": "integer", "minimum": 1, "description": "Seconds to wait (429)." },
            },
        }),
    );
}

/// The document around its paths and schemas.
fn wrap(paths: BTreeMap<&str, Map<String, Value>>, schemas: Map<String, Value>) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mailhost",
            "version": api::VERSION,
            "description": "Hosted mailboxes and mail sending on a domain you own, over HTTPS. Every route \
                            also answers under the /api prefix. The same operations are MCP tools at POST /mcp.",
        },
        "servers": [
            { "url": "/", "description": "routes at the root" },
            { "url": "/api", "description": "the same routes under the /api prefix" },
        ],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (svc_...) or an identity token (three dot-separated segments).",
                },
                "apiKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Api-Key",
                    "description": "An API key; when present it is the only credential checked.",
                },
            },
        },
    })
}

/// Every problem a REST route may answer with, as its document lists them:
/// its access rule's refusals, a body's, and the operation's own.
pub fn problems(op: &Operation, rest: &api::Rest) -> Vec<Problem> {
    let mut problems: Vec<Problem> = op.refusals();
    if rest.source != Source::Query {
        problems.extend([error::INVALID_JSON, error::NOT_AN_OBJECT, error::BODY_TOO_LARGE]);
    }
    problems.extend(op.errors.iter().copied());
    // Any operation reads or writes the store.
    problems.push(error::STORE_UNAVAILABLE);
    problems
}

fn operation(
    family: Family,
    op: &Operation,
    rest: &api::Rest,
    inputs: &mut SchemaGenerator,
    outputs: &mut SchemaGenerator,
) -> Value {
    let problems = problems(op, rest);
    let mut out = json!({
        "operationId": op.id,
        "summary": op.summary,
        "description": op.description,
        "tags": [family.function()],
        "responses": responses(&problems, (op.io.output_schema)(outputs).to_value()),
    });
    if op.io.binary {
        // The stored bytes, with their stored Content-Type (any); named as
        // octet-stream first, which client generators read as bytes.
        let bytes = json!({ "schema": { "type": "string", "format": "binary" } });
        out["responses"]["200"]["content"] = json!({ "application/octet-stream": bytes, "*/*": bytes });
    }
    if let Some(tool) = &op.tool {
        out["x-mcp-tool"] = json!(tool.name);
    }
    out["security"] = match op.access {
        Access::Public => json!([]),
        _ => json!([{ "bearer": [] }, { "apiKey": [] }]),
    };
    let input = (op.io.input_schema)(inputs).to_value();
    let resolved = resolve(&input, inputs);
    match rest.source {
        Source::Query => out["parameters"] = query_parameters(&resolved),
        Source::Body | Source::BodyOrQuery => {
            // A body is needed when some field (or one of several) is.
            let needs_some = resolved
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
                || resolved.get("anyOf").is_some();
            out["requestBody"] = json!({
                "required": needs_some,
                "content": { "application/json": { "schema": input } },
            });
        }
    }
    out
}

/// The schema a reference names, or the schema itself.
fn resolve(input: &Value, inputs: &SchemaGenerator) -> Value {
    match input.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap_or_default();
            inputs.definitions().get(name).cloned().unwrap_or_default()
        }
        None => input.clone(),
    }
}

/// A parameter's schema without `null`: a query string has no null (an
/// optional parameter is left out instead).
fn without_null(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        crate::values::without_null(map);
    }
    schema
}

/// A query route's input fields as query parameters.
fn query_parameters(resolved: &Value) -> Value {
    let required: Vec<&str> = resolved
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = resolved.get("properties").and_then(Value::as_object) else {
        return json!([]);
    };
    let params: Vec<Value> = properties
        .iter()
        .map(|(name, schema)| {
            let mut param = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": without_null(schema),
            });
            if let Some(description) = schema.get("description") {
                param["description"] = description.clone();
            }
            param
        })
        .collect();
    Value::Array(params)
}

fn responses(problems: &[Problem], output: Value) -> Value {
    let mut by_status: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
    for p in problems {
        let sentences = by_status.entry(p.status).or_default();
        if !sentences.contains(&p.sentence) {
            sentences.push(p.sentence);
        }
    }
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({ "description": "Success", "content": { "application/json": { "schema": output } } }),
    );
    for (status, sentences) in by_status {
        let description = sentences
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join("; ");
        responses.insert(status.to_string(), error_response(&description));
    }
    responses.insert(
        "default".into(),
        error_response("Any other error, such as 405 `Method not allowed` or 500 `Internal error`."),
    );
    Value::Object(responses)
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } },
    })
}

/// `/mcp` is not a catalogued route: describe its two verbs by hand.
fn mcp_path() -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("get".into(), describe_mcp());
    out.insert("post".into(), call_mcp());
    out
}

fn describe_mcp() -> Value {
    let tools: Vec<&str> = api::operations()
        .filter_map(|op| op.tool.as_ref().map(|t| t.name))
        .collect();
    json!({
        "operationId": "describeMcp",
        "summary": "What the MCP endpoint offers",
        "tags": ["mcp"],
        "security": [],
        "responses": {
            "200": {
                "description": "The endpoint's name, version, transport and tool names.",
                "content": { "application/json": { "schema": {
                    "type": "object",
                    "required": ["ok", "name", "version", "transport", "protocolVersion", "tools", "auth"],
                    "properties": {
                        "ok": { "const": true },
                        "name": { "type": "string" },
                        "version": { "const": api::VERSION },
                        "transport": { "const": "json-rpc-2.0" },
                        "protocolVersion": { "const": api::MCP_PROTOCOL_VERSION },
                        "tools": { "type": "array", "items": { "enum": tools } },
                        "auth": { "type": "string" },
                    },
                } } },
            },
            "default": error_response("405 `Method not allowed` when only an event stream is accepted."),
        },
    })
}

fn call_mcp() -> Value {
    // A batch's elements are judged one by one: an invalid one gets its own
    // -32600 answer in the 200 array (JSON-RPC 2.0), so the array is any.
    let rpc = json!({
        "oneOf": [
            { "$ref": "#/components/schemas/JsonRpcMessage" },
            { "type": "array", "items": {}, "minItems": 1, "maxItems": crate::api::MCP_MAX_BATCH },
        ],
    });
    let rpc_error = json!({
        "type": "object",
        "required": ["jsonrpc", "id", "error"],
        "properties": {
            "jsonrpc": { "const": "2.0" },
            "id": {},
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": { "code": { "type": "integer" }, "message": { "type": "string" } },
            },
        },
    });
    json!({
        "operationId": "callMcp",
        "summary": "MCP over stateless JSON-RPC 2.0",
        "description": "One JSON-RPC 2.0 message, or an array as a batch: initialize, ping, tools/list, \
                        tools/call; notifications get 204. Tool failures with status 404, 429 and 503 are \
                        results with isError; other failures are JSON-RPC error -32000 with data.status.",
        "tags": ["mcp"],
        // initialize, ping, tools/list and the onboarding tools need no key.
        "security": [{ "bearer": [] }, { "apiKey": [] }, {}],
        "requestBody": { "required": true, "content": { "application/json": { "schema": rpc } } },
        "responses": {
            "200": {
                "description": "The JSON-RPC answer (an array for a batch).",
                "content": { "application/json": { "schema": {} } },
            },
            "204": { "description": "Only notifications were sent." },
            "400": {
                "description": "Not JSON (-32700), not a JSON-RPC request (-32600), or an empty batch.",
                "content": { "application/json": { "schema": rpc_error } },
            },
            "401": error_response(&format!(
                "`{}`; `{}`; `{}`; `{}`",
                error::MISSING_CREDENTIAL.sentence,
                error::INVALID_KEY.sentence,
                error::INVALID_TOKEN.sentence,
                error::MCP_AGENT_KEY_ONLY.sentence
            )),
            "default": error_response("413 `Request body too large`, or another error."),
        },
    })
}
