//! Every item key the services write, in one place; `docs/data-model.md`
//! describes the same layout. A partition key is `KIND#<id>`; the sort key
//! names the item within it.

use crate::store::Key;

// ---------------------------------------------------------------- accounts

/// `ACCT#<uid>/A`: the account.
pub fn account(uid: &str) -> Key {
    Key::new(account_partition(uid), "A")
}

/// `ACCT#<uid>`: the account, its domains (`DOMAIN#<name>`) and its domain slot.
pub fn account_partition(uid: &str) -> String {
    format!("ACCT#{uid}")
}

/// `EMAIL#<email>/A`: the one account of an email.
pub fn email(email: &str) -> Key {
    Key::new(format!("EMAIL#{email}"), "A")
}

/// `KEY#<digest>/K`: a standard key's owner, found by the key's keyed hash.
pub fn api_key(digest: &str) -> Key {
    Key::new(format!("KEY#{digest}"), "K")
}

/// `ACCT#<uid>/APIKEY#<keyId>`: a scoped key as GET /keys lists it (its
/// digest, so DELETE /keys can remove the `KEY#` item too).
pub fn scoped_key(uid: &str, key_id: &str) -> Key {
    Key::new(account_partition(uid), format!("{SCOPED_KEY_PREFIX}{key_id}"))
}

pub const SCOPED_KEY_PREFIX: &str = "APIKEY#";

// ---------------------------------------------------------- access requests

/// `REQ#<id>/R`: an access request.
pub fn request(id: &str) -> Key {
    Key::new(format!("REQ#{id}"), "R")
}

/// `REQBY#email#<email>`: an email's access requests, `<createdAt>#<id>`.
pub fn requests_by_email(email: &str) -> String {
    format!("REQBY#email#{email}")
}

/// `REQBY#domain#<domain>`: an organization domain's access requests.
pub fn requests_by_domain(domain: &str) -> String {
    format!("REQBY#domain#{domain}")
}

/// `ALLOW#domains/<domain>`: one allowlisted domain.
pub fn allowlisted(domain: &str) -> Key {
    Key::new(ALLOWLIST, domain)
}

pub const ALLOWLIST: &str = "ALLOW#domains";

/// `SIGNIN#<email>/C`: the local server's live sign-in code of an operator.
pub fn sign_in_code(email: &str) -> Key {
    Key::new(format!("SIGNIN#{email}"), "C")
}

// ----------------------------------------------------------------- domains

/// `ACCT#<uid>/DOMAIN#<name>`: a domain record.
pub fn domain(uid: &str, name: &str) -> Key {
    Key::new(account_partition(uid), format!("{DOMAIN_PREFIX}{name}"))
}

pub const DOMAIN_PREFIX: &str = "DOMAIN#";

/// `ACCT#<uid>/SLOT#domain` {name}: the account's one domain.
pub fn domain_slot(uid: &str) -> Key {
    Key::new(account_partition(uid), "SLOT#domain")
}

/// `CLAIM#<name>/C` {uid}: the account holding a hostname.
pub fn claim(name: &str) -> Key {
    Key::new(format!("CLAIM#{name}"), "C")
}

/// `DOMAINS/<name>` {uid}: every live domain (the export walks it).
pub fn registered(name: &str) -> Key {
    Key::new(REGISTRY, name)
}

pub const REGISTRY: &str = "DOMAINS";

// --------------------------------------------------------------- mailboxes

/// `MBOX#<domain>/<localPart>`: a mailbox (a removed one stays as a tombstone).
pub fn mailbox(domain: &str, local: &str) -> Key {
    Key::new(mailboxes_of(domain), local)
}

pub fn mailboxes_of(domain: &str) -> String {
    format!("MBOX#{domain}")
}

/// `SEQ#mailbox/S`: the counter numbering each mailbox change for the export.
pub fn mailbox_changes() -> Key {
    Key::new("SEQ#mailbox", "S")
}

/// `ROUTING#forwards/S`: the version every forwarding change commits against.
pub fn forwarding() -> Key {
    Key::new("ROUTING#forwards", "S")
}

/// `SEQ#export/S`: the export version counter.
pub fn export_versions() -> Key {
    Key::new("SEQ#export", "S")
}

// ----------------------------------------------------------------- credits

/// `CREDITS#<bucket>/C` {remaining, initial}.
pub fn credits(bucket: &str) -> Key {
    Key::new(format!("CREDITS#{bucket}"), "C")
}

/// `AGENT#default/A` {disabled, frozenUntil}.
pub fn agent_switch() -> Key {
    Key::new("AGENT#default", "A")
}

/// `SETTING#sending/S` {enabled}.
pub fn sending_switch() -> Key {
    Key::new("SETTING#sending", "S")
}

/// `IDEM#<caller bucket>/<sha256(key)>`: a send's idempotency record.
pub fn idempotency(bucket: &str, key_digest: &str) -> Key {
    Key::new(format!("IDEM#{bucket}"), key_digest)
}

// ------------------------------------------------------------------- audit

/// `PEND#<id>/P`: a send waiting for approval or its time.
pub fn pending(id: &str) -> Key {
    Key::new(format!("PEND#{id}"), "P")
}

/// `PENDMID#<owner>/<Message-ID>` {id}: a waiting send by its Message-ID.
pub fn pending_message_id(owner: &str, message_id: &str) -> Key {
    Key::new(format!("PENDMID#{owner}"), message_id)
}

/// `HOLDS#<uid>`: an account's holds, `<ms>-<id>` each.
pub fn holds(uid: &str) -> String {
    format!("HOLDS#{uid}")
}

/// `DUE/<dueAt>#<id>`: the scheduled sends, in the order they are due.
pub const DUE: &str = "DUE";

/// `WAITING#<uid>`: an account's sends still waiting (held or scheduled),
/// `<ms>-<id>` each: what its owner lists, and what revoking a key cancels.
pub fn waiting_sends(uid: &str) -> String {
    format!("WAITING#{uid}")
}

/// `CONTACT#<owner>/<address>`: someone the sender has mailed.
pub fn contact(owner: &str, address: &str) -> Key {
    Key::new(format!("CONTACT#{owner}"), address.to_ascii_lowercase())
}

/// `AUDIT#<owner>`: an account's audit log, `<ms>-<hex>` per change.
pub fn audit_log(owner: &str) -> String {
    format!("AUDIT#{owner}")
}

/// `AUDIT#<owner>/<ms>-<hex>`: one change in an account's audit log.
pub fn audit_change(owner: &str, sk: &str) -> Key {
    Key::new(audit_log(owner), sk)
}

/// `AUDITRUN#<owner>/<minute>#<digest>` {row}: the audit row that counts one
/// actor's refusals of one kind in one minute.
pub fn audit_run(owner: &str, minute: i64, digest: &str) -> Key {
    Key::new(format!("AUDITRUN#{owner}"), format!("{minute}#{digest}"))
}

// ------------------------------------------------------------ stored mail

/// The reading scope of a customer account: all its mailboxes' mail.
pub fn inbox_account_scope(uid: &str) -> String {
    format!("acct:{uid}")
}

/// The reading scope of one service-domain mailbox (the agent key, operators).
pub fn inbox_mailbox_scope(address: &str) -> String {
    format!("mailbox:{address}")
}

/// `MAIL#<scope>#in|out/<id>`: a scope's stored messages of one direction,
/// sorted by id (ids start with their filing time), each the whole row.
pub fn mail_partition(scope: &str, outbound: bool) -> String {
    format!("MAIL#{scope}#{}", if outbound { "out" } else { "in" })
}

/// `FOLDER#<scope>#<folder>/<id>`: a copy of each inbound row in its folder,
/// so the folder filter reads full pages.
pub fn folder_partition(scope: &str, folder: &str) -> String {
    format!("FOLDER#{scope}#{folder}")
}

/// `THREAD#<scope>#<thread>`: the thread's summary (sort key `#`, first) and a
/// copy of each of its rows, both directions, oldest first.
pub fn thread_partition(scope: &str, thread: &str) -> String {
    format!("THREAD#{scope}#{thread}")
}

/// The sort key of a thread's summary: before every message id.
pub const THREAD_SUMMARY: &str = "#";

pub fn thread_summary(scope: &str, thread: &str) -> Key {
    Key::new(thread_partition(scope, thread), THREAD_SUMMARY)
}

/// `THREADS#<scope>#<folder>/<last activity ms>-<thread>`: a copy of each
/// thread's summary in its folder, newest activity last in sort order.
pub fn threads_partition(scope: &str, folder: &str) -> String {
    format!("THREADS#{scope}#{folder}")
}

/// `QUAR#<scope>/<id>`: received rows kept out of the inbox (spoofed, and
/// the sender lists' refusals), each whole, with a 30-day `ttl`; the
/// quarantine view reads it newest first, and a read by id falls back to it.
pub fn quarantine_partition(scope: &str) -> String {
    format!("QUAR#{scope}")
}

/// `SPAM#<scope>/<id>`: received rows whose content is spam (rspamd's
/// verdict, or the owner's report), each whole, with a 30-day `ttl`; the
/// spam view reads it newest first, and a read by id falls back to it.
pub fn spam_partition(scope: &str) -> String {
    format!("SPAM#{scope}")
}

/// `MSGID#<scope>/<Message-ID>\n<mailbox>\n<in|out>`: a copy of each row by
/// its Message-ID; its conditional put makes filing idempotent per mailbox.
pub fn message_ids_of(scope: &str) -> String {
    format!("MSGID#{scope}")
}

/// The sort-key prefix of one Message-ID (in any mailbox of the scope), or of
/// one Message-ID in one mailbox.
pub fn message_id_prefix(message_id: &str, mailbox: Option<&str>) -> String {
    match mailbox {
        Some(mailbox) => format!("{message_id}\n{mailbox}\n"),
        None => format!("{message_id}\n"),
    }
}

pub fn message_id(scope: &str, message_id: &str, mailbox: &str, outbound: bool) -> Key {
    let dir = if outbound { "out" } else { "in" };
    Key::new(
        message_ids_of(scope),
        format!("{}{dir}", message_id_prefix(message_id, Some(mailbox))),
    )
}

/// A received message that arrived under a Message-ID another message holds:
/// filed beside it, by its digest.
pub fn conflicting_message_id(scope: &str, message_id: &str, mailbox: &str, digest: &str) -> Key {
    Key::new(
        message_ids_of(scope),
        format!(
            "{}in#{}",
            message_id_prefix(message_id, Some(mailbox)),
            &digest[..digest.len().min(16)]
        ),
    )
}

// ------------------------------------------------------------------- waits

/// `WAIT#<holder>/<slot>`: one of a key's slots for waiting on mail.
pub fn wait_slot(holder: &str, slot: usize) -> Key {
    Key::new(format!("WAIT#{holder}"), slot.to_string())
}

// ------------------------------------------------------------------ drafts

/// `DRAFTS#<uid>`: a user's drafts by id (creation time first), and `#`, their
/// count.
pub fn drafts_of(uid: &str) -> String {
    format!("DRAFTS#{uid}")
}

pub fn draft(uid: &str, id: &str) -> Key {
    Key::new(drafts_of(uid), id)
}

pub fn drafts_count(uid: &str) -> Key {
    Key::new(drafts_of(uid), "#")
}

// ---------------------------------------------------------------- webhooks

/// `WEBHOOK#<owner>/W`: the registration of the agent key (`agent`) or of an
/// account (its uid).
pub fn webhook(owner: &str) -> Key {
    Key::new(format!("WEBHOOK#{owner}"), "W")
}

/// `WHEVENT#<owner>/<ms><hex>`: an event's body, kept for replay.
pub fn webhook_events(owner: &str) -> String {
    format!("WHEVENT#{owner}")
}

pub fn webhook_event(owner: &str, sk: &str) -> Key {
    Key::new(webhook_events(owner), sk)
}

/// `WHPENDING/<ms><hex>#<owner>`: an event still to deliver, which the
/// poller's next run claims (one partition: every owner's, oldest first).
pub const WEBHOOK_PENDING: &str = "WHPENDING";

pub fn webhook_pending(event_sk: &str, owner: &str) -> Key {
    Key::new(WEBHOOK_PENDING, format!("{event_sk}#{owner}"))
}

/// `WHLOG#<owner>/<ms>-<event>-<attempt>`: one delivery attempt.
pub fn webhook_deliveries(owner: &str) -> String {
    format!("WHLOG#{owner}")
}

pub fn webhook_delivery(owner: &str, sk: &str) -> Key {
    Key::new(webhook_deliveries(owner), sk)
}

// --------------------------------------------------------------- delivery

/// `DLV#<id>`: one sent message's delivery: `M` what was sent (the outbox
/// row) and `R#<n>` each recipient's status, in the order sent.
pub fn delivery_message(id: &str) -> Key {
    Key::new(format!("DLV#{id}"), "M")
}

pub fn delivery_recipient(id: &str, n: usize) -> Key {
    Key::new(format!("DLV#{id}"), format!("R#{n}"))
}

/// `OUTBOX#<owner>/<ms>-<id>`: an owner's sent messages, newest last (a copy
/// of `DLV#<id>/M`). The owner is `agent` for the service-domain sender, else
/// the account's uid, as for webhooks.
pub fn outbox(owner: &str) -> String {
    format!("OUTBOX#{owner}")
}

/// `OUTMID#<owner>/<Message-ID>`: a sent message's delivery id by its Message-ID.
pub fn outbox_message_id(owner: &str, message_id: &str) -> Key {
    Key::new(format!("OUTMID#{owner}"), message_id)
}

/// `SUPP#<owner>/<address>`: a suppressed recipient (lower case).
pub fn suppression(owner: &str, address: &str) -> Key {
    Key::new(format!("SUPP#{owner}"), address)
}

/// `SUPPLIST#<owner>/<ms>-<hex>`: the suppression list, newest last.
pub fn suppression_list(owner: &str) -> String {
    format!("SUPPLIST#{owner}")
}

/// `SOFT#<owner>/<address>`: consecutive soft bounces of one recipient.
pub fn soft_bounces(owner: &str, address: &str) -> Key {
    Key::new(format!("SOFT#{owner}"), address)
}

// ------------------------------------------------------- allow and block lists

/// `LIST#<uid>`: an account's allow and block list entries, in the order
/// GET /lists answers (direction, kind, mailbox with `*` first, entry).
pub fn lists_of(uid: &str) -> String {
    format!("LIST#{uid}")
}

/// The sort-key prefix of one direction's entries (`send#`), or of one
/// direction and kind (`send#block#`).
pub fn list_prefix(direction: &str, kind: Option<&str>) -> String {
    match kind {
        Some(kind) => format!("{direction}#{kind}#"),
        None => format!("{direction}#"),
    }
}

/// `LIST#<uid>/<direction>#<kind>#<mailbox or *>#<entry>`: one entry; `*`
/// stands for every mailbox of the account.
pub fn list_entry(uid: &str, direction: &str, kind: &str, mailbox: Option<&str>, entry: &str) -> Key {
    Key::new(
        lists_of(uid),
        format!(
            "{}{}#{entry}",
            list_prefix(direction, Some(kind)),
            mailbox.unwrap_or("*")
        ),
    )
}

// --------------------------------------------------------- DMARC reports

/// `DMARC#<uid>#<domain>`: the aggregate reports about one domain of an
/// account, `<period end, 11 digits>-<digest>` each, so the newest period
/// sorts last and a report sent twice lands on one key.
pub fn dmarc_reports(uid: &str, domain: &str) -> String {
    format!("DMARC#{uid}#{domain}")
}

/// `DMARC#<uid>#<domain>/<end>-<digest>`: one report.
pub fn dmarc_report(uid: &str, domain: &str, sort_key: &str) -> Key {
    Key::new(dmarc_reports(uid, domain), sort_key)
}

/// `DMARC#dropped/C` {count, lastDomain, lastAt}: reports about domains not
/// on the service, counted and dropped.
pub fn dmarc_dropped() -> Key {
    Key::new("DMARC#dropped", "C")
}

// ------------------------------------------------------- the mailbox sync

/// `MBSYNC/<kind>#...`: what the mail host's IMAP side has yet to take from
/// the store: a thread whose rows changed, a row deleted for good, a sent
/// copy to save (`service::mail_store::sync_marks`).
pub fn mailbox_sync_marks() -> String {
    "MBSYNC".to_string()
}

/// `MBSYNCSEQ#<address>/S`: the last IMAP change of a mailbox the store
/// applied (the mail host's sequence number), so a change sent again is
/// not applied twice.
pub fn mailbox_sync_seq(address: &str) -> Key {
    Key::new(format!("MBSYNCSEQ#{address}"), "S")
}
