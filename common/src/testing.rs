//! Helpers for tests that need a stand-in service (DynamoDB Local, moto, a
//! Python tool). `scripts/test` starts the stand-ins and names them in the
//! environment; a plain `cargo test` without them skips those tests with a
//! printed notice, unless `MAILHOST_TEST_REQUIRE_ALL=1` makes that a failure.
//! A skip is said (one line on the terminal, past libtest's capture) and
//! recorded (`<test>\t<reason>` appended to the file `MAILHOST_TEST_SKIPS`
//! names), and `scripts/test` counts the records in its summary.

use std::io::Write;

/// The value of a stand-in's environment variable, or `None` when the test
/// should be skipped.
pub fn standin(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("MAILHOST_TEST_REQUIRE_ALL").as_deref() == Ok("1") => {
            panic!("{var} is not set but MAILHOST_TEST_REQUIRE_ALL=1: start the stand-ins with scripts/test")
        }
        _ => {
            skipped(&format!("{var} is not set"));
            None
        }
    }
}

/// `Some(())` when a program the test drives (postmap, doveadm, ...) is
/// installed; otherwise as [`standin`]: skipped, or a failure under
/// `MAILHOST_TEST_REQUIRE_ALL=1`.
pub fn standin_command(name: &str) -> Option<()> {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(());
    }
    if std::env::var("MAILHOST_TEST_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{name} is not installed but MAILHOST_TEST_REQUIRE_ALL=1 (.ci/run installs it)");
    }
    skipped(&format!("{name} is not installed"));
    None
}

/// Says that the running test skips itself (or a part of itself) for `reason`.
pub fn skipped(reason: &str) {
    // libtest runs each test on a thread named after it.
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {reason}");
    if let Some(path) = std::env::var_os("MAILHOST_TEST_SKIPS").filter(|p| !p.is_empty()) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("MAILHOST_TEST_SKIPS {}: {e}", path.display()));
        file.write_all(format!("{test}\t{reason}\n").as_bytes())
            .expect("recording a skip");
    }
}
