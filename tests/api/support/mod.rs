//! The test harness: the service started in-process on a random port, on the
//! embedded store or on DynamoDB Local, driven over real HTTP.

pub mod aws_standins;
pub mod dns;
pub mod seen;
pub mod shapes;
pub mod smtp;
pub mod webhooks;

pub use common::testing::{skipped, standin, standin_command};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::auth::identity::LocalSigner;
use common::config::{Config, StoreKind};
use common::context::Context;
use common::secrets::DirSecrets;
use mailhost::Application;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

pub const OPERATOR: &str = "ops@operators.test";
/// A second operator, to show one operator's things are not another's.
pub const SECOND_OPERATOR: &str = "second@operators.test";
pub const ALLOWED_DOMAIN: &str = "allowed.test";
pub const SYNC_TOKEN: &str = "sync-token-for-tests";

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Embedded,
    Dynamodb,
}

/// Runs each named scenario `async fn name(app: TestApp)` once per backend.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(app) = $crate::support::TestApp::spawn($crate::support::Backend::Embedded).await {
                        super::$name(app).await;
                    }
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(app) = $crate::support::TestApp::spawn($crate::support::Backend::Dynamodb).await {
                        super::$name(app).await;
                    }
                }
            )*
        }
    };
}

/// Runs each named scenario `async fn name(backend: Backend)` once per
/// backend, for scenarios that build their own service (a mail host, a
/// receiver's CA, a sync agent).
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Embedded).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Dynamodb).await;
                }
            )*
        }
    };
}

#[derive(Debug, Clone, Copy)]
pub enum Auth<'a> {
    None,
    Bearer(&'a str),
    ApiKey(&'a str),
}

/// The access code in a code email.
pub fn code_in(message: &str) -> String {
    let at = message.find("Your access code is ").expect("code line") + "Your access code is ".len();
    message[at..at + 8].to_string()
}

pub struct Response {
    pub status: u16,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Response {
    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or_default()
    }
}

pub struct TestApp {
    pub base: String,
    pub ctx: Arc<Context>,
    pub agent_key: String,
    pub data_dir: PathBuf,
    pub client: reqwest::Client,
    /// The authoritative DNS server the service's domain checks ask.
    pub dns: dns::TestDns,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
        std::fs::remove_dir_all(&self.data_dir).ok();
    }
}

pub fn test_config(data_dir: &Path) -> Config {
    let mut config = Config::from_env().expect("MAILHOST_* variables");
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.data_dir = data_dir.to_path_buf();
    config.service_domain = "svc.test".parse().unwrap();
    config.mail_host = "mx.svc.test".into();
    config.operator_emails = vec![OPERATOR.into(), SECOND_OPERATOR.into()];
    config.smtp_url = None;
    config.sync_token = Some(SYNC_TOKEN.into());
    // Tests run the export themselves, deterministically.
    config.poll_interval = 3600;
    // And the inbound poller.
    config.inbound_poll_ms = 0;
    config.mta_self_apply = false;
    // tests/api/authentication.rs seals forwarded mail as this one.
    config.trusted_arc_sealers = vec!["trusted-forwarder.example".into()];
    // Links in mail point here (tests/api/guardrails.rs reads one).
    config.public_url = Some("https://mail.svc.test/".into());
    config
}

impl TestApp {
    /// Starts a fresh service; `None` when the backend's stand-in is not running.
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        Self::spawn_with(backend, |_| {}).await
    }

    pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Option<TestApp> {
        let data_dir = std::env::temp_dir().join(format!("mailhost-test-{:016x}", rand::random::<u64>()));
        let mut config = test_config(&data_dir);
        let dns = dns::TestDns::start().await;
        config.dns_server = Some(dns.addr.to_string());
        let agent_key = common::auth::keys::new_key();
        config.agent_key = Some(agent_key.clone());
        if let Backend::Dynamodb = backend {
            let endpoint = standin("MAILHOST_TEST_DYNAMODB_ENDPOINT")?;
            assert_eq!(
                std::env::var("AWS_ENDPOINT_URL_DYNAMODB").ok().as_deref(),
                Some(endpoint.as_str()),
                "AWS_ENDPOINT_URL_DYNAMODB must point at DynamoDB Local too (scripts/test sets both)"
            );
            config.store = StoreKind::Dynamodb;
            config.table = format!("mailhost-test-{:016x}", rand::random::<u64>());
        }
        adjust(&mut config);
        let app = Application::build(config).await.expect("the service starts");
        let base = format!("http://{}", app.addr);
        let ctx = app.context.clone();
        // Start one second into an hour (and so into a minute): every rate window a
        // test fills begins with the test, however the wall clock falls.
        let now = ctx.clock.epoch();
        ctx.clock.advance(3600 - now.rem_euclid(3600) + 1);
        let server = app.spawn();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Some(TestApp {
            base,
            ctx,
            agent_key,
            data_dir,
            client,
            dns,
            server,
        })
    }

    pub async fn request(&self, method: reqwest::Method, path: &str, auth: Auth<'_>, body: Option<&Value>) -> Response {
        let mut req = self.client.request(method, format!("{}{}", self.base, path));
        req = match auth {
            Auth::None => req,
            Auth::Bearer(v) => req.header("Authorization", format!("Bearer {v}")),
            Auth::ApiKey(v) => req.header("X-Api-Key", v),
        };
        if let Some(body) = body {
            req = req.header("Content-Type", "application/json").body(body.to_string());
        }
        self.send(req).await
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Response {
        let req = req.build().expect("a request");
        let (method, path) = (req.method().clone(), req.url().path().to_string());
        let res = self.client.execute(req).await.expect("the server answers");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        seen::record(&method, &path, status, &body);
        shapes::check(&method, &path, status, &body);
        Response { status, body, headers }
    }

    pub async fn post(&self, path: &str, auth: Auth<'_>, body: Value) -> Response {
        self.request(reqwest::Method::POST, path, auth, Some(&body)).await
    }

    pub async fn get(&self, path: &str, auth: Auth<'_>) -> Response {
        self.request(reqwest::Method::GET, path, auth, None).await
    }

    pub async fn delete(&self, path: &str, auth: Auth<'_>, body: Value) -> Response {
        self.request(reqwest::Method::DELETE, path, auth, Some(&body)).await
    }

    /// An identity token the running server accepts.
    pub async fn token(&self, email: &str) -> String {
        let signer = LocalSigner::load_or_create(&DirSecrets::new(self.data_dir.join("secrets")))
            .await
            .unwrap();
        signer.mint(email, false, Duration::from_secs(600)).unwrap()
    }

    pub async fn operator_token(&self) -> String {
        self.token(OPERATOR).await
    }

    /// Every message in the outbox addressed to `to`, oldest first.
    pub fn outbox_for(&self, to: &str) -> Vec<String> {
        let to_line = format!("To: {to}");
        self.outbox()
            .into_iter()
            .filter(|m| m.lines().any(|l| l.eq_ignore_ascii_case(&to_line)))
            .collect()
    }

    /// The 8-digit code of the newest access-code email to `to`.
    pub fn code_for(&self, to: &str) -> String {
        let messages = self.outbox_for(to);
        code_in(messages.last().unwrap_or_else(|| panic!("no code email to {to}")))
    }

    pub async fn allowlist(&self, domain: &str) {
        let token = self.operator_token().await;
        let res = self
            .post(
                "/api/admin/domainAllowlist",
                Auth::Bearer(&token),
                json!({ "domain": domain }),
            )
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
    }

    pub async fn request_access(&self, email: &str) -> Response {
        let body =
            json!({ "contactEmail": email, "domain": "org.test", "agentName": "test agent", "intendedUse": "tests" });
        self.post("/requestAccess", Auth::None, body).await
    }

    pub async fn verify(&self, id: &str, code: &str) -> Response {
        self.post(
            "/verifyAccessRequest",
            Auth::None,
            json!({ "requestId": id, "code": code }),
        )
        .await
    }

    /// POST /getRequestStatus for a request id and an email.
    pub async fn poll(&self, id: &str, email: &str) -> Response {
        self.post(
            "/getRequestStatus",
            Auth::None,
            json!({ "requestId": id, "email": email }),
        )
        .await
    }

    /// Requests access for `email`: the request id and the emailed code.
    pub async fn requested(&self, email: &str) -> (String, String) {
        let res = self.request_access(email).await;
        assert_eq!(res.status, 200, "{}", res.body);
        (
            res.body["requestId"].as_str().unwrap().to_string(),
            self.code_for(email),
        )
    }

    /// Requests access and verifies the emailed code: the verify response.
    pub async fn request_and_verify(&self, email: &str) -> Response {
        let res = self.request_access(email).await;
        assert_eq!(res.status, 200, "{}", res.body);
        let id = res.body["requestId"].as_str().unwrap().to_string();
        let code = self.code_for(email);
        self.post(
            "/verifyAccessRequest",
            Auth::None,
            json!({ "requestId": id, "code": code }),
        )
        .await
    }

    /// A ready account's standard key, through the public onboarding flow.
    pub async fn onboard(&self, email: &str) -> String {
        let domain = email.rsplit_once('@').unwrap().1;
        self.allowlist(domain).await;
        let res = self.request_and_verify(email).await;
        assert_eq!(res.body["status"], "ready", "{}", res.body);
        res.body["apiKey"].as_str().unwrap().to_string()
    }
}

impl TestApp {
    /// Publishes every required record of an addDomain/getDnsInstructions domain view.
    pub fn publish(&self, domain_view: &Value) {
        let name = domain_view["name"].as_str().unwrap();
        let mut txt: std::collections::HashMap<String, Vec<String>> = Default::default();
        for record in domain_view["dnsInstructions"]["records"].as_array().unwrap() {
            if record["optional"] == true {
                continue;
            }
            let host = record["host"].as_str().unwrap();
            let value = record["value"].as_str().unwrap();
            match record["type"].as_str().unwrap() {
                "MX" => self
                    .dns
                    .set_mx(host, &[(record["priority"].as_u64().unwrap() as u16, value)]),
                "TXT" => txt.entry(host.to_string()).or_default().push(value.to_string()),
                other => panic!("unexpected record type {other}"),
            }
        }
        assert_eq!(name, domain_view["id"].as_str().unwrap());
        for (host, values) in txt {
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            self.dns.set_txt(&host, &refs);
        }
    }

    /// A new ready account with `name` added, published and verified: its key.
    pub async fn verified_domain(&self, owner: &str, name: &str) -> String {
        let key = self.onboard(owner).await;
        self.add_verified_domain(&key, name).await;
        key
    }

    /// Adds `name` to the key's account, publishes its records and verifies it.
    pub async fn add_verified_domain(&self, key: &str, name: &str) {
        let added = self
            .post("/addDomain", Auth::Bearer(key), json!({ "domain": name }))
            .await;
        assert_eq!(added.status, 200, "{}", added.body);
        self.publish(&added.body["domain"]);
        let verified = self
            .post("/verifyDomain", Auth::Bearer(key), json!({ "domainId": name }))
            .await;
        assert_eq!(verified.body["verified"], true, "{}", verified.body);
    }

    pub async fn add_mailbox(&self, key: &str, domain: &str, local: &str, mode: &str, forward: Value) -> Response {
        let body = json!({ "domainId": domain, "localPart": local, "mode": mode, "forwardTo": forward });
        self.post("/addMailbox", Auth::Bearer(key), body).await
    }
}

impl TestApp {
    /// An account with a verified domain `acme.example` and two hosted
    /// mailboxes, `agent@` and `boss@`: its account key.
    pub async fn acme(&self) -> String {
        let key = self.sender("owner@acme.example", "acme.example", "agent").await;
        let boss = self
            .add_mailbox(&key, "acme.example", "boss", "hosted", json!([]))
            .await;
        assert_eq!(boss.status, 200, "{}", boss.body);
        key
    }

    /// A message from `from` to `to`, its Message-ID `<subject@received.test>`,
    /// filed by the poller as the mail host hands it over.
    pub async fn receive(&self, from: &str, to: &str, subject: &str) {
        let raw = format!(
            "Delivered-To: {to}\r\nFrom: {from}\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: <{subject}@received.test>\r\n\r\nHello {to}\r\n"
        );
        common::mail::inbound::drop_raw(&*self.ctx.blobs, raw.into_bytes())
            .await
            .unwrap();
        common::service::receiving::poller::run_once(&self.ctx).await.unwrap();
    }

    /// The account's uid, from its key's record.
    pub async fn uid_of_key(&self, key: &str) -> String {
        let digest = self.ctx.hasher.key_digest(key);
        let record: Value = common::store::StoreExt::read(&*self.ctx.store, &common::keys::api_key(&digest))
            .await
            .unwrap()
            .unwrap();
        record["uid"].as_str().unwrap().to_string()
    }

    /// A ready account with a verified domain and a hosted mailbox `local@domain`.
    pub async fn sender(&self, owner: &str, domain: &str, local: &str) -> String {
        let key = self.verified_domain(owner, domain).await;
        let added = self.add_mailbox(&key, domain, local, "hosted", json!([])).await;
        assert_eq!(added.status, 200, "{}", added.body);
        key
    }

    pub async fn send_mail(&self, auth: Auth<'_>, body: Value) -> Response {
        self.post("/sendMail", auth, body).await
    }

    pub async fn agent_credits(&self) -> i64 {
        self.get("/credits", Auth::Bearer(&self.agent_key)).await.body["credits"]["remaining"]
            .as_i64()
            .unwrap()
    }

    /// Sets a credit balance directly (a test shortcut for "after many sends").
    pub async fn set_credits(&self, bucket: &str, remaining: i64) {
        let key = common::keys::credits(bucket);
        let update = common::store::Update::new().set("remaining", remaining);
        self.ctx.store.update(&key, update, None).await.unwrap();
    }

    /// Every message spooled to the outbox, oldest first.
    pub fn outbox(&self) -> Vec<String> {
        let dir = self.data_dir.join("outbox");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "eml"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names.into_iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
    }
}

/// The catalogue operation a REST request reached (at its root or under
/// `/api`; HEAD as GET).
pub fn route(method: &str, path: &str) -> Option<(&'static common::api::Operation, &'static common::api::Rest)> {
    let path = path.strip_prefix("/api").filter(|p| p.starts_with('/')).unwrap_or(path);
    let method = if method == "HEAD" { "GET" } else { method };
    common::api::operations().find_map(|op| {
        let rest = op.rest.as_ref()?;
        (rest.path == path && rest.method.as_str() == method).then_some((op, rest))
    })
}
