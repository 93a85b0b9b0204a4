//! `mailhost mta-sync`: the agent on the mail host. Each run reads the newest
//! mailbox export with the sync token, writes the Postfix maps and the
//! Dovecot passwd-file atomically (write beside, `postmap`, rename), reloads
//! Postfix only when a map changed, and only then acknowledges the version it
//! applied. A run that fails at any step acknowledges nothing and leaves the
//! last good files in place; the next run starts over.
//!
//! With `--postfix-log`, each run then reports what Postfix's log says became
//! of the service's own mail (senders on the export's `bounceDomain`):
//! delivered, deferred or bounced, to `POST /mtaDeliveryEvents`, at most 100
//! events a request ([`crate::maillog`]). The position in the log is saved
//! only once the service has taken every event up to it, so a failure sends
//! them again next run (the service applies each event once, by its id).
//! With `--rspamd-controller`, each run then teaches rspamd the owners' spam
//! reports ([`crate::spam_training`]). The steps are independent: a failure
//! of one does not stop the others.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};

use crate::maillog::{self, Event, State};

/// `mailhost mta-sync`'s settings: the export's, and the delivery log's.
#[derive(Debug, Clone, clap::Args)]
pub struct Agent {
    #[command(flatten)]
    pub sync: Settings,
    #[command(flatten)]
    pub log: LogSettings,
    #[command(flatten)]
    pub training: crate::spam_training::TrainingSettings,
}

/// Reading Postfix's log for the delivery status of the service's mail.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LogSettings {
    /// Postfix's log: its `maillog_file`, or syslog's mail log
    /// (/var/log/mail.log). Unset: no delivery status is reported.
    #[arg(long, env = "MAILHOST_POSTFIX_LOG")]
    pub postfix_log: Option<PathBuf>,
    /// Where the reading stands between runs (the file, the offset, the
    /// senders of mail still queued). Default: beside the maps directory,
    /// `<postfix-maps-dir>.log-state.json`.
    #[arg(long, env = "MAILHOST_LOG_STATE")]
    pub log_state: Option<PathBuf>,
}

/// Events sent in one request (the service's limit).
pub const EVENTS_PER_REQUEST: usize = 100;
/// Log bytes read at a time; events are reported and the position saved
/// after each.
const READ_BUDGET: u64 = 4 << 20;
/// Reads in one run at most (then the export's turn comes again).
const READS_PER_RUN: usize = 64;

/// The settings, as flags with `MAILHOST_*` twins like the server's.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// The service's base URL (its routes at the root or under /api).
    #[arg(long, env = "MAILHOST_URL")]
    pub url: String,
    /// The mail host's sync token.
    #[arg(long, env = "MAILHOST_SYNC_TOKEN", hide_env_values = true)]
    pub sync_token: String,
    /// Where the Postfix maps go: virtual_mailbox_domains, virtual_mailbox_maps
    /// and virtual_alias_maps (each with its .db), read as hash:<dir>/<name>.
    #[arg(long, env = "MAILHOST_POSTFIX_MAPS_DIR", default_value = "/etc/postfix/mailhost")]
    pub postfix_maps_dir: PathBuf,
    /// The Dovecot passwd-file (app passwords as SHA512-CRYPT).
    #[arg(
        long,
        env = "MAILHOST_DOVECOT_PASSWD",
        default_value = "/etc/dovecot/mailhost.passwd"
    )]
    pub dovecot_passwd: PathBuf,
    /// The postmap program.
    #[arg(long, env = "MAILHOST_POSTMAP", default_value = "postmap")]
    pub postmap: String,
    /// `postmap -c <dir>`: the Postfix configuration directory, for a private
    /// instance; unset: Postfix's default.
    #[arg(long, env = "MAILHOST_POSTFIX_CONFIG_DIR")]
    pub postfix_config_dir: Option<PathBuf>,
    /// The command that makes Postfix reread its maps, split on spaces; run
    /// only when a map changed.
    #[arg(long, env = "MAILHOST_POSTFIX_RELOAD", default_value = "postfix reload")]
    pub reload: String,
    /// Seconds between runs.
    #[arg(long, env = "MAILHOST_SYNC_INTERVAL", default_value_t = 60)]
    pub interval: u64,
    /// One run, then exit (non-zero when it failed): for cron and tests.
    #[arg(long)]
    pub once: bool,
}

pub const MAPS: [(&str, &str); 3] = [
    ("virtual_mailbox_domains", "virtualMailboxDomains"),
    ("virtual_mailbox_maps", "virtualMailboxMaps"),
    ("virtual_alias_maps", "virtualAliasMaps"),
];

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub version: i64,
    /// The maps rewritten (names), and whether the passwd-file was.
    pub maps_changed: Vec<&'static str>,
    pub passwd_changed: bool,
    pub reloaded: bool,
}

/// What the delivery step of a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deliveries {
    /// Not reported, and why (no --postfix-log, no bounce domain).
    Off(&'static str),
    Reported {
        events: usize,
        applied: u64,
        ignored: u64,
        /// The byte the log has been read to.
        offset: u64,
    },
}

impl std::fmt::Display for Deliveries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off(why) => write!(f, "not reported ({why})"),
            Self::Reported {
                events,
                applied,
                ignored,
                offset,
            } => write!(
                f,
                "{events} events reported (applied {applied}, ignored {ignored}); log read to byte {offset}"
            ),
        }
    }
}

/// The bounce domain a run learned from the export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BounceDomain {
    /// The export named this one.
    Named(String),
    /// The export names none: nothing is reported.
    None,
    /// No export this run: the one saved last, if any.
    Unknown,
}

impl BounceDomain {
    /// What the export at hand says (`export.bounceDomain`).
    pub fn of_export(export: &Value) -> Self {
        match export["bounceDomain"].as_str().map(|d| d.trim().to_ascii_lowercase()) {
            Some(d) if !d.is_empty() && !d.contains(['@', ' ', '/']) => Self::Named(d),
            _ => Self::None,
        }
    }
}

/// Runs until stopped (or once), one log line per run.
pub async fn run(agent: Agent) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
    let settings = &agent.sync;
    loop {
        // The export, then the delivery log, whatever became of the export.
        let (applied, bounce) = match fetch(&client, settings).await {
            Ok(export) => {
                let bounce = BounceDomain::of_export(&export);
                (apply(&client, settings, &export).await, bounce)
            }
            Err(e) => (Err(e), BounceDomain::Unknown),
        };
        let reported = report_deliveries(&client, settings, &agent.log, bounce).await;
        let taught = crate::spam_training::teach(&client, &settings.url, &settings.sync_token, &agent.training).await;
        let sync = match &applied {
            Ok(a) => format!(
                "version {} applied and acknowledged (maps changed: {}; passwd-file changed: {}; reloaded: {})",
                a.version,
                if a.maps_changed.is_empty() {
                    "none".to_string()
                } else {
                    a.maps_changed.join(", ")
                },
                a.passwd_changed,
                a.reloaded
            ),
            Err(e) => format!("nothing acknowledged: {e:#}"),
        };
        let deliveries = match &reported {
            Ok(d) => format!("deliveries: {d}"),
            Err(e) => format!("deliveries: failed, the log position kept: {e:#}"),
        };
        let spam = match &taught {
            Ok(t) => format!("spam reports: {t}"),
            Err(e) => format!("spam reports: failed, the rest wait: {e:#}"),
        };
        if applied.is_ok() && reported.is_ok() && taught.is_ok() {
            println!("mta-sync: {sync}; {deliveries}; {spam}");
        } else {
            eprintln!("mta-sync: {sync}; {deliveries}; {spam}");
        }
        if settings.once {
            applied?;
            reported?;
            taught?;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(settings.interval.max(1))).await;
    }
}

/// One run of the export step: fetch, apply, reload when needed, acknowledge.
pub async fn run_once(client: &reqwest::Client, settings: &Settings) -> anyhow::Result<Applied> {
    let export = fetch(client, settings).await?;
    apply(client, settings, &export).await
}

/// The newest export (`export` of GET /mtaMailboxExport).
pub async fn fetch(client: &reqwest::Client, settings: &Settings) -> anyhow::Result<Value> {
    let base = settings.url.trim_end_matches('/');
    let mut fetched: Value = client
        .get(format!("{base}/mtaMailboxExport"))
        .bearer_auth(&settings.sync_token)
        .send()
        .await
        .context("fetching the export")?
        .error_for_status()
        .context("fetching the export")?
        .json()
        .await
        .context("reading the export")?;
    Ok(fetched["export"].take())
}

/// Applies an export and acknowledges its version.
pub async fn apply(client: &reqwest::Client, settings: &Settings, export: &Value) -> anyhow::Result<Applied> {
    let base = settings.url.trim_end_matches('/');
    let version = export["version"]
        .as_i64()
        .ok_or_else(|| anyhow!("the export has no version"))?;
    let text = |v: &Value, what: &str| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("the export has no {what}"))
    };

    std::fs::create_dir_all(&settings.postfix_maps_dir)
        .with_context(|| format!("creating {}", settings.postfix_maps_dir.display()))?;
    let mut maps_changed = Vec::new();
    for (name, field) in MAPS {
        let content = text(&export["postfix"][field], field)?;
        if write_map(settings, name, &content)? {
            maps_changed.push(name);
        }
    }
    let passwd = text(&export["dovecot"]["passwdFile"], "passwdFile")?;
    let passwd_changed = replace_if_changed(&settings.dovecot_passwd, &passwd, 0o640)?;
    let reloaded = !maps_changed.is_empty() && !settings.reload.trim().is_empty();
    if reloaded {
        run_command(&settings.reload, &[])?;
    }
    client
        .post(format!("{base}/mtaMailboxExport"))
        .bearer_auth(&settings.sync_token)
        .json(&serde_json::json!({ "version": version }))
        .send()
        .await
        .context("acknowledging the export")?
        .error_for_status()
        .context("acknowledging the export")?;
    Ok(Applied {
        version,
        maps_changed,
        passwd_changed,
        reloaded,
    })
}

/// The delivery step: reads Postfix's log from where the last run stopped
/// and reports the events of mail sent from the bounce domain, saving the
/// position after each read whose events the service has taken.
pub async fn report_deliveries(
    client: &reqwest::Client,
    settings: &Settings,
    log: &LogSettings,
    bounce: BounceDomain,
) -> anyhow::Result<Deliveries> {
    let Some(path) = &log.postfix_log else {
        return Ok(Deliveries::Off("no --postfix-log"));
    };
    let state_path = log_state_path(settings, log);
    let mut state = State::load(&state_path)?;
    let domain = match bounce {
        BounceDomain::Named(domain) => domain,
        BounceDomain::None => return Ok(Deliveries::Off("the export names no bounce domain")),
        BounceDomain::Unknown => match state.bounce_domain.clone() {
            Some(domain) => domain,
            None => return Ok(Deliveries::Off("no export, and no bounce domain known")),
        },
    };
    if state.bounce_domain.as_deref() != Some(domain.as_str()) {
        state.bounce_domain = Some(domain.clone());
        state.save(&state_path)?;
    }
    let (mut events, mut applied, mut ignored) = (0, 0, 0);
    for _ in 0..READS_PER_RUN {
        let read = maillog::read_new(path, &state, &domain, maillog::now_ms(), READ_BUDGET)?;
        for batch in read.events.chunks(EVENTS_PER_REQUEST) {
            let (a, i) = post_events(client, settings, batch).await?;
            applied += a;
            ignored += i;
        }
        events += read.events.len();
        if read.state != state {
            read.state.save(&state_path)?;
            state = read.state;
        }
        if !read.more {
            break;
        }
    }
    Ok(Deliveries::Reported {
        events,
        applied,
        ignored,
        offset: state.offset,
    })
}

/// `--log-state`, or `<postfix-maps-dir>.log-state.json` beside the maps.
pub fn log_state_path(settings: &Settings, log: &LogSettings) -> PathBuf {
    if let Some(path) = &log.log_state {
        return path.clone();
    }
    let maps = &settings.postfix_maps_dir;
    match (maps.parent(), maps.file_name()) {
        (Some(parent), Some(name)) => parent.join(format!("{}.log-state.json", name.to_string_lossy())),
        _ => maps.join("log-state.json"),
    }
}

/// One request of `POST /mtaDeliveryEvents`: (applied, ignored).
async fn post_events(client: &reqwest::Client, settings: &Settings, events: &[Event]) -> anyhow::Result<(u64, u64)> {
    let base = settings.url.trim_end_matches('/');
    let body = json!({ "events": events.iter().map(Event::to_json).collect::<Vec<_>>() });
    let answer: Value = client
        .post(format!("{base}/mtaDeliveryEvents"))
        .bearer_auth(&settings.sync_token)
        .json(&body)
        .send()
        .await
        .context("reporting deliveries")?
        .error_for_status()
        .context("reporting deliveries")?
        // Taken (2xx) is what matters; the counts are for the log line.
        .json()
        .await
        .unwrap_or_default();
    Ok((
        answer["applied"].as_u64().unwrap_or(0),
        answer["ignored"].as_u64().unwrap_or(0),
    ))
}

/// Writes one Postfix map when its content changed: the text and its .db are
/// built beside the live ones and renamed over them, the .db first, so
/// Postfix never reads a half-written table.
fn write_map(settings: &Settings, name: &str, content: &str) -> anyhow::Result<bool> {
    let live = settings.postfix_maps_dir.join(name);
    if std::fs::read_to_string(&live).ok().as_deref() == Some(content) && db(&live).exists() {
        return Ok(false);
    }
    let staged = settings.postfix_maps_dir.join(format!("{name}.new"));
    write_new(&staged, content, 0o644, None)?;
    let mut args = Vec::new();
    if let Some(dir) = &settings.postfix_config_dir {
        args.push("-c".to_string());
        args.push(dir.display().to_string());
    }
    args.push(format!("hash:{}", staged.display()));
    run_command(&settings.postmap, &args)?;
    std::fs::rename(db(&staged), db(&live)).with_context(|| format!("installing {}", db(&live).display()))?;
    std::fs::rename(&staged, &live).with_context(|| format!("installing {}", live.display()))?;
    Ok(true)
}

fn db(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".db");
    PathBuf::from(name)
}

/// Replaces a file with new content (write beside, rename) when it differs,
/// keeping the owner, group and mode of the file it replaces (Dovecot's auth
/// reads the passwd-file as its own group); a new file gets `mode`. A live
/// file that is a symbolic link is refused: someone planted it.
fn replace_if_changed(path: &Path, content: &str, mode: u32) -> anyhow::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let live = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            bail!("{} is a symbolic link; refusing to write through it", path.display())
        }
        Ok(meta) => Some(meta),
        Err(_) => None,
    };
    if live.is_some() && std::fs::read_to_string(path).ok().as_deref() == Some(content) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let (owner, mode) = match &live {
        Some(old) => (Some((old.uid(), old.gid())), old.mode() & 0o7777),
        None => (None, mode),
    };
    let staged = path.with_extension("new");
    write_new(&staged, content, mode, owner)?;
    if let Some(old) = live.as_ref().and_then(|m| m.modified().ok()) {
        later_than(&staged, old)?;
    }
    std::fs::rename(&staged, path).with_context(|| format!("installing {}", path.display()))?;
    Ok(true)
}

/// Dates the file at least one whole second after `old`: Dovecot rereads its
/// passwd-file only when the size or the mtime in whole seconds changed, and
/// a new password's line is as long as the one it replaces, so a second
/// export within the same second would otherwise never be read.
fn later_than(path: &Path, old: std::time::SystemTime) -> anyhow::Result<()> {
    let whole = |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let file = std::fs::File::options().write(true).open(path)?;
    let now = file.metadata()?.modified()?;
    if whole(now) <= whole(old) {
        let next = std::time::UNIX_EPOCH + std::time::Duration::from_secs(whole(old) + 1);
        file.set_modified(next)
            .with_context(|| format!("dating {}", path.display()))?;
    }
    Ok(())
}

/// Writes `content` to a file made new at `path` with its final mode (and
/// owner) from the first byte: whatever was at `path` is removed first (a
/// link, not what it points to), and the file is created exclusively, which
/// never follows a link (POSIX: O_CREAT|O_EXCL fails on one), so a link
/// planted between the two fails the write.
fn write_new(path: &Path, content: &str, mode: u32, owner: Option<(u32, u32)>) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    // The umask may have narrowed the mode the file was created with.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
            .with_context(|| format!("giving {} its owner", path.display()))?;
    }
    file.write_all(content.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    file.sync_all()?;
    Ok(())
}

/// Runs a command given as words (a program and its arguments) plus `extra`.
fn run_command(words: &str, extra: &[String]) -> anyhow::Result<()> {
    let mut parts = words.split_whitespace();
    let program = parts.next().ok_or_else(|| anyhow!("an empty command"))?;
    let output = Command::new(program)
        .args(parts)
        .args(extra)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !output.status.success() {
        bail!(
            "{words} {} failed ({}): {}",
            extra.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn whole_seconds(path: &Path) -> u64 {
        let modified = std::fs::metadata(path).unwrap().modified().unwrap();
        modified.duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[test]
    fn each_replacement_moves_the_mtime_on_by_a_whole_second() {
        let dir = std::env::temp_dir().join(format!("mta-sync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("passwd");
        assert!(replace_if_changed(&path, "a@x:{SHA512-CRYPT}$6$one\n", 0o640).unwrap());
        let mut seen = whole_seconds(&path);
        // Same length each time, well within one second: what Dovecot compares.
        for hash in ["two", "six", "ten"] {
            assert!(replace_if_changed(&path, &format!("a@x:{{SHA512-CRYPT}}$6${hash}\n"), 0o640).unwrap());
            let now = whole_seconds(&path);
            assert!(now > seen, "{now} after {seen}");
            seen = now;
        }
        assert!(!replace_if_changed(&path, "a@x:{SHA512-CRYPT}$6$ten\n", 0o640).unwrap());
        assert_eq!(whole_seconds(&path), seen, "an unchanged file is left alone");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
