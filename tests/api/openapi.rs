//! The served API description (spec part 9), checked by tools no one here
//! wrote: openapi-spec-validator accepts it, and schemathesis drives every
//! route from it with valid credentials and finds no 5xx, no response that
//! breaks its schema, and no request schema looser or stricter than the
//! validation behind it (tests/schemathesis.toml names the few operations
//! whose acceptance depends on more than a request's shape, and why).

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use common::api;
use serde_json::Value;

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
        // validation behind it must, here.
        assert!(
            !stdout.contains("Schema validation mismatch"),
            "schemathesis warns the schemas and the validation disagree:\n{stdout}"
        );
        assert!(
            out.status.success(),
            "schemathesis found failures:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
