//! The network backends against local stand-ins: moto for S3, SES v2 and
//! Secrets Manager, aiosmtpd for SMTP. Each test skips itself when its
//! stand-in is not named in the environment (see `common::testing`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use common::blob::BlobStore;
use common::blob::s3::{S3BlobStore, client_for};
use common::mail::ses::SesTransport;
use common::mail::smtp::SmtpTransport;
use common::mail::{Transport, plain_text};
use common::secrets::Secrets;
use common::secrets::aws::SecretsManagerSecrets;
use common::testing::standin;

async fn moto() -> Option<(String, aws_config::SdkConfig)> {
    let endpoint = standin("MAILHOST_TEST_MOTO_ENDPOINT")?;
    let conf = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(&endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .load()
        .await;
    Some((endpoint, conf))
}

/// Names unique to one run, since moto keeps state between runs.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", rand::random::<u64>())
}

#[tokio::test]
async fn s3_blob_store_round_trip() {
    let Some((_, conf)) = moto().await else {
        return;
    };
    let client = client_for(&conf);
    let bucket = unique("mailhost-test");
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    let store = S3BlobStore::new(client, bucket);

    for i in 0..5 {
        store
            .put(
                &format!("inbound/pending/{i}.eml"),
                format!("mail {i}").into_bytes(),
                "message/rfc822",
            )
            .await
            .unwrap();
    }
    store
        .put("outbound/x.eml", b"other".to_vec(), "message/rfc822")
        .await
        .unwrap();

    assert_eq!(
        store.get("inbound/pending/3.eml").await.unwrap().as_deref(),
        Some(&b"mail 3"[..])
    );
    let pending: Vec<String> = (0..5).map(|i| format!("inbound/pending/{i}.eml")).collect();
    assert_eq!(store.list("inbound/").await.unwrap(), pending);
    assert_eq!(store.list("").await.unwrap().len(), 6);
    assert!(store.list("nothing/").await.unwrap().is_empty());

    store.delete("inbound/pending/3.eml").await.unwrap();
    store.delete("inbound/pending/3.eml").await.unwrap();
    assert_eq!(store.get("inbound/pending/3.eml").await.unwrap(), None);
    assert_eq!(store.get("never/was.eml").await.unwrap(), None);
    assert_eq!(store.list("inbound/").await.unwrap().len(), 4);
}

/// In a bucket with versioning on, a read names the blob's version, and
/// that version is still read at `at_version` once the blob is deleted
/// (listed no more); a bucket without versioning names none.
#[tokio::test]
async fn s3_keeps_a_deleted_blobs_version_where_versioning_is_on() {
    let Some((_, conf)) = moto().await else {
        return;
    };
    let client = client_for(&conf);
    let (versioned, plain) = (unique("mailhost-versions"), unique("mailhost-plain"));
    for bucket in [&versioned, &plain] {
        client.create_bucket().bucket(bucket).send().await.unwrap();
    }
    let enabled = aws_sdk_s3::types::VersioningConfiguration::builder()
        .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
        .build();
    client
        .put_bucket_versioning()
        .bucket(&versioned)
        .versioning_configuration(enabled)
        .send()
        .await
        .unwrap();
    let key = "inbound/pending/1-a.eml";

    let store = S3BlobStore::new(client.clone(), versioned);
    store.put(key, b"first".to_vec(), "message/rfc822").await.unwrap();
    let read = store.get_versioned(key).await.unwrap().expect("the blob");
    assert_eq!(read.bytes, b"first");
    let version = read.version.expect("a version in a versioned bucket");
    store.delete(key).await.unwrap();
    assert_eq!(store.get(key).await.unwrap(), None);
    assert!(store.list("inbound/").await.unwrap().is_empty());
    let kept = common::blob::at_version(key, &version);
    assert_eq!(store.get(&kept).await.unwrap().as_deref(), Some(&b"first"[..]));
    // A later blob at the same key is another version; the kept one is unchanged.
    store.put(key, b"second".to_vec(), "message/rfc822").await.unwrap();
    assert_eq!(store.get(&kept).await.unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(store.get(key).await.unwrap().as_deref(), Some(&b"second"[..]));

    let store = S3BlobStore::new(client, plain);
    store.put(key, b"plain".to_vec(), "message/rfc822").await.unwrap();
    let read = store.get_versioned(key).await.unwrap().expect("the blob");
    assert_eq!((read.bytes.as_slice(), read.version), (&b"plain"[..], None));
}

#[tokio::test]
async fn ses_transport_sends_raw_mail() {
    let Some((endpoint, conf)) = moto().await else {
        return;
    };
    let client = aws_sdk_sesv2::Client::new(&conf);
    let from = format!("{}@mailhost.test", unique("sender"));
    client
        .create_email_identity()
        .email_identity(&from)
        .send()
        .await
        .unwrap();

    let subject = unique("ses subject");
    let message = plain_text(&from, "rcpt@example.org", &subject, "hello through SES").unwrap();
    SesTransport::new(client).send(&message).await.unwrap();

    let data: serde_json::Value = reqwest::get(format!("{endpoint}/moto-api/data.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // SES v2 records through moto's v1 backend, as `ses.RawMessage`.
    let sent = data["ses"]["RawMessage"]
        .as_array()
        .expect("moto recorded no raw SES messages");
    let ours = sent
        .iter()
        .find(|m| m["raw_data"].as_str().is_some_and(|raw| raw.contains(&subject)))
        .unwrap_or_else(|| panic!("no message with subject {subject:?} in {sent:?}"));
    assert_eq!(ours["source"], from.as_str());
    assert!(
        ours["destinations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == "rcpt@example.org")
    );
    assert!(ours["raw_data"].as_str().unwrap().contains("hello through SES"));
}

#[tokio::test]
async fn secrets_manager_reads_several_secrets_in_one_request() {
    let Some((_, conf)) = moto().await else {
        return;
    };
    let secrets = SecretsManagerSecrets::new(
        aws_sdk_secretsmanager::Client::new(&conf),
        format!("{}/", unique("mailhost")),
    );
    secrets.put("hmac-secret", "h").await.unwrap();
    secrets.put("agent-key", "a").await.unwrap();
    let values = secrets
        .get_many(&["hmac-secret", "agent-key", "sync-token"])
        .await
        .unwrap();
    assert_eq!(values, vec![Some("h".to_string()), Some("a".to_string()), None]);
}

#[tokio::test]
async fn secrets_manager_round_trip() {
    let Some((_, conf)) = moto().await else {
        return;
    };
    let secrets = SecretsManagerSecrets::new(
        aws_sdk_secretsmanager::Client::new(&conf),
        format!("{}/", unique("mailhost")),
    );

    assert_eq!(secrets.get("hmac").await.unwrap(), None);
    secrets.put("hmac", "first").await.unwrap();
    assert_eq!(secrets.get("hmac").await.unwrap().as_deref(), Some("first"));
    secrets.put("hmac", "second").await.unwrap();
    assert_eq!(secrets.get("hmac").await.unwrap().as_deref(), Some("second"));
    assert_eq!(secrets.get("other").await.unwrap(), None);
    secrets.delete("hmac").await.unwrap();
    assert_eq!(
        secrets.get("hmac").await.unwrap(),
        None,
        "deleted at once, without a recovery window"
    );
    secrets.delete("hmac").await.unwrap();
    secrets.put("hmac", "again").await.unwrap();
    assert_eq!(
        secrets.get("hmac").await.unwrap().as_deref(),
        Some("again"),
        "the name is free again"
    );
}

/// Kills the SMTP server and removes its directory, also when an assertion fails.
struct Server {
    child: Child,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// aiosmtpd with its Mailbox handler, which stores each message in a Maildir
/// and adds the envelope as `X-MailFrom` / `X-RcptTo` headers.
async fn start_aiosmtpd(venv: &str) -> (Server, u16) {
    let dir = std::env::temp_dir().join(unique("mailhost-smtp"));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let child = Command::new(Path::new(venv).join("bin/python"))
        .args(["-m", "aiosmtpd", "-n", "-c", "aiosmtpd.handlers.Mailbox"])
        .arg(dir.join("mbox"))
        .args(["-l", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .expect("start aiosmtpd (pip install aiosmtpd into the venv)");
    let mut server = Server { child, dir };

    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        let exited = server.child.try_wait().unwrap();
        if exited.is_some() || Instant::now() > deadline {
            let log = std::fs::read_to_string(server.dir.join("stderr")).unwrap_or_default();
            panic!("aiosmtpd did not listen on {port} ({exited:?}):\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (server, port)
}

#[tokio::test]
async fn smtp_transport_delivers_to_a_local_server() {
    let Some(venv) = standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let (server, port) = start_aiosmtpd(&venv).await;

    let transport = SmtpTransport::from_url(&format!("smtp://127.0.0.1:{port}")).unwrap();
    let message = plain_text(
        "sender@mailhost.test",
        "rcpt@example.org",
        "Over SMTP",
        "hello through SMTP",
    )
    .unwrap();
    transport.send(&message).await.unwrap();

    // The handler stores the message before it answers 250, so it is there now.
    let new = server.dir.join("mbox/new");
    let files: Vec<_> = std::fs::read_dir(&new).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let stored = std::fs::read_to_string(&files[0]).unwrap();
    assert!(stored.contains("Subject: Over SMTP"), "{stored}");
    assert!(stored.contains("hello through SMTP"), "{stored}");
    assert!(stored.contains("X-MailFrom: sender@mailhost.test"), "{stored}");
    assert!(stored.contains("X-RcptTo: rcpt@example.org"), "{stored}");
}

#[tokio::test]
async fn smtp_urls_parse() {
    for url in [
        "smtp://127.0.0.1:2525",
        "smtp://user:p%40ss@smtp.example.org:587?tls=required",
        "smtps://user:pass@smtp.example.org",
    ] {
        SmtpTransport::from_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
    assert!(SmtpTransport::from_url("http://smtp.example.org").is_err());
}
