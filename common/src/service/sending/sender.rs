//! Who a send is from: the address a caller sends from and the domain that
//! signs it (read in one batch when a standard key names its address, else
//! from the account's verified domains and their mailboxes), the owner whose
//! lists a send counts in, each domain's DKIM signer, and each caller's last
//! sender, which a send signs its message as while its reads are out.

use std::sync::Arc;

use crate::auth::Caller;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::hint::Hint;
use crate::keys;
use crate::mail::message::Signer;
use crate::service::caller::account::{self as accounts, OPS_UID};
use crate::service::delivery::sent;
use crate::service::domains::{self, DomainStatus, dkim};
use crate::service::mailboxes;
use crate::store::{Item, Key};

/// The address a caller sends from, and the domain that signs it.
/// `named`: the items at [`named_keys`], when the send read them in a batch
/// of its own; read here when not.
pub(super) async fn sender(
    ctx: &Context,
    caller: &Caller,
    requested: Option<&str>,
    named: Option<Vec<Option<Item>>>,
) -> Result<(String, domains::Domain), ApiError> {
    let service = ctx.config.service_domain.as_str();
    let noreply = ctx.config.noreply();
    let service_domain = || async {
        domains::get(ctx, OPS_UID, service)
            .await?
            .ok_or_else(|| ApiError::internal("service domain missing"))
    };
    match caller {
        // The shared agent key always sends as noreply@{service_domain}.
        Caller::Agent => Ok((noreply, service_domain().await?)),
        Caller::Identity(user) if user.operator && requested.is_none_or(|r| r == noreply) => {
            Ok((noreply, service_domain().await?))
        }
        _ => {
            let named = match (named_keys(caller, requested), named) {
                (Some(_), Some(items)) => Some(items),
                (Some(keys), None) => Some(ctx.store.get_many(&keys).await?),
                (None, _) => None,
            };
            if let (Some(items), Some(from)) = (named, requested)
                && let Some(found) = named_sender(items, from)?
            {
                caller.may_use(from)?;
                return Ok(found);
            }
            // Without a ready account there is no hosted mailbox to send from.
            let no_mailbox = |e: ApiError| match e.status {
                403 => error::NO_HOSTED_MAILBOX.into(),
                _ => e,
            };
            let of_domains = |names: Vec<String>| async move {
                futures::future::try_join_all(names.iter().map(|name| mailboxes::of_domain(ctx, name))).await
            };
            // A standard key names its account: its domains are read beside
            // it, and the mailboxes of the domains it sent from last time
            // beside them (kept only when those are still its verified ones).
            let (domains, guessed) = match caller {
                Caller::Standard(key) => {
                    let hinted = SENDING_DOMAINS.get(&key.uid).unwrap_or_default();
                    let (account, domains, guessed) = tokio::join!(
                        accounts::acting(ctx, caller),
                        domains::of_account(ctx, &key.uid),
                        of_domains(hinted.clone())
                    );
                    account.map_err(no_mailbox)?;
                    (domains?, Some((key.uid.as_str(), hinted, guessed)))
                }
                _ => {
                    let account = accounts::acting(ctx, caller).await.map_err(no_mailbox)?;
                    (domains::of_account(ctx, &account.uid).await?, None)
                }
            };
            let verified: Vec<&domains::Domain> =
                domains.iter().filter(|d| d.status == DomainStatus::Verified).collect();
            let names: Vec<String> = verified.iter().map(|d| d.name.clone()).collect();
            let each = match guessed {
                Some((_, hinted, Ok(each))) if hinted == names => each,
                guessed => {
                    if let Some((uid, _, _)) = guessed {
                        SENDING_DOMAINS.keep(uid, names.clone());
                    }
                    of_domains(names).await?
                }
            };
            let mut sendable = Vec::new();
            for (domain, mailboxes) in verified.into_iter().zip(each) {
                for mailbox in mailboxes {
                    if mailbox.mode.stores() {
                        sendable.push((mailbox.address.clone(), domain.clone()));
                    }
                }
            }
            if sendable.is_empty() {
                return Err(error::NO_HOSTED_MAILBOX.into());
            }
            match requested {
                Some(from) => {
                    let found = sendable
                        .into_iter()
                        .find(|(address, _)| address == from)
                        .ok_or(error::FROM_NOT_ALLOWED)?;
                    caller.may_use(from)?;
                    Ok(found)
                }
                // A scoped key chooses among its own mailboxes.
                None => {
                    sendable.retain(|(address, _)| caller.covers(address));
                    match sendable.len() {
                        0 => Err(error::NO_HOSTED_MAILBOX.into()),
                        1 => Ok(sendable.remove(0)),
                        _ => Err(error::CHOOSE_FROM.into()),
                    }
                }
            }
        }
    }
}

/// The verified domains each standard account was last seen sending from,
/// by uid: a guess only, so a send that names no address reads their
/// mailboxes beside the account's domains rather than after them. Every
/// send checks it against the domains it read, and reads again when wrong.
static SENDING_DOMAINS: Hint<Vec<String>> = Hint::new();

/// The three items that let a standard key send from the address it named:
/// its account, the address's domain in it, and the mailbox.
pub(super) fn named_keys(caller: &Caller, requested: Option<&str>) -> Option<Vec<Key>> {
    let (Caller::Standard(key), Some(from)) = (caller, requested) else {
        return None;
    };
    let (local, domain) = from.rsplit_once('@')?;
    Some(vec![
        keys::account(&key.uid),
        keys::domain(&key.uid, domain),
        keys::mailbox(domain, local),
    ])
}

/// The address a standard key named, found in one read of the items at
/// [`named_keys`] (its account ready, the address's domain verified in it,
/// the mailbox active and keeping mail); none when any of them does not,
/// and [`sender`] reads the account's mailboxes to say why.
fn named_sender(found: Vec<Option<Item>>, from: &str) -> Result<Option<(String, domains::Domain)>, ApiError> {
    let [Some(account), Some(domain), Some(mailbox)] = <[_; 3]>::try_from(found).unwrap_or_default() else {
        return Ok(None);
    };
    let account: accounts::Account = crate::store::record(account)?;
    let domain: domains::Domain = crate::store::record(domain)?;
    let mailbox: mailboxes::Mailbox = crate::store::record(mailbox)?;
    let sends = account.status == accounts::AccountStatus::Ready
        && domain.status == DomainStatus::Verified
        && mailbox.is_active()
        && mailbox.mode.stores()
        && mailbox.address == from;
    Ok(sends.then_some((mailbox.address, domain)))
}

/// The domain's DKIM signer. Read from its secret once per process: a key's
/// secret name is new for every key, so a cached signer is never stale.
pub async fn signer(ctx: &Context, domain: &domains::Domain) -> Result<Arc<Signer>, ApiError> {
    // A poisoned cache still holds good signers: a panic elsewhere never
    // turns every later send into one.
    let cache = || ctx.signers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(cached) = cache().get(&domain.dkim_secret) {
        return Ok(cached.clone());
    }
    let pem = ctx.secrets.get(&domain.dkim_secret).await.map_err(ApiError::internal)?;
    let pem = pem.ok_or_else(|| ApiError::internal("the domain's DKIM key is missing"))?;
    let signer = Signer::from_pkcs8(dkim::SELECTOR, &domain.name, &pem).map_err(ApiError::internal)?;
    let signer = Arc::new(signer);
    cache().insert(domain.dkim_secret.clone(), signer.clone());
    Ok(signer)
}

/// The owner whose lists and suppressions a send from this caller counts
/// in, when the caller alone says it (a standard key: its account; the
/// agent key and an operator sending as noreply: the service domain's);
/// none when only the sender found says it.
pub(super) fn owner_ahead(ctx: &Context, caller: &Caller, requested: Option<&str>) -> Option<String> {
    let noreply = || ctx.config.noreply();
    match caller {
        Caller::Agent => Some(sent::owner_of(OPS_UID)),
        Caller::Standard(key) => Some(sent::owner_of(&key.uid)),
        Caller::Identity(user) if user.operator && requested.is_none_or(|r| r == noreply()) => {
            Some(sent::owner_of(OPS_UID))
        }
        _ => None,
    }
}

/// The sender a caller's last send resolved to, with its domain's signer
/// (already read): what a send signs its message as while its reads are
/// out, since DKIM's RSA signature is most of a send's own CPU. A guess
/// only: the send keeps the message it signed so only when its reads name
/// the same address, domain and key, and signs again otherwise.
pub(super) struct Guess {
    pub from: String,
    pub domain: String,
    pub secret: String,
    pub signer: Arc<Signer>,
}

impl Guess {
    /// Whether the reads found what the guess signed as.
    pub(super) fn holds(&self, from: &str, domain: &domains::Domain) -> bool {
        self.from == from && self.domain == domain.name && self.secret == domain.dkim_secret
    }
}

/// Each caller's last sender (address, domain, key's secret), by the
/// caller and the address it named.
static LAST_SENDERS: Hint<(String, String, String)> = Hint::new();

fn guess_key(caller: &Caller, requested: Option<&str>) -> Option<String> {
    let who = match caller {
        Caller::Agent => "agent".to_string(),
        Caller::Standard(key) => format!("key:{}", key.key_id),
        Caller::Identity(user) => format!("user:{}", user.uid),
        Caller::Public | Caller::Sync => return None,
    };
    Some(format!("{who}\n{}", requested.unwrap_or_default()))
}

/// The guess for this caller's send, when its last one's signer is at hand.
pub(super) fn guessed_sender(ctx: &Context, caller: &Caller, requested: Option<&str>) -> Option<Guess> {
    let key = guess_key(caller, requested)?;
    let (from, domain, secret) = LAST_SENDERS.get(&key)?;
    let signer = {
        let signers = ctx.signers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        signers.get(&secret)?.clone()
    };
    Some(Guess {
        from,
        domain,
        secret,
        signer,
    })
}

/// Keeps what this caller's send resolved to, for its next send's guess.
pub(super) fn remember_sender(caller: &Caller, requested: Option<&str>, from: &str, domain: &domains::Domain) {
    let Some(key) = guess_key(caller, requested) else {
        return;
    };
    LAST_SENDERS.keep(
        &key,
        (from.to_string(), domain.name.clone(), domain.dkim_secret.clone()),
    );
}
