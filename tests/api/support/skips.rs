//! Skips made visible. `common::testing` skips a test whose stand-in is not
//! named in the environment or whose program is not installed (or fails it
//! under `MAILHOST_TEST_REQUIRE_ALL=1`); here a skip is also said: one line on
//! the terminal, past libtest's capture of a passing test's output, and one
//! line `<test>\t<reason>` appended to the file `MAILHOST_TEST_SKIPS` names,
//! which `scripts/test` counts in its summary. common's tests have the same in
//! common/tests/integration/skips.rs.

use std::io::Write;

/// [`common::testing::standin`], with a skip said.
pub fn standin(var: &str) -> Option<String> {
    let value = common::testing::standin(var);
    if value.is_none() {
        skipped(&format!("{var} is not set"));
    }
    value
}

/// [`common::testing::standin_command`], with a skip said.
pub fn standin_command(name: &str) -> Option<()> {
    let found = common::testing::standin_command(name);
    if found.is_none() {
        skipped(&format!("{name} is not installed"));
    }
    found
}

/// Says that the running test skips itself (or a part of itself) for `reason`.
pub fn skipped(reason: &str) {
    // libtest runs each test on a thread named after it.
    let test = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        std::thread::current().name().unwrap_or("?")
    );
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
