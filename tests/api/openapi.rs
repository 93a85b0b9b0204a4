//! The served API description (spec part 9), checked by tools no one here
//! wrote: openapi-spec-validator accepts it, and schemathesis drives every
//! route from it with valid credentials and finds no 5xx, no response that
//! breaks its schema, and no request schema looser or stricter than the
//! validation behind it (tests/schemathesis.toml names the few operations
//! whose acceptance depends on more than a request's shape, and why), and
//! openapi-python-client generates from it a working client of every operation.

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use common::api;
use serde_json::{Value, json};

on_both_backends!(a_switch_is_true_or_false_and_its_schemas_say_so);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_describes_every_route_of_the_catalogue() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let doc = app.get("/api/docs/openapi.json", Auth::None).await;
    assert_eq!(doc.status, 200);
    let doc = doc.body;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "0.7.0");
    assert_eq!(doc["servers"][1]["url"], "/api");
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert_eq!(doc["components"]["securitySchemes"]["apiKey"]["name"], "X-Api-Key");
    for op in api::operations() {
        let Some(rest) = &op.rest else { continue };
        let described = &doc["paths"][rest.path][rest.method.as_str().to_ascii_lowercase()];
        assert_eq!(described["operationId"], op.id, "{} {}", rest.method, rest.path);
        assert!(described["responses"]["200"].is_object());
        // Every sentence the operation can answer with is in the document.
        for problem in op.errors.iter().chain(&op.refusals()) {
            let status = problem.status.to_string();
            let description = described["responses"][&status]["description"]
                .as_str()
                .unwrap_or_default();
            let head = problem.sentence.split("{}").next().unwrap();
            assert!(
                description.contains(head),
                "{} {}: {status} {head:?}",
                rest.method,
                rest.path
            );
        }
    }
    assert!(doc["paths"]["/mcp"]["post"].is_object());
    assert!(doc["paths"]["/mcp"]["get"].is_object());

    let page = app.send(app.client.get(format!("{}/docs", app.base))).await;
    assert_eq!(page.status, 200);
    let html = app
        .client
        .get(format!("{}/docs", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("/docs/openapi.json"),
        "the legacy page points to the document"
    );
}

fn venv_tool(venv: &str, tool: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(format!("{venv}/bin/{tool}"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_passes_the_validator_and_schemathesis() {
    let Some(venv) = crate::support::standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let url = format!("{}/docs/openapi.json", app.base);
    let doc: Value = app.get("/docs/openapi.json", Auth::None).await.body;
    let file = app.data_dir.join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let file = file.to_str().unwrap().to_string();

    let (venv2, file2) = (venv.clone(), file.clone());
    let out = tokio::task::spawn_blocking(move || venv_tool(&venv2, "openapi-spec-validator", &[&file2]))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "openapi-spec-validator: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A customer with a verified domain and a mailbox, so that the customer
    // routes run for real; then an operator, for the operator routes.
    let key = app
        .sender(&format!("schema@{ALLOWED_DOMAIN}"), "schema.test", "me")
        .await;
    let operator = app.operator_token().await;
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis.toml");
    for credential in [key, operator] {
        let (venv, url, config) = (venv.clone(), url.clone(), config.clone());
        let header = format!("Authorization: Bearer {credential}");
        let out = tokio::task::spawn_blocking(move || {
            venv_tool(
                &venv,
                "schemathesis",
                &[
                    "--config-file",
                    config.to_str().unwrap(),
                    "run",
                    &url,
                    "-H",
                    &header,
                    "--max-examples",
                    "25",
                    "--generation-deterministic",
                    "--no-color",
                ],
            )
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // Warnings do not fail a run: a schema looser or stricter than the
        // validation behind it must, here. A request the schema allows and
        // the service refuses (positive_data_acceptance) is named too, so
        // that no change to how the run ends can let one pass.
        assert!(
            !stdout.contains("Schema validation mismatch"),
            "schemathesis warns the schemas and the validation disagree:\n{stdout}"
        );
        assert!(
            !stdout.contains("Schema-valid request rejected"),
            "schemathesis found a request the schema allows refused:\n{stdout}"
        );
        assert!(
            out.status.success(),
            "schemathesis found failures:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A client generated from the served document by openapi-python-client
/// (PyPI, no one here wrote it), every warning fatal: every operation of the
/// document becomes a function, and the client sends a mail, lists the inbox
/// and downloads an attachment, each answer parsed into its model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_sends_reads_and_downloads() {
    let Some(venv) = support::standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let key = app.acme().await;
    let raw = "From: ann@example.org\r\nTo: agent@acme.example\r\nSubject: The notes\r\n\
               Message-ID: <notes@example.org>\r\nMIME-Version: 1.0\r\n\
               Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n\
               --b1\r\nContent-Type: text/plain\r\n\r\nThe notes are attached.\r\n\
               --b1\r\nContent-Type: text/plain; name=\"notes.txt\"\r\n\
               Content-Disposition: attachment; filename=\"notes.txt\"\r\n\r\nWhat the notes say.\r\n\
               --b1--\r\n";
    common::mail::inbound::drop_raw(&*app.ctx.blobs, raw.as_bytes().to_vec())
        .await
        .unwrap();
    common::service::receiving::poller::run_once(&app.ctx).await.unwrap();

    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/generated_client.py");
    let base = app.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(format!("{venv}/bin/python"))
            .arg(script)
            .args([&base, &key, "agent@acme.example", "friend@elsewhere.test", "The notes"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "generated_client.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = got["output"].as_str().unwrap_or_default();
    assert_eq!(got["exitCode"], 0, "the generator warned or failed:\n{output}");
    assert!(
        !output.to_ascii_lowercase().contains("warning"),
        "the generator warned:\n{output}"
    );
    assert_eq!(got["missing"], json!([]), "operations left out: {got}");
    assert!(got["operations"].as_u64().unwrap() > 50, "{got}");

    assert_eq!(got["send"]["status"], 200, "{got}");
    assert_eq!(got["send"]["parsedType"], "SendOutput", "{got}");
    assert!(
        got["send"]["parsedMessageId"]
            .as_str()
            .is_some_and(|m| m.starts_with('<')),
        "{got}"
    );
    assert_eq!(app.outbox_for("friend@elsewhere.test").len(), 1);

    assert_eq!(got["inbox"]["status"], 200, "{got}");
    assert_eq!(got["inbox"]["parsedType"], "InboxList", "{got}");
    assert_eq!(got["inbox"]["parsedSubjects"], json!(["The notes"]), "{got}");
    assert_eq!(got["attachment"]["status"], 200, "{got}");
    assert_eq!(got["attachment"]["parsedType"], "File", "{got}");
    assert_eq!(got["attachment"]["text"], "What the notes say.", "{got}");
}

/// A request body property as the document describes it (its schema may be
/// a reference into `components.schemas`).
fn body_property<'a>(doc: &'a Value, path: &str, name: &str) -> &'a Value {
    let schema = &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let schema = match schema["$ref"].as_str() {
        Some(reference) => &doc["components"]["schemas"][reference.rsplit('/').next().unwrap()],
        None => schema,
    };
    &schema["properties"][name]
}

/// The seven switches (POST /credits disabled and sendingEnabled, POST /inbox
/// unread, POST /webhooks enabled and rotateSecret, acceptSpoofed of
/// addMailbox and setMailboxMode) take true or false: `null` is refused with
/// the field's sentence and changes nothing, over REST and over each tool
/// that has the field, and the API description and the tools' inputSchema
/// say boolean alone (docs/decisions.md).
async fn a_switch_is_true_or_false_and_its_schemas_say_so(app: TestApp) {
    let customer = app.acme().await;
    let agent = app.agent_key.clone();
    let operator = app.operator_token().await;
    app.receive("friend@elsewhere.test", "agent@acme.example", "switches")
        .await;
    let listed = app.get("/inbox", Auth::Bearer(&customer)).await;
    let id = listed.body["messages"][0]["id"].as_str().unwrap().to_string();
    let doc = app.get("/docs/openapi.json", Auth::None).await.body;
    let credits_before = app.get("/credits", Auth::Bearer(&agent)).await.body;

    let new_mailbox = json!({ "domainId": "acme.example", "localPart": "fresh", "mode": "hosted", "forwardTo": [] });
    let agent_mailbox = json!({ "domainId": "acme.example", "localPart": "agent", "mode": "hosted", "forwardTo": [] });
    // (path, field, credential, the other fields, tool)
    let cases = [
        ("/credits", "disabled", &agent, json!({}), None),
        ("/credits", "sendingEnabled", &operator, json!({}), None),
        ("/inbox", "unread", &customer, json!({ "id": id }), Some("mark_read")),
        ("/webhooks", "enabled", &agent, json!({}), Some("set_webhook")),
        ("/webhooks", "rotateSecret", &agent, json!({}), Some("set_webhook")),
        (
            "/addMailbox",
            "acceptSpoofed",
            &customer,
            new_mailbox.clone(),
            Some("add_mailbox"),
        ),
        (
            "/setMailboxMode",
            "acceptSpoofed",
            &customer,
            agent_mailbox.clone(),
            Some("set_mailbox_mode"),
        ),
    ];
    for (i, (path, field, key, mut body, tool)) in cases.into_iter().enumerate() {
        let sentence = format!("{field} must be a boolean");
        assert_eq!(
            body_property(&doc, path, field)["type"],
            "boolean",
            "{path} {field}: {}",
            body_property(&doc, path, field)
        );
        body[field] = Value::Null;
        let refused = app.post(path, Auth::Bearer(key), body.clone()).await;
        assert_eq!(refused.status, 400, "{path} {field}: {}", refused.body);
        assert_eq!(refused.error(), sentence, "{path} {field}");

        let Some(tool) = tool else { continue };
        let listed = app
            .post(
                "/mcp",
                Auth::Bearer(key),
                json!({ "jsonrpc": "2.0", "id": 0, "method": "tools/list" }),
            )
            .await;
        let tools = listed.body["result"]["tools"].as_array().unwrap();
        let described = tools.iter().find(|t| t["name"] == tool).unwrap();
        let property = &described["inputSchema"]["properties"][field];
        assert_eq!(property["type"], "boolean", "{tool} {field}: {property}");
        let call = json!({
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": { "name": tool, "arguments": body },
        });
        let refused = app.post("/mcp", Auth::Bearer(key), call).await;
        let data = &refused.body["error"]["data"];
        assert_eq!(data["status"], 400, "{tool} {field}: {}", refused.body);
        assert_eq!(data["error"], sentence.as_str(), "{tool} {field}");
    }

    // Nothing changed: the switches, the webhook, the mailboxes, the message.
    assert_eq!(app.get("/credits", Auth::Bearer(&agent)).await.body, credits_before);
    assert_eq!(
        app.get("/webhooks", Auth::Bearer(&agent)).await.body["webhook"],
        Value::Null
    );
    let listed = app.get("/inbox", Auth::Bearer(&customer)).await;
    assert_eq!(listed.body["messages"][0]["unread"], true, "{}", listed.body);
    let added = app.post("/addMailbox", Auth::Bearer(&customer), new_mailbox).await;
    assert_eq!(added.status, 200, "the refused add made no mailbox: {}", added.body);
    let agent_row = app
        .post("/setMailboxMode", Auth::Bearer(&customer), agent_mailbox)
        .await;
    assert_eq!(agent_row.status, 200, "{}", agent_row.body);
    assert_eq!(agent_row.body["mailbox"]["acceptSpoofed"], false, "{}", agent_row.body);
}
