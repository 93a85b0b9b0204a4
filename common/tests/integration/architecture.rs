//! The arrows of the design run one way: http (REST and MCP) -> api ->
//! service -> store, with auth, values and the other parts below the
//! services. A file that imports against them fails here, and so does any
//! cycle between the top-level modules of `common/src`.

use std::collections::{BTreeMap, BTreeSet};
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
    refuse("service", &["crate::http", "crate::api", "crate::openapi", "axum::"]);
}

/// The module a file under a directory belongs to: its own name, or its
/// folder's.
fn module_of(rel: &str) -> String {
    rel.split('/')
        .next()
        .unwrap_or_default()
        .trim_end_matches(".rs")
        .to_string()
}

/// The lower-case names right after each `prefix` in `code`: `prefix x`
/// and each of `prefix {x, y::z}`.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or_default().split(',').collect(),
            None => vec![rest],
        };
        for name in names {
            let name: String = name
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                named.insert(name);
            }
        }
    }
    named
}

/// The top-level modules each module of `common/src` names (`crate::x`,
/// `crate::{x, y}`), leaving out its tests.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources("") {
        let rel = path.split("/src/").last().unwrap_or_default();
        let module = module_of(rel);
        if module == "lib" {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut named = names_after(code, "crate::");
        // `crate::input!` is a macro, not a module.
        named.remove("input");
        named.remove(&module);
        graph.entry(module).or_default().extend(named);
    }
    graph
}

#[test]
fn the_modules_import_one_way() {
    let graph = import_graph();
    assert!(graph.len() > 10, "the graph was not read: {graph:?}");
    let no_arrow = |from: &str, to: &str| {
        assert!(
            !graph.get(from).is_some_and(|to_set| to_set.contains(to)),
            "{from} imports {to}: against the design's arrows"
        );
    };
    no_arrow("auth", "service");
    no_arrow("auth", "context");
    no_arrow("api", "http");
    no_arrow("values", "validate");
    no_arrow("store", "service");
    no_cycle(&graph);
}

/// No module reaches itself through others.
fn no_cycle(graph: &BTreeMap<String, BTreeSet<String>>) {
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(next) = stack.pop() {
            assert!(next != start, "{start} imports itself through {seen:?}: a cycle");
            if seen.insert(next.clone()) {
                stack.extend(graph.get(next).into_iter().flatten());
            }
        }
    }
}

/// The services among themselves: each names others as `super::x` or
/// `crate::service::x` (a folder's files count as its module).
#[test]
fn the_services_import_one_way() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources("service") {
        let rel = path.split("/service/").last().unwrap_or_default();
        let module = module_of(rel);
        let in_folder = rel.contains('/');
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut named = names_after(code, "crate::service::");
        // In a folder's file, `super::` is the folder's own module.
        if !in_folder {
            named.extend(names_after(code, "super::"));
        }
        named.remove(&module);
        graph.entry(module).or_default().extend(named);
    }
    graph.remove("mod");
    assert!(
        graph.get("mailboxes").is_some_and(|m| m.contains("forwarding")),
        "{graph:?}"
    );
    no_cycle(&graph);
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
