//! Helpers for tests that need a stand-in service (DynamoDB Local, moto, a
//! Python tool). `scripts/test` starts the stand-ins and names them in the
//! environment; a plain `cargo test` without them skips those tests with a
//! printed notice, unless `MAILHOST_TEST_REQUIRE_ALL=1` makes that a failure.

/// The value of a stand-in's environment variable, or `None` when the test
/// should be skipped.
pub fn standin(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("MAILHOST_TEST_REQUIRE_ALL").as_deref() == Ok("1") => {
            panic!("{var} is not set but MAILHOST_TEST_REQUIRE_ALL=1: start the stand-ins with scripts/test")
        }
        _ => {
            eprintln!("skipped: {var} is not set (scripts/test starts the stand-ins)");
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
    eprintln!("skipped: {name} is not installed");
    None
}
