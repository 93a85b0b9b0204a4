//! Every successful answer a test reads holds only what the OpenAPI document
//! says it holds: an object's keys are among its schema's `properties`
//! (through `$ref`, `allOf`, `anyOf` and `oneOf`), so a stored record's
//! private fields (a code's digest, who pays, a list key) can never ride
//! along in an answer unnoticed. A schema that names no properties (a map,
//! free JSON) lets anything through.

use serde_json::{Map, Value};

/// Panics naming the first key the route's documented answer does not have.
pub fn check(method: &reqwest::Method, path: &str, status: u16, body: &Value) {
    if !(200..300).contains(&status) || !body.is_object() {
        return;
    }
    let Some((_, rest)) = super::route(method.as_str(), path) else {
        return;
    };
    let doc = common::openapi::document();
    let Some(schema) = doc["paths"][rest.path][rest.method.as_str().to_ascii_lowercase()]["responses"]["200"]
        ["content"]["application/json"]["schema"]
        .as_object()
    else {
        return;
    };
    if let Err(extra) = undocumented(doc, &Value::Object(schema.clone()), body, "") {
        panic!("{method} {path} answered {extra}, which its documented answer does not have: {body}");
    }
}

/// The first key of `value` that `schema` does not describe, as a path.
fn undocumented(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(doc, schema);
    for choice in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(choice).and_then(Value::as_array) {
            // One branch that fits is enough; report the first branch's miss.
            let mut first = None;
            for branch in branches {
                match undocumented(doc, branch, value, at) {
                    Ok(()) => return Ok(()),
                    Err(e) => first = first.or(Some(e)),
                }
            }
            return first.map_or(Ok(()), Err);
        }
    }
    match value {
        Value::Object(fields) => {
            let Some(properties) = properties(doc, schema) else {
                return Ok(());
            };
            for (name, field) in fields {
                let Some(field_schema) = properties.get(name) else {
                    return Err(format!("{at}/{name}"));
                };
                undocumented(doc, field_schema, field, &format!("{at}/{name}"))?;
            }
            Ok(())
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| undocumented(doc, item_schema, item, &format!("{at}/{i}"))),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The properties an object schema names (its own and its `allOf` parts'),
/// or None when it is open (no properties, or any additional ones allowed).
fn properties(doc: &Value, schema: &Value) -> Option<Map<String, Value>> {
    let mut named = Map::new();
    let mut any = false;
    let parts = std::iter::once(schema).chain(schema.get("allOf").and_then(Value::as_array).into_iter().flatten());
    for part in parts {
        let part = resolve(doc, part);
        if part
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false))
        {
            return None;
        }
        if let Some(own) = part.get("properties").and_then(Value::as_object) {
            named.extend(own.clone());
            any = true;
        }
    }
    any.then_some(named)
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(pointer) => resolve(
            doc,
            doc.pointer(pointer.trim_start_matches('#')).unwrap_or(&Value::Null),
        ),
        None => schema,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(path: &str, method: &str) -> &'static Value {
        &common::openapi::document()["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
    }

    #[test]
    fn a_key_no_schema_names_is_found_at_any_depth() {
        let doc = common::openapi::document();
        let hold = json!({"id": "snd_0123456789abcdef", "kind": "held", "status": "waiting", "messageId": "<a@b>",
            "from": "a@b.example", "to": ["c@d.example"], "subject": "s", "preview": "p",
            "requestedBy": {"kind": "scoped_key", "keyId": "key_0123456789ab", "name": "n"},
            "createdAt": "2026-11-26T00:00:00Z", "expiresAt": "2026-11-27T00:00:00Z"});
        let fine = json!({"ok": true, "holds": [hold.clone()]});
        assert_eq!(undocumented(doc, answer("/holds", "get"), &fine, ""), Ok(()));
        let mut leaked = hold;
        leaked["codeDigest"] = json!("9f86d0");
        let leaking = json!({"ok": true, "holds": [leaked]});
        assert_eq!(
            undocumented(doc, answer("/holds", "get"), &leaking, ""),
            Err("/holds/0/codeDigest".to_string())
        );
    }

    #[test]
    fn an_open_object_takes_any_key() {
        let doc = common::openapi::document();
        // An audit row's target is free JSON: whatever the input named.
        let page = json!({"ok": true, "changes": [{"at": "2026-11-26T00:00:00Z",
            "actor": {"kind": "account_key"}, "operation": "createKey", "target": {"anything": 1},
            "status": 200, "details": [], "via": "rest", "requestId": "r", "ip": "127.0.0.1"}]});
        assert_eq!(undocumented(doc, answer("/audit", "get"), &page, ""), Ok(()));
    }
}
