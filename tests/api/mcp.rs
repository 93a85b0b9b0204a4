//! POST /mcp and GET /mcp (spec 4.12): the JSON-RPC envelope, authentication
//! before any tool runs, the tool-result and error mapping, the same answers
//! as REST, and the official MCP Python SDK onboarding an agent through MCP
//! alone.

use crate::support::{self, ALLOWED_DOMAIN, Auth, Response, TestApp};
use serde_json::{Value, json};

const MCP_ONLY: &str = "MCP requires agent API key (Bearer svc_...)";

on_both_backends!(
    the_envelope_follows_json_rpc_2,
    authentication_fails_before_any_tool_runs_and_spends_nothing,
    tool_failures_map_to_results_or_json_rpc_errors_as_the_spec_says,
    each_tool_answers_what_its_rest_route_answers,
    a_browser_page_of_another_origin_is_refused_and_batches_are_bounded,
    a_batch_runs_its_calls_at_once,
);

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn tool(id: i64, name: &str, arguments: Value) -> Value {
    rpc(json!(id), "tools/call", json!({ "name": name, "arguments": arguments }))
}

async fn mcp(app: &TestApp, auth: Auth<'_>, body: Value) -> Response {
    app.post("/mcp", auth, body).await
}

/// The structured result of a successful tools/call.
fn structured(res: &Response) -> &Value {
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["result"]["isError"], false, "{}", res.body);
    let content = &res.body["result"]["structuredContent"];
    let text = res.body["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        &serde_json::from_str::<Value>(text).unwrap(),
        content,
        "text and structure agree"
    );
    content
}

async fn the_envelope_follows_json_rpc_2(app: TestApp) {
    let key = app.agent_key.clone();
    let agent = Auth::Bearer(&key);

    let info = app.get("/api/mcp", Auth::None).await;
    assert_eq!(info.status, 200, "{}", info.body);
    assert_eq!(info.body["version"], "0.7.0");
    assert_eq!(info.body["transport"], "json-rpc-2.0");
    assert_eq!(info.body["protocolVersion"], "2024-11-05");
    let names: Vec<&str> = info.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for name in [
        "request_access",
        "verify_access_request",
        "get_request_status",
        "get_account_status",
        "send_mail",
        "reply_to_message",
        "forward_message",
        "get_credits",
        "add_domain",
        "verify_domain",
        "get_dns_instructions",
        "list_domains",
        "add_mailbox",
        "issue_mailbox_credential",
        "set_mailbox_mode",
        "delete_mailbox",
        "list_domain_allowlist",
        "add_domain_allowlist",
        "remove_domain_allowlist",
        "check_domain_allowlist",
        "operator_remove_domain",
        "operator_delete_request",
    ] {
        assert!(names.contains(&name), "GET /mcp lists {name}: {names:?}");
    }

    let init = mcp(
        &app,
        agent,
        rpc(
            json!("i"),
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {} }),
        ),
    )
    .await;
    assert_eq!(init.status, 200, "{}", init.body);
    assert_eq!(init.body["id"], "i");
    assert_eq!(init.body["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(init.body["result"]["serverInfo"]["version"], "0.7.0");
    assert!(init.body["result"]["capabilities"]["tools"].is_object());

    for notification in ["notifications/initialized", "initialized"] {
        let res = mcp(&app, agent, json!({ "jsonrpc": "2.0", "method": notification })).await;
        assert_eq!(res.status, 204, "{notification}: {}", res.body);
    }
    let ping = mcp(&app, agent, rpc(json!(7), "ping", Value::Null)).await;
    assert_eq!((ping.status, &ping.body["result"]), (200, &json!({})));

    let list = mcp(&app, agent, rpc(json!(1), "tools/list", json!({}))).await;
    let tools = list.body["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), names.len(), "tools/list and GET /mcp agree");
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        assert!(t["description"].as_str().unwrap().len() > 20, "{t}");
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(t["annotations"][hint].is_boolean(), "{hint} of {t}");
        }
    }
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();
    assert_eq!(by_name("get_credits")["annotations"]["readOnlyHint"], true);
    assert_eq!(by_name("send_mail")["annotations"]["readOnlyHint"], false);
    assert_eq!(by_name("send_mail")["annotations"]["openWorldHint"], true);
    assert_eq!(by_name("delete_mailbox")["annotations"]["destructiveHint"], true);
    assert!(
        by_name("send_mail")["inputSchema"]["properties"]
            .get("attachments")
            .is_none(),
        "send_mail takes no attachments"
    );

    // Errors of the envelope itself.
    let unknown = mcp(&app, agent, rpc(json!(2), "resources/list", json!({}))).await;
    assert_eq!((unknown.status, &unknown.body["error"]["code"]), (200, &json!(-32601)));
    assert_eq!(unknown.body["id"], 2);
    let no_tool = mcp(&app, agent, tool(3, "no_such_tool", json!({}))).await;
    assert_eq!(no_tool.body["error"]["code"], -32602, "{}", no_tool.body);
    let bad_args = mcp(
        &app,
        agent,
        rpc(
            json!(4),
            "tools/call",
            json!({ "name": "get_credits", "arguments": [1] }),
        ),
    )
    .await;
    assert_eq!(bad_args.body["error"]["code"], -32602, "{}", bad_args.body);
    let invalid = mcp(&app, agent, json!({ "jsonrpc": "1.0", "id": 5, "method": "ping" })).await;
    assert_eq!((invalid.status, &invalid.body["error"]["code"]), (400, &json!(-32600)));
    let empty = mcp(&app, agent, json!([])).await;
    assert_eq!((empty.status, &empty.body["error"]["code"]), (400, &json!(-32600)));
    let broken = app
        .send(
            app.client
                .post(format!("{}/mcp", app.base))
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body("{\"jsonrpc\": "),
        )
        .await;
    assert_eq!((broken.status, &broken.body["error"]["code"]), (400, &json!(-32700)));
    assert_eq!(broken.body["id"], Value::Null);

    // A batch: answers for the calls, in order, none for the notifications.
    let batch = mcp(
        &app,
        agent,
        json!([
            rpc(json!(10), "ping", json!({})),
            { "jsonrpc": "2.0", "method": "notifications/initialized" },
            tool(11, "get_credits", json!({})),
            { "jsonrpc": "2.0", "id": 12 },
            rpc(json!(13), "nope", json!({})),
        ]),
    )
    .await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    let answers = batch.body.as_array().unwrap();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(10), &json!(11), &json!(12), &json!(13)]);
    assert_eq!(answers[1]["result"]["structuredContent"]["remaining"], 100);
    assert_eq!(answers[2]["error"]["code"], -32600);
    assert_eq!(answers[3]["error"]["code"], -32601);
    let only_notifications = mcp(
        &app,
        agent,
        json!([{ "jsonrpc": "2.0", "method": "initialized" }, { "jsonrpc": "2.0", "method": "notifications/x" }]),
    )
    .await;
    assert_eq!(only_notifications.status, 204);

    // Other verbs; an event stream is not offered.
    for method in [reqwest::Method::PUT, reqwest::Method::DELETE, reqwest::Method::PATCH] {
        let res = app.request(method.clone(), "/mcp", agent, None).await;
        assert_eq!((res.status, res.error()), (405, "Method not allowed"), "{method}");
    }
    let options = app
        .request(reqwest::Method::OPTIONS, "/api/mcp", Auth::None, None)
        .await;
    assert_eq!(options.status, 204);
    let sse = app
        .send(
            app.client
                .get(format!("{}/mcp", app.base))
                .header("accept", "text/event-stream"),
        )
        .await;
    assert_eq!(sse.status, 405);
}

async fn authentication_fails_before_any_tool_runs_and_spends_nothing(app: TestApp) {
    let before = app.agent_credits().await;
    let send = tool(
        1,
        "send_mail",
        json!({ "to": "a@example.org", "subject": "s", "text": "t" }),
    );
    let res = mcp(&app, Auth::Bearer("svc_wrong_key"), send.clone()).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"));
    let res = mcp(&app, Auth::ApiKey("svc_wrong_key"), send.clone()).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"));
    let res = mcp(&app, Auth::None, send.clone()).await;
    assert_eq!(
        (res.status, res.error()),
        (401, "Missing Authorization Bearer token or X-Api-Key")
    );
    let res = mcp(&app, Auth::Bearer("aaa.bbb.ccc"), send.clone()).await;
    assert_eq!((res.status, res.error()), (401, "Invalid or expired ID token"));
    let res = mcp(&app, Auth::Bearer(support::SYNC_TOKEN), send.clone()).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"));
    // Identity tokens: refused for the tools whose REST route does not take one,
    // for the whole batch.
    let person = app.token("someone@people.test").await;
    let res = mcp(&app, Auth::Bearer(&person), send.clone()).await;
    assert_eq!((res.status, res.error()), (401, MCP_ONLY));
    let op = app.operator_token().await;
    let res = mcp(
        &app,
        Auth::Bearer(&op),
        json!([
            tool(1, "check_domain_allowlist", json!({ "domain": "x.test" })),
            tool(2, "get_credits", json!({}))
        ]),
    )
    .await;
    assert_eq!((res.status, res.error()), (401, MCP_ONLY));
    assert_eq!(app.agent_credits().await, before, "no credit spent");
    assert!(app.outbox().is_empty(), "nothing sent");

    // What needs no key: the protocol methods and the onboarding tools.
    let init = mcp(&app, Auth::None, rpc(json!(1), "initialize", json!({}))).await;
    assert_eq!(init.status, 200, "{}", init.body);
    let status = mcp(
        &app,
        Auth::None,
        tool(
            2,
            "get_request_status",
            json!({ "requestId": "ar_000000000000000000000000", "email": "x@y.test" }),
        ),
    )
    .await;
    assert_eq!(structured(&status)["status"], "pending");
    // An operator token may call the operator tools.
    let res = mcp(
        &app,
        Auth::Bearer(&op),
        tool(3, "check_domain_allowlist", json!({ "domain": "x.test" })),
    )
    .await;
    assert_eq!(structured(&res)["allowlisted"], false);
}

async fn tool_failures_map_to_results_or_json_rpc_errors_as_the_spec_says(app: TestApp) {
    let key = app.agent_key.clone();
    let agent = Auth::Bearer(&key);

    // 400: JSON-RPC error -32000 with data.status, the sentence as message.
    let res = mcp(&app, agent, tool(1, "send_mail", json!({ "to": "a@example.org" }))).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["error"]["code"], -32000, "{}", res.body);
    assert_eq!(res.body["error"]["data"]["status"], 400);
    assert_eq!(res.body["error"]["message"], "to, subject, and text are required");
    assert_eq!(res.body["error"]["data"]["error"], "to, subject, and text are required");
    // Each refusal names what is wrong, in the tool's own terms.
    let res = mcp(&app, agent, tool(3, "list_inbox", json!({ "view": "threads" }))).await;
    assert_eq!(
        res.body["error"]["message"],
        "view must be quarantine or spam (threads: list_threads)"
    );
    let res = mcp(
        &app,
        agent,
        rpc(json!(4), "tools/call", json!({ "name": 5, "arguments": {} })),
    )
    .await;
    assert_eq!(res.body["error"]["code"], -32602, "{}", res.body);
    assert_eq!(res.body["error"]["message"], "Invalid params: name must be a string");
    // Attachments are a REST-only field.
    let res = mcp(
        &app,
        agent,
        tool(
            2,
            "send_mail",
            json!({ "to": "a@example.org", "subject": "s", "text": "t", "attachments": [] }),
        ),
    )
    .await;
    assert_eq!(res.body["error"]["data"]["status"], 400, "{}", res.body);

    // 403 from the tool's access rule: -32000 too.
    let standard = app.onboard(&format!("mcp@{ALLOWED_DOMAIN}")).await;
    let res = mcp(
        &app,
        Auth::Bearer(&standard),
        tool(3, "add_domain_allowlist", json!({ "domain": "x.test" })),
    )
    .await;
    assert_eq!(res.body["error"]["code"], -32000, "{}", res.body);
    assert_eq!(res.body["error"]["data"]["status"], 403);
    assert_eq!(
        res.body["error"]["message"],
        "This action is limited to operator accounts."
    );
    // The agent key on a customer tool: the same 401 sentence as REST, as a tool error.
    let res = mcp(&app, agent, tool(4, "list_domains", json!({}))).await;
    assert_eq!(res.body["error"]["data"]["status"], 401, "{}", res.body);
    assert_eq!(res.body["error"]["message"], "Firebase sign-in required");

    // 404: a tool result with isError and structuredContent.status.
    let res = mcp(
        &app,
        Auth::None,
        tool(
            5,
            "verify_access_request",
            json!({ "requestId": "ar_0123456789abcdef01234567", "code": "12345678" }),
        ),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["result"]["isError"], true, "{}", res.body);
    let content = &res.body["result"]["structuredContent"];
    assert_eq!(
        (content["ok"].clone(), content["status"].clone()),
        (json!(false), json!(404))
    );
    assert_eq!(content["error"], "Message not found");
    // The sentence on its own, for a client that shows text only.
    assert_eq!(res.body["result"]["content"][0]["text"], "Message not found");
    // The tool's outputSchema admits this result: one branch is the error.
    let list = mcp(&app, agent, rpc(json!(50), "tools/list", json!({}))).await;
    for t in list.body["result"]["tools"].as_array().unwrap() {
        let schema = &t["outputSchema"];
        assert_eq!(schema["type"], "object", "{}", t["name"]);
        let branches = schema["anyOf"].as_array().expect("output or error");
        let error = branches
            .iter()
            .find(|b| b["properties"]["ok"] == json!({"const": false}))
            .unwrap_or_else(|| panic!("{}: no error branch", t["name"]));
        assert_eq!(error["required"], json!(["ok", "error", "status"]), "{}", t["name"]);
        assert!(!schema.to_string().contains("\"format\":\"uint"), "{}", t["name"]);
    }

    // 429 (no credits left) and 503 (sending paused): tool results too.
    app.set_credits("agent:default", 0).await;
    let send = tool(
        6,
        "send_mail",
        json!({ "to": "a@example.org", "subject": "s", "text": "t" }),
    );
    let res = mcp(&app, agent, send.clone()).await;
    assert_eq!(res.body["result"]["isError"], true, "{}", res.body);
    assert_eq!(res.body["result"]["structuredContent"]["status"], 429);
    assert_eq!(res.body["result"]["structuredContent"]["error"], "Insufficient credits");
    let op = app.operator_token().await;
    let paused = app
        .post("/credits", Auth::Bearer(&op), json!({ "sendingEnabled": false }))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    let res = mcp(&app, agent, send).await;
    assert_eq!(res.body["result"]["structuredContent"]["status"], 503, "{}", res.body);
    assert_eq!(
        res.body["result"]["structuredContent"]["error"],
        "Sending temporarily disabled"
    );
}

/// Strips what differs between two calls made one after the other.
fn stable(mut v: Value) -> Value {
    if let Some(obj) = v.as_object_mut() {
        for volatile in ["checkedAt", "updatedAt"] {
            obj.remove(volatile);
        }
    }
    v
}

/// The streamable HTTP transport's Origin rule, and a batch's bound.
async fn a_browser_page_of_another_origin_is_refused_and_batches_are_bounded(app: TestApp) {
    let key = app.agent_key.clone();
    let ping = rpc(json!(1), "ping", json!({}));
    let post = |origin: Option<String>, body: &Value| {
        let mut req = app
            .client
            .post(format!("{}/mcp", app.base))
            .bearer_auth(&key)
            .json(body);
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
        }
        app.send(req)
    };
    let evil = post(Some("https://evil.example".into()), &ping).await;
    assert_eq!(
        (evil.status, evil.error()),
        (403, "This Origin may not call the MCP endpoint")
    );
    assert_eq!(post(Some("null".into()), &ping).await.status, 403);
    // No Origin (no browser), or the service's own: answered.
    assert_eq!(post(None, &ping).await.status, 200);
    let own = app.base.clone();
    assert_eq!(post(Some(own), &ping).await.status, 200);

    let batch = |n: usize| Value::Array((0..n).map(|i| rpc(json!(i), "ping", json!({}))).collect());
    let full = post(None, &batch(20)).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body.as_array().unwrap().len(), 20);
    let over = post(None, &batch(21)).await;
    assert_eq!(over.status, 400, "{}", over.body);
    assert_eq!(over.body["error"]["code"], -32600);
    assert_eq!(over.body["error"]["message"], "A batch holds at most 20 messages");
}

/// A batch's calls run at once: six waits for mail from one key find five
/// slots (a key holds at most 5 waits), which six calls one after another
/// never would; the answers keep the batch's order.
async fn a_batch_runs_its_calls_at_once(app: TestApp) {
    let key = app.agent_key.clone();
    let batch = Value::Array(
        (0..6)
            .map(|i| tool(i, "wait_for_message", json!({ "wait": 2 })))
            .collect(),
    );
    let res = mcp(&app, Auth::Bearer(&key), batch).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let answers = res.body.as_array().unwrap();
    let ids: Vec<i64> = answers.iter().map(|a| a["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5], "in the batch's order");
    let busy = answers
        .iter()
        .filter(|a| a["result"]["structuredContent"]["status"] == 429)
        .count();
    assert_eq!(busy, 1, "five waits at once, the sixth refused: {}", res.body);
}

async fn each_tool_answers_what_its_rest_route_answers(app: TestApp) {
    let key = app
        .sender(&format!("owner@{ALLOWED_DOMAIN}"), "parity.test", "me")
        .await;
    let customer = Auth::Bearer(&key);
    let op = app.operator_token().await;
    let operator = Auth::Bearer(&op);
    let agent_key = app.agent_key.clone();

    let cases: Vec<(&str, Auth, Value, reqwest::Method, &str)> = vec![
        (
            "get_account_status",
            customer,
            json!({}),
            reqwest::Method::POST,
            "/getAccountStatus",
        ),
        (
            "list_domains",
            customer,
            json!({}),
            reqwest::Method::GET,
            "/listDomains",
        ),
        (
            "get_dns_instructions",
            customer,
            json!({ "domainId": "parity.test" }),
            reqwest::Method::GET,
            "/getDnsInstructions?domainId=parity.test",
        ),
        (
            "add_domain",
            customer,
            json!({ "domain": "parity.test" }),
            reqwest::Method::POST,
            "/addDomain",
        ),
        (
            "list_domain_allowlist",
            operator,
            json!({}),
            reqwest::Method::GET,
            "/admin/domainAllowlist",
        ),
        (
            "check_domain_allowlist",
            operator,
            json!({ "domain": ALLOWED_DOMAIN }),
            reqwest::Method::GET,
            "/admin/domainAllowlist/check?domain=allowed.test",
        ),
        (
            "get_request_status",
            Auth::None,
            json!({ "requestId": "ar_000000000000000000000000", "email": "x@y.test" }),
            reqwest::Method::POST,
            "/getRequestStatus",
        ),
        (
            "add_mailbox",
            customer,
            json!({ "domainId": "parity.test", "localPart": "me", "mode": "hosted", "forwardTo": [] }),
            reqwest::Method::POST,
            "/addMailbox",
        ),
        (
            "set_mailbox_mode",
            customer,
            json!({ "domainId": "parity.test", "localPart": "me", "mode": "hosted", "forwardTo": [] }),
            reqwest::Method::POST,
            "/setMailboxMode",
        ),
        (
            "delete_mailbox",
            customer,
            json!({ "address": "me@parity.test" }),
            reqwest::Method::POST,
            "/deleteMailbox",
        ),
    ];
    for (i, (name, auth, args, method, path)) in cases.into_iter().enumerate() {
        let body = (method == reqwest::Method::POST).then_some(&args);
        let rest = app.request(method, path, auth, body).await;
        let via_mcp = mcp(&app, auth, tool(i as i64, name, args.clone())).await;
        let mcp_body = match rest.status {
            200 => structured(&via_mcp).clone(),
            404 | 429 | 503 => {
                let mut content = via_mcp.body["result"]["structuredContent"].clone();
                assert_eq!(content["status"], rest.status, "{name}");
                content.as_object_mut().unwrap().remove("status");
                content
            }
            status => {
                assert_eq!(
                    via_mcp.body["error"]["data"]["status"], status,
                    "{name}: {}",
                    via_mcp.body
                );
                let mut data = via_mcp.body["error"]["data"].clone();
                data.as_object_mut().unwrap().remove("status");
                data
            }
        };
        assert_eq!(
            stable(mcp_body),
            stable(rest.body.clone()),
            "{name} through MCP and REST"
        );
    }

    // Writes: the same refusals, sentence for sentence.
    let writes: Vec<(&str, &str, Value)> = vec![
        (
            "add_mailbox",
            "/addMailbox",
            json!({ "domainId": "parity.test", "localPart": "x", "mode": "sideways" }),
        ),
        ("send_mail", "/sendMail", json!({ "to": "a@b.test" })),
        ("verify_domain", "/verifyDomain", json!({})),
        (
            "issue_mailbox_credential",
            "/issueMailboxCredential",
            json!({ "address": "nobody@parity.test" }),
        ),
        (
            "operator_remove_domain",
            "/operatorRemoveDomain",
            json!({ "domainId": "parity.test" }),
        ),
    ];
    for (i, (name, path, args)) in writes.into_iter().enumerate() {
        let auth = if name == "operator_remove_domain" {
            operator
        } else {
            customer
        };
        let rest = app.post(path, auth, args.clone()).await;
        assert!(rest.status >= 400, "{name}: {}", rest.body);
        let via_mcp = mcp(&app, auth, tool(100 + i as i64, name, args)).await;
        let error = if via_mcp.body["result"]["isError"] == true {
            via_mcp.body["result"]["structuredContent"]["error"].clone()
        } else {
            via_mcp.body["error"]["data"]["error"].clone()
        };
        assert_eq!(error, rest.body["error"], "{name}: {}", via_mcp.body);
    }

    // The tools whose answers carry something new each time (an id, a key,
    // a password, a balance): the same body once that is set aside.
    let volatile = |mut v: Value| {
        for field in ["requestId", "messageId", "creditsRemaining", "password"] {
            if let Some(o) = v.as_object_mut() {
                o.remove(field);
            }
        }
        v
    };
    let agent = Auth::Bearer(&agent_key);
    let fresh: Vec<(&str, Auth, Value, &str)> = vec![
        (
            "request_access",
            Auth::None,
            json!({ "contactEmail": "parity@people.test", "domain": "people.test", "agentName": "a", "intendedUse": "b" }),
            "/requestAccess",
        ),
        (
            "send_mail",
            agent,
            json!({ "to": "x@example.org", "subject": "s", "text": "t" }),
            "/sendMail",
        ),
        (
            "issue_mailbox_credential",
            customer,
            json!({ "address": "me@parity.test" }),
            "/issueMailboxCredential",
        ),
        (
            "verify_domain",
            customer,
            json!({ "domainId": "parity.test" }),
            "/verifyDomain",
        ),
        (
            "add_domain_allowlist",
            operator,
            json!({ "domain": ALLOWED_DOMAIN }),
            "/admin/domainAllowlist",
        ),
        (
            "operator_delete_request",
            operator,
            json!({ "ids": ["ar_000000000000000000000000"] }),
            "/admin/requestDelete",
        ),
        (
            "verify_access_request",
            Auth::None,
            json!({ "requestId": "ar_000000000000000000000000", "code": "12345678" }),
            "/verifyAccessRequest",
        ),
        (
            "operator_decide_request",
            operator,
            json!({ "id": "ar_000000000000000000000000", "decision": "approve" }),
            "/admin/requestDecision",
        ),
        (
            "control_sending",
            agent,
            json!({ "disabled": false, "frozenUntil": null }),
            "/credits",
        ),
    ];
    for (i, (name, auth, args, path)) in fresh.into_iter().enumerate() {
        let rest = app.post(path, auth, args.clone()).await;
        let via_mcp = mcp(&app, auth, tool(300 + i as i64, name, args)).await;
        let mcp_body = if rest.status == 200 {
            structured(&via_mcp).clone()
        } else {
            let mut content = via_mcp.body["result"]["structuredContent"].clone();
            assert_eq!(content["status"], rest.status, "{name}: {}", via_mcp.body);
            content.as_object_mut().unwrap().remove("status");
            content
        };
        assert_eq!(
            volatile(mcp_body),
            volatile(rest.body.clone()),
            "{name} through MCP and REST"
        );
    }
    let removed = app
        .delete("/admin/domainAllowlist", operator, json!({ "domain": "absent.test" }))
        .await;
    let via_mcp = mcp(
        &app,
        operator,
        tool(400, "remove_domain_allowlist", json!({ "domain": "absent.test" })),
    )
    .await;
    assert_eq!(structured(&via_mcp), &removed.body);
    let duplicates = app
        .get("/admin/requestDuplicates?email=parity@people.test", operator)
        .await;
    assert_eq!(duplicates.status, 200, "{}", duplicates.body);
    let via_mcp = mcp(
        &app,
        operator,
        tool(
            401,
            "operator_find_duplicate_requests",
            json!({ "email": "parity@people.test" }),
        ),
    )
    .await;
    assert_eq!(structured(&via_mcp), &duplicates.body);

    // get_credits is MCP's own shape: the balance GET /credits reports.
    let rest = app.get("/credits", Auth::Bearer(&agent_key)).await;
    let via_mcp = mcp(&app, Auth::Bearer(&agent_key), tool(200, "get_credits", json!({}))).await;
    assert_eq!(
        structured(&via_mcp),
        &json!({ "ok": true, "remaining": rest.body["credits"]["remaining"] })
    );
}

/// The official MCP Python SDK, as a new agent would use it: onboard with no
/// key, then add a domain and a mailbox and send, all through `/mcp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdk_onboards_adds_a_domain_and_a_mailbox_and_sends() {
    let Some(venv) = crate::support::standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let email = format!("agent@{ALLOWED_DOMAIN}");
    app.allowlist(ALLOWED_DOMAIN).await;
    let url = format!("{}/mcp", app.base);
    let run = |key: Option<String>, steps: Value| {
        let venv = venv.clone();
        let url = url.clone();
        async move {
            tokio::task::spawn_blocking(move || sdk_client(&venv, &url, key.as_deref(), &steps))
                .await
                .unwrap()
        }
    };

    let first = run(
        None,
        json!([{ "tool": "request_access", "args": {
            "contactEmail": email, "domain": "org.test", "agentName": "sdk agent", "intendedUse": "tests" } }]),
    )
    .await;
    assert_eq!(first["protocolVersion"], "2024-11-05", "{first}");
    assert_eq!(first["serverInfo"]["version"], "0.7.0");
    assert_eq!(first["ping"], true);
    let tools = first["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t["hasInputSchema"] == true && t["hasOutputSchema"] == true)
    );
    assert!(tools.iter().any(|t| t["name"] == "send_mail"));
    let request_id = first["calls"][0]["structured"]["requestId"]
        .as_str()
        .unwrap()
        .to_string();

    let code = app.code_for(&email);
    let verified = run(
        None,
        json!([{ "tool": "verify_access_request", "args": { "requestId": request_id, "code": code } }]),
    )
    .await;
    let key = verified["calls"][0]["structured"]["apiKey"]
        .as_str()
        .unwrap()
        .to_string();

    let added = run(
        Some(key.clone()),
        json!([{ "tool": "add_domain", "args": { "domain": "sdk.test" } }]),
    )
    .await;
    let domain = &added["calls"][0]["structured"]["domain"];
    assert_eq!(added["calls"][0]["structured"]["created"], true, "{added}");
    app.publish(domain);

    let done = run(
        Some(key.clone()),
        json!([
            { "tool": "verify_domain", "args": { "domainId": "sdk.test" } },
            { "tool": "add_mailbox", "args": { "domainId": "sdk.test", "localPart": "hello", "mode": "hosted", "forwardTo": [] } },
            { "tool": "issue_mailbox_credential", "args": { "address": "hello@sdk.test" } },
            { "tool": "send_mail", "args": { "to": "friend@example.org", "subject": "From MCP", "text": "Sent by an agent", "from": "hello@sdk.test" } },
            { "tool": "get_credits" },
            { "tool": "send_mail", "args": { "to": "friend@example.org" } },
            // The domain named as `domain`, which the schema says it takes.
            { "tool": "add_mailbox", "args": { "domain": "sdk.test", "localPart": "desk", "mode": "hosted" } },
        ]),
    )
    .await;
    let calls = done["calls"].as_array().unwrap();
    assert_eq!(calls[0]["structured"]["verified"], true, "{done}");
    assert_eq!(calls[1]["structured"]["mailbox"]["mode"], "hosted", "{done}");
    assert!(calls[2]["structured"]["password"].is_string(), "{done}");
    let sent = &calls[3]["structured"];
    assert_eq!(sent["ok"], true, "{done}");
    assert_eq!(sent["creditsRemaining"], 99, "{done}");
    assert_eq!(calls[4]["structured"], json!({ "ok": true, "remaining": 99 }));
    assert_eq!(calls[5]["rpcError"]["code"], -32000, "{done}");
    assert_eq!(calls[5]["rpcError"]["data"]["status"], 400, "{done}");
    assert_eq!(calls[6]["structured"]["mailbox"]["mode"], "hosted", "{done}");
    let message = app.outbox_for("friend@example.org");
    assert_eq!(message.len(), 1);
    assert!(message[0].contains("Subject: From MCP"));

    // A verification mail arrives; the agent waits for it, reads the code, and
    // uses every inbox tool, each answer checked against its output schema by
    // the SDK.
    let raw = "From: Acme <no-reply@acme.example>\r\nTo: hello@sdk.test\r\nSubject: Confirm your Acme account\r\n\
               Message-ID: <confirm@acme.example>\r\n\r\nYour code is 739164.\r\nhttps://acme.example/confirm?t=9\r\n";
    mailhost::deliver(&app.data_dir, raw.as_bytes().to_vec()).await.unwrap();
    assert_eq!(
        common::service::receiving::poller::run_once(&app.ctx)
            .await
            .unwrap()
            .filed,
        1
    );
    let inbox = run(
        Some(key.clone()),
        json!([
            { "tool": "wait_for_message", "args": { "from": "acme", "wait": 5 } },
            { "tool": "list_inbox", "args": { "limit": 5 } },
            { "tool": "list_threads" },
            { "tool": "search_inbox", "args": { "q": "acme" } },
        ]),
    )
    .await;
    let calls = inbox["calls"].as_array().unwrap();
    assert!(calls.iter().all(|c| c["isError"] == false), "{inbox}");
    let got = &calls[0]["structured"];
    assert_eq!(got["codes"], json!(["739164"]), "{inbox}");
    // The links a stranger wrote come inside the answer's envelope.
    let d = got["envelope"]["delimiter"].as_str().unwrap();
    assert_eq!(
        got["links"],
        json!([format!("<{d}>https://acme.example/confirm?t=9</{d}>")]),
        "{inbox}"
    );
    let id = got["message"]["id"].as_str().unwrap().to_string();
    let thread = got["message"]["threadId"].as_str().unwrap().to_string();
    assert_eq!(calls[1]["structured"]["messages"][0]["id"], id.as_str(), "{inbox}");
    assert_eq!(
        calls[2]["structured"]["threads"][0]["threadId"],
        thread.as_str(),
        "{inbox}"
    );
    assert_eq!(
        calls[3]["structured"]["messages"].as_array().unwrap().len(),
        1,
        "{inbox}"
    );
    let more = run(
        Some(key.clone()),
        json!([
            { "tool": "get_message", "args": { "id": id, "maxChars": 100 } },
            { "tool": "get_thread", "args": { "thread": thread } },
            { "tool": "mark_read", "args": { "thread": thread, "folder": "archive" } },
            { "tool": "wait_for_message", "args": { "from": "acme", "wait": 1 } },
        ]),
    )
    .await;
    let calls = more["calls"].as_array().unwrap();
    assert!(calls.iter().all(|c| c["isError"] == false), "{more}");
    assert_eq!(calls[0]["structured"]["truncated"], false, "{more}");
    assert_eq!(calls[1]["structured"]["thread"]["messageCount"], 1, "{more}");
    assert_eq!(calls[2]["structured"]["thread"]["folder"], "archive", "{more}");
    assert_eq!(calls[3]["structured"]["message"], Value::Null, "nothing unread: {more}");

    // The agent answers by the message's id: a reply-all and a forward, each
    // answer checked against its output schema by the SDK.
    let answered = run(
        Some(key.clone()),
        json!([
            { "tool": "reply_to_message", "args": { "id": id, "text": "Confirmed, thanks.", "all": true } },
            { "tool": "forward_message", "args": { "id": id, "to": "colleague@example.org", "text": "FYI" } },
            { "tool": "get_thread", "args": { "thread": thread } },
        ]),
    )
    .await;
    let calls = answered["calls"].as_array().unwrap();
    assert!(calls.iter().all(|c| c["isError"] == false), "{answered}");
    let replied = &calls[0]["structured"];
    assert_eq!(replied["to"], json!(["no-reply@acme.example"]), "{answered}");
    let d = replied["envelope"]["delimiter"].as_str().unwrap();
    assert_eq!(
        replied["subject"],
        format!("<{d}>Re: Confirm your Acme account</{d}>"),
        "{answered}"
    );
    assert_eq!(replied["threadId"], thread.as_str(), "{answered}");
    let d = calls[1]["structured"]["envelope"]["delimiter"].as_str().unwrap();
    assert_eq!(
        calls[1]["structured"]["subject"],
        format!("<{d}>Fwd: Confirm your Acme account</{d}>"),
        "{answered}"
    );
    assert_eq!(calls[2]["structured"]["thread"]["messageCount"], 3, "{answered}");
    let forwarded = app
        .outbox()
        .into_iter()
        .find(|m| m.contains("X-Original-To: colleague@example.org"));
    let forwarded = forwarded.expect("the forward went out");
    assert!(forwarded.contains("Your code is 739164."), "{forwarded}");
}

pub(crate) fn sdk_client(venv: &str, url: &str, key: Option<&str>, steps: &Value) -> Value {
    use std::io::Write;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_client.py");
    let mut cmd = std::process::Command::new(format!("{venv}/bin/python"));
    cmd.arg(script).arg(url);
    if let Some(key) = key {
        cmd.arg(key);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "mcp_client.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answered: Value = serde_json::from_slice(&out.stdout).unwrap();
    // A client that validates arguments against the advertised inputSchema
    // before calling must be able to make every call the tool accepts.
    for (call, step) in answered["calls"]
        .as_array()
        .unwrap()
        .iter()
        .zip(steps.as_array().unwrap())
    {
        if call.get("rpcError").is_none() && call["isError"] == false {
            assert_eq!(
                call["schemaErrors"],
                json!([]),
                "{step}: the tool took it, its inputSchema refuses it"
            );
        }
    }
    answered
}

/// The official MCP Inspector (npm `@modelcontextprotocol/inspector`, on Node
/// 22, installed by scripts/test): its strict lint of `tools/list` finds no
/// error, and every result it gets validates against its tool's
/// `outputSchema`, error results (isError) included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_finds_no_schema_error() {
    let Some(node) = crate::support::standin("MAILHOST_TEST_NODE") else {
        return;
    };
    let Some(inspector) = crate::support::standin("MAILHOST_TEST_MCP_INSPECTOR") else {
        return;
    };
    let Some(app) = TestApp::spawn(support::Backend::Embedded).await else {
        return;
    };
    let key = app
        .sender(&format!("inspect@{ALLOWED_DOMAIN}"), "inspect.example", "me")
        .await;
    let url = format!("{}/mcp", app.base);
    let run = |credential: String, args: Vec<String>| {
        let (node, inspector, url) = (node.clone(), inspector.clone(), url.clone());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(node)
                .arg(inspector)
                .arg(url)
                .args(["--transport", "http", "--header"])
                .arg(format!("Authorization: Bearer {credential}"))
                .args(args)
                .output()
                .expect("the inspector runs")
        })
    };
    let strict = run(
        key.clone(),
        vec!["--method".into(), "tools/list".into(), "--strict".into()],
    )
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(0), "tools/list --strict: {stderr}");
    assert!(!stderr.contains("unknown format"), "{stderr}");

    // Success results and error results (exit 5: the tool said isError, and
    // its structuredContent passed the schema; 1 would be a schema failure).
    let calls: [(&str, &str, &[&str], i32); 8] = [
        ("standard", "get_credits", &[], 0),
        ("standard", "list_inbox", &[], 0),
        ("standard", "list_threads", &[], 0),
        ("standard", "search_inbox", &["q=invoice"], 0),
        ("standard", "get_account_status", &[], 0),
        ("standard", "list_domains", &[], 0),
        ("standard", "get_message", &["id=nope000000000000000"], 5),
        ("agent", "get_webhook", &[], 0),
    ];
    for (who, tool, args, expected) in calls {
        let credential = if who == "agent" {
            app.agent_key.clone()
        } else {
            key.clone()
        };
        let mut argv: Vec<String> = ["--method", "tools/call", "--tool-name", tool]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if !args.is_empty() {
            argv.push("--tool-arg".into());
            argv.extend(args.iter().map(|a| a.to_string()));
        }
        let out = run(credential, argv).await.unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(expected), "{tool}: {stdout}\n{stderr}");
        assert!(!stderr.contains("unknown format"), "{tool}: {stderr}");
    }
}
