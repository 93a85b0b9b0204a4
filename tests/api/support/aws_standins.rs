//! DynamoDB Local and moto as a Lambda function meets them in AWS: the table,
//! bucket and secrets it reads at cold start, and a proxy in front of each
//! endpoint that names every request passing through. Shared by the
//! `lambda_functions` test and the init benchmark (`#[path]`), which both
//! start functions and ask what they sent before their first event.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The secrets a function reads at init, under a deployment's prefix.
pub const SECRETS: &[(&str, &str)] = &[
    ("hmac-secret", "standin-hmac-secret-0123456789abcdef"),
    ("agent-key", "svc_standin0agent0key000000000000000000000000"),
    ("sync-token", "standin-sync-token"),
];

/// Creates the table, the bucket and [`SECRETS`] under `prefix`.
pub async fn provision(dynamodb: &str, moto: &str, table: &str, bucket: &str, prefix: &str) {
    use common::secrets::Secrets;
    let conf = |endpoint: &str| {
        aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
                aws_sdk_s3::config::Credentials::new("test", "test", None, None, "standin"),
            ))
            .endpoint_url(endpoint)
            .build()
    };
    let store = common::store::dynamo::DynamoStore::new(aws_sdk_dynamodb::Client::new(&conf(dynamodb)), table);
    store.ensure_table().await.expect("table in DynamoDB Local");
    common::blob::s3::client_for(&conf(moto))
        .create_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("bucket in moto");
    let secrets =
        common::secrets::aws::SecretsManagerSecrets::new(aws_sdk_secretsmanager::Client::new(&conf(moto)), prefix);
    for (name, value) in SECRETS {
        secrets.put(name, value).await.expect("secret in moto");
    }
}

/// The variables that make a function run as in AWS against these stand-ins:
/// DynamoDB through `dynamodb`, Secrets Manager and S3 through `moto`.
pub fn function_env(
    dynamodb: &Recorder,
    moto: &Recorder,
    table: &str,
    bucket: &str,
    prefix: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("MAILHOST_STORE", "dynamodb".into()),
        ("MAILHOST_TABLE", table.into()),
        ("MAILHOST_BUCKET", bucket.into()),
        ("MAILHOST_SECRETS", "aws".into()),
        ("MAILHOST_SECRET_PREFIX", prefix.into()),
        ("AWS_ENDPOINT_URL", moto.url()),
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.url()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
    ]
}

/// A TCP forwarder in front of an endpoint that names each HTTP request
/// passing through (its X-Amz-Target, else method and path) with when it
/// arrived.
pub struct Recorder {
    pub addr: SocketAddr,
    calls: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Recorder {
    pub fn start(upstream: &str) -> Recorder {
        let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = calls.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, log) = (upstream.clone(), log.clone());
                std::thread::spawn(move || forward(client, &upstream, &log));
            }
        });
        Recorder { addr, calls }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn clear(&self) {
        self.calls.lock().unwrap().clear();
    }

    /// The requests that arrived up to `moment`, in order.
    pub fn before(&self, moment: Instant) -> Vec<String> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|(at, _)| *at <= moment)
            .map(|(_, c)| c.clone())
            .collect()
    }
}

/// Copies one connection's requests upstream, naming each, and the answers back.
fn forward(client: TcpStream, upstream: &str, log: &Mutex<Vec<(Instant, String)>>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let (mut to_client, mut from_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(std::net::Shutdown::Both);
    });
    let mut reader = BufReader::new(client);
    let mut server = server;
    loop {
        let mut head = String::new();
        let mut line = String::new();
        let (mut length, mut target) = (0u64, None);
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            head.push_str(&line);
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("x-amz-target:") {
                target = Some(line["x-amz-target:".len()..].trim().to_string());
            }
            if line == "\r\n" {
                break;
            }
        }
        let request_line = head.lines().next().unwrap_or_default();
        let name = target.unwrap_or_else(|| request_line.split(' ').take(2).collect::<Vec<_>>().join(" "));
        log.lock().unwrap().push((Instant::now(), name));
        if server.write_all(head.as_bytes()).is_err()
            || std::io::copy(&mut (&mut reader).take(length), &mut server).is_err()
        {
            return;
        }
    }
}
