//! The Lambda functions as AWS runs them, and the SAM template that deploys them.
//!
//! `lambda_functions_answer_the_sample_events` starts each function under
//! `cargo lambda watch` (the Lambda runtime API emulator) in `Mode::Lambda`,
//! on the embedded store, with a real SMTP server (aiosmtpd) receiving the
//! access codes and the sent mail, and invokes every event in `events/<function>/` with
//! `cargo lambda invoke`: the HTTP functions with API Gateway events, each
//! scheduled job's function (`common::jobs::JOBS`) with an EventBridge
//! scheduled event. It needs the
//! Python venv that holds cargo-lambda and aiosmtpd, named by
//! `MAILHOST_TEST_VENV`, and is skipped without it.
//!
//! `mta-export`, `credits`, `mcp`, `mailboxes` and `send` share one data
//! directory (store, blobs and secrets), as they share the table, the bucket
//! and Secrets Manager in AWS. No function writes at its cold start: the
//! agent key's balance that `credits` and `mcp` read is opened by
//! `mta-export`'s bootstrap, at its first run. `GET /mtaMailboxExport` reads the export `mta-export` wrote and
//! `POST /mtaMailboxExport` acknowledges it, and `POST /sendMail` with the
//! agent key sends from `noreply@<service domain>`, signed with the DKIM key of
//! the service domain that `mta-export`'s first run (the bootstrap, which no
//! HTTP function runs in Lambda mode) created; on a data directory of its own
//! that send would answer 500 'service domain missing'. The send goes to the
//! same aiosmtpd that receives the access codes. The embedded store is one
//! redb file that a single process may open (redb locks it; a second open
//! fails with `DatabaseAlreadyOpen`), so the functions never run at the same
//! time: each watch starts at its function's first case and stops after its
//! last, and the next one starts once the store is released.
//!
//! The other tests need nothing: every path of the route table is in
//! `template.yaml` with method ANY at its root and under `/api`, on its
//! family's function,
//! each declared job's function runs on the job's rate and serves no route, every
//! event file has a case here, each function links its own family's
//! operations and no other family's, and none opens its store before its
//! first event. With DynamoDB Local and moto (`scripts/test` starts them),
//! each function started as in AWS makes exactly three requests before its
//! first event, all at once: its secrets in one read, and one DynamoDB read
//! and one S3 HEAD that open those connections.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::smtp::free_port;
use common::http::{Family, find_route, routes};
use common::jobs::{JOBS, Job};
use common::store::embedded::EmbeddedStore;
use serde_json::{Value, json};

use crate::support::aws_standins;

/// The agent key the sample events present (`events/README.md`).
const AGENT_KEY: &str = "svc_test_agent_key_for_events_0000000000000";
/// The sync token the mail-server events present (`events/README.md`).
const SYNC_TOKEN: &str = "sync_test_token_for_events_00000000000000000";
const MISSING_CREDENTIAL: &str = "Missing Authorization Bearer token or X-Api-Key";
const INVALID_KEY: &str = "Invalid API key";
const FIREBASE_REQUIRED: &str = "Firebase sign-in required";
const OPERATOR_ONLY: &str = "This action is limited to operator accounts.";
const SYNC_ONLY: &str = "This route is limited to the mail server's sync token.";

/// Functions that read what another function wrote, and that one: each runs
/// on the writer's data directory (embedded store, blobs and secrets), after it.
const READS_DATA_OF: &[(&str, &str)] = &[
    ("credits", "mta-export"),
    ("mcp", "mta-export"),
    ("mailboxes", "mta-export"),
    ("inbox", "mta-export"),
    ("drafts", "mta-export"),
    ("webhooks", "mta-export"),
    ("send", "mta-export"),
    ("poller", "mta-export"),
    ("scheduled-sends", "mta-export"),
];

/// The service domain and mail host the functions run with, and the protected
/// mailboxes the `mta-export` bootstrap creates on it (the default
/// `MAILHOST_PROTECTED_ADDRESSES`), in address order.
const SERVICE_DOMAIN: &str = "mailhost.localhost";
/// The address the agent key sends from.
const AGENT_SENDER: &str = "noreply@mailhost.localhost";
/// The recipient and subject of `events/send/send-mail-agent-key.json`.
const SENT_TO: &str = "friend@example.net";
const SENT_SUBJECT: &str = "Hello from the send function";
const MAIL_HOST: &str = "mx.mailhost.localhost";
const PROTECTED_MAILBOXES: &[&str] = &[
    "abuse@mailhost.localhost",
    "inbox@mailhost.localhost",
    "noreply@mailhost.localhost",
    "postmaster@mailhost.localhost",
];

/// Every function: one per route family, then one per scheduled job.
pub(crate) fn functions() -> Vec<&'static str> {
    common::lambda::functions()
}

/// Each function's `main.rs` is one line naming it (`common::serve!(SEND)`,
/// `common::schedule!(POLLER)`), so which sections a function serves is
/// written once, in `common::api::functions`.
#[test]
fn each_functions_main_is_one_line_naming_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for function in functions() {
        let main = std::fs::read_to_string(root.join("functions").join(function).join("src/main.rs")).unwrap();
        let code: Vec<&str> = main
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("//"))
            .collect();
        let name = function.to_uppercase().replace('-', "_");
        let expected = match is_scheduled(function) {
            true => format!("common::schedule!({name});"),
            false => format!("common::serve!({name});"),
        };
        assert_eq!(code, [expected.as_str()], "functions/{function}/src/main.rs");
    }
}

/// A function run by a schedule (a declared job) rather than behind the API.
fn is_scheduled(function: &str) -> bool {
    JOBS.iter().any(|job| job.name == function)
}

fn data_dir_name(function: &'static str) -> &'static str {
    READS_DATA_OF
        .iter()
        .find(|(f, _)| *f == function)
        .map_or(function, |(_, writer)| *writer)
}

/// One sample event, the function it is for, and what that function answers.
#[derive(Clone)]
struct Case {
    function: &'static str,
    event: &'static str,
    /// The HTTP status; `None` for a scheduled function, which answers with
    /// what it returns rather than with an HTTP response.
    status: Option<u16>,
    /// Checks the JSON body (HTTP) or the returned JSON (scheduled).
    check: fn(&Value),
}

/// The HTTP functions' sample events, in the order they are invoked (their
/// cases of a function together: its watch runs while they do). [`cases`]
/// adds one case per scheduled job.
const HTTP_CASES: &[Case] = &[
    Case {
        function: "onboarding",
        event: "request-access.json",
        status: Some(200),
        check: access_requested,
    },
    Case {
        function: "onboarding",
        event: "api-request-access.json",
        status: Some(200),
        check: access_requested,
    },
    Case {
        function: "onboarding",
        event: "verify-access-request-unknown-id.json",
        status: Some(404),
        check: |body| assert_error(body, "Message not found"),
    },
    Case {
        function: "onboarding",
        event: "get-request-status.json",
        status: Some(200),
        check: |body| {
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["status"], "pending", "{body}");
            assert_eq!(body["ready"], false, "{body}");
        },
    },
    Case {
        function: "onboarding",
        event: "get-account-status-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "admin",
        event: "get-domain-allowlist-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "admin",
        event: "get-domain-allowlist-agent-key.json",
        status: Some(403),
        check: |body| assert_error(body, OPERATOR_ONLY),
    },
    Case {
        function: "admin",
        event: "check-domain-allowlist-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "domains",
        event: "add-domain-agent-key.json",
        status: Some(401),
        check: |body| assert_error(body, FIREBASE_REQUIRED),
    },
    Case {
        function: "domains",
        event: "list-domains-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "domains",
        event: "api-get-dns-instructions-agent-api-key.json",
        status: Some(401),
        check: |body| assert_error(body, INVALID_KEY),
    },
    Case {
        function: "domains",
        event: "operator-remove-domain-agent-key.json",
        status: Some(403),
        check: |body| assert_error(body, OPERATOR_ONLY),
    },
    Case {
        function: "credits",
        event: "get-credits-agent-key.json",
        status: Some(200),
        check: |body| {
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["credits"]["remaining"], 100, "{body}");
            assert_eq!(body["credits"]["initial"], 100, "{body}");
            assert_eq!(body["agentKey"]["last4"], &AGENT_KEY[AGENT_KEY.len() - 4..], "{body}");
            assert_eq!(body["canControl"], true, "{body}");
            // No PublicUrl in the stack: the docs link is the API's own
            // address, as the event's requestContext gives it.
            assert_eq!(
                body["docs"], "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/docs/openapi.json",
                "{body}"
            );
        },
    },
    Case {
        function: "credits",
        event: "post-credits-agent-key.json",
        status: Some(200),
        check: |body| {
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["agentKey"]["disabled"], false, "{body}");
            assert_eq!(body["agentKey"]["status"], "active", "{body}");
            assert_eq!(body["credits"]["remaining"], 100, "{body}");
        },
    },
    Case {
        function: "credits",
        event: "get-credits-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "mcp",
        event: "api-initialize-agent-key.json",
        status: Some(200),
        check: |body| {
            assert_eq!(body["id"], "init", "{body}");
            assert_eq!(body["result"]["protocolVersion"], "2024-11-05", "{body}");
            assert_eq!(body["result"]["serverInfo"]["version"], "0.7.0", "{body}");
        },
    },
    Case {
        function: "mcp",
        event: "tools-call-get-credits-agent-key.json",
        status: Some(200),
        check: |body| {
            // The agent balance mta-export's bootstrap opened (no
            // function writes at its cold start).
            assert_eq!(body["result"]["isError"], false, "{body}");
            assert_eq!(
                body["result"]["structuredContent"],
                json!({ "ok": true, "remaining": 100 }),
                "{body}"
            );
        },
    },
    Case {
        function: "mcp",
        event: "get-openapi-no-credential.json",
        status: Some(200),
        check: |body| {
            assert_eq!(body["openapi"], "3.1.0", "{body}");
            assert_eq!(body["info"]["version"], "0.7.0", "{body}");
            assert!(body["paths"]["/sendMail"]["post"].is_object(), "{body}");
        },
    },
    Case {
        function: "mcp",
        event: "get-web-app.json",
        status: Some(200),
        check: |body| {
            // The web app's page, beside the API description, with its policy
            // and its modules by version (the hash of the assets it embeds).
            let html = body["html"].as_str().unwrap_or_default();
            let version = html.split("/app/").nth(1).and_then(|rest| rest.split_once('/'));
            assert!(
                version.is_some_and(|(v, rest)| v.len() == 12
                    && v.bytes().all(|b| b.is_ascii_hexdigit())
                    && rest.starts_with("app.css")),
                "{body}"
            );
            assert!(html.contains(r#"<script type="module" src="/app/"#), "{body}");
            assert!(html.contains(r#"content="off""#), "no local sign-in in AWS: {body}");
            assert_eq!(body["headers"]["x-frame-options"], "DENY", "{body}");
            let csp = body["headers"]["content-security-policy"].as_str().unwrap_or_default();
            assert!(csp.contains("script-src 'self'"), "{body}");
        },
    },
    Case {
        function: "mailboxes",
        event: "add-mailbox-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "mailboxes",
        event: "get-mta-export-agent-key.json",
        status: Some(403),
        check: |body| assert_error(body, SYNC_ONLY),
    },
    Case {
        function: "mailboxes",
        event: "api-get-mta-export-sync-token.json",
        status: Some(200),
        check: |body| {
            // The export mta-export wrote into the shared data directory.
            assert_eq!(body["ok"], true, "{body}");
            let export = &body["export"];
            assert_eq!(export["version"], 1, "{body}");
            assert_eq!(export["mailHost"], MAIL_HOST, "{body}");
            assert_eq!(export["domains"], json!([SERVICE_DOMAIN]), "{body}");
            let addresses: Vec<&str> = export["mailboxes"]
                .as_array()
                .unwrap_or_else(|| panic!("no mailboxes in {body}"))
                .iter()
                .map(|m| m["address"].as_str().unwrap_or_default())
                .collect();
            assert_eq!(addresses, PROTECTED_MAILBOXES, "{body}");
            assert!(
                export["mailboxes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .all(|m| m["mode"] == "hosted"),
                "{body}"
            );
            assert_eq!(
                export["postfix"]["virtualMailboxDomains"],
                format!("bounce.{SERVICE_DOMAIN} OK\n{SERVICE_DOMAIN} OK\n"),
                "the bounce domain and the service domain: {body}"
            );
            assert_eq!(
                export["postfix"]["virtualAliasMaps"],
                format!("dmarc@{SERVICE_DOMAIN} dmarc@bounce.{SERVICE_DOMAIN}\n"),
                "DMARC reports go to the spool alone: {body}"
            );
            assert_eq!(
                export["dovecot"]["passwdFile"], "",
                "no mailbox has a login yet: {body}"
            );
        },
    },
    Case {
        function: "mailboxes",
        event: "api-ack-mta-export-sync-token.json",
        status: Some(200),
        check: |body| {
            // Version 1 carried the four new protected mailboxes: all applied.
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["version"], 1, "{body}");
            assert_eq!(body["applied"], PROTECTED_MAILBOXES.len(), "{body}");
            assert!(body["appliedAt"].is_string(), "{body}");
        },
    },
    Case {
        function: "inbox",
        event: "get-inbox-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "inbox",
        event: "get-inbox-agent-key.json",
        status: Some(200),
        check: |body| {
            // The service inbox of a fresh data directory: nothing filed yet.
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["messages"], json!([]), "{body}");
            assert_eq!(body["unreadInPage"], 0, "{body}");
        },
    },
    Case {
        function: "drafts",
        event: "get-drafts-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "drafts",
        event: "get-drafts-agent-key.json",
        status: Some(403),
        check: |body| assert_error(body, "Drafts require a signed-in user"),
    },
    Case {
        function: "webhooks",
        event: "get-webhook-agent-key.json",
        status: Some(200),
        check: |body| assert_eq!(body, &json!({ "ok": true, "webhook": null }), "{body}"),
    },
    Case {
        function: "webhooks",
        event: "set-webhook-private-url-agent-key.json",
        status: Some(400),
        check: |body| assert_error(body, "url host is not allowed"),
    },
    Case {
        function: "webhooks",
        event: "set-webhook-local-receiver-agent-key.json",
        status: Some(200),
        check: |body| {
            // localhost is exempt in this test (MAILHOST_WEBHOOK_ALLOW_HOSTS)
            // and nothing listens on its port 9: the poller's announcement of
            // the message it files fails, as a dead receiver's does.
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["webhook"]["url"], LOCAL_RECEIVER, "{body}");
        },
    },
    Case {
        function: "send",
        event: "api-send-mail-no-credential.json",
        status: Some(401),
        check: |body| assert_error(body, MISSING_CREDENTIAL),
    },
    Case {
        function: "send",
        event: "send-mail-agent-key.json",
        status: Some(200),
        check: |body| {
            // Sent over SMTP (the message is checked at aiosmtpd below), not
            // a reply to a stored conversation: nothing filed. The agent key's
            // first credit of 100 in this data directory.
            assert_eq!(body["ok"], true, "{body}");
            assert_eq!(body["from"], AGENT_SENDER, "{body}");
            let id = body["messageId"].as_str().unwrap_or_default();
            assert!(
                id.starts_with('<') && id.ends_with(&format!("@{SERVICE_DOMAIN}>")),
                "messageId {id:?} in {body}"
            );
            assert_eq!(body["creditsRemaining"], 99, "{body}");
            assert_eq!(body["attachmentCount"], 0, "{body}");
            assert_eq!(body["attachmentsStored"], 0, "{body}");
            assert!(body.get("threadId").is_none(), "{body}");
        },
    },
];

/// The webhook the agent key registers (`set-webhook-local-receiver-agent-key.json`).
const LOCAL_RECEIVER: &str = "https://localhost:9/mailhost-hook";

/// A job's other events, invoked before its `scheduled.json`: the poller's
/// S3 object-created event through EventBridge, after the test has dropped
/// into the spool what a mail host would (`drop_into_spool`): a message for
/// a service-domain mailbox and a real bounce about the agent key's send.
/// The poller files whatever waits, whatever key the event names: one copy
/// filed; the report applied, never filed. A real complaint about the same
/// send is dropped before the scheduled run, which applies it.
const JOB_EVENT_CASES: &[Case] = &[Case {
    function: "poller",
    event: "object-created.json",
    status: None,
    check: |out| {
        // The bounce at the event's key, applied (a report files no copy);
        // the message beside it is left to the scheduled run.
        assert_eq!(
            out,
            &json!({ "filed": 0, "duplicates": 0, "failed": 0, "pending": 0 }),
            "{out}"
        );
    },
}];

/// Every file under `events/`, in the order they are invoked: the HTTP cases,
/// and each declared job's `scheduled.json` (an EventBridge scheduled event),
/// so a new job is invoked by being declared, after its other events. A job
/// that bootstraps (`mta-export`) comes first: `credits` and `mcp` read the
/// agent balance it opened, `mailboxes` reads and acknowledges its export, and
/// `send` sends from the service domain it made. The other jobs come last.
fn cases() -> Vec<Case> {
    let job_cases = |job: &Job| {
        let scheduled = Case {
            function: job.name,
            event: "scheduled.json",
            status: None,
            check: summary_check(job.name),
        };
        let others = JOB_EVENT_CASES.iter().filter(|c| c.function == job.name).cloned();
        others.chain(std::iter::once(scheduled)).collect::<Vec<_>>()
    };
    let (first, last): (Vec<&Job>, Vec<&Job>) = JOBS.iter().partition(|job| job.bootstraps);
    let first = first.into_iter().flat_map(job_cases);
    let last = last.into_iter().flat_map(job_cases);
    first.chain(HTTP_CASES.iter().map(Case::clone)).chain(last).collect()
}

/// What a job's function answers on its data directory in this test: its
/// summary, a JSON object, with the values a known job must show.
fn summary_check(job: &str) -> fn(&Value) {
    match job {
        "mta-export" => |out| {
            // A positive integer: the first version of a fresh data directory,
            // carrying the protected mailboxes its first run's bootstrap made.
            assert_eq!(out["version"], 1, "{out}");
            assert_eq!(out["mailboxes"], PROTECTED_MAILBOXES.len(), "{out}");
        },
        "poller" => |out| {
            // The listing finds the message the event's run left (filed) and
            // the complaint (applied, never filed); nothing failed or left.
            assert_eq!(
                out,
                &json!({ "filed": 1, "duplicates": 0, "failed": 0, "pending": 0 }),
                "{out}"
            );
        },
        "scheduled-sends" => |out| {
            // Nothing scheduled on a fresh data directory.
            assert_eq!(
                out,
                &json!({ "sent": 0, "failed": 0, "alreadyTaken": 0, "waiting": 0, "expired": 0 }),
                "{out}"
            );
        },
        _ => |out| assert!(out.is_object(), "a job answers its summary: {out}"),
    }
}

fn access_requested(body: &Value) {
    assert_eq!(body["ok"], true, "{body}");
    let id = body["requestId"].as_str().unwrap_or_default();
    assert!(id.starts_with("ar_") && id.len() == 27, "requestId {id:?} in {body}");
    assert_eq!(body["expiresIn"], 86_400, "{body}");
}

fn assert_error(body: &Value, error: &str) {
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["error"], error, "{body}");
}

pub(crate) fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ------------------------------------------------------------ what each links

/// Each family's function names only its own section of the catalogue, so
/// the linker leaves the other families' operations (and their services) out:
/// every operation's summary, a string only its `Operation` holds, is in the
/// binary of its family's function and in no other, except `mcp`, which
/// serves every tool and describes every route.
#[test]
fn each_function_links_its_own_familys_operations_and_no_others() {
    let target_dir = target_dir();
    build_functions(&target_dir);

    let operations: Vec<(Family, &str)> = common::api::CATALOGUE
        .iter()
        .flat_map(|section| {
            section
                .operations
                .iter()
                .map(|op| (common::api::family_of(section), op.summary))
        })
        .collect();
    let scratch = Scratch::new();
    let patterns = scratch.path("summaries.txt");
    let lines: Vec<&str> = operations.iter().map(|(_, summary)| *summary).collect();
    fs::write(&patterns, lines.join("\n") + "\n").unwrap();
    for family in Family::ALL {
        let binary = target_dir.join("debug").join(family.function());
        // grep -F with every summary at once: one pass over the binary.
        let found = Command::new("grep")
            .arg("-aoF")
            .arg("-f")
            .arg(&patterns)
            .arg(&binary)
            .output()
            .expect("grep");
        let found: BTreeSet<String> = String::from_utf8_lossy(&found.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        for (owner, summary) in &operations {
            let linked = found.contains(*summary);
            let expected = owner == family || *family == Family::Mcp;
            assert_eq!(
                linked,
                expected,
                "{}: the {owner:?} operation '{summary}' {}",
                family.function(),
                if linked { "is linked in" } else { "is missing" }
            );
        }
    }
}

/// Init writes nothing: each function, started in `Mode::Lambda` on the
/// embedded store against a Runtime API that is a bare listener here, asks for
/// its first event without having created its store file (opening a redb
/// file for writing writes its header and syncs it). `mta-export`'s bootstrap
/// waits for its first run too.
#[test]
fn no_function_opens_its_store_before_its_first_event() {
    let target_dir = target_dir();
    build_functions(&target_dir);
    let scratch = Scratch::new();
    for function in functions() {
        let data_dir = scratch.path(function);
        let env = [
            ("MAILHOST_STORE", "embedded".to_string()),
            ("MAILHOST_DATA_DIR", data_dir.display().to_string()),
            ("MAILHOST_SECRETS", "dir".to_string()),
            ("MAILHOST_SECRET_HMAC_SECRET", random_hex()),
            ("MAILHOST_AGENT_KEY", AGENT_KEY.to_string()),
            ("MAILHOST_SYNC_TOKEN", SYNC_TOKEN.to_string()),
            ("MAILHOST_SYSTEM_MAIL", "transport".to_string()),
            (
                "MAILHOST_JWKS_URL",
                "http://127.0.0.1:9/not-fetched-at-init".to_string(),
            ),
        ];
        let log = scratch.path(&format!("{function}.log"));
        let stored = at_first_poll(&target_dir, function, &env, &log, || {
            data_dir.join("store.redb").exists()
        });
        assert!(!stored, "{function} opened its store at init:\n{}", read(&log));
    }
}

/// Each function as it runs in AWS (DynamoDB, S3 and Secrets Manager: DynamoDB
/// Local and moto, each behind a proxy that names every request), and every
/// request it made before its first poll of the Runtime API: its secrets in one
/// read, one DynamoDB read and one S3 HEAD that open their connections, and
/// nothing else: no write, no JWKS (its URL points at the proxy, so a fetch
/// would show).
#[test]
fn in_aws_each_function_reads_its_secrets_at_once_warms_its_connections_and_writes_nothing_before_its_first_event() {
    let (Some(dynamodb), Some(moto)) = (
        crate::support::standin("MAILHOST_TEST_DYNAMODB_ENDPOINT"),
        crate::support::standin("MAILHOST_TEST_MOTO_ENDPOINT"),
    ) else {
        return;
    };
    let target_dir = target_dir();
    build_functions(&target_dir);
    let run = &random_hex()[..8];
    let (table, bucket, prefix) = (format!("cold-{run}"), format!("cold-{run}"), format!("cold-{run}/"));
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(aws_standins::provision(&dynamodb, &moto, &table, &bucket, &prefix));
    let dynamodb = aws_standins::Recorder::start(&dynamodb);
    let moto = aws_standins::Recorder::start(&moto);
    let scratch = Scratch::new();
    let expected = [
        "DynamoDB_20120810.GetItem".to_string(),
        format!("HEAD /{bucket}/"),
        "secretsmanager.BatchGetSecretValue".to_string(),
    ];
    for function in functions() {
        let mut env = aws_standins::function_env(&dynamodb, &moto, &table, &bucket, &prefix);
        env.push(("MAILHOST_SYSTEM_MAIL", "transport".to_string()));
        env.push(("MAILHOST_JWKS_URL", format!("{}/jwks-not-fetched-at-init", moto.url())));
        dynamodb.clear();
        moto.clear();
        let log = scratch.path(&format!("{function}.log"));
        let polled = at_first_poll(&target_dir, function, &env, &log, Instant::now);
        let mut calls = dynamodb.before(polled);
        calls.extend(moto.before(polled));
        calls.sort();
        assert_eq!(
            calls,
            expected,
            "{function}: the requests before its first event:\n{}",
            read(&log)
        );
    }
}

/// Starts a function's debug binary with the Lambda variables, a Runtime API
/// listener of its own and `env`; at its first request, which must be the
/// poll for the next event, runs `then`; stops the function.
fn at_first_poll<T>(
    target_dir: &Path,
    function: &str,
    env: &[(&str, String)],
    log: &Path,
    then: impl FnOnce() -> T,
) -> T {
    let runtime_api = TcpListener::bind("127.0.0.1:0").unwrap();
    runtime_api.set_nonblocking(true).unwrap();
    let mut child = Command::new(target_dir.join("debug").join(function))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", runtime_api.local_addr().unwrap().to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", function)
        .env("AWS_LAMBDA_LOG_GROUP_NAME", function)
        .env("AWS_REGION", "us-east-1")
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(fs::File::create(log).unwrap())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{function}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut poll = loop {
        match runtime_api.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("{function} exited ({status}) before its first poll:\n{}", read(log));
                }
                assert!(Instant::now() < deadline, "{function} never polled:\n{}", read(log));
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{function}: {e}"),
        }
    };
    poll.set_nonblocking(false).unwrap();
    poll.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = [0u8; 64];
    let n = poll.read(&mut request).unwrap();
    let seen = then();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        request[..n].starts_with(b"GET /2018-06-01/runtime/invocation/next"),
        "{function}: {:?}",
        String::from_utf8_lossy(&request[..n])
    );
    seen
}

// ------------------------------------------------------------ cargo lambda

#[test]
fn lambda_functions_answer_the_sample_events() {
    let Some(venv) = crate::support::standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let venv = PathBuf::from(venv);
    let bin = venv.join("bin");
    assert!(
        bin.join("cargo-lambda").exists(),
        "{} has no cargo-lambda: pip install cargo-lambda",
        venv.display()
    );
    let python = bin.join("python");
    let has_aiosmtpd = Command::new(&python)
        .args(["-c", "import aiosmtpd"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(has_aiosmtpd, "{} has no aiosmtpd: pip install aiosmtpd", venv.display());

    let scratch = Scratch::new();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let target_dir = target_dir();
    let all_functions = functions();

    // Build first, so that each watch's `cargo run` finds the binary fresh and
    // a compile error shows here rather than as a failed invoke.
    let started = Instant::now();
    build_functions(&target_dir);
    eprintln!("functions built in {:.1}s", started.elapsed().as_secs_f64());

    // A real SMTP server for the access codes; it prints each message it takes.
    let smtp_port = free_port();
    let smtp_log = scratch.path("smtp.log");
    let mut smtp = Command::new(&python);
    smtp.args(["-u", "-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{smtp_port}")]);
    let _smtp = Group::spawn(smtp, &smtp_log, "aiosmtpd");
    wait_for_port(smtp_port, Duration::from_secs(30), "aiosmtpd", &smtp_log);

    let hmac_secret = random_hex();
    let start_watch = |function: &'static str| -> Watch {
        let port = free_port();
        let data_dir = scratch.path(data_dir_name(function));
        let log = scratch.path(&format!("{function}.log"));
        let mut watch = Command::new(bin.join("cargo-lambda"));
        watch
            .current_dir(workspace())
            .args(["lambda", "watch", "--ignore-changes", "-p", function, "--bin", function])
            .args(["-A", "127.0.0.1", "-P", &port.to_string()]);
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("MAILHOST_")) {
            watch.env_remove(name);
        }
        watch
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("MAILHOST_STORE", "embedded")
            .env("MAILHOST_DATA_DIR", &data_dir)
            .env("MAILHOST_SECRETS", "dir")
            .env("MAILHOST_SECRET_HMAC_SECRET", &hmac_secret)
            .env("MAILHOST_AGENT_KEY", AGENT_KEY)
            .env("MAILHOST_SYNC_TOKEN", SYNC_TOKEN)
            .env("MAILHOST_SERVICE_DOMAIN", SERVICE_DOMAIN)
            .env("MAILHOST_MAIL_HOST", MAIL_HOST)
            .env("MAILHOST_SYSTEM_MAIL", "transport")
            .env("MAILHOST_SMTP_URL", format!("smtp://127.0.0.1:{smtp_port}"))
            .env("MAILHOST_WEBHOOK_ALLOW_HOSTS", "localhost")
            .env("MAILHOST_METRICS_NAMESPACE", METRICS_NAMESPACE)
            .env("RUST_LOG", "info");
        let group = Group::spawn(watch, &log, function);
        wait_for_port(port, Duration::from_secs(60), function, &log);
        Watch {
            function,
            port,
            log,
            data_dir,
            group,
        }
    };

    // One watch at a time: started at its function's first case, stopped
    // after its last (see the module comment).
    let mut running: Option<Watch> = None;
    let mut started_functions = BTreeSet::new();
    let mut answers: BTreeMap<String, Value> = BTreeMap::new();
    let mut complaint = None;
    for case in cases() {
        if running.as_ref().map(|w| w.function) != Some(case.function) {
            if let Some(done) = running.take() {
                done.stop();
            }
            assert!(
                started_functions.insert(case.function),
                "the cases of {} are not together in cases()",
                case.function
            );
            if case.function == "poller" {
                complaint = Some(drop_into_spool(&scratch.path(data_dir_name("poller")), &hmac_secret));
            }
            running = Some(start_watch(case.function));
        }
        let Watch { port, log, .. } = running.as_ref().expect("a running watch");
        let event = format!("events/{}/{}", case.function, case.event);
        let mut invoke = Command::new(bin.join("cargo-lambda"));
        invoke
            .current_dir(workspace())
            .env("PATH", &path)
            .args([
                "lambda",
                "invoke",
                case.function,
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .args(["--data-file", &event, "--output-format", "json"]);
        if case.function == "poller" && case.event == "scheduled.json" {
            let raw = complaint.take().expect("the complaint, kept for the scheduled run");
            drop_later(&scratch.path(data_dir_name("poller")), raw);
        }
        let started = Instant::now();
        let out = output_within(invoke, Duration::from_secs(5 * 60), &event);
        let response: Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) if out.status.success() => v,
            _ => panic!(
                "invoke {event} failed ({}):\n{}\n{}\n--- {} log:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                case.function,
                read(log)
            ),
        };
        let Some(status) = case.status else {
            // A scheduled function: what it returned is the answer.
            eprintln!("{event} -> {response} in {:.1}s", started.elapsed().as_secs_f64());
            (case.check)(&response);
            if case.function == "poller" && case.event == "object-created.json" {
                // The event's run read its one file, not the spool.
                let pending = scratch.path(data_dir_name("poller")).join("blobs/inbound/pending");
                let left: Vec<_> = fs::read_dir(&pending)
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                assert_eq!(left.len(), 1, "the message waits for the listing: {left:?}");
            }
            continue;
        };
        let body = answer_body(&event, &response);
        eprintln!(
            "{event} -> {} in {:.1}s: {body}",
            response["statusCode"],
            started.elapsed().as_secs_f64()
        );
        assert_eq!(response["statusCode"], status, "{event}: {response}");
        (case.check)(&body);
        answers.insert(event, body);
    }
    if let Some(done) = running.take() {
        done.stop();
    }
    assert_eq!(
        started_functions,
        all_functions.iter().copied().collect(),
        "every function has a case"
    );
    metric_lines_are_emf(&venv, &scratch, &all_functions);

    // Both access codes reached the SMTP server.
    let mail = read(&smtp_log);
    for to in ["dev@example.com", "ops@example.org"] {
        assert!(mail.contains(&format!("To: {to}")), "no mail to {to} in:\n{mail}");
    }
    assert_eq!(mail.matches("Your access code is ").count(), 2, "{mail}");

    // So did the agent key's send, exactly once, as the answer said, signed
    // with the service domain's DKIM key (selector `mail`).
    let sent = &answers["events/send/send-mail-agent-key.json"];
    let message_id = sent["messageId"].as_str().expect("messageId");
    assert_eq!(
        mail.matches(&format!("Message-ID: {message_id}")).count(),
        1,
        "{message_id} not at aiosmtpd once:\n{mail}"
    );
    let at = mail
        .find(&format!("Message-ID: {message_id}"))
        .expect("the sent message");
    // aiosmtpd's Debugging handler prints each message between these lines.
    let start = mail[..at]
        .rfind("---------- MESSAGE FOLLOWS ----------")
        .expect("message start");
    let end = at
        + mail[at..]
            .find("------------ END MESSAGE ------------")
            .expect("message end");
    let message = &mail[start..end];
    for line in [
        format!("From: {AGENT_SENDER}"),
        format!("To: {SENT_TO}"),
        format!("Subject: {SENT_SUBJECT}"),
    ] {
        assert!(message.lines().any(|l| l == line), "no {line:?} in:\n{message}");
    }
    let dkim = message
        .split("DKIM-Signature:")
        .nth(1)
        .unwrap_or_else(|| panic!("no DKIM-Signature in:\n{message}"));
    for tag in [format!("d={SERVICE_DOMAIN};"), "s=mail;".to_string()] {
        assert!(dkim.contains(&tag), "no {tag} in the DKIM-Signature of:\n{message}");
    }
}

/// The namespace the functions' metrics go to in this test.
const METRICS_NAMESPACE: &str = "mailhost/lambda-test";

/// What each function's cases make it count (`common::metrics`): the export's
/// age at its run, the acknowledgement, the send's relay answer, and the
/// spool run that files a message (whose webhook attempts fail) and applies
/// a bounce and a complaint.
const METRICS_BY_FUNCTION: &[(&str, &[&str])] = &[
    ("mta-export", &["ExportAge"]),
    ("mailboxes", &["ExportAcknowledged"]),
    ("send", &["SendAccepted", "SendFailed"]),
    (
        "poller",
        &[
            "InboundPending",
            "InboundFiled",
            "InboundFailed",
            "DropToFiledLatency",
            "WebhookAttempts",
            "WebhookFailures",
            "Bounces",
            "Complaints",
        ],
    ),
];

/// Every embedded metric format line the functions wrote to their logs is a
/// valid EMF document (the specification's schema and its references), in
/// the stack's namespace, and together they carry every named metric, each
/// from the function where its event happens; a function with no metric
/// event wrote none.
fn metric_lines_are_emf(venv: &Path, scratch: &Scratch, functions: &[&'static str]) {
    let mut lines = Vec::new();
    let mut writers = Vec::new();
    for function in functions {
        for line in read(&scratch.path(&format!("{function}.log"))).lines() {
            if line.contains("\"_aws\"") {
                let document: Value = serde_json::from_str(line.trim())
                    .unwrap_or_else(|e| panic!("{function}: not one JSON line ({e}): {line}"));
                for directive in document["_aws"]["CloudWatchMetrics"].as_array().into_iter().flatten() {
                    assert_eq!(directive["Namespace"], METRICS_NAMESPACE, "{function}: {line}");
                }
                lines.push(line.trim().to_string());
                writers.push(*function);
            }
        }
    }
    let names = crate::operations::check_emf(venv, &lines);
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (function, names) in writers.iter().zip(names) {
        seen.entry(function).or_default().extend(names);
    }
    let expected: BTreeMap<&str, BTreeSet<String>> = METRICS_BY_FUNCTION
        .iter()
        .map(|(f, names)| (*f, names.iter().map(|n| n.to_string()).collect()))
        .collect();
    assert_eq!(
        seen,
        expected,
        "the metrics each function wrote, in {} lines",
        lines.len()
    );
    let all: BTreeSet<String> = expected.values().flatten().cloned().collect();
    let named: BTreeSet<String> = common::metrics::NAMES.iter().map(|n| n.to_string()).collect();
    assert_eq!(all, named, "every named metric is written by some function here");
}

/// What a mail host drops for the poller's object-created case, as
/// `mailhost deliver` does (envelope line first, named by the time of the
/// drop): a message for `inbox@<service domain>`, and a real Postfix bounce
/// (tests/fixtures/dsn/ORIGIN.md) to the signed return path of the agent
/// key's one send (its delivery read from the store, the return path signed
/// with the functions' HMAC secret) at the key the event names. Answers the
/// real feedback report to the same return path, for the scheduled run
/// after it: a complaint follows a bounce, and one run files its files
/// concurrently, in no set order.
fn drop_into_spool(data_dir: &Path, hmac_secret: &str) -> Vec<u8> {
    use common::blob::BlobStore;
    use common::mail::inbound::{Envelope, drop_raw};
    use common::store::{Query, Store};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let delivery = runtime.block_on(async {
        let store = EmbeddedStore::open(&data_dir.join("store.redb")).expect("the store, released");
        let page = store
            .query(&Query::partition(common::keys::outbox("agent")))
            .await
            .expect("the agent's outbox");
        assert_eq!(page.items.len(), 1, "the agent key's one send: {:?}", page.items);
        page.items[0]["id"].as_str().expect("a delivery id").to_string()
    });
    let mac = common::auth::keys::KeyHasher::new(hmac_secret).digest("return-path", &format!("{delivery}-0"));
    let return_path = format!("b-{delivery}-0-{}@bounce.{SERVICE_DOMAIN}", &mac[..20]);
    let fixture = |name: &str| fs::read(workspace().join("tests/fixtures/dsn").join(name)).expect("the fixture");
    let message = format!(
        "From: Ann <ann@example.org>\r\nTo: inbox@{SERVICE_DOMAIN}\r\nSubject: For the metrics\r\n\
         Message-ID: <metrics-1@example.org>\r\nDate: Sat, 21 Nov 2026 20:00:00 +0000\r\n\r\nHello.\r\n"
    );
    let drops = [
        (
            format!("inbox@{SERVICE_DOMAIN}"),
            "ann@example.org".to_string(),
            message.into_bytes(),
        ),
        (
            return_path.clone(),
            String::new(),
            fixture("postfix-5.1.1-user-unknown.eml"),
        ),
    ];
    let blobs = common::blob::fs::FsBlobStore::new(data_dir.join("blobs"));
    // The bounce lands at the key events/poller/object-created.json names,
    // which that event's run applies alone; the message waits for the
    // scheduled run's listing.
    let event: Value = serde_json::from_str(&read(&workspace().join("events/poller/object-created.json"))).unwrap();
    let named = event["detail"]["object"]["key"]
        .as_str()
        .expect("the event's key")
        .to_string();
    runtime.block_on(async {
        for (i, (recipient, sender, raw)) in drops.into_iter().enumerate() {
            let envelope = Envelope {
                recipient: Some(recipient),
                sender: Some(sender),
                ..Default::default()
            };
            let raw = envelope.prepend(&raw);
            match i {
                1 => blobs.put(&named, raw, "message/rfc822").await.expect("dropped"),
                _ => drop_raw(&blobs, raw).await.map(drop).expect("dropped"),
            }
        }
    });
    let complaint = Envelope {
        recipient: Some(return_path),
        sender: Some(String::new()),
        ..Default::default()
    };
    complaint.prepend(&fixture("arf-yahoo-abuse.eml"))
}

/// Drops `raw` (its envelope line first) into the poller's spool; the store
/// may be open in the running function.
fn drop_later(data_dir: &Path, raw: Vec<u8>) {
    let blobs = common::blob::fs::FsBlobStore::new(data_dir.join("blobs"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(common::mail::inbound::drop_raw(&blobs, raw))
        .expect("dropped");
}

/// A function under `cargo lambda watch`.
struct Watch {
    function: &'static str,
    port: u16,
    log: PathBuf,
    data_dir: PathBuf,
    group: Group,
}

impl Watch {
    /// Stops the watch and the function it runs, and waits until the function
    /// has let go of the embedded store: the next function may open it.
    fn stop(self) {
        let Watch {
            function,
            log,
            data_dir,
            group,
            ..
        } = self;
        drop(group);
        let store = data_dir.join("store.redb");
        if !store.exists() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match EmbeddedStore::open(&store) {
                Ok(released) => {
                    drop(released);
                    return;
                }
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "{function} still holds {} 30s after its watch stopped ({e}):\n{}",
                    store.display(),
                    read(&log)
                ),
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A child in its own process group (the watch runs `cargo run`, which runs
/// the function), stopped with its whole group on drop, panics included.
struct Group {
    child: Child,
    what: String,
}

impl Group {
    fn spawn(mut cmd: Command, log: &Path, what: &str) -> Self {
        let out = fs::File::create(log).expect("create log");
        let err = out.try_clone().expect("clone log");
        cmd.stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
        Group {
            child,
            what: what.to_string(),
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let pid = self.child.id();
        kill_group(pid, "TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                // The leader is gone; make sure nothing of its group lingers.
                kill_group(pid, "KILL");
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!("{} did not stop on SIGTERM; killing its process group", self.what);
        kill_group(pid, "KILL");
        let _ = self.child.wait();
    }
}

fn kill_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Runs a command to completion within a time limit, killing its process
/// group when the limit passes.
fn output_within(mut cmd: Command, limit: Duration, what: &str) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => {
            kill_group(pid, "KILL");
            panic!("{what} did not finish within {limit:?}");
        }
    }
}

fn wait_for_port(port: u16, limit: Duration, what: &str, log: &Path) {
    let deadline = Instant::now() + limit;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} is not listening on {port} after {limit:?}:\n{}",
            read(log)
        );
        thread::sleep(Duration::from_millis(100));
    }
}

fn random_hex() -> String {
    (0..4)
        .map(|_| format!("{:016x}", RandomState::new().build_hasher().finish()))
        .collect()
}

fn read(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = fs::File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    text
}

/// `cargo build` of every function (dev profile) into `target_dir`. The
/// tests that need the binaries build the same packages, so neither rebuilds
/// for the other (features unify over the packages of one build).
fn build_functions(target_dir: &Path) {
    let mut build = cargo();
    build
        .current_dir(workspace())
        .env("CARGO_TARGET_DIR", target_dir)
        .arg("build");
    for function in functions() {
        build.args(["-p", function]);
    }
    let built = output_within(build, Duration::from_secs(20 * 60), "cargo build of the functions");
    assert!(
        built.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The target directory this test was built in (`<target>/debug/deps/<test>`),
/// unless `CARGO_TARGET_DIR` names one: the functions are built there too.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let exe = std::env::current_exe().expect("test executable");
            exe.ancestors()
                .nth(3)
                .expect("target dir above <target>/<profile>/deps/")
                .to_path_buf()
        }
    }
}

/// A directory for this run's data and logs, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("mailhost-lambda-{}-{}", std::process::id(), &random_hex()[..8]));
        fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        } else {
            eprintln!("logs and data kept in {}", self.0.display());
        }
    }
}

// ------------------------------------------------------------ event files

#[test]
fn every_event_file_has_a_case() {
    let mut on_disk = BTreeSet::new();
    for function in functions() {
        let dir = workspace().join("events").join(function);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let name = entry.expect("dir entry").file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                on_disk.insert(format!("{function}/{name}"));
            }
        }
    }
    let cases = cases();
    let cased: BTreeSet<String> = cases.iter().map(|c| format!("{}/{}", c.function, c.event)).collect();
    assert_eq!(on_disk, cased, "event files and test cases differ");

    // The watch test runs each function once, over its cases in a row.
    let mut seen = Vec::new();
    for case in &cases {
        if seen.last() != Some(&case.function) {
            assert!(
                !seen.contains(&case.function),
                "the cases of {} are not together",
                case.function
            );
            seen.push(case.function);
        }
        assert_eq!(
            case.status.is_none(),
            is_scheduled(case.function),
            "{}/{}: a status exactly for the HTTP functions",
            case.function,
            case.event
        );
    }
    // A function that reads what another wrote, in its data directory, runs
    // after it.
    for (reader, writer) in READS_DATA_OF {
        let at = |f: &str| {
            seen.iter()
                .position(|s| *s == f)
                .unwrap_or_else(|| panic!("no case for {f}"))
        };
        assert!(at(writer) < at(reader), "{writer} runs before {reader}");
    }
}

#[test]
fn every_event_is_an_http_api_event_for_a_route_of_its_function() {
    for case in HTTP_CASES {
        let file = workspace().join("events").join(case.function).join(case.event);
        let event: Value = serde_json::from_str(&fs::read_to_string(&file).expect("event file")).expect("event JSON");
        let method = event["requestContext"]["http"]["method"]
            .as_str()
            .expect("requestContext.http.method");
        let path = event["rawPath"].as_str().expect("rawPath");
        assert_eq!(event["version"], "2.0", "{}", case.event);
        assert_eq!(event["routeKey"], format!("{method} {path}"), "{}", case.event);
        assert_eq!(event["requestContext"]["routeKey"], event["routeKey"], "{}", case.event);
        assert_eq!(event["requestContext"]["http"]["path"], path, "{}", case.event);
        assert!(
            event["requestContext"]["http"]["sourceIp"].is_string(),
            "{}",
            case.event
        );
        assert_eq!(event["isBase64Encoded"], false, "{}", case.event);
        if path == "/" {
            // The web app's page, which the mcp function serves beside /docs.
            assert_eq!((method, case.function), ("GET", "mcp"), "{}", case.event);
            continue;
        }
        let method = method.parse().expect("method");
        let route = find_route(&method, path).unwrap_or_else(|| panic!("{}: no route {method} {path}", case.event));
        assert_eq!(route.family.function(), case.function, "{}", case.event);
    }
}

#[test]
fn every_scheduled_event_is_an_eventbridge_scheduled_event() {
    for case in cases()
        .iter()
        .filter(|c| is_scheduled(c.function) && c.event == "scheduled.json")
    {
        let file = workspace().join("events").join(case.function).join(case.event);
        let event: Value = serde_json::from_str(&fs::read_to_string(&file).expect("event file")).expect("event JSON");
        let what = format!("{}/{}", case.function, case.event);
        assert_eq!(event["version"], "0", "{what}");
        assert_eq!(event["source"], "aws.events", "{what}");
        assert_eq!(event["detail-type"], "Scheduled Event", "{what}");
        assert_eq!(event["detail"], json!({}), "{what}");
        for field in ["id", "account", "time", "region"] {
            assert!(event[field].as_str().is_some_and(|v| !v.is_empty()), "{what}: {field}");
        }
        let resources = event["resources"].as_array().expect("resources");
        assert_eq!(resources.len(), 1, "{what}: the rule that fired");
        let rule = resources[0].as_str().unwrap_or_default();
        assert!(
            rule.starts_with("arn:aws:events:") && rule.contains(":rule/"),
            "{what}: {rule}"
        );
    }
}

/// The poller's other event is what S3 sends EventBridge when the mail host
/// drops a file into the spool: what the template's rule matches.
#[test]
fn the_pollers_object_created_event_is_one_its_rule_matches() {
    let file = workspace().join("events/poller/object-created.json");
    let event: Value = serde_json::from_str(&fs::read_to_string(&file).expect("event file")).expect("event JSON");
    assert_eq!(event["source"], "aws.s3");
    assert_eq!(event["detail-type"], "Object Created");
    let key = event["detail"]["object"]["key"].as_str().unwrap_or_default();
    assert!(key.starts_with(common::mail::inbound::PENDING), "{key}");
    assert!(event["detail"]["bucket"]["name"].is_string());
}

/// A JSON answer's body; the web app's page (HTML) as `{html, headers}`.
fn answer_body(event: &str, response: &Value) -> Value {
    let text = response["body"].as_str().unwrap_or_default();
    if response["headers"]["content-type"] == "text/html; charset=utf-8" {
        return json!({ "html": text, "headers": response["headers"] });
    }
    assert_eq!(
        response["headers"]["content-type"], "application/json",
        "{event}: {response}"
    );
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{event}: body is not JSON ({e}): {response}"))
}

// ------------------------------------------------------------ template.yaml

#[test]
fn template_routes_every_path_with_any_at_its_root_and_under_api_to_its_function() {
    let text = fs::read_to_string(workspace().join("template.yaml")).expect("template.yaml");
    let doc = outline(&text);
    let resources = child(&doc, "Resources").expect("Resources");

    // (METHOD, path) -> function, from every HttpApi event of every function;
    // function -> the schedules of its Schedule events.
    let mut routed: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut schedules: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // function -> the key prefixes its S3 object-created rules watch.
    let mut bridged: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut found = BTreeSet::new();
    for resource in &resources.children {
        if value(resource, &["Type"]) != Some("AWS::Serverless::Function") {
            continue;
        }
        let function = value(resource, &["Metadata", "BuildProperties", "Binary"])
            .unwrap_or_else(|| panic!("{} has no Metadata.BuildProperties.Binary", resource.key));
        assert_eq!(
            value(resource, &["Metadata", "BuildMethod"]),
            Some("rust-cargolambda"),
            "{}",
            resource.key
        );
        assert!(
            workspace().join("functions").join(function).join("Cargo.toml").exists(),
            "no functions/{function}"
        );
        // `sam build` runs `cargo lambda build --bin <Binary>` in CodeUri: the
        // function's own crate (at the workspace root cargo would not find it).
        assert_eq!(
            value(resource, &["Properties", "CodeUri"]),
            Some(format!("functions/{function}").as_str()),
            "{}",
            resource.key
        );
        assert!(found.insert(function.to_string()), "two functions build {function}");
        // The functions that hold a request open (waits for mail, replays)
        // have capacity of their own, so waiting cannot starve the others.
        if ["inbox", "mcp", "webhooks"].contains(&function) {
            let reserved = value(resource, &["Properties", "ReservedConcurrentExecutions"]).unwrap_or_default();
            assert!(
                reserved.contains("HoldingConcurrency"),
                "{function} has no reserved concurrency: {reserved:?}"
            );
        }
        let events = child(resource, "Properties").and_then(|p| child(p, "Events"));
        for event in events.map(|e| e.children.as_slice()).unwrap_or_default() {
            match value(event, &["Type"]) {
                Some("HttpApi") => {}
                Some("Schedule") => {
                    let schedule = value(event, &["Properties", "Schedule"])
                        .unwrap_or_else(|| panic!("{} has no Schedule", event.key));
                    schedules
                        .entry(function.to_string())
                        .or_default()
                        .push(schedule.to_string());
                    continue;
                }
                Some("EventBridgeRule") => {
                    let pattern = child(event, "Properties").and_then(|p| child(p, "Pattern"));
                    let list = |node: Option<&Node>| -> Vec<String> {
                        node.map(|n| n.children.iter().map(|c| format!("{} {}", c.key, c.value)).collect())
                            .unwrap_or_default()
                    };
                    assert_eq!(
                        list(pattern.and_then(|p| child(p, "source"))),
                        ["- aws.s3 "],
                        "{}",
                        event.key
                    );
                    let key = pattern
                        .and_then(|p| child(p, "detail"))
                        .and_then(|d| child(d, "object"))
                        .and_then(|o| child(o, "key"));
                    bridged.entry(function.to_string()).or_default().extend(list(key));
                    continue;
                }
                other => panic!("{}: event {} of type {other:?}", resource.key, event.key),
            }
            let field =
                |name| value(event, &["Properties", name]).unwrap_or_else(|| panic!("{} has no {name}", event.key));
            assert_eq!(field("ApiId"), "!Ref HttpApi", "{}", event.key);
            let key = (field("Method").to_ascii_uppercase(), field("Path").to_string());
            if let Some(other) = routed.insert(key.clone(), function.to_string()) {
                panic!("{key:?} is routed twice: to {other} and to {function}");
            }
        }
    }

    let expected: BTreeSet<String> = functions().into_iter().map(String::from).collect();
    assert_eq!(found, expected, "one function per route family, and the scheduled ones");
    // A scheduled function runs on its schedule and serves no route; an HTTP
    // function has no schedule.
    // Each declared job's function runs on the job's rate.
    let expected: BTreeMap<String, Vec<String>> = JOBS
        .iter()
        .map(|job| (job.name.to_string(), vec![job.schedule.rate()]))
        .collect();
    assert_eq!(
        schedules, expected,
        "Schedule events in template.yaml against common::jobs::JOBS"
    );
    // The poller also runs as each message lands in the spool.
    let expected = BTreeMap::from([("poller".to_string(), vec!["- prefix inbound/pending/".to_string()])]);
    assert_eq!(bridged, expected, "EventBridge rules in template.yaml");
    for function in JOBS.iter().map(|job| job.name) {
        let served: Vec<_> = routed.iter().filter(|(_, f)| f.as_str() == function).collect();
        assert!(served.is_empty(), "{function} is scheduled but serves {served:?}");
    }
    // API Gateway matches the method before the function runs, so each path
    // is routed with ANY: the function answers every verb itself (405 for a
    // verb the path does not serve, 204 for OPTIONS), as the local server does.
    let mut expected: BTreeMap<(String, String), String> = BTreeMap::new();
    // The web app's page and assets: the function that serves /docs, at the root only.
    for path in common::http::web::PATHS {
        expected.insert(("ANY".to_string(), path.to_string()), "mcp".to_string());
    }
    for route in routes() {
        for path in [route.path.to_string(), format!("/api{}", route.path)] {
            let function = route.family.function().to_string();
            if let Some(other) = expected.insert(("ANY".to_string(), path.clone()), function.clone()) {
                assert_eq!(other, function, "{path} belongs to two route families");
            }
        }
    }
    assert_eq!(
        routed, expected,
        "template.yaml routes each path of a family with ANY to its function, at the root and under /api, the web app's to mcp, and nothing else"
    );
}

/// A line of a YAML block mapping with the lines indented under it: enough of
/// YAML for template.yaml, which is written in block style.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) children: Vec<Node>,
}

pub(crate) fn child<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    node.children.iter().find(|c| c.key == key)
}

pub(crate) fn value<'a>(node: &'a Node, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(node, |n, key| child(n, key))
        .map(|n| n.value.as_str())
}

pub(crate) fn outline(text: &str) -> Node {
    // The stack holds (indent, node) for the open ancestors of the next line.
    let mut stack: Vec<(isize, Node)> = vec![(-1, Node::default())];
    let mut block_scalar_above: Option<usize> = None;
    for line in text.lines() {
        let content = line.trim_start();
        let indent = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        match block_scalar_above {
            Some(above) if indent > above => continue,
            _ => block_scalar_above = None,
        }
        let (key, value) = match content.split_once(": ") {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (content.trim_end_matches(':').trim(), ""),
        };
        let value = value.trim_matches('"');
        if matches!(value, ">" | ">-" | "|" | "|-") {
            block_scalar_above = Some(indent);
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent as isize) {
            let (_, done) = stack.pop().expect("non-empty");
            stack.last_mut().expect("root").1.children.push(done);
        }
        stack.push((
            indent as isize,
            Node {
                key: key.to_string(),
                value: value.to_string(),
                children: Vec::new(),
            },
        ));
    }
    while stack.len() > 1 {
        let (_, done) = stack.pop().expect("non-empty");
        stack.last_mut().expect("root").1.children.push(done);
    }
    stack.pop().expect("root").1
}

/// Deleted mail is deleted for good in the versioned bucket: a lifecycle rule
/// expires the hidden versions under mail/ (issue: "stored mail permanently
/// deleted").
#[test]
fn deleted_mail_does_not_live_on_as_old_versions() {
    let template = std::fs::read_to_string(workspace().join("template.yaml")).unwrap();
    let rule = template
        .split("- Id: ")
        .find(|r| r.lines().any(|l| l.trim() == "Prefix: mail/"))
        .expect("a lifecycle rule for the mail/ prefix");
    assert!(rule.contains("Status: Enabled"), "{rule}");
    assert!(rule.contains("NoncurrentVersionExpiration:"), "{rule}");
    assert!(rule.contains("ExpiredObjectDeleteMarker: true"), "{rule}");
}

/// A filed spool file is deleted, not copied (`poller`): the version the
/// delete hides is the received file its row names, so the bucket keeps
/// hidden versions under inbound/pending/ 30 days, and no rule over that
/// prefix expires them sooner.
#[test]
fn a_filed_spool_files_hidden_version_is_kept_thirty_days() {
    let template = std::fs::read_to_string(workspace().join("template.yaml")).unwrap();
    let rules: Vec<&str> = template.split("- Id: ").skip(1).collect();
    let prefix = |rule: &str| {
        rule.lines()
            .find_map(|l| l.trim().strip_prefix("Prefix: "))
            .map(str::to_string)
    };
    let kept = rules
        .iter()
        .find(|r| prefix(r).as_deref() == Some("inbound/pending/"))
        .expect("a lifecycle rule for inbound/pending/");
    assert!(kept.contains("Status: Enabled"), "{kept}");
    assert!(kept.contains("NoncurrentDays: 30"), "{kept}");
    for rule in &rules {
        let Some(p) = prefix(rule) else { continue };
        if "inbound/pending/".starts_with(&p) && !std::ptr::eq(*rule, *kept) {
            assert!(
                !rule.contains("NoncurrentVersionExpiration") && !rule.contains("ExpirationInDays"),
                "a rule over {p} would remove filed files sooner:\n{rule}"
            );
        }
    }
}

/// docs/decisions.md, "Delivery status and suppression": in AWS customer mail
/// leaves through the mail host over SMTP (`MAILHOST_SMTP_URL`), never
/// through SES, so no SES event destination is needed for delivery status.
/// SES sends only the access codes, from noreply@<ServiceDomain>: every SES
/// grant is held to that sender, and the send function has none.
#[test]
fn customer_mail_never_leaves_through_ses() {
    let text = fs::read_to_string(workspace().join("template.yaml")).expect("template.yaml");
    let doc = outline(&text);
    assert_eq!(
        value(
            &doc,
            &["Globals", "Function", "Environment", "Variables", "MAILHOST_SMTP_URL"]
        ),
        Some("!Ref SmtpUrl"),
        "customer mail goes out over SMTP"
    );
    // Every statement (a node with an Action) that grants an ses: action.
    fn ses_grants<'a>(node: &'a Node, found: &mut Vec<&'a Node>) {
        let grants_ses = child(node, "Action").is_some_and(|action| {
            action.value.starts_with("ses:") || action.children.iter().any(|a| a.key.starts_with("- ses:"))
        });
        if grants_ses {
            found.push(node);
        }
        for c in &node.children {
            ses_grants(c, found);
        }
    }
    let resources = child(&doc, "Resources").expect("Resources");
    let mut granted = 0;
    for resource in &resources.children {
        let mut found = Vec::new();
        ses_grants(resource, &mut found);
        let binary = value(resource, &["Metadata", "BuildProperties", "Binary"]);
        if binary == Some("send") {
            assert!(found.is_empty(), "the send function may not use SES");
        }
        for statement in found {
            granted += 1;
            assert_eq!(
                value(statement, &["Condition", "StringEquals", "ses:FromAddress"]),
                Some("!Sub noreply@${ServiceDomain}"),
                "{}: an SES grant not held to the access codes' sender",
                resource.key
            );
        }
    }
    assert!(granted > 0, "the access codes still go through SES");
}
