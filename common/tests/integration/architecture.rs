//! The arrows of the design run one way: http and mcp -> api -> service ->
//! store. A file that imports against them fails here.

use std::path::Path;

fn sources(dir: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

fn refuse(dir: &str, forbidden: &[&str]) {
    let files = sources(dir);
    assert!(!files.is_empty(), "no sources under {dir}");
    for (path, text) in files {
        for needle in forbidden {
            assert!(
                !text.contains(needle),
                "{path} reaches {needle}: against the design's arrows"
            );
        }
    }
}

#[test]
fn services_never_see_http_mcp_or_the_catalogue() {
    refuse(
        "service",
        &["crate::http", "crate::mcp", "crate::api", "crate::openapi", "axum::"],
    );
}

#[test]
fn the_context_only_composes() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/context.rs")).unwrap();
    assert!(!text.contains("crate::service"), "context.rs imports a service");
}

#[test]
fn the_store_knows_nothing_above_it() {
    refuse("store", &["crate::service", "crate::api", "crate::http", "crate::mcp"]);
}

#[test]
fn services_take_typed_input_and_give_typed_output() {
    for (path, text) in sources("service") {
        for line in text.lines().filter(|l| l.trim_start().starts_with("pub async fn")) {
            assert!(!line.contains("Fields"), "{path}: a service takes raw fields: {line}");
            assert!(
                !line.contains("Result<Value") && !line.contains("serde_json::Value>"),
                "{path}: a service returns Value: {line}"
            );
        }
    }
}
