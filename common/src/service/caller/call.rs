//! A call: who is calling, through which surface, from where, and the
//! account it acts for, read once.

use crate::auth::{Caller, IdentityUser, Via};
use crate::context::Context;
use crate::error::{self, ApiError};

/// Who is calling, through which surface, from where: what a service may
/// know about the request besides its typed input.
pub struct Call<'a> {
    pub ctx: &'a Context,
    /// Admitted by the operation's access rule before the service runs.
    pub caller: &'a Caller,
    pub via: Via,
    /// The client's address (API Gateway's `sourceIp`, or the socket peer).
    pub ip: &'a str,
    /// The request only looks (HTTP HEAD): a read that would mark mail read
    /// marks nothing.
    pub peek: bool,
    /// The acting account, read once per call.
    account: tokio::sync::OnceCell<super::account::Account>,
    /// API Gateway's request id, or one made for a local request.
    pub request_id: String,
    /// Which transport carried the call: `rest` or `mcp`.
    pub surface: &'static str,
    /// Where the request came in, as API Gateway tells it (none locally).
    pub origin: Option<&'a str>,
    /// What the change touched, beyond its input (an operator's removal:
    /// the mailboxes it took): the audit row carries it.
    details: std::sync::Mutex<Vec<serde_json::Map<String, serde_json::Value>>>,
    /// The account a call without one of its own is about ([`Call::concerns`]).
    concerns: std::sync::OnceLock<String>,
    /// The audit row this call's change will write: its operation and
    /// target, set by the catalogue's execution path before the service
    /// runs.
    audit: std::sync::OnceLock<(&'static str, serde_json::Map<String, serde_json::Value>)>,
    /// The audit row's key once the service wrote it in its own transaction
    /// (a send that went at once): the execution path then writes none.
    audited_in: std::sync::Mutex<Option<crate::store::Key>>,
    /// Set when `caller` is a standard key's record as this process last
    /// read it, with the read that says whether it still is under way.
    pub confirmation: Option<Confirmation>,
}

/// Whether a caller taken from a key's record as last read is the record
/// as stored now: told once, by the read the transport made beside the call.
#[derive(Clone)]
pub struct Confirmation(tokio::sync::watch::Receiver<Option<bool>>);

impl From<tokio::sync::watch::Receiver<Option<bool>>> for Confirmation {
    /// Where the read tells whether the guess held (`Some`), once.
    fn from(told: tokio::sync::watch::Receiver<Option<bool>>) -> Self {
        Confirmation(told)
    }
}

impl Confirmation {
    /// Whether the guess held; false if the read was dropped untold.
    async fn held(&self) -> bool {
        let mut told = self.0.clone();
        told.wait_for(Option::is_some)
            .await
            .is_ok_and(|held| *held == Some(true))
    }
}

impl<'a> Call<'a> {
    pub fn new(ctx: &'a Context, caller: &'a Caller, via: Via, ip: &'a str) -> Self {
        Call {
            ctx,
            caller,
            via,
            ip,
            peek: false,
            account: tokio::sync::OnceCell::new(),
            request_id: String::new(),
            surface: "rest",
            origin: None,
            details: Default::default(),
            concerns: Default::default(),
            audit: Default::default(),
            audited_in: Default::default(),
            confirmation: None,
        }
    }

    /// Waits until the caller is known to be its key's record as stored:
    /// at once, unless the call started on the record as last read. A
    /// service that starts so calls this before its first write; the
    /// execution path before any other service and before answering. When
    /// the record changed, the call is refused here, and the transport,
    /// told by the same read, answers as the record now says instead.
    pub async fn confirmed(&self) -> Result<(), ApiError> {
        match &self.confirmation {
            // Never answered (the transport answers as the record says now)
            // and no failure: nothing is logged.
            Some(confirmation) if !confirmation.held().await => Err(error::INTERNAL.into()),
            _ => Ok(()),
        }
    }

    /// Where a link in mail to `path` (which starts with `/`) points: the
    /// configured public URL, else the API's own address this request came
    /// in on (so a stack links to itself from its first deploy).
    pub fn public_link(&self, path: &str) -> Option<String> {
        self.ctx
            .config
            .public_link(path)
            .or_else(|| self.origin.map(|origin| format!("{origin}{path}")))
    }

    /// The API description's URL: the configured one, else the public
    /// link's, else the local default.
    pub fn docs_url(&self) -> String {
        self.ctx
            .config
            .docs_url
            .clone()
            .or_else(|| self.public_link(crate::config::DOCS_PATH))
            .unwrap_or_else(|| crate::config::LOCAL_DOCS_URL.into())
    }

    /// Adds what this change touched to its audit row.
    pub fn touched(&self, details: serde_json::Value) {
        let details = match details {
            serde_json::Value::Object(map) => map,
            other => serde_json::Map::from_iter([("value".to_string(), other)]),
        };
        self.details.lock().expect("details lock").push(details);
    }

    /// Names the audit row this call's change writes (the catalogue's
    /// execution path, once, before the service runs).
    pub fn will_audit(&self, operation: &'static str, target: serde_json::Map<String, serde_json::Value>) {
        let _ = self.audit.set((operation, target));
    }

    /// The audit row's operation and target, when this call writes one.
    pub fn audit_of(&self) -> Option<&(&'static str, serde_json::Map<String, serde_json::Value>)> {
        self.audit.get()
    }

    /// The service wrote the audit row in its own transaction, under `key`.
    pub fn audited_in(&self, key: crate::store::Key) {
        *self.audited_in.lock().expect("audit lock") = Some(key);
    }

    /// Where the service wrote the audit row itself, if it did.
    pub fn audit_written(&self) -> Option<crate::store::Key> {
        self.audited_in.lock().expect("audit lock").clone()
    }

    /// What this change touched, taken once for its audit row.
    pub fn take_details(&self) -> Vec<serde_json::Map<String, serde_json::Value>> {
        std::mem::take(&mut *self.details.lock().expect("details lock"))
    }

    /// Acts for an account the call proved a claim on without a key (a
    /// hold's emailed code): its audit rows go in that account's log.
    pub fn act_for(&self, account: super::account::Account) {
        let _ = self.account.set(account);
    }

    /// The acting account's uid, when this call has read it; else the
    /// account it [`concerns`](Call::concerns).
    pub fn acting_uid(&self) -> Option<String> {
        self.account
            .get()
            .map(|a| a.uid.clone())
            .or_else(|| self.concerns.get().cloned())
    }

    /// Names the account a call without a credential is about before it
    /// proves anything (an attempt at a hold's emailed code): its audit row
    /// goes in that account's log, not the operators'. Grants nothing.
    pub fn concerns(&self, uid: &str) {
        let _ = self.concerns.set(uid.to_string());
    }

    /// The operator making the call (the access rule already required one).
    pub fn operator(&self) -> Result<&IdentityUser, ApiError> {
        match self.caller {
            Caller::Identity(user) if user.operator => Ok(user),
            _ => Err(error::OPERATOR_ONLY.into()),
        }
    }

    pub fn is_operator(&self) -> bool {
        self.caller.is_operator()
    }

    /// The account a customer route acts for, with its setup complete.
    pub async fn account(&self) -> Result<super::account::Account, ApiError> {
        self.account
            .get_or_try_init(|| super::account::acting(self.ctx, self.caller))
            .await
            .cloned()
    }
}

/// File bytes with their stored type and the name to save them under: the
/// output of an operation that answers with a file, not JSON.
#[derive(Debug)]
pub struct Download {
    pub content_type: String,
    pub filename: String,
    pub bytes: Vec<u8>,
    /// Shown in the browser (Content-Disposition: inline) rather than saved.
    pub inline: bool,
}
