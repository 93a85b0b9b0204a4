//! `mailhost mta-sync`'s spam step: the owners' spam reports the service
//! holds (GET /mtaSpamTraining), taught to this host's rspamd through its
//! controller (/learnspam, /learnham, with that account's `Deliver-To`), then
//! acknowledged (POST /mtaSpamTraining). A job rspamd refuses (it learned
//! that message already, or the message is too short to learn) is
//! acknowledged too: asking again changes nothing. When the controller
//! cannot be reached, or refuses the password, the run stops and what is
//! left waits for the next one.

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine;
use serde_json::{Value, json};

/// Teaching the mail host's rspamd.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TrainingSettings {
    /// rspamd's controller (`http://127.0.0.1:11334` on a stock host;
    /// scripts/mail-host's own port). Unset: no report is taught, they wait.
    #[arg(long, env = "MAILHOST_RSPAMD_CONTROLLER")]
    pub rspamd_controller: Option<String>,
    /// The controller's password (rspamd keeps only its hash).
    #[arg(long, env = "MAILHOST_RSPAMD_PASSWORD", hide_env_values = true)]
    pub rspamd_password: Option<String>,
}

/// Pages of jobs one run takes at most (10 each).
const PAGES_PER_RUN: usize = 10;

/// What the spam step of a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taught {
    Off,
    Done {
        /// Learned by rspamd.
        taught: usize,
        /// Acknowledged untaught: rspamd refused them (learned already, too
        /// short), or the spool no longer kept the message.
        skipped: usize,
    },
}

impl std::fmt::Display for Taught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Taught::Off => write!(f, "not taught (no --rspamd-controller)"),
            Taught::Done { taught, skipped } => write!(f, "{taught} taught, {skipped} skipped"),
        }
    }
}

/// One run of the spam step, against the service at `url` with the mail
/// host's sync token.
pub async fn teach(
    client: &reqwest::Client,
    url: &str,
    sync_token: &str,
    training: &TrainingSettings,
) -> anyhow::Result<Taught> {
    let Some(controller) = training.rspamd_controller.as_deref() else {
        return Ok(Taught::Off);
    };
    let controller = controller.trim_end_matches('/');
    let base = url.trim_end_matches('/');
    let (mut taught, mut skipped) = (0, 0);
    for _ in 0..PAGES_PER_RUN {
        let page: Value = client
            .get(format!("{base}/mtaSpamTraining"))
            .bearer_auth(sync_token)
            .send()
            .await
            .context("fetching the spam reports")?
            .error_for_status()
            .context("fetching the spam reports")?
            .json()
            .await
            .context("reading the spam reports")?;
        let jobs = page["jobs"].as_array().cloned().unwrap_or_default();
        if jobs.is_empty() {
            break;
        }
        let mut done = Vec::new();
        let mut stopped = None;
        for job in &jobs {
            let id = job["id"]
                .as_str()
                .ok_or_else(|| anyhow!("a spam report without an id"))?;
            match learn(client, controller, training.rspamd_password.as_deref(), job).await {
                Ok(true) => taught += 1,
                Ok(false) => skipped += 1,
                Err(e) => {
                    stopped = Some(e);
                    break;
                }
            }
            done.push(id.to_string());
        }
        if !done.is_empty() {
            client
                .post(format!("{base}/mtaSpamTraining"))
                .bearer_auth(sync_token)
                .json(&json!({ "done": done }))
                .send()
                .await
                .context("acknowledging the spam reports")?
                .error_for_status()
                .context("acknowledging the spam reports")?;
        }
        if let Some(e) = stopped {
            return Err(e);
        }
    }
    Ok(Taught::Done { taught, skipped })
}

/// Teaches one job: `Ok(true)` learned, `Ok(false)` nothing to learn (no
/// message, or rspamd refused it for good), `Err` try again later.
async fn learn(
    client: &reqwest::Client,
    controller: &str,
    password: Option<&str>,
    job: &Value,
) -> anyhow::Result<bool> {
    let Some(message) = job["message"].as_str() else {
        return Ok(false);
    };
    let message = base64::engine::general_purpose::STANDARD
        .decode(message)
        .context("a spam report's message is not base64")?;
    let path = match job["learn"].as_str() {
        Some("spam") => "learnspam",
        Some("ham") => "learnham",
        other => bail!("a spam report teaches {other:?}"),
    };
    let user = job["user"].as_str().unwrap_or_default();
    let mut request = client
        .post(format!("{controller}/{path}"))
        .header("Deliver-To", user)
        .timeout(Duration::from_secs(60))
        .body(message);
    if let Some(password) = password {
        request = request.header("Password", password);
    }
    let answer = request.send().await.context("reaching rspamd's controller")?;
    let status = answer.status();
    if status.is_success() {
        return Ok(true);
    }
    let text = answer.text().await.unwrap_or_default();
    if status.is_server_error() || status.as_u16() == 401 || status.as_u16() == 403 {
        bail!("rspamd's controller answered {status}: {}", text.trim());
    }
    // Learned already, or nothing in it to learn: the same again would be too.
    eprintln!("mta-sync: rspamd did not learn {}: {status} {}", job["id"], text.trim());
    Ok(false)
}
