//! The inbound poller: files the raw messages the mail host (or `mailhost
//! deliver`) drops under `inbound/pending/` into the inbox.
//!
//! Each file is parsed, its recipient taken from its envelope (the one copy
//! the mail host delivered), a copy filed into that mailbox when it stores
//! mail (idempotent on mailbox and Message-ID),
//! and only then is the raw file set aside: filed, it is deleted where the
//! bucket keeps what a delete hides (a versioned S3 bucket, as deployed:
//! the row names that version, kept 30 days), and moved to `inbound/done/`
//! elsewhere; refused, it is moved to `inbound/failed/` with a `.reason`
//! text beside it.

use futures::StreamExt;

use crate::blob::BlobError;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::mail::authenticate::{self, Authentication};
use crate::mail::inbound::{self, DONE, FAILED, Inbound, Limits, PENDING};
use crate::metrics;

use crate::service::delivery::dmarc::{self, Intake};
use crate::service::delivery::reports::{self, Consumed};
use crate::service::mail_store::{self, Direction, NewMessage, Quarantine, Row};
use crate::service::{guardrails::lists, mailboxes, receiving::spam, webhooks};

/// What one run did: copies filed, copies already there, files refused, and
/// files left pending because storage failed (tried again next run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub filed: usize,
    pub duplicates: usize,
    pub failed: usize,
    pub pending: usize,
}

/// What a run did with its files, for the metrics: files found, files done
/// (filed and set aside) with the milliseconds each waited since its
/// drop, and files refused.
#[derive(Debug, Default)]
struct Spool {
    found: usize,
    done: Vec<i64>,
    refused: usize,
}

impl Spool {
    fn emit(&self, ctx: &Context) {
        metrics::emit(
            ctx,
            &[
                metrics::count(metrics::INBOUND_PENDING, self.found),
                metrics::count(metrics::INBOUND_FILED, self.done.len()),
                metrics::count(metrics::INBOUND_FAILED, self.refused),
                metrics::millis(metrics::DROP_TO_FILED, self.done.iter().copied().filter(|ms| *ms >= 0)),
            ],
        );
    }
}

/// Milliseconds since a spool file was dropped, from the time its name starts
/// with (`inbound::drop_raw`); -1 for a name that carries none.
fn waited_ms(name: &str) -> i64 {
    let dropped = name.get(..13).and_then(|ms| ms.parse::<i64>().ok());
    dropped.map_or(-1, |ms| (chrono::Utc::now().timestamp_millis() - ms).max(0))
}

/// How many spool files one run files at once. Each file waits on a chain of
/// storage requests (a DynamoDB or S3 round trip each, in AWS and in the soak),
/// so one at a time left the store idle most of the time: the soak's poller
/// filed 1.7 messages a second against 10.7 dropped. On the embedded store the
/// files' transactions share commits (group commit).
pub const CONCURRENT_FILES: usize = 16;

/// One pass over `inbound/pending/`, [`CONCURRENT_FILES`] files at a time
/// (one run at a time per process). A file that lost every race for its
/// thread (many of one thread's messages at once) is filed again alone after
/// the others. A file whose filing fails for a reason other than its content
/// (the store is down) stays pending for the next run, and the run goes on
/// with the others.
pub async fn run_once(ctx: &Context) -> Result<Outcome, ApiError> {
    run(ctx, true).await
}

/// A run for the local server's quick tick (every 100 ms): as `run_once`,
/// but the search indexes flagged due wait for the scheduled run, so an idle
/// server asks the store nothing ten times a second.
/// Its announcements go on in a task of their own: a slow webhook receiver
/// holds up no later run's filing.
pub async fn run_quick(ctx: &std::sync::Arc<Context>) -> Result<Outcome, ApiError> {
    let pending = ctx.blobs.list(PENDING).await.map_err(blob_err)?;
    let (outcome, filed) = file_all(ctx, pending, false).await?;
    let ctx = ctx.clone();
    tokio::spawn(async move { announce_all(&ctx, &filed, false).await });
    Ok(outcome)
}

/// A run for one dropped file, named by S3's object-created event (in AWS,
/// through EventBridge): that file alone, with no listing of the spool (a
/// LIST costs what a PUT does). A file whose event was lost is filed by the
/// next scheduled run, which lists the spool. Any other event, or a key
/// outside `inbound/pending/`, runs [`run_once`].
pub async fn run_for_event(ctx: &Context, event: &serde_json::Value) -> Result<Outcome, ApiError> {
    match dropped_key(event) {
        Some(key) => files(ctx, vec![key.to_string()], true).await,
        None => run_once(ctx).await,
    }
}

/// The spool file an EventBridge "Object Created" event names.
fn dropped_key(event: &serde_json::Value) -> Option<&str> {
    let created = event["source"] == "aws.s3" && event["detail-type"] == "Object Created";
    let key = event["detail"]["object"]["key"].as_str()?;
    (created && key.starts_with(PENDING) && key.len() > PENDING.len()).then_some(key)
}

async fn run(ctx: &Context, due_indexes: bool) -> Result<Outcome, ApiError> {
    let pending = ctx.blobs.list(PENDING).await.map_err(blob_err)?;
    files(ctx, pending, due_indexes).await
}

async fn files(ctx: &Context, pending: Vec<String>, due_indexes: bool) -> Result<Outcome, ApiError> {
    let (outcome, filed) = file_all(ctx, pending, due_indexes).await?;
    announce_all(ctx, &filed, due_indexes).await;
    Ok(outcome)
}

/// Announces what a run filed (inbound.received, message.spam), then
/// delivers the events queued since the last run (a scheduled run always,
/// a quick one when this process queued some): after filing, so a receiver
/// that is down or slow delays no message's filing.
async fn announce_all(ctx: &Context, filed: &[(String, Row)], scheduled: bool) {
    webhooks::announce(ctx, filed).await;
    if scheduled || ctx.webhooks_queued.swap(false, std::sync::atomic::Ordering::AcqRel) {
        webhooks::deliver_pending(ctx).await;
    }
}

/// Files the spool files one run at a time: the outcome and the new copies
/// with their scopes, to announce.
async fn file_all(
    ctx: &Context,
    pending: Vec<String>,
    due_indexes: bool,
) -> Result<(Outcome, Vec<(String, Row)>), ApiError> {
    let _one_run = ctx.poller_runs.lock().await;
    let mut tally = Tally::default();
    tally.spool.found = pending.len();
    let mut runs = futures::stream::iter(pending)
        .map(|key| async move {
            let result = one(ctx, &key).await;
            (key, result)
        })
        .buffer_unordered(CONCURRENT_FILES);
    let mut busy = Vec::new();
    while let Some((key, result)) = runs.next().await {
        match result {
            Err(e) if e.is(error::REQUEST_BUSY) => busy.push(key),
            result => tally.add(&key, result),
        }
    }
    drop(runs);
    for key in busy {
        let result = one(ctx, &key).await;
        tally.add(&key, result);
    }
    let Tally { outcome, spool, filed } = tally;
    // Counted once the files are set aside, before the webhooks, which may take
    // seconds: every run records what it found, even nothing.
    spool.emit(ctx);
    // The search index of each scope filed into, written into a segment
    // when enough waits (and any index flagged due): a failure here files
    // nothing less, and the next run tries again.
    let scopes: Vec<String> = filed.iter().map(|(scope, _)| scope.clone()).collect();
    let now = ctx.clock.now().timestamp_millis();
    match crate::search::maintain(&*ctx.store, &*ctx.blobs, now, &scopes, due_indexes).await {
        // Mail filed before the index existed, indexed a page at a time.
        Ok(backfills) => {
            for scope in backfills {
                if let Err(e) = mail_store::backfill(ctx, &scope).await {
                    tracing::error!(error = %e, "older mail could not be indexed for search");
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "the search index could not be compacted"),
    }
    Ok((outcome, filed))
}

/// What a run did so far.
#[derive(Default)]
struct Tally {
    outcome: Outcome,
    spool: Spool,
    filed: Vec<(String, Row)>,
}

impl Tally {
    fn add(&mut self, key: &str, result: Result<Option<File>, ApiError>) {
        match result {
            Ok(None) => {}
            Ok(Some(File::Filed(new, duplicates))) => {
                self.spool.done.push(waited_ms(&key[PENDING.len()..]));
                self.outcome.filed += new.len();
                self.outcome.duplicates += duplicates;
                self.filed.extend(new);
            }
            Ok(Some(File::Failed)) => {
                self.spool.refused += 1;
                self.outcome.failed += 1;
            }
            Err(e) => {
                tracing::error!(error = %e, file = %key, "filing an inbound message failed; it stays pending");
                self.outcome.pending += 1;
            }
        }
    }
}

/// What became of one spool file.
enum File {
    /// Filed: the new copies with their scopes, and the copies already there.
    Filed(Vec<(String, Row)>, usize),
    /// Refused, with its reason beside it in `inbound/failed/`.
    Failed,
}

fn blob_err(e: BlobError) -> ApiError {
    ApiError::internal(e.to_string())
}

/// Files one spool file and sets it aside; `None` when it is gone already.
async fn one(ctx: &Context, key: &str) -> Result<Option<File>, ApiError> {
    let Some(read) = ctx.blobs.get_versioned(key).await.map_err(blob_err)? else {
        return Ok(None);
    };
    let (raw, version) = (read.bytes, read.version);
    let name = &key[PENDING.len()..];
    // Where the received file stays once filed, which the row names: the
    // version a delete keeps, so filing copies nothing, or `inbound/done/`.
    let filed_as = match &version {
        Some(version) => crate::blob::at_version(key, version),
        None => format!("{DONE}{name}"),
    };
    let result = match inbound::parse(&raw, &Limits::default()) {
        Err(refused) => Err(refused.0),
        // DMARC reports first: no mailbox, whoever holds the address, sees them.
        Ok(message) if to_dmarc(ctx, &message) => dmarc_report(ctx, &message, &raw).await?,
        Ok(message) => match report_to(ctx, &message) {
            Some(return_path) => report(ctx, &message, &return_path, &raw, &filed_as).await?,
            None => file(ctx, &message, &raw, &filed_as).await?,
        },
    };
    match result {
        Ok((new, duplicates)) => {
            let set_aside = match version {
                Some(_) => ctx.blobs.delete(key).await,
                None => ctx.blobs.move_to(key, &filed_as, raw, "message/rfc822").await,
            };
            set_aside.map_err(blob_err)?;
            Ok(Some(File::Filed(new, duplicates)))
        }
        Err(reason) => {
            ctx.blobs
                .put(
                    &format!("{FAILED}{name}.reason"),
                    format!("{reason}\n").into_bytes(),
                    "text/plain; charset=utf-8",
                )
                .await
                .map_err(blob_err)?;
            ctx.blobs
                .move_to(key, &format!("{FAILED}{name}"), raw, "message/rfc822")
                .await
                .map_err(blob_err)?;
            Ok(Some(File::Failed))
        }
    }
}

/// The return path a copy was delivered to, when it is a report about our
/// own mail (its envelope recipient is on the bounce domain).
fn report_to(ctx: &Context, message: &Inbound) -> Option<String> {
    let recipient = message.envelope.as_ref()?.recipient.as_ref()?;
    reports::addressed_to_us(ctx, recipient).then(|| recipient.clone())
}

/// Whether this copy was delivered to the DMARC report address.
fn to_dmarc(ctx: &Context, message: &Inbound) -> bool {
    let recipient = message.envelope.as_ref().and_then(|e| e.recipient.as_ref());
    recipient.is_some_and(|r| dmarc::addressed_to_us(ctx, r))
}

/// Keeps a DMARC aggregate report (never filed as mail) with its mail's
/// verdicts, judged as any received mail is; one that cannot be read, or
/// costs too much to, is kept as failed with the reason.
async fn dmarc_report(ctx: &Context, message: &Inbound, raw: &[u8]) -> Result<Result<Filed, String>, ApiError> {
    let (_, body) = inbound::Envelope::split(raw);
    let mail = dmarc::ReportMail {
        from: message.from.clone(),
        authentication: authentication(ctx, message, raw).await,
    };
    Ok(match dmarc::consume(ctx, body, mail).await? {
        Intake::Refused(reason) => Err(reason),
        done => {
            tracing::info!(outcome = ?done, "a DMARC report was read");
            Ok((Vec::new(), 0))
        }
    })
}

/// Applies a report (never filed as mail); an auto-reply that came back to
/// the return path is filed for the sender instead.
async fn report(
    ctx: &Context,
    message: &Inbound,
    return_path: &str,
    raw: &[u8],
    raw_key: &str,
) -> Result<Result<Filed, String>, ApiError> {
    let (_, body) = inbound::Envelope::split(raw);
    match reports::consume(ctx, return_path, body).await? {
        Consumed::Applied(_) => Ok(Ok((Vec::new(), 0))),
        Consumed::Refused(reason) => Ok(Err(reason)),
        Consumed::AutoReply { deliver_to } => file_for(ctx, message, raw, raw_key, vec![deliver_to]).await,
    }
}

/// Files one message into every recipient mailbox here that stores mail:
/// `Ok(Ok((new copies with their scopes, duplicates)))`, or `Ok(Err(reason))`
/// when nothing here receives it.
type Filed = (Vec<(String, Row)>, usize);

/// `raw_key` is where the raw file will be once filed (its version, or
/// `inbound/done/`): what a spam report teaches rspamd.
async fn file(ctx: &Context, message: &Inbound, raw: &[u8], raw_key: &str) -> Result<Result<Filed, String>, ApiError> {
    // The envelope's one recipient; only a bare message dropped by hand (no
    // envelope, no trace lines) is filed by its To and Cc.
    let candidates: Vec<String> = match &message.envelope {
        Some(envelope) => match &envelope.recipient {
            Some(recipient) => vec![recipient.clone()],
            None => return Ok(Err("the envelope names no recipient".into())),
        },
        None => message.to.iter().chain(&message.cc).cloned().collect(),
    };
    file_for(ctx, message, raw, raw_key, candidates).await
}

/// Files one message for these addresses (those that are mailboxes here),
/// with its verdicts (checked once, before its first copy is filed); spoofed
/// mail is filed into the quarantine.
async fn file_for(
    ctx: &Context,
    message: &Inbound,
    raw: &[u8],
    raw_key: &str,
    candidates: Vec<String>,
) -> Result<Result<Filed, String>, ApiError> {
    let mut auth: Option<Authentication> = None;
    // rspamd's verdict, from the envelope line the mail host wrote.
    let verdict = crate::mail::spam::verdict_in(raw);
    let mut seen = std::collections::HashSet::new();
    let mut here = 0;
    let (mut new, mut duplicates) = (Vec::new(), 0);
    for address in candidates {
        let address = address.to_ascii_lowercase();
        if !seen.insert(address.clone()) {
            continue;
        }
        let Some(mailbox) = mailboxes::by_address(ctx, &address).await? else {
            continue;
        };
        if !mailbox.is_active() {
            continue;
        }
        here += 1;
        // A forward-only mailbox stores nothing.
        if !mailbox.mode.stores() {
            continue;
        }
        let scope = mailbox.reading_scope(&ctx.config.service_domain);
        if auth.is_none() {
            auth = Some(authentication(ctx, message, raw).await);
        }
        // Spoofed mail stays out whatever the lists say, unless the owner
        // opted this mailbox in (it is then filed marked); then the
        // mailbox's receive lists judge its sender, and then rspamd's
        // verdict on the content, by the mailbox's settings.
        let spoofed = auth.as_ref().is_some_and(|a| a.spoofed);
        let verdict = verdict.as_ref();
        let quarantine = match spoofed && !mailbox.accept_spoofed {
            true => Some(Quarantine::Spoofed),
            false => {
                let lists = listed(ctx, &mailbox, message).await?;
                lists.quarantine.or_else(|| {
                    spam::verdict_at_filing(&mailbox, verdict, auth.as_ref(), lists.allowed).then_some(Quarantine::Spam)
                })
            }
        };
        let filing = NewMessage {
            authentication: auth.as_ref(),
            spam: verdict,
            raw: Some(raw_key),
            quarantine,
            ..as_new(message, &scope, &mailbox.address)
        };
        match mail_store::file(ctx, &filing).await? {
            Some(row) => new.push((scope, row)),
            None => duplicates += 1,
        }
    }
    if here == 0 {
        return Ok(Err("no recipient is a mailbox of this service".into()));
    }
    Ok(Ok((new, duplicates)))
}

/// What the mailbox's receive lists say of a message: judged by each address
/// its From headers name, the first that keeps it out wins (a message naming
/// a blocked sender beside an allowed one stays out); it is allowed (over a
/// spam verdict) only when an allow entry names every one of them.
async fn listed(
    ctx: &Context,
    mailbox: &mailboxes::Mailbox,
    message: &Inbound,
) -> Result<lists::ReceiveVerdict, ApiError> {
    let mut authors = message.judged_authors();
    if authors.is_empty() {
        authors.push(message.from.clone());
    }
    let mut allowed = true;
    for author in authors {
        let judged = lists::receive_judgement(ctx, &mailbox.uid, &mailbox.address, &author).await?;
        if judged.quarantine.is_some() {
            return Ok(judged);
        }
        allowed &= judged.allowed;
    }
    Ok(lists::ReceiveVerdict {
        quarantine: None,
        allowed,
    })
}

/// The verdicts on a received message: checked here, through the service's
/// resolver, on the bytes after the mail host's envelope and trace lines.
/// A resolver that cannot be built makes every check `temperror`.
async fn authentication(ctx: &Context, message: &Inbound, raw: &[u8]) -> Authentication {
    let envelope = message.envelope.as_ref();
    let resolver = match ctx.dns.authenticator() {
        Ok(resolver) => resolver,
        Err(e) => {
            tracing::warn!(error = %e, "no resolver for the received mail's checks");
            return Authentication::unfinished(envelope);
        }
    };
    let (_, body) = inbound::Envelope::split(raw);
    authenticate::authenticate(
        resolver,
        body,
        envelope,
        &message.judged_authors(),
        &ctx.config.mail_host,
        &ctx.config.trusted_arc_sealers,
    )
    .await
}

/// What is filed of a parsed message in one mailbox (its verdicts and
/// quarantine are the poller's to add).
pub fn as_new<'a>(message: &'a Inbound, scope: &'a str, mailbox: &'a str) -> NewMessage<'a> {
    NewMessage {
        scope,
        mailbox,
        direction: Direction::Inbound,
        message_id: &message.message_id,
        from: &message.from,
        to: &message.to,
        named: mail_store::Named {
            from_name: message.from_name.as_deref(),
            cc: &message.cc,
            bcc: &[],
            reply_to: &message.reply_to,
            names: message.names.clone(),
        },
        subject: &message.subject,
        date: message.date.clone(),
        in_reply_to: &message.in_reply_to,
        references: &message.references,
        text: &message.text,
        html: message.html.as_deref(),
        delivery: None,
        attachments: message
            .attachments
            .iter()
            .map(|a| (a.filename.as_str(), a.content_type.as_str(), a.bytes.as_slice()))
            .collect(),
        content_ids: message.attachments.iter().map(|a| a.content_id.as_deref()).collect(),
        source: "smtp",
        only_on_existing_thread: false,
        digest: Some(&message.digest),
        authentication: None,
        spam: None,
        raw: None,
        quarantine: None,
        also: Vec::new(),
    }
}
