//! The errors the suite saw. Every answer of 400 and above that a test reads
//! through [`super::TestApp::send`] is one line `<METHOD>\t<path>\t<status>\t<error>`
//! appended to the file `MAILHOST_TEST_SEEN` names (scripts/test sets it);
//! `errors_seen::every_error_a_route_answered_is_in_its_list` reads it after
//! the suite and holds each route's documented errors to what it answered.

use std::io::Write;

use serde_json::Value;

pub fn record(method: &reqwest::Method, path: &str, status: u16, body: &Value) {
    let Some(file) = std::env::var_os("MAILHOST_TEST_SEEN").filter(|p| !p.is_empty()) else {
        return;
    };
    let Some(error) = body.get("error").and_then(Value::as_str) else {
        return;
    };
    if status < 400 {
        return;
    }
    // One line per answer: a sentence's own tabs and newlines would split it.
    let error = error.replace(['\t', '\n', '\r'], " ");
    let line = format!("{method}\t{path}\t{status}\t{error}\n");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .expect("MAILHOST_TEST_SEEN opens");
    // One write per line, so lines of concurrent tests never interleave.
    file.write_all(line.as_bytes())
        .expect("MAILHOST_TEST_SEEN takes a line");
}
