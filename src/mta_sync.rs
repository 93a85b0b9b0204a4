//! `mailhost mta-sync`: the agent on the mail host. Each run reads the newest
//! mailbox export with the sync token, writes the Postfix maps and the
//! Dovecot passwd-file atomically (write beside, `postmap`, rename), reloads
//! Postfix only when a map changed, and only then acknowledges the version it
//! applied. A run that fails at any step acknowledges nothing and leaves the
//! last good files in place; the next run starts over.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::Value;

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

/// Runs until stopped (or once), one log line per run.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
    loop {
        match run_once(&client, &settings).await {
            Ok(a) => println!(
                "mta-sync: version {} applied and acknowledged (maps changed: {}; passwd-file changed: {}; reloaded: {})",
                a.version,
                if a.maps_changed.is_empty() {
                    "none".to_string()
                } else {
                    a.maps_changed.join(", ")
                },
                a.passwd_changed,
                a.reloaded
            ),
            Err(e) => {
                eprintln!("mta-sync: nothing acknowledged: {e:#}");
                if settings.once {
                    return Err(e);
                }
            }
        }
        if settings.once {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(settings.interval.max(1))).await;
    }
}

/// One run: fetch, apply, reload when needed, acknowledge.
pub async fn run_once(client: &reqwest::Client, settings: &Settings) -> anyhow::Result<Applied> {
    let base = settings.url.trim_end_matches('/');
    let fetched: Value = client
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
    let export = &fetched["export"];
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
    std::fs::rename(&staged, path).with_context(|| format!("installing {}", path.display()))?;
    Ok(true)
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
