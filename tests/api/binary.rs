//! The `mailhost` binary as a user runs it: no arguments serves every route on
//! the embedded store, prints the agent key once on first start, `mailhost token`
//! mints a token that server accepts, and the request log never carries a key,
//! a token or a code.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::smtp::free_port;
use serde_json::{Value, json};

struct Server {
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Server {
    /// The agent key a first start prints, once. The server prints it before
    /// it answers, but the threads reading its output may not have read it
    /// yet on a busy machine (CI saw nothing read at all), so this waits.
    fn agent_key(&self) -> String {
        for _ in 0..200 {
            let printed = self.output.lock().unwrap().clone();
            if let Some(key) = printed.split_whitespace().find(|w| w.starts_with("svc_")) {
                return key.to_string();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the agent key is printed on first start: {}",
            self.output.lock().unwrap()
        )
    }
}

/// Starts `mailhost` with no arguments, configured through the environment only.
async fn start(data_dir: &std::path::Path, port: u16) -> Server {
    let server = launch(data_dir, port, &[]);
    answering(server, port).await
}

/// The process started, with `env` beside the usual variables; not waited for.
fn launch(data_dir: &std::path::Path, port: u16, env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .env("MAILHOST_ADDR", format!("127.0.0.1:{port}"))
        .env("MAILHOST_DATA_DIR", data_dir)
        .env("MAILHOST_SERVICE_DOMAIN", "svc.test")
        .env("MAILHOST_POLL_INTERVAL", "1")
        .env("RUST_LOG", "info")
        .env_remove("MAILHOST_AGENT_KEY")
        .env_remove("MAILHOST_STORE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = Arc::new(Mutex::new(String::new()));
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    // Owned by the guard from here on, so the process is reaped on every path.
    let server = Server {
        child,
        output: output.clone(),
    };
    for stream in [Box::new(stdout) as Box<dyn std::io::Read + Send>, Box::new(stderr)] {
        let output = output.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                output.lock().unwrap().push_str(&(line + "\n"));
            }
        });
    }
    server
}

/// The server, once it answers HTTP.
async fn answering(server: Server, port: u16) -> Server {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client
            .get(format!("http://127.0.0.1:{port}/credits"))
            .send()
            .await
            .is_ok()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("mailhost did not start: {}", server.output.lock().unwrap());
}

/// `mailhost token` for an operator, started on `data_dir`.
fn mint(data_dir: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args(["token", "--data-dir", data_dir.to_str().unwrap()])
        .args(["--email", "ops@example.com", "--operator"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A scripted first start, three times over: the server started on a new
/// data directory, `mailhost token` run at once beside it (both create the
/// signing key: one wins) and again the moment the port takes a connection
/// (as a script that waits for the port does). By then every secret the
/// server makes is in place, and every token minted either way is accepted.
async fn first_starts_raced_by_mailhost_token(env: &[(&str, &str)]) {
    for round in 0..3 {
        let data_dir = std::env::temp_dir().join(format!("mailhost-bin-{:x}", rand::random::<u64>()));
        let port = free_port();
        let server = launch(&data_dir, port, env);
        let mut minted = vec![mint(&data_dir), mint(&data_dir)];
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "round {round}: no port: {}",
                server.output.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        minted.extend([mint(&data_dir), mint(&data_dir)]);
        for secret in ["hmac-secret", "sync-token", "agent-key-digest", "identity-signing-key"] {
            assert!(
                data_dir.join("secrets").join(secret).exists(),
                "round {round}: {secret} exists before the port takes a connection"
            );
        }
        let server = answering(server, port).await;
        let client = reqwest::Client::new();
        for (i, child) in minted.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
            let res = client
                .get(format!("http://127.0.0.1:{port}/credits"))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                (status, &body["canPauseAll"]),
                (200, &json!(true)),
                "round {round}, token {i}: {body}"
            );
        }
        drop(server);
        std::fs::remove_dir_all(&data_dir).ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_minted_during_a_first_start_all_work_on_the_embedded_store() {
    first_starts_raced_by_mailhost_token(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_minted_during_a_first_start_all_work_on_dynamodb_local() {
    if crate::support::standin("MAILHOST_TEST_DYNAMODB_ENDPOINT").is_none() {
        return;
    }
    let table = format!("mailhost-race-{:016x}", rand::random::<u64>());
    first_starts_raced_by_mailhost_token(&[("MAILHOST_STORE", "dynamodb"), ("MAILHOST_TABLE", &table)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_onboarding_and_never_logs_a_secret() {
    let data_dir = std::env::temp_dir().join(format!("mailhost-bin-{:x}", rand::random::<u64>()));
    let port = free_port();
    let server = start(&data_dir, port).await;
    let agent_key = server.agent_key();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let post = |path: &str, auth: Option<&str>, body: Value| {
        let mut req = client.post(format!("{base}{path}")).json(&body);
        if let Some(a) = auth {
            req = req.bearer_auth(a);
        }
        async move {
            let res = req.send().await.unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };

    let token = Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args([
            "token",
            "--data-dir",
            data_dir.to_str().unwrap(),
            "--email",
            "ops@example.com",
            "--operator",
        ])
        .output()
        .unwrap();
    assert!(token.status.success());
    let token = String::from_utf8(token.stdout).unwrap().trim().to_string();
    assert_eq!(
        post(
            "/api/admin/domainAllowlist",
            Some(&token),
            json!({"domain": "example.com"})
        )
        .await
        .0,
        200
    );

    let (status, body) = post(
        "/api/requestAccess",
        None,
        json!({"contactEmail": "dev@example.com", "domain": "example.com", "agentName": "cli", "intendedUse": "test"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = body["requestId"].as_str().unwrap().to_string();
    let outbox = std::fs::read_dir(data_dir.join("outbox"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mail = std::fs::read_to_string(outbox).unwrap();
    let at = mail.find("Your access code is ").unwrap() + 20;
    let code = mail[at..at + 8].to_string();
    let (status, body) = post("/verifyAccessRequest", None, json!({"requestId": id, "code": code})).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")), "{body}");
    let key = body["apiKey"].as_str().unwrap().to_string();
    let (status, account) = post("/getAccountStatus", Some(&key), json!({})).await;
    assert_eq!((status, account["status"].as_str()), (200, Some("ready")));
    let credits = client
        .get(format!("{base}/credits"))
        .bearer_auth(&agent_key)
        .send()
        .await
        .unwrap();
    assert_eq!(credits.status(), 200);

    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = server.output.lock().unwrap().clone();
    assert!(
        log.contains("/requestAccess") && log.contains("status=200"),
        "one line per request: {log}"
    );
    assert!(log.contains("latency_us="), "{log}");
    assert_eq!(
        log.matches(&agent_key).count(),
        1,
        "the agent key is printed once and never logged"
    );
    for secret in [&key, &code, &token] {
        assert!(!log.contains(secret.as_str()), "a secret reached the log");
    }
    drop(server);

    // A second start keeps the key: nothing new is printed, the old key still works.
    let port = free_port();
    let again = start(&data_dir, port).await;
    assert!(!again.output.lock().unwrap().contains("svc_"));
    let res = client
        .get(format!("http://127.0.0.1:{port}/credits"))
        .bearer_auth(&agent_key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(again);
    std::fs::remove_dir_all(data_dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mailhost_deliver_drops_mail_that_the_running_server_lists_within_seconds() {
    let data_dir = std::env::temp_dir().join(format!("mailhost-bin-{:x}", rand::random::<u64>()));
    let port = free_port();
    let server = start(&data_dir, port).await;
    let agent_key = server.agent_key();
    let eml = data_dir.join("hello.eml");
    std::fs::write(
        &eml,
        "From: ann@example.org\r\nTo: inbox@svc.test\r\nSubject: Hello\r\nMessage-ID: <bin-1@example.org>\r\n\r\nHi.\r\n",
    )
    .unwrap();
    let delivered = Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args([
            "deliver",
            "--data-dir",
            data_dir.to_str().unwrap(),
            eml.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(delivered.status.success(), "{delivered:?}");
    assert!(String::from_utf8_lossy(&delivered.stdout).contains("inbound/pending/"));
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    loop {
        let listed: Value = client
            .get(format!("http://127.0.0.1:{port}/inbox"))
            .bearer_auth(&agent_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if listed["messages"].as_array().is_some_and(|m| m.len() == 1) {
            assert_eq!(listed["messages"][0]["subject"], "Hello");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "not listed: {listed} {}",
            server.output.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The poller lists a message as soon as it is filed, and moves the file
    // to done/ just after: wait for the move rather than race it.
    let count = |sub: &str| std::fs::read_dir(data_dir.join(sub)).map_or(0, |d| d.count());
    let listed_at = std::time::Instant::now();
    while (count("blobs/inbound/done"), count("blobs/inbound/pending")) != (1, 0) {
        assert!(
            listed_at.elapsed() < Duration::from_secs(5),
            "not moved to done: done {}, pending {}",
            count("blobs/inbound/done"),
            count("blobs/inbound/pending")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(server);
    std::fs::remove_dir_all(&data_dir).ok();
}

/// A scheduled send is kept in the store, not in the process: accepted by one
/// server, it goes out once from the next one on the same data directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_send_goes_out_once_after_a_restart() {
    let data_dir = std::env::temp_dir().join(format!("mailhost-bin-{:x}", rand::random::<u64>()));
    let port = free_port();
    let server = start(&data_dir, port).await;
    let agent_key = server.agent_key();
    let client = reqwest::Client::new();
    let res = client
        .post(format!("http://127.0.0.1:{port}/sendMail"))
        .bearer_auth(&agent_key)
        .json(&json!({"to": "later@example.net", "subject": "After the restart", "text": "Hi", "undoSeconds": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "scheduled", "{body}");
    drop(server);
    let copies = || {
        std::fs::read_dir(data_dir.join("outbox")).map_or(0, |d| {
            d.filter_map(|e| e.ok())
                .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|m| m.contains("Subject: After the restart")))
                .count()
        })
    };
    assert_eq!(copies(), 0, "not sent before its time");
    let server = start(&data_dir, port).await;
    let started = std::time::Instant::now();
    while copies() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not sent after the restart: {}",
            server.output.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A few more runs of the job send nothing more.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(copies(), 1, "sent exactly once");
    drop(server);
    std::fs::remove_dir_all(&data_dir).ok();
}

/// `mailhost deliver --bucket` drops into a deployed stack's S3 spool (moto
/// here), where the poller function reads it.
#[tokio::test]
async fn deliver_drops_into_an_s3_bucket() {
    let Some(endpoint) = crate::support::standin("MAILHOST_TEST_MOTO_ENDPOINT") else {
        return;
    };
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let conf = aws_sdk_s3::config::Builder::new()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .force_path_style(true)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "static",
        ))
        .build();
    let s3 = aws_sdk_s3::Client::from_conf(conf);
    let bucket = format!("spool-{:016x}", rand::random::<u64>());
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mailhost-deliver-{:x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let eml = dir.join("m.eml");
    let raw = "Delivered-To: me@example.com\r\nFrom: a@example.org\r\nSubject: S3\r\n\r\nHi.\r\n";
    std::fs::write(&eml, raw).unwrap();
    let delivered = Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args(["deliver", "--bucket", &bucket, eml.to_str().unwrap()])
        .envs(env)
        .output()
        .unwrap();
    assert!(delivered.status.success(), "{delivered:?}");
    let listed = s3
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("inbound/pending/")
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(String::from_utf8_lossy(&delivered.stdout).contains(keys[0]));
    let got = s3.get_object().bucket(&bucket).key(keys[0]).send().await.unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), raw.as_bytes());
    assert!(!dir.join("blobs").exists(), "nothing written locally");
}

/// `mailhost --help` describes each command under its own name (the deliver
/// text once sat under mta-sync).
#[test]
fn help_describes_each_command_under_its_own_name() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let line = |command: &str| {
        help.lines()
            .find(|l| l.trim_start().starts_with(&format!("{command} ")))
            .unwrap_or_else(|| panic!("no {command} in {help}"))
            .to_string()
    };
    assert!(line("mta-sync").contains("agent"), "{help}");
    assert!(!line("mta-sync").contains("Drop raw messages"), "{help}");
    assert!(line("deliver").contains("Drop raw messages"), "{help}");
    assert!(line("milter").contains("submission"), "{help}");
    assert!(line("limits").contains("limits"), "{help}");
    // Each command's own help opens with its own sentence.
    for (command, opening) in [("deliver", "Drop raw messages"), ("mta-sync", "The mail host's agent")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mailhost"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let own = String::from_utf8_lossy(&out.stdout);
        assert!(own.starts_with(opening), "{command}: {own}");
    }
}

/// The settings of one `[profile.NAME]` table of the workspace's Cargo.toml,
/// as `key = value` text.
fn profile(name: &str) -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let header = format!("[profile.{name}]");
    manifest
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .collect()
}

/// The README's run command builds a profile that exists and skips LTO (a
/// fresh clone's first start), while `--release`, all `sam build` can ask
/// for, keeps what ships to Lambda: fat LTO in one codegen unit.
#[test]
fn the_readme_runs_a_quick_profile_and_lambda_keeps_fat_lto() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains("\ncargo run --profile local\n"),
        "the README's run command changed"
    );
    let local = profile("local");
    let setting = |p: &[(String, String)], k: &str| p.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    assert_eq!(setting(&local, "inherits").as_deref(), Some("release"));
    assert_eq!(setting(&local, "lto").as_deref(), Some("off"));
    let release = profile("release");
    assert_eq!(setting(&release, "lto").as_deref(), Some("fat"));
    assert_eq!(setting(&release, "codegen-units").as_deref(), Some("1"));
}
