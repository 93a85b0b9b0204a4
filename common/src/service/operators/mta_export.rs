//! The mail-server export `mtaMailboxExport` (spec 1.8, 2.7, 3.2). Every run
//! writes, under a new version: each live mailbox's delivery plan, the Postfix
//! `virtual_mailbox_domains`, `virtual_mailbox_maps` and `virtual_alias_maps`
//! tables, and Dovecot passwd-file lines (SHA512-CRYPT hashes only). The mail host
//! fetches it with the sync token and acknowledges the version it applied; the
//! acknowledgement marks applied exactly the mailbox changes that version carried.
//!
//! Blobs: `mta/export/<version>.json` each export, written once; the newest is
//! the highest version, so a slow run that took an older version and finishes
//! last never hides a newer export. `mta/pending/<version>.json` the (address,
//! change number) pairs an export carried that were not yet applied.
//! Items: `SEQ#export/S` the version counter.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::mailboxes::{self, Mailbox, Mode};
use crate::store::{Cond, Query, StoreError, StoreExt, Update};
use crate::validate::NoInput;
use crate::values::Bounded;

const EXPORTS: &str = "mta/export/";

/// Zero-padded, so the names sort by version.
fn export_blob(version: i64) -> String {
    format!("{EXPORTS}{version:012}.json")
}

fn pending_blob(version: i64) -> String {
    format!("mta/pending/{version:012}.json")
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Export {
    pub version: i64,
    pub generated_at: String,
    pub mail_host: String,
    /// Where reports about our own mail come back (the return paths' domain):
    /// accepted for every local part and handed to the spool, never a maildir.
    pub bounce_domain: String,
    pub domains: Vec<String>,
    /// Each live mailbox: address, mode, forwardTo, delivery plan, login.
    pub mailboxes: Vec<Exported>,
    pub postfix: Postfix,
    pub dovecot: Dovecot,
}

/// A mailbox as the export lists it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    pub address: String,
    pub mode: Mode,
    pub forward_to: Vec<String>,
    pub delivery: mailboxes::Delivery,
    /// Whether it has an IMAP/SMTP login (its hash is in the passwd file).
    pub login: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Postfix {
    pub virtual_mailbox_domains: String,
    pub virtual_mailbox_maps: String,
    pub virtual_alias_maps: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dovecot {
    pub passwd_file: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    version: i64,
    changes: Vec<(String, i64)>,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub version: i64,
    pub mailboxes: usize,
    pub pending: usize,
    /// The domains the export carries, as read for it (the daily MX look
    /// goes over these rather than reading them again).
    pub routed: Vec<crate::service::domains::Domain>,
}

/// Builds the Postfix and Dovecot tables from live mailboxes (pure, for tests).
/// DMARC reports to `dmarc@<service domain>` are aliased onto the bounce
/// domain, which the mail host hands to the spool alone (never a maildir),
/// whatever mailbox holds that address.
pub fn render(domains: &[String], service_domain: &str, bounce_domain: &str, live: &[Mailbox]) -> (Postfix, Dovecot) {
    let mut vdomains: Vec<String> = domains.iter().map(|d| format!("{d} OK")).collect();
    vdomains.push(format!("{bounce_domain} OK"));
    let mut vmailbox = vec![format!("@{bounce_domain} bounce/")];
    let mut valias = Vec::new();
    if domains.iter().any(|d| d == service_domain) {
        let local = crate::service::delivery::dmarc::LOCAL_PART;
        valias.push(format!("{local}@{service_domain} {local}@{bounce_domain}"));
    }
    let mut passwd = Vec::new();
    for m in live {
        if m.mode.stores() {
            vmailbox.push(format!("{} {}/{}/", m.address, m.domain_id, m.local_part));
        }
        match m.mode {
            Mode::Hosted => {}
            Mode::Forward => valias.push(format!("{} {}", m.address, m.forward_to.join(","))),
            Mode::Both => valias.push(format!("{} {},{}", m.address, m.address, m.forward_to.join(","))),
        }
        if let Some(hash) = m.login_hash() {
            passwd.push(format!("{}:{{SHA512-CRYPT}}{hash}::::::", m.address));
        }
    }
    let lines = |mut v: Vec<String>| {
        v.sort();
        v.into_iter().map(|l| l + "\n").collect::<String>()
    };
    vdomains.sort();
    (
        Postfix {
            virtual_mailbox_domains: lines(vdomains),
            virtual_mailbox_maps: lines(vmailbox),
            virtual_alias_maps: lines(valias),
        },
        Dovecot {
            passwd_file: lines(passwd),
        },
    )
}

/// Writes a new export version. The Lambda calls it once per scheduled event;
/// the local server on its interval.
pub async fn run_once(ctx: &Context) -> Result<Outcome, ApiError> {
    let counter = ctx
        .store
        .update(&keys::export_versions(), Update::new().add("value", 1), None)
        .await?;
    let version = counter.get("value").and_then(Value::as_i64).unwrap_or(0);
    let routed = routed_domains(ctx).await?;
    let domains: Vec<String> = routed.iter().map(|d| d.name.clone()).collect();
    let mut live = Vec::new();
    let mut changes = Vec::new();
    for domain in &domains {
        for mailbox in mailboxes::of_domain_all(ctx, domain).await? {
            if !mailbox.mta_applied {
                changes.push((mailbox.address.clone(), mailbox.change_seq));
            }
            if mailbox.is_active() {
                live.push(mailbox);
            }
        }
    }
    live.sort_by(|a, b| a.address.cmp(&b.address));
    let bounce_domain = crate::service::delivery::return_path::bounce_domain(ctx);
    let (postfix, dovecot) = render(&domains, ctx.config.service_domain.as_str(), &bounce_domain, &live);
    let export = Export {
        version,
        generated_at: iso(ctx.clock.now()),
        mail_host: ctx.config.mail_host.clone(),
        bounce_domain,
        domains,
        mailboxes: live.iter().map(listed).collect(),
        postfix,
        dovecot,
    };
    let pending = Pending { version, changes };
    write(ctx, &pending, &export).await?;
    forget_old(ctx, version).await?;
    let age = export_age(ctx, &counter).await?;
    crate::metrics::emit(ctx, &[crate::metrics::seconds(crate::metrics::EXPORT_AGE, age)]);
    tracing::info!(
        version,
        mailboxes = live.len(),
        pending = pending.changes.len(),
        "mailbox export written"
    );
    Ok(Outcome {
        version,
        mailboxes: live.len(),
        pending: pending.changes.len(),
        routed,
    })
}

/// When the mail host last acknowledged an export (on the version counter).
const ACKED_AT: &str = "ackedAt";
/// When the first export was written while none was acknowledged yet.
const EXPORTING_SINCE: &str = "exportingSince";

/// Seconds since the mail host last acknowledged an export, read from the
/// counter item this run's version came with (no read of its own); before
/// any acknowledgement, since the first run that found none, whose time is
/// then kept (one write, once).
async fn export_age(ctx: &Context, counter: &crate::store::Item) -> Result<i64, ApiError> {
    let now = ctx.clock.now();
    let since = [ACKED_AT, EXPORTING_SINCE]
        .iter()
        .find_map(|field| counter.get(*field).and_then(Value::as_str))
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok());
    match since {
        Some(at) => Ok((now - at.with_timezone(&chrono::Utc)).num_seconds().max(0)),
        None => {
            let update = Update::new().set(EXPORTING_SINCE, iso(now));
            ctx.store.update(&keys::export_versions(), update, None).await?;
            Ok(0)
        }
    }
}

/// Only domains whose owner has proved them (verified at least once): an
/// added but unproven name, say gmail.com, must never become local to the
/// mail host; nor one whose MX has gone elsewhere for days.
async fn routed_domains(ctx: &Context) -> Result<Vec<crate::service::domains::Domain>, ApiError> {
    let mut routed = Vec::new();
    for registered in ctx.store.all(Query::partition(keys::REGISTRY).limit(500)).await? {
        let (Some(name), Some(uid)) = (
            registered.get("sk").and_then(Value::as_str),
            registered.get("uid").and_then(Value::as_str),
        ) else {
            continue;
        };
        if let Some(domain) = crate::service::domains::get(ctx, uid, name)
            .await?
            .filter(|d| d.routed())
        {
            routed.push(domain);
        }
    }
    Ok(routed)
}

fn listed(m: &mailboxes::Mailbox) -> Exported {
    Exported {
        address: m.address.clone(),
        mode: m.mode,
        forward_to: m.forward_to.clone(),
        delivery: mailboxes::delivery(m),
        login: m.login_hash().is_some(),
    }
}

/// The pending record first: an export a mail host can see always has one.
async fn write(ctx: &Context, pending: &Pending, export: &Export) -> Result<(), ApiError> {
    let pending_bytes = serde_json::to_vec(pending).expect("pending serializes");
    let export_bytes = serde_json::to_vec(export).expect("export serializes");
    ctx.blobs
        .put(&pending_blob(pending.version), pending_bytes, "application/json")
        .await
        .map_err(ApiError::internal)?;
    ctx.blobs
        .put(&export_blob(export.version), export_bytes, "application/json")
        .await
        .map_err(ApiError::internal)?;
    Ok(())
}

/// Versions a mail host may still acknowledge; older pending records go.
const KEEP_VERSIONS: i64 = 100;
/// Exports kept below the one just written (a mail host reads only the newest).
const KEEP_EXPORTS: i64 = 10;

/// Deletes the pending records and exports that are far enough below
/// `version`: never the newest, even when this run's version is not.
async fn forget_old(ctx: &Context, version: i64) -> Result<(), ApiError> {
    let blob_err = |e: crate::blob::BlobError| ApiError::internal(e);
    for (prefix, oldest_kept) in [
        ("mta/pending/", pending_blob(version - KEEP_VERSIONS)),
        (EXPORTS, export_blob(version - KEEP_EXPORTS)),
    ] {
        for key in ctx.blobs.list(prefix).await.map_err(blob_err)? {
            // Zero-padded names sort by version.
            if key < oldest_kept {
                ctx.blobs.delete(&key).await.map_err(blob_err)?;
            }
        }
    }
    Ok(())
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LatestExport {
    pub ok: bool,
    pub export: Export,
}

/// The newest export, as the mail host reads it; 404 before the first.
pub async fn latest(call: &Call<'_>, _: NoInput) -> Result<LatestExport, ApiError> {
    let blobs = &call.ctx.blobs;
    let names = blobs.list(EXPORTS).await.map_err(ApiError::internal)?;
    let newest = names.into_iter().max().ok_or(error::NOT_FOUND)?;
    let bytes = blobs.get(&newest).await.map_err(ApiError::internal)?;
    let bytes = bytes.ok_or(error::NOT_FOUND)?;
    let export = serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
    Ok(LatestExport { ok: true, export })
}

crate::input! {
    /// POST /mtaMailboxExport: the version the mail host applied.
    pub struct AckInput {
        pub version: Bounded<1, { i64::MAX }> = (error::VERSION_INVALID, error::VERSION_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Acknowledged {
    pub ok: bool,
    pub version: i64,
    /// Mailbox changes this version made live.
    pub applied: usize,
    pub applied_at: String,
}

pub async fn acknowledge_export(call: &Call<'_>, input: AckInput) -> Result<Acknowledged, ApiError> {
    acknowledge(call.ctx, input.version.get()).await
}

/// The mail host applied `version`: its carried changes are live, unless a later
/// change has superseded one (then that mailbox waits for a later version).
pub async fn acknowledge(ctx: &Context, version: i64) -> Result<Acknowledged, ApiError> {
    let bytes = ctx
        .blobs
        .get(&pending_blob(version))
        .await
        .map_err(ApiError::internal)?;
    let pending: Pending = match bytes {
        Some(b) => serde_json::from_slice(&b).map_err(ApiError::internal)?,
        None => return Err(error::NOT_FOUND.into()),
    };
    let now = iso(ctx.clock.now());
    let mut applied = 0;
    for (address, seq) in &pending.changes {
        let Some((local, domain)) = address.rsplit_once('@') else {
            continue;
        };
        let update = Update::new().set("mtaApplied", true).set("mtaAppliedAt", now.clone());
        match ctx
            .store
            .update(&keys::mailbox(domain, local), update, Some(Cond::eq("changeSeq", *seq)))
            .await
        {
            Ok(_) => applied += 1,
            Err(StoreError::ConditionFailed) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // The export's age counts from here (`export_age`).
    let heard = Update::new().set(ACKED_AT, now.clone());
    ctx.store.update(&keys::export_versions(), heard, None).await?;
    crate::metrics::emit(ctx, &[crate::metrics::count(crate::metrics::EXPORT_ACKNOWLEDGED, 1)]);
    Ok(Acknowledged {
        ok: true,
        version,
        applied,
        applied_at: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::mailboxes::MailboxStatus;

    fn mailbox(local: &str, mode: Mode, forward: &[&str], hash: Option<&str>) -> Mailbox {
        Mailbox {
            domain_id: "example.com".into(),
            local_part: local.into(),
            address: format!("{local}@example.com"),
            uid: "u".into(),
            mode,
            forward_to: forward.iter().map(|s| s.to_string()).collect(),
            status: MailboxStatus::Active,
            protected: false,
            accept_spoofed: false,
            spam_filter: true,
            spam_threshold: None,
            change_seq: 1,
            mta_applied: false,
            mta_applied_at: None,
            password_hash: hash.map(String::from),
            credential_key: None,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn maps_follow_each_mode() {
        let live = vec![
            mailbox("a", Mode::Hosted, &[], Some("$6$x$y")),
            mailbox("b", Mode::Forward, &["x@other.org", "y@other.org"], Some("$6$old")),
            mailbox("c", Mode::Both, &["x@other.org"], None),
        ];
        let (postfix, dovecot) = render(&["example.com".into()], "svc.example", "bounce.svc.example", &live);
        assert_eq!(
            postfix.virtual_mailbox_domains,
            "bounce.svc.example OK\nexample.com OK\n"
        );
        assert_eq!(
            postfix.virtual_mailbox_maps,
            "@bounce.svc.example bounce/\na@example.com example.com/a/\nc@example.com example.com/c/\n"
        );
        assert_eq!(
            postfix.virtual_alias_maps,
            "b@example.com x@other.org,y@other.org\nc@example.com c@example.com,x@other.org\n"
        );
        assert_eq!(
            dovecot.passwd_file, "a@example.com:{SHA512-CRYPT}$6$x$y::::::\n",
            "a forward mailbox has no login"
        );
    }

    #[test]
    fn dmarc_reports_to_the_service_domain_go_to_the_bounce_domain() {
        let live = vec![mailbox("dmarc", Mode::Hosted, &[], None)];
        let (postfix, _) = render(&["example.com".into()], "example.com", "bounce.example.com", &live);
        assert_eq!(
            postfix.virtual_alias_maps, "dmarc@example.com dmarc@bounce.example.com\n",
            "even over a mailbox of that name"
        );
    }
}
