//! A real SMTP submission server for tests (tests/api/support/smtp_sink.py, aiosmtpd in
//! the stand-in venv) and a DKIM verifier no one here wrote (tests/api/support/dkim_verify.py,
//! dkimpy asking the tests' DNS server).
//!
//! Each sink has its own throwaway CA and a server certificate for 127.0.0.1 and
//! localhost, made with the `openssl` CLI in the sink's temporary directory. The sink
//! requires STARTTLS, then AUTH (PLAIN/LOGIN) with exactly `user`/`password`, and
//! keeps every accepted message as a JSON file. A client must trust [`SmtpSink::ca_file`]
//! explicitly (lettre: `TlsParameters::builder(host).add_root_certificate(..)`); the
//! system roots do not contain it. The Python process is killed when the sink drops
//! (also while a test panics) and exits by itself if the test process disappears.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long [`SmtpSink::wait_for`] waits for messages.
const WAIT: Duration = Duration::from_secs(10);
/// How long the sink may take to start listening.
const STARTUP: Duration = Duration::from_secs(30);

pub struct SmtpSink {
    pub port: u16,
    pub user: String,
    pub password: String,
    dir: PathBuf,
    child: Child,
    /// Held open: the sink exits when it reaches end of file.
    _stdin: ChildStdin,
}

/// One message the sink accepted.
#[derive(Debug, Clone)]
pub struct Received {
    pub mail_from: String,
    pub rcpt_tos: Vec<String>,
    pub auth_user: Option<String>,
    /// Whether the session had done STARTTLS (always, since the sink requires it).
    pub tls: bool,
    /// The client's address and port: the same for messages on one connection.
    pub peer: String,
    /// The message bytes exactly as received (after dot-unstuffing).
    pub raw: Vec<u8>,
}

impl Received {
    /// `raw` as text (lossy), for assertions on headers and bodies.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

impl SmtpSink {
    /// A sink that accepts every authenticated message; `None` when the venv
    /// stand-in is missing (`MAILHOST_TEST_VENV`).
    pub async fn start() -> Option<SmtpSink> {
        Self::launch(false, false).await
    }

    /// A sink that answers 554 to every DATA (and keeps nothing); `None` when the
    /// venv stand-in is missing.
    pub async fn start_rejecting() -> Option<SmtpSink> {
        Self::launch(true, false).await
    }

    /// A sink that receives as an MX does: no AUTH, STARTTLS offered but not
    /// required (a mail host relaying forwarded mail to it).
    pub async fn start_open() -> Option<SmtpSink> {
        Self::launch(false, true).await
    }

    async fn launch(reject: bool, open: bool) -> Option<SmtpSink> {
        let venv = super::standin("MAILHOST_TEST_VENV")?;
        let sink = tokio::task::spawn_blocking(move || launch_blocking(Path::new(&venv), reject, open))
            .await
            .expect("starting the SMTP sink");
        Some(sink)
    }

    /// lettre's URL for this sink: STARTTLS required, credentials percent-encoded.
    pub fn url(&self) -> String {
        self.url_with_password(&self.password)
    }

    /// [`Self::url`] with another password (which the sink refuses with 535).
    pub fn url_with_password(&self, password: &str) -> String {
        format!(
            "smtp://{}:{}@127.0.0.1:{}?tls=required",
            percent_encode(&self.user),
            percent_encode(password),
            self.port
        )
    }

    /// The PEM certificate of the CA that issued the sink's server certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// What the sink printed on stderr so far (aiosmtpd's log, any traceback).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sink.log")).unwrap_or_default()
    }

    /// Every message accepted so far, oldest first.
    pub fn messages(&self) -> Vec<Received> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir.join("messages"))
            .expect("the sink's message directory")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths.iter().map(|p| read_received(p)).collect()
    }

    /// The first `n` or more messages, polling for up to 10 s; panics (with the
    /// sink's log) when fewer arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + WAIT;
        loop {
            let messages = self.messages();
            if messages.len() >= n {
                return messages;
            }
            if Instant::now() > deadline {
                panic!(
                    "the SMTP sink received {} message(s) within {WAIT:?}, not {n}; its log:\n{}",
                    messages.len(),
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether dkimpy finds the topmost DKIM-Signature of `raw` valid, with the key
/// looked up over UDP at `nameserver` (a `TestDns` address). Prints the verifier's
/// verdict (and on failure its debug log) to stderr.
///
/// Blocks the calling thread while the verifier runs, so the DNS server must be
/// served by another one: call it from a multi-thread runtime (it moves the
/// thread's other tasks away first) or outside any runtime. It panics on a
/// current-thread runtime, where the lookup could never be answered.
pub fn dkim_verify(raw: &[u8], nameserver: SocketAddr) -> bool {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Err(_) => dkim_verify_blocking(raw, nameserver),
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(|| dkim_verify_blocking(raw, nameserver)),
        Ok(_) => panic!(
            "dkim_verify blocks while the test's DNS server must answer: \
             use #[tokio::test(flavor = \"multi_thread\")]"
        ),
    }
}

fn dkim_verify_blocking(raw: &[u8], nameserver: SocketAddr) -> bool {
    let venv = super::standin("MAILHOST_TEST_VENV").expect("dkim_verify needs the venv stand-in (MAILHOST_TEST_VENV)");
    let file = std::env::temp_dir().join(format!("mailhost-dkim-{:016x}.eml", rand::random::<u64>()));
    std::fs::write(&file, raw).unwrap();
    let output = Command::new(Path::new(&venv).join("bin/python"))
        .arg(script("dkim_verify.py"))
        .arg(&file)
        .arg("--nameserver")
        .arg(nameserver.to_string())
        .stdin(Stdio::null())
        .output();
    std::fs::remove_file(&file).ok();
    let output = output.expect("running dkim_verify.py");
    let verdict = String::from_utf8_lossy(&output.stdout);
    eprintln!("dkim_verify.py: {}", verdict.trim());
    match output.status.code() {
        Some(0) => true,
        Some(1) => {
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            false
        }
        _ => panic!(
            "dkim_verify.py failed ({}):\n{}{}",
            output.status,
            verdict,
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/api/support")
        .join(name)
}

fn launch_blocking(venv: &Path, reject: bool, open: bool) -> SmtpSink {
    let dir = std::env::temp_dir().join(format!("mailhost-smtp-sink-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(dir.join("messages")).unwrap();
    make_certificates(&dir);
    let user = "submit@svc.test".to_string();
    // Characters a URL must percent-encode, so a client that forgets would fail.
    let password = format!("pw-{:016x}:/@%+ ?", rand::random::<u64>());
    for _ in 0..5 {
        let port = free_port();
        let log = std::fs::File::create(dir.join("sink.log")).unwrap();
        let mut child = Command::new(venv.join("bin/python"))
            .arg(script("smtp_sink.py"))
            .args(["--port", &port.to_string()])
            .arg("--cert")
            .arg(dir.join("server.pem"))
            .arg("--key")
            .arg(dir.join("server.key"))
            .args(["--user", &user, "--password", &password])
            .arg("--out")
            .arg(dir.join("messages"))
            .args(reject.then_some("--reject"))
            .args(open.then_some("--open"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("running smtp_sink.py with the venv's python");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let ready = reader.read_line(&mut line).is_ok() && line.trim() == "READY";
            tx.send(ready).ok();
            // Keep draining so a chatty sink never blocks on a full pipe.
            std::io::copy(&mut reader, &mut std::io::sink()).ok();
        });
        let ready = rx.recv_timeout(STARTUP).unwrap_or(false);
        if ready {
            return SmtpSink {
                port,
                user,
                password,
                dir,
                child,
                _stdin: stdin,
            };
        }
        child.kill().ok();
        child.wait().ok();
        let log = std::fs::read_to_string(dir.join("sink.log")).unwrap_or_default();
        if !log.to_ascii_lowercase().contains("address already in use") {
            std::fs::remove_dir_all(&dir).ok();
            panic!("the SMTP sink did not start on port {port}; its log:\n{log}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    panic!("the SMTP sink found no free port in 5 tries");
}

/// A port of 127.0.0.1 free now and never handed out before in this run: a
/// harness picks several before it starts what listens on them, and the
/// kernel may offer a released port again (the IMAP port and a remote MX once
/// got the same one). It lies below the kernel's ephemeral range, so no
/// connection's local end takes it in the seconds before its server binds it
/// (Dovecot once found its IMAP port so taken while the suite ran).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let below = 10_000..ephemeral;
    loop {
        let port = match below.is_empty() {
            true => std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port(),
            false => {
                let port = rand::random_range(below.clone());
                match std::net::TcpListener::bind(("127.0.0.1", port)) {
                    Ok(_) => port,
                    Err(_) => continue,
                }
            }
        };
        if GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(port)
        {
            return port;
        }
    }
}

/// Writes ca.pem (a throwaway CA) and server.pem/server.key (issued by it for
/// IP 127.0.0.1 and DNS localhost) into `dir`. P-256 keys: fast to make.
pub fn make_certificates(dir: &Path) {
    let ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\n\
               basicConstraints=critical,CA:FALSE\n\
               keyUsage=critical,digitalSignature\n\
               extendedKeyUsage=serverAuth\n";
    std::fs::write(dir.join("server.ext"), ext).unwrap();
    let new_key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    openssl(
        dir,
        &format!(
            "req -x509 {new_key} -keyout ca.key -out ca.pem -days 2 -subj /CN=mailhost-test-CA \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"
        ),
    );
    openssl(
        dir,
        &format!("req -new {new_key} -keyout server.key -out server.csr -subj /CN=localhost"),
    );
    let serial = rand::random::<u64>() >> 1;
    openssl(
        dir,
        &format!(
            "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial {serial} -days 2 \
             -extfile server.ext -out server.pem"
        ),
    );
}

/// Runs the `openssl` CLI in `dir` with whitespace-separated `args`: its stdout;
/// panics with its stderr when it fails.
pub fn openssl(dir: &Path, args: &str) -> Vec<u8> {
    let output = Command::new("openssl")
        .args(args.split_whitespace())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("the openssl CLI");
    assert!(
        output.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn read_received(path: &Path) -> Received {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    // The sink writes the bytes as latin-1: each char is one byte.
    let raw = v["raw"]
        .as_str()
        .unwrap()
        .chars()
        .map(|c| u8::try_from(c).expect("latin-1"))
        .collect();
    Received {
        mail_from: v["mail_from"].as_str().unwrap().to_string(),
        rcpt_tos: strings(&v["rcpt_tos"]),
        auth_user: v["auth_user"].as_str().map(str::to_string),
        tls: v["tls"].as_bool().unwrap(),
        peer: v["peer"].as_str().unwrap().to_string(),
        raw,
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters (what lettre
/// percent-decodes from a URL's user and password).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
