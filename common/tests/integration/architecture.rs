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

/// The services' import graph: each top-level room of `service/` (a
/// capability folder, or `mod.rs`) and the rooms it names, as
/// `crate::service::x` or, in a file of `service/`'s root, `super::x`.
fn service_graph() -> BTreeMap<String, BTreeSet<String>> {
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
    graph
}

/// The services among themselves: no cycle, and `service/mod.rs` only names
/// the capability folders (it holds nothing a service imports, so no arrow
/// runs back up to it).
#[test]
fn the_services_import_one_way() {
    let graph = service_graph();
    assert!(
        graph.get("receiving").is_some_and(|m| m.contains("delivery")),
        "{graph:?}"
    );
    for (module, named) in &graph {
        assert!(!named.contains("mod"), "{module} imports service/mod.rs");
    }
    let root = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service/mod.rs")).unwrap();
    for line in root.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("//")) {
        assert!(
            line.starts_with("pub mod "),
            "service/mod.rs holds more than its folders: {line}"
        );
    }
    no_cycle(&graph);
}

/// Inside a folder of `service/`, a file imports the file that holds what it
/// uses (`super::file::Name`), never its folder's `mod.rs` (`super::Name`,
/// `super::*`): `mod.rs` names the files and hands their names on, so an
/// arrow into it runs back up and hides a circle between its files.
#[test]
fn no_file_imports_its_folders_face() {
    let mut seen = 0;
    for (path, text) in sources("service") {
        let file = Path::new(&path);
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let dir = file.parent().unwrap();
        if name == "mod.rs" || dir.ends_with("src/service") {
            continue;
        }
        seen += 1;
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (at, _) in code.match_indices("super::") {
            if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[at + "super::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or_default().split(',').collect(),
                None => vec![rest],
            };
            for name in names {
                let head: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '*')
                    .collect();
                if head.is_empty() || head == "super" {
                    continue;
                }
                let sibling = dir.join(format!("{head}.rs")).is_file() || dir.join(&head).is_dir();
                assert!(
                    sibling,
                    "{path} imports its folder's mod.rs (super::{head}): name the file that holds it"
                );
            }
        }
    }
    assert!(seen > 50, "the service files were not read: {seen}");
}

/// Every service lives in a capability folder: `service/`'s root holds only
/// `mod.rs`, so a new module is placed on a floor, not beside them.
#[test]
fn every_service_is_in_a_capability_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service");
    let files: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["mod.rs"], "files at service/'s root");
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
