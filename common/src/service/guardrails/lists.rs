//! Allow and block lists (issue 23): per account, optionally narrowed to one
//! of its mailboxes, a `send` and a `receive` list, each `allow` or `block`,
//! of addresses or whole domains (a domain matches itself and its
//! subdomains). A send to a blocked recipient, or to one no entry of a
//! non-empty allow list matches, is refused whole before any credit is spent
//! ([`refuse_send_among`], called by the dispatch every send path shares); mail
//! received from such a sender is judged by [`receive_verdict`].
//!
//! Items: `LIST#<uid>/<direction>#<kind>#<mailbox or *>#<entry>` one entry,
//! and the account's `listEntries` count on `ACCT#<uid>/A` (at most
//! [`MAX_ENTRIES`], raised in the adding transaction).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::Quarantine;
use crate::store::{Cond, Query, StoreError, StoreExt, StoreResult, Update, Write, item};
use crate::values::{EmailAddress, OPS_UID, Value, email, email_pattern, hostname, hostname_pattern};

/// The most entries one account holds, over both directions and kinds.
pub const MAX_ENTRIES: i64 = 500;

/// Which mail a list judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListDirection {
    /// Recipients of the account's sends.
    Send,
    /// Senders of the mail the account receives.
    Receive,
}

impl ListDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            ListDirection::Send => "send",
            ListDirection::Receive => "receive",
        }
    }
}

impl Value for ListDirection {
    fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "send" => Some(ListDirection::Send),
            "receive" => Some(ListDirection::Receive),
            _ => None,
        }
    }
}

/// What an entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    /// Once a list holds one, only what its entries match passes.
    Allow,
    /// What it matches never passes (a block wins over an allow).
    Block,
}

impl ListKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ListKind::Allow => "allow",
            ListKind::Block => "block",
        }
    }
}

impl Value for ListKind {
    fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "allow" => Some(ListKind::Allow),
            "block" => Some(ListKind::Block),
            _ => None,
        }
    }
}

/// An entry as given: an address (`pal@partner.example`), or a domain
/// (`partner.example`, which also matches `eu.partner.example`); lower case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry(String);

impl ListEntry {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Value for ListEntry {
    fn parse(raw: &str) -> Option<Self> {
        if raw.chars().count() > 254 {
            return None;
        }
        let raw = raw.trim();
        match raw.contains('@') {
            true => email(raw),
            false => hostname(raw),
        }
        .map(ListEntry)
    }
}

impl JsonSchema for ListEntry {
    fn schema_name() -> Cow<'static, str> {
        "ListEntry".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "An email address, or a domain name (which also matches its subdomains).",
            "pattern": format!(r"^\s*(?:{}|{})\s*$", email_pattern(), hostname_pattern()),
            "maxLength": 254,
        })
    }
}

/// Whether an entry (an address or a domain) matches an address, both in
/// lower case: an address itself; a domain, itself and its subdomains.
pub fn matches(entry: &str, address: &str) -> bool {
    if entry.contains('@') {
        return entry == address;
    }
    let domain = crate::values::email_domain(address);
    domain == entry || domain.strip_suffix(entry).is_some_and(|head| head.ends_with('.'))
}

/// One entry, as stored and as GET /lists shows it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub direction: ListDirection,
    pub kind: ListKind,
    /// An address, or a domain (with its subdomains).
    pub entry: String,
    /// The one mailbox it applies to; absent: every mailbox of the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailbox: Option<String>,
    pub created_at: String,
    /// The scoped key (its id) that added it, and alone besides the owner
    /// may remove it; absent: the owner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_by: Option<String>,
}

impl Entry {
    /// Whether it applies to mail of this mailbox (any mailbox when `None`).
    fn applies_to(&self, mailbox: &str) -> bool {
        self.mailbox.as_deref().is_none_or(|m| m == mailbox)
    }
}

/// What a list says about one address, for one mailbox: blocked, not on a
/// non-empty allow list, or `None` (it passes).
pub fn judge(entries: &[Entry], mailbox: &str, address: &str) -> Option<ListKind> {
    let address = address.trim().to_ascii_lowercase();
    let mailbox = mailbox.trim().to_ascii_lowercase();
    let applicable: Vec<&Entry> = entries.iter().filter(|e| e.applies_to(&mailbox)).collect();
    let hit = |kind: ListKind| applicable.iter().any(|e| e.kind == kind && matches(&e.entry, &address));
    if hit(ListKind::Block) {
        return Some(ListKind::Block);
    }
    let allows = applicable.iter().any(|e| e.kind == ListKind::Allow);
    (allows && !hit(ListKind::Allow)).then_some(ListKind::Allow)
}

/// The account whose lists judge a sender's mail: the dispatch's owner is
/// an account uid, or `agent` for the service-domain sender (the
/// operators' account).
fn account_of(owner: &str) -> &str {
    match owner {
        crate::service::webhooks::AGENT_OWNER => OPS_UID,
        uid => uid,
    }
}

/// Every entry of one direction of an account: one Query.
async fn entries(ctx: &Context, uid: &str, direction: ListDirection) -> StoreResult<Vec<Entry>> {
    let query = Query::partition(keys::lists_of(uid)).prefix(keys::list_prefix(direction.as_str(), None));
    ctx.store.all_records(query).await
}

// ------------------------------------------------------------- the checks

/// The owner's send entries, read before the sender is known (a send reads
/// them beside its other reads); [`refuse_send_among`] judges them.
pub async fn send_entries(ctx: &Context, owner: &str) -> StoreResult<Vec<Entry>> {
    entries(ctx, account_of(owner), ListDirection::Send).await
}

/// Refuses a send whole when a recipient is blocked, or a non-empty allow
/// list (the account-wide entries and the sending mailbox's) matches not
/// every recipient; the addresses are named in `addresses`. Judged on the
/// entries [`send_entries`] read (one Query).
pub fn refuse_send_among(listed: &[Entry], from: &str, recipients: &[String]) -> Result<(), ApiError> {
    if listed.is_empty() {
        return Ok(());
    }
    let refused = |kind: ListKind| -> Vec<String> {
        recipients
            .iter()
            .map(|r| r.trim().to_ascii_lowercase())
            .filter(|r| judge(listed, from, r) == Some(kind))
            .collect()
    };
    for (kind, problem) in [
        (ListKind::Block, error::RECIPIENT_BLOCKED),
        (ListKind::Allow, error::RECIPIENT_NOT_ALLOWED),
    ] {
        let addresses = refused(kind);
        if !addresses.is_empty() {
            let mut refusal = problem.with(addresses.join(", "));
            refusal.addresses = Some(addresses);
            return Err(refusal);
        }
    }
    Ok(())
}

/// What the account's receive lists say about mail from `from` to its
/// `mailbox`: `None` files it as usual. `uid` is the mailbox's account
/// (`ops` for the service domain's; `agent` reads as `ops`). A sender that
/// is no address (a null return path) matches no entry, so an allow list
/// refuses it. One Query.
pub async fn receive_verdict(ctx: &Context, uid: &str, mailbox: &str, from: &str) -> StoreResult<Option<Quarantine>> {
    Ok(receive_judgement(ctx, uid, mailbox, from).await?.quarantine)
}

/// [`receive_verdict`], and whether an allow entry names the sender.
pub async fn receive_judgement(ctx: &Context, uid: &str, mailbox: &str, from: &str) -> StoreResult<ReceiveVerdict> {
    let listed = entries(ctx, account_of(uid), ListDirection::Receive).await?;
    if listed.is_empty() {
        return Ok(ReceiveVerdict::default());
    }
    let from = from.trim().trim_start_matches('<').trim_end_matches('>');
    let from = email(from).unwrap_or_default();
    let quarantine = judge(&listed, mailbox, &from).map(|kind| match kind {
        ListKind::Block => Quarantine::BlockedSender,
        ListKind::Allow => Quarantine::SenderNotAllowed,
    });
    let mailbox = mailbox.trim().to_ascii_lowercase();
    let allowed = quarantine.is_none()
        && listed
            .iter()
            .any(|e| e.kind == ListKind::Allow && e.applies_to(&mailbox) && matches(&e.entry, &from));
    Ok(ReceiveVerdict { quarantine, allowed })
}

/// The receive lists' word on one received message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveVerdict {
    /// Kept out of the inbox, and why.
    pub quarantine: Option<Quarantine>,
    /// An applicable allow entry names the sender (who is not blocked):
    /// it wins over a spam verdict when the sender is authenticated
    /// (`service::spam`).
    pub allowed: bool,
}

// ------------------------------------------------------------- the routes

crate::input! {
    /// GET /lists.
    pub struct ListQuery {
        /// Only send or only receive entries.
        pub direction: Option<ListDirection> = error::LIST_DIRECTION_INVALID,
        /// Only allow or only block entries.
        pub kind: Option<ListKind> = error::LIST_KIND_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPage {
    pub ok: bool,
    /// Sorted by direction, kind, mailbox (account-wide entries first) and
    /// entry.
    pub entries: Vec<Entry>,
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<ListPage, ApiError> {
    let account = call.account().await?;
    let mut query = Query::partition(keys::lists_of(&account.uid));
    if let Some(direction) = input.direction {
        query = query.prefix(keys::list_prefix(direction.as_str(), input.kind.map(ListKind::as_str)));
    }
    let all: Vec<Entry> = call.ctx.store.all_records(query).await?;
    // A key narrowed to mailboxes sees the account-wide entries and its own.
    let entries = all
        .into_iter()
        .filter(|e| input.kind.is_none_or(|k| e.kind == k))
        .filter(|e| e.mailbox.as_deref().is_none_or(|m| call.caller.covers(m)))
        .collect();
    Ok(ListPage { ok: true, entries })
}

crate::input! {
    /// POST /lists and DELETE /lists.
    pub struct EntryInput {
        /// send (recipients of your mail) or receive (senders of mail to you).
        pub direction: ListDirection = (error::LIST_DIRECTION_REQUIRED, error::LIST_DIRECTION_INVALID),
        /// allow or block.
        pub kind: ListKind = (error::LIST_KIND_REQUIRED, error::LIST_KIND_INVALID),
        /// An email address, or a domain (it matches its subdomains too).
        pub entry: ListEntry = (error::LIST_ENTRY_REQUIRED, error::LIST_ENTRY_INVALID),
        /// The one mailbox of the account it applies to; omitted: all of them.
        pub mailbox: Option<EmailAddress> = error::LIST_MAILBOX_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    pub ok: bool,
    pub entry: Entry,
    /// false when the entry was there already (the stored one is shown).
    pub added: bool,
}

/// A key narrowed to mailboxes names one of them; every other caller may
/// change account-wide entries too.
fn in_scope(call: &Call<'_>, mailbox: Option<&str>) -> Result<(), ApiError> {
    match mailbox {
        Some(mailbox) => call.caller.may_use(mailbox),
        None if call.caller.scope().is_some_and(|s| s.mailboxes.is_some()) => Err(error::LIST_MAILBOX_NEEDED.into()),
        None => Ok(()),
    }
}

pub async fn add(call: &Call<'_>, input: EntryInput) -> Result<Added, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let mailbox = input.mailbox.map(EmailAddress::into_string);
    in_scope(call, mailbox.as_deref())?;
    // An allow entry lets mail through where the owner's list did not.
    if input.kind == ListKind::Allow {
        call.caller.may_loosen()?;
    }
    if let Some(address) = &mailbox {
        let mine = crate::service::mailboxes::mailbox::by_address(ctx, address)
            .await?
            .is_some_and(|m| m.is_active() && m.uid == account.uid);
        if !mine {
            let mut refused: ApiError = error::LIST_MAILBOX_UNKNOWN.into();
            refused.addresses = Some(vec![address.clone()]);
            return Err(refused);
        }
    }
    let entry = Entry {
        direction: input.direction,
        kind: input.kind,
        entry: input.entry.0,
        mailbox,
        created_at: iso(ctx.clock.now()),
        added_by: call.caller.scoped_key().map(|k| k.key_id.clone()),
    };
    let key = key_of(&account.uid, &entry);
    let writes = vec![
        Write::Put {
            item: item(&key, &entry),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: keys::account(&account.uid),
            update: Update::new().add("listEntries", 1),
            cond: Some(Cond::Or(vec![
                Cond::missing("listEntries"),
                Cond::Lt("listEntries".into(), MAX_ENTRIES),
            ])),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(Added {
            ok: true,
            entry,
            added: true,
        }),
        // Either the entry is there already, or the count is full.
        Err(StoreError::ConditionFailed) => match ctx.store.read::<Entry>(&key).await? {
            Some(first) => Ok(Added {
                ok: true,
                entry: first,
                added: false,
            }),
            None => Err(error::LIST_FULL.into()),
        },
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub ok: bool,
    /// The entry as it was.
    pub removed: Entry,
}

/// Takes an entry off its list; the mailbox need not be active any more.
/// A scoped key takes off only what it added itself: the owner's entries
/// are the owner's guardrails.
pub async fn remove(call: &Call<'_>, input: EntryInput) -> Result<Removed, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let mailbox = input.mailbox.map(EmailAddress::into_string);
    in_scope(call, mailbox.as_deref())?;
    let key = keys::list_entry(
        &account.uid,
        input.direction.as_str(),
        input.kind.as_str(),
        mailbox.as_deref(),
        input.entry.as_str(),
    );
    let removed: Entry = ctx.store.read(&key).await?.ok_or(error::LIST_ENTRY_NOT_FOUND)?;
    let still = match call.caller.scoped_key() {
        Some(own) if removed.added_by.as_deref() == Some(own.key_id.as_str()) => {
            // The owner may have removed it and set their own since.
            Cond::eq("addedBy", own.key_id.clone())
        }
        _ => {
            call.caller.may_loosen()?;
            Cond::Exists
        }
    };
    let writes = vec![
        Write::Delete { key, cond: Some(still) },
        Write::Update {
            key: keys::account(&account.uid),
            update: Update::new().add("listEntries", -1),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(Removed { ok: true, removed }),
        // Another removal of the same entry won.
        Err(StoreError::ConditionFailed) => Err(error::LIST_ENTRY_NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}

fn key_of(uid: &str, entry: &Entry) -> crate::store::Key {
    keys::list_entry(
        uid,
        entry.direction.as_str(),
        entry.kind.as_str(),
        entry.mailbox.as_deref(),
        &entry.entry,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(direction: ListDirection, kind: ListKind, entry: &str, mailbox: Option<&str>) -> Entry {
        Entry {
            direction,
            kind,
            entry: entry.into(),
            mailbox: mailbox.map(str::to_string),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            added_by: None,
        }
    }

    #[test]
    fn a_domain_matches_itself_and_its_subdomains_and_an_address_only_itself() {
        assert!(matches("partner.example", "pal@partner.example"));
        assert!(matches("partner.example", "pal@eu.partner.example"));
        assert!(!matches("partner.example", "pal@notpartner.example"));
        assert!(!matches("partner.example", "pal@partner.example.org"));
        assert!(matches("pal@partner.example", "pal@partner.example"));
        assert!(!matches("pal@partner.example", "pam@partner.example"));
        assert!(!matches("pal@partner.example", "pal@eu.partner.example"));
        assert!(!matches("partner.example", ""));
    }

    #[test]
    fn entries_parse_as_addresses_or_domains_in_lower_case() {
        assert_eq!(
            ListEntry::parse(" Pal@Partner.Example ").unwrap().as_str(),
            "pal@partner.example"
        );
        assert_eq!(
            ListEntry::parse("Partner.Example.").unwrap().as_str(),
            "partner.example"
        );
        for bad in ["", "localhost", "@partner.example", "pal@", "a b.example", "1.2.3.4"] {
            assert!(ListEntry::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_block_wins_an_allow_list_refuses_the_rest_and_a_mailbox_entry_applies_to_its_mailbox() {
        use ListDirection::Receive;
        use ListKind::*;
        let agent = "agent@acme.example";
        let boss = "boss@acme.example";
        let list = vec![
            entry(Receive, Block, "spam.example", None),
            entry(Receive, Allow, "partner.example", Some(agent)),
            entry(Receive, Block, "pal@partner.example", Some(agent)),
        ];
        assert_eq!(judge(&list, agent, "x@spam.example"), Some(Block));
        assert_eq!(judge(&list, agent, "pal@partner.example"), Some(Block));
        assert_eq!(judge(&list, agent, "pam@eu.partner.example"), None);
        assert_eq!(judge(&list, agent, "someone@else.example"), Some(Allow));
        assert_eq!(judge(&list, agent, ""), Some(Allow));
        // boss@ has no allow list of its own, and agent@'s block is not its.
        assert_eq!(judge(&list, boss, "someone@else.example"), None);
        assert_eq!(judge(&list, boss, "pal@partner.example"), None);
        assert_eq!(judge(&list, "Boss@ACME.example", "X@Spam.Example"), Some(Block));
        assert_eq!(judge(&[], agent, "x@spam.example"), None);
    }

    #[test]
    fn an_entry_key_sorts_account_wide_entries_first() {
        let wide = keys::list_entry("u", "send", "block", None, "a.example");
        let one = keys::list_entry("u", "send", "block", Some("0@acme.example"), "a.example");
        assert!(wide.sk < one.sk, "{} {}", wide.sk, one.sk);
        assert!(wide.sk.starts_with(&keys::list_prefix("send", Some("block"))));
    }
}
