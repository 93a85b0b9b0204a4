//! Reports arriving at `dmarc@<service domain>` (the address the DNS
//! instructions name in `rua=`): read with mail-auth's parser (raw XML, gzip
//! or zip), bounded in what they may cost, attributed to the customer domain
//! they are about, and kept 180 days. They are never inbox mail.

use mail_auth::report::{Error as ReportError, Report};
use mail_parser::{MessageParser, PartType};
use serde_json::json;

use super::stored::{MAX_SOURCES, ReportMail, StoredReport, policy_domain};
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::service::domains::{self, Domain};
use crate::store::{Cond, StoreError, TTL, Update, item};

/// The local part of the address reports are sent to.
pub const LOCAL_PART: &str = "dmarc";
/// How long a report is kept.
pub const KEPT_DAYS: i64 = 180;
/// The largest report message read at all (its compressed size, as mailed).
pub const MAX_MESSAGE: usize = 10 * 1024 * 1024;
/// The most one report may unpack to: a gzip or zip that inflates past it
/// is refused before it is read further.
pub const MAX_UNPACKED: usize = 20 * 1024 * 1024;
/// The most attachments and zip entries one report may carry: mail-auth
/// tries each in turn until one reads, each up to [`MAX_UNPACKED`], so these
/// bound the whole work to a few times that.
pub const MAX_ATTACHED: usize = 4;
/// A stored report stays well inside a stored item's 400 KB.
const MAX_ITEM_JSON: usize = 300 * 1024;

/// What became of one report.
#[derive(Debug, PartialEq, Eq)]
pub enum Intake {
    /// Kept for this customer domain.
    Stored { domain: String },
    /// Already kept (the same reporter's same report id and period).
    Duplicate { domain: String },
    /// About a domain not on this service: counted, not kept.
    Dropped { policy_domain: String },
    /// Unreadable or too costly to read: nothing kept, for this reason.
    Refused(String),
}

/// Whether mail to this envelope recipient is a DMARC aggregate report: to
/// `dmarc@<service domain>`, or to `dmarc@<bounce domain>`, where the mail
/// host's alias sends it (no return path has that local part).
pub fn addressed_to_us(ctx: &Context, recipient: &str) -> bool {
    let service = ctx.config.service_domain.as_str();
    recipient.rsplit_once('@').is_some_and(|(local, domain)| {
        local.eq_ignore_ascii_case(LOCAL_PART)
            && (domain.eq_ignore_ascii_case(service)
                || domain.eq_ignore_ascii_case(&crate::service::delivery::return_path::bounce_domain(ctx)))
    })
}

/// Reads one report message (without the mail host's envelope line) and
/// keeps it for the domain it is about, with `mail`, its own verdicts.
pub async fn consume(ctx: &Context, raw: &[u8], mail: ReportMail) -> Result<Intake, ApiError> {
    let report = match read(raw) {
        Ok(report) => report,
        Err(reason) => return Ok(Intake::Refused(reason)),
    };
    let about = policy_domain(&report);
    let Some(domain) = customer_domain(ctx, &about).await? else {
        count_dropped(ctx, &about).await?;
        return Ok(Intake::Dropped { policy_domain: about });
    };
    let mut stored = StoredReport::from_report(&report, &domain.name, iso(ctx.clock.now()), mail);
    fit(&mut stored);
    let key = keys::dmarc_report(&domain.uid, &domain.name, &stored.id);
    let mut row = item(&key, &stored);
    row.insert(TTL.into(), json!(ctx.clock.epoch() + KEPT_DAYS * 86_400));
    match ctx.store.put(row, Some(Cond::NotExists)).await {
        Ok(()) => Ok(Intake::Stored { domain: domain.name }),
        Err(StoreError::ConditionFailed) => Ok(Intake::Duplicate { domain: domain.name }),
        Err(e) => Err(e.into()),
    }
}

/// The report in a message, or why it is refused.
fn read(raw: &[u8]) -> Result<Report, String> {
    if raw.len() > MAX_MESSAGE {
        return Err(format!(
            "the report message is {} bytes; reports over {} MB are refused",
            raw.len(),
            MAX_MESSAGE / (1024 * 1024)
        ));
    }
    if let Some(reason) = too_many_files(raw) {
        return Err(reason);
    }
    Report::parse_rfc5322(raw, MAX_UNPACKED).map_err(|e| match e {
        ReportError::ReportTooLarge => format!(
            "the report unpacks to more than {} MB (a zip or gzip bomb?); nothing was kept",
            MAX_UNPACKED / (1024 * 1024)
        ),
        ReportError::UncompressError(e) => format!("the report's attachment could not be unpacked: {e}"),
        ReportError::ReportParseError(e) => format!("the report is not DMARC aggregate XML: {e}"),
        ReportError::NoReportsFound => "the message holds no DMARC aggregate report".into(),
        ReportError::MailParseError => "the report message could not be parsed".into(),
    })
}

/// Why a report holds too many files to try, read from its structure alone
/// (a zip's directory, never its contents).
fn too_many_files(raw: &[u8]) -> Option<String> {
    let message = MessageParser::new().parse(raw)?;
    let mut attached = 0;
    for part in &message.parts {
        let (PartType::Binary(bytes) | PartType::InlineBinary(bytes)) = &part.body else {
            continue;
        };
        attached += 1;
        let entries = zip::ZipArchive::new(std::io::Cursor::new(bytes.as_ref())).map_or(0, |z| z.len());
        if entries > MAX_ATTACHED {
            return Some(format!(
                "the report's zip holds {entries} files; at most {MAX_ATTACHED} are read (a zip bomb?); nothing was kept"
            ));
        }
    }
    (attached > MAX_ATTACHED).then(|| {
        format!("the report carries {attached} attachments; at most {MAX_ATTACHED} are read; nothing was kept")
    })
}

/// The live customer domain a report is about: the name itself or the
/// nearest parent on the service (a subdomain's report is its domain's),
/// proved by its owner at least once.
async fn customer_domain(ctx: &Context, name: &str) -> Result<Option<Domain>, ApiError> {
    let mut candidate = name;
    loop {
        if !candidate.is_empty()
            && let Some(uid) = domains::claimant(ctx, candidate).await?
            && let Some(domain) = domains::get(ctx, &uid, candidate).await?
            && domain.verified_at.is_some()
        {
            return Ok(Some(domain));
        }
        match candidate.split_once('.') {
            Some((_, parent)) if parent.contains('.') => candidate = parent,
            _ => return Ok(None),
        }
    }
}

/// Reports about a domain not on the service are counted (one item the
/// operators read) and logged, then dropped.
async fn count_dropped(ctx: &Context, about: &str) -> Result<(), ApiError> {
    let shown: String = about.chars().take(253).collect();
    tracing::warn!(domain = %shown, "a DMARC report about a domain not on this service was dropped");
    let update = Update::new()
        .add("count", 1)
        .set("lastDomain", shown)
        .set("lastAt", iso(ctx.clock.now()));
    ctx.store.update(&keys::dmarc_dropped(), update, None).await?;
    Ok(())
}

/// Leaves out the quietest sources until the report fits a stored item.
fn fit(stored: &mut StoredReport) {
    let size = |s: &StoredReport| serde_json::to_vec(s).map_or(usize::MAX, |v| v.len());
    while stored.sources.len() > 1 && size(stored) > MAX_ITEM_JSON {
        let keep = stored.sources.len() / 2;
        stored.sources_omitted += stored.sources.len() - keep;
        stored.sources.truncate(keep);
    }
    debug_assert!(stored.sources.len() <= MAX_SOURCES);
}
