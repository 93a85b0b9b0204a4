//! Each REST route's documented errors (its `errors:` list in the catalogue,
//! with its access rule's and a body's, as the OpenAPI document lists them)
//! hold every error the suite saw it answer. Run by scripts/test after the
//! suite, from the lines `support::seen` wrote.

use crate::support::route;
use common::error::ApiError;

/// Answers that come from no operation: an unknown path, a verb the route
/// does not take, or a failure before any route is chosen.
fn before_any_operation(status: u16) -> bool {
    matches!(status, 404 | 405 | 413)
}

#[test]
#[ignore = "scripts/test runs it after the suite, on what the suite saw"]
fn every_error_a_route_answered_is_in_its_list() {
    let file = std::env::var("MAILHOST_TEST_SEEN").expect("MAILHOST_TEST_SEEN names the suite's answers");
    let seen = std::fs::read_to_string(&file).expect("the suite's answers");
    let mut checked = 0;
    let mut missing = std::collections::BTreeSet::new();
    for line in seen.lines() {
        let mut parts = line.splitn(4, '\t');
        let (Some(method), Some(path), Some(status), Some(error)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            panic!("a line that is not method, path, status, error: {line:?}");
        };
        let status: u16 = status.parse().expect("a status");
        let Some((op, rest)) = route(method, path) else {
            continue;
        };
        let answered = ApiError {
            status,
            error: error.to_string().into(),
            code: None,
            retry_after: None,
            addresses: None,
        };
        let listed = common::openapi::problems(op, rest).iter().any(|p| {
            ApiError {
                code: p.code,
                ..answered.clone()
            }
            .is(*p)
        });
        if !listed && !before_any_operation(status) {
            missing.insert(format!("{} ({method} {}): {status} {error:?}", op.id, rest.path));
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} answers were seen");
    assert!(
        missing.is_empty(),
        "errors answered but not listed:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}
