//! The route matrix of spec 5.3, walked for every route in the table, at the root
//! and under /api, with every credential class.

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use common::http::routes;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Nothing,
    BadKeyHeader,
    BadKeyBearer,
    BadToken,
    AgentBearer,
    AgentHeader,
    Standard,
    /// A scoped key with only the read permission.
    ScopedRead,
    Identity,
    Operator,
    Sync,
}

const CLASSES: &[Class] = &[
    Class::Nothing,
    Class::BadKeyHeader,
    Class::BadKeyBearer,
    Class::BadToken,
    Class::AgentBearer,
    Class::AgentHeader,
    Class::Standard,
    Class::ScopedRead,
    Class::Identity,
    Class::Operator,
    Class::Sync,
];

const MISSING: &str = "Missing Authorization Bearer token or X-Api-Key";
const INVALID_KEY: &str = "Invalid API key";
const INVALID_TOKEN: &str = "Invalid or expired ID token";
const ACCOUNT_ONLY: &str = "This action is limited to the account key, or this key can only read its own account.";
const CONTROL: &str = "Operator control requires the agent key or an operator account";
const OPERATOR_ONLY: &str = "This action is limited to operator accounts.";
const FIREBASE: &str = "Firebase sign-in required";
const SETUP: &str = "Account setup is not complete yet";
const MCP_AGENT_KEY_ONLY: &str = "MCP requires agent API key (Bearer svc_...)";
const SYNC_ONLY: &str = "This route is limited to the mail server's sync token.";
const OWNER_ONLY: &str = "This action needs the account key or an operator account, not a scoped key";
const LACKS_SEND: &str = "This API key lacks the send permission";
const LACKS_MANAGE: &str = "This API key lacks the manage permission (domains, mailboxes, lists, webhooks)";

/// What a scoped key with only `read` gets on a route its access rule
/// admits standard keys to: the routes that change something need another
/// permission.
fn scoped_read(method: &str, path: &str) -> Option<(u16, &'static str)> {
    match (method, path) {
        ("POST", "/sendMail" | "/reply" | "/forward" | "/outbox/cancel") => Some((403, LACKS_SEND)),
        ("GET", "/getDnsInstructions" | "/listDomains" | "/dmarcReports" | "/suppressions" | "/lists") => None,
        (
            _,
            "/getAccountStatus" | "/credits" | "/inbox" | "/attachment" | "/inbox/attachment" | "/outbox" | "/mcp"
            | "/search",
        ) => None,
        _ => Some((403, LACKS_MANAGE)),
    }
}

/// What the spec says a class gets on a route: `None` means admitted (the
/// route runs), otherwise the status and error string.
fn expected(method: &str, path: &str, class: Class) -> Option<(u16, &'static str)> {
    let public = matches!(path, "/requestAccess" | "/verifyAccessRequest" | "/getRequestStatus")
        || (method == "GET" && matches!(path, "/mcp" | "/docs" | "/docs/openapi.json"));
    if public {
        return None;
    }
    // A hold is decided by its owner, or by anyone holding the emailed code.
    if matches!(path, "/holds/approve" | "/holds/deny") && class == Class::Nothing {
        return None;
    }
    match class {
        Class::Nothing => return Some((401, MISSING)),
        Class::BadKeyHeader | Class::BadKeyBearer => return Some((401, INVALID_KEY)),
        Class::BadToken => return Some((401, INVALID_TOKEN)),
        _ => {}
    }
    use Class::*;
    let owners = [
        "/keys",
        "/audit",
        "/holds",
        "/holds/approve",
        "/holds/deny",
        "/outbox/waiting",
    ];
    if class == ScopedRead && !owners.contains(&path) && expected(method, path, Standard).is_none() {
        return scoped_read(method, path);
    }
    if owners.contains(&path) {
        return match class {
            Standard | Operator => None,
            Sync => Some((401, INVALID_KEY)),
            _ => Some((403, OWNER_ONLY)),
        };
    }
    // Routes that admit no standard key refuse a scoped one the same way.
    let class = if class == ScopedRead { Standard } else { class };
    match (method, path) {
        ("POST", "/getAccountStatus") => match class {
            Standard => None,
            Sync => Some((401, INVALID_KEY)),
            _ => Some((403, ACCOUNT_ONLY)),
        },
        ("GET", "/credits") => match class {
            Sync => Some((401, INVALID_KEY)),
            _ => None,
        },
        ("POST", "/credits") => match class {
            AgentBearer | AgentHeader | Operator => None,
            Sync => Some((401, INVALID_KEY)),
            _ => Some((403, CONTROL)),
        },
        (
            _,
            "/addDomain"
            | "/getDnsInstructions"
            | "/verifyDomain"
            | "/listDomains"
            | "/dmarcReports"
            | "/addMailbox"
            | "/setMailboxMode"
            | "/deleteMailbox"
            | "/issueMailboxCredential"
            | "/lists",
        ) => match class {
            Standard | Operator => None,
            AgentBearer => Some((401, FIREBASE)),
            AgentHeader | Sync => Some((401, INVALID_KEY)),
            // A signed-in person without a ready account.
            _ => Some((403, SETUP)),
        },
        ("POST", "/sendMail" | "/reply" | "/forward" | "/outbox/cancel")
        | (
            _,
            "/inbox" | "/inbox/delete" | "/attachment" | "/inbox/attachment" | "/outbox" | "/suppressions" | "/search",
        ) => match class {
            AgentBearer | AgentHeader | Standard | Operator => None,
            Identity => Some((403, "This mailbox requires an operator account")),
            _ => Some((401, INVALID_KEY)),
        },
        (_, "/drafts") => match class {
            Operator => None,
            Identity => Some((403, "This mailbox requires an operator account")),
            AgentBearer | AgentHeader | Standard => Some((403, "Drafts require a signed-in user")),
            _ => Some((401, INVALID_KEY)),
        },
        (_, "/webhooks" | "/webhooks/deliveries" | "/webhooks/replay") => match class {
            AgentBearer | AgentHeader | Standard => None,
            Identity | Operator => Some((403, "Webhooks require an agent API key")),
            _ => Some((401, INVALID_KEY)),
        },
        // An empty object is no JSON-RPC message: admitted callers get the
        // JSON-RPC error, identity tokens the MCP refusal.
        ("POST", "/mcp") => match class {
            AgentBearer | AgentHeader | Standard => None,
            Identity | Operator => Some((401, MCP_AGENT_KEY_ONLY)),
            _ => Some((401, INVALID_KEY)),
        },
        (
            _,
            "/mtaMailboxExport" | "/mtaSubmission" | "/mtaDeliveryEvents" | "/mtaMailboxChanges" | "/mtaSentCopy"
            | "/mtaImapChanges" | "/mtaSpamTraining",
        ) => match class {
            Sync => None,
            _ => Some((403, SYNC_ONLY)),
        },
        (_, p) if p.starts_with("/admin/") || p == "/operatorRemoveDomain" => match class {
            Operator => None,
            _ => Some((403, OPERATOR_ONLY)),
        },
        other => panic!("the matrix test does not know {other:?}: add it"),
    }
}

async fn credential(app: &TestApp, class: Class, standard: &str, scoped: &str) -> Option<(bool, String)> {
    // (as X-Api-Key?, value)
    Some(match class {
        Class::Nothing => return None,
        Class::BadKeyHeader => (true, "svc_not_a_real_key".into()),
        Class::BadKeyBearer => (false, "svc_not_a_real_key".into()),
        Class::BadToken => (false, "aaa.bbb.ccc".into()),
        Class::AgentBearer => (false, app.agent_key.clone()),
        Class::AgentHeader => (true, app.agent_key.clone()),
        Class::Standard => (false, standard.to_string()),
        Class::ScopedRead => (false, scoped.to_string()),
        Class::Identity => (false, app.token("someone@people.test").await),
        Class::Operator => (false, app.operator_token().await),
        Class::Sync => (false, support::SYNC_TOKEN.to_string()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_admits_and_refuses_each_credential_class_as_the_spec_says() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let standard = app.onboard(&format!("matrix@{ALLOWED_DOMAIN}")).await;
    let scoped = app
        .post(
            "/keys",
            Auth::Bearer(&standard),
            json!({"name": "reader", "permissions": ["read"]}),
        )
        .await;
    assert_eq!(scoped.status, 200, "{}", scoped.body);
    let scoped = scoped.body["apiKey"].as_str().unwrap().to_string();
    let mut checked = 0;
    let routes = routes();
    for route in &routes {
        for prefix in ["", "/api"] {
            for &class in CLASSES {
                let path = format!("{prefix}{}", route.path);
                let mut req = app.client.request(route.method.clone(), format!("{}{path}", app.base));
                if let Some((header, value)) = credential(&app, class, &standard, &scoped).await {
                    req = if header {
                        req.header("X-Api-Key", value)
                    } else {
                        req.bearer_auth(value)
                    };
                }
                // An empty object changes nothing on any route.
                let res = app.send(req.json(&json!({}))).await;
                let method = route.method.as_str();
                match expected(method, route.path, class) {
                    Some((status, error)) => {
                        assert_eq!(
                            (res.status, res.error()),
                            (status, error),
                            "{method} {path} with {class:?}: {}",
                            res.body
                        );
                        assert_eq!(res.body["ok"], false);
                    }
                    None => assert!(
                        res.status != 401 && res.status != 403 && res.status != 405 && res.status != 500,
                        "{method} {path} with {class:?} should run the route: {} {}",
                        res.status,
                        res.body
                    ),
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, routes.len() * 2 * CLASSES.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_api_key_wins_over_a_valid_authorization_header() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let res = app
        .send(
            app.client
                .get(format!("{}/credits", app.base))
                .bearer_auth(&app.agent_key)
                .header("X-Api-Key", "svc_wrong"),
        )
        .await;
    assert_eq!((res.status, res.error()), (401, INVALID_KEY));
    let ok = app
        .send(
            app.client
                .get(format!("{}/credits", app.base))
                .bearer_auth("svc_wrong")
                .header("X-Api-Key", &app.agent_key),
        )
        .await;
    assert_eq!(ok.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_with_three_segments_is_an_identity_token_and_anything_else_a_key() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let token = app.operator_token().await;
    let tampered = format!("{}x", token);
    for (value, error) in [
        ("a.b.c", INVALID_TOKEN),
        (tampered.as_str(), INVALID_TOKEN),
        ("a.b", INVALID_KEY),
        ("a.b.c.d", INVALID_KEY),
        // Three segments, one empty (an unsigned token's shape): still a token.
        ("a..c", INVALID_TOKEN),
        ("eyJhbGciOiJub25lIn0.eyJlbWFpbCI6InhAeS56In0.", INVALID_TOKEN),
        ("a.b..", INVALID_KEY),
    ] {
        let res = app.get("/credits", Auth::Bearer(value)).await;
        assert_eq!((res.status, res.error()), (401, error), "{value}");
    }
    assert_eq!(app.get("/credits", Auth::Bearer(&token)).await.status, 200);
    let basic = app
        .send(
            app.client
                .get(format!("{}/credits", app.base))
                .header("Authorization", format!("Basic {}", app.agent_key)),
        )
        .await;
    assert_eq!((basic.status, basic.error()), (401, MISSING));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_verbs_are_405_options_is_204_and_unknown_paths_404() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    for path in [
        "/requestAccess",
        "/api/requestAccess",
        "/getAccountStatus",
        "/admin/requestDelete",
    ] {
        let res = app.get(path, Auth::None).await;
        assert_eq!((res.status, res.error()), (405, "Method not allowed"), "{path}");
        let res = app
            .send(
                app.client
                    .request(reqwest::Method::OPTIONS, format!("{}{path}", app.base)),
            )
            .await;
        assert_eq!(res.status, 204, "{path}");
    }
    let res = app
        .send(
            app.client
                .put(format!("{}/credits", app.base))
                .bearer_auth(&app.agent_key),
        )
        .await;
    assert_eq!(res.status, 405);
    let res = app.get("/nope", Auth::None).await;
    assert_eq!(res.status, 404);
    assert_eq!(res.body["ok"], false);
    // The web app's page answers other verbs as the API does.
    let res = app.post("/", Auth::None, json!({})).await;
    assert_eq!((res.status, res.error()), (405, "Method not allowed"));
    let res = app
        .send(app.client.request(reqwest::Method::OPTIONS, format!("{}/", app.base)))
        .await;
    assert_eq!(res.status, 204);
}

/// HEAD is served by a GET route's handler, so it must pass the same access
/// rule; OPTIONS is 204 and an unknown verb 405 on every path, never a way in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_of_every_route_passes_its_access_rule() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let routes = routes();
    let brew = reqwest::Method::from_bytes(b"BREW").unwrap();
    for route in &routes {
        for prefix in ["", "/api"] {
            let url = format!("{}{prefix}{}", app.base, route.path);
            let get = routes
                .iter()
                .find(|r| r.path == route.path && r.method == reqwest::Method::GET);
            let head = app.client.head(&url).send().await.unwrap().status().as_u16();
            let expected = match get {
                None => 405,
                Some(r) if r.access == common::auth::Access::Public => 200,
                Some(_) => 401,
            };
            assert_eq!(head, expected, "HEAD {url} without a credential");
            let options = app.client.request(reqwest::Method::OPTIONS, &url).send().await.unwrap();
            assert_eq!(options.status().as_u16(), 204, "OPTIONS {url}");
            let res = app.send(app.client.request(brew.clone(), &url)).await;
            assert_eq!((res.status, res.error()), (405, "Method not allowed"), "BREW {url}");
        }
    }
}
