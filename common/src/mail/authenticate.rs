//! Can this mail be trusted: SPF, DKIM, DMARC and ARC verdicts on a received
//! message, computed here with `mail-auth` (Stalwart's DKIM, SPF, DMARC and
//! ARC over hickory) through the service's own resolver, never read from the
//! message: an `Authentication-Results` header that came with it is a
//! stranger's claim and is ignored.
//!
//! SPF needs the connection: the client address and HELO the mail host saw,
//! from the envelope it prepends. A file with no connection information gets
//! SPF `none` and is judged on what it carries (DKIM, and DMARC through DKIM
//! alignment). A lookup that does not finish is `temperror`; nothing here ever
//! refuses a message.

use std::net::IpAddr;
use std::time::Duration;

use mail_auth::dmarc::Policy;
use mail_auth::dmarc::verify::DmarcParameters;
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{
    ArcOutput, AuthenticatedMessage, DkimOutput, DkimResult, DmarcOutput, DmarcResult, MessageAuthenticator, SpfOutput,
    SpfResult,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::inbound::Envelope;

/// The longest all checks of one message may take together; past it, every
/// check still open is `temperror` and the message is filed.
pub const CEILING: Duration = Duration::from_secs(20);

/// One check's result (RFC 8601's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Softfail,
    Neutral,
    None,
    Temperror,
    Permerror,
}

/// What the checks say together: `pass` when DMARC passes; `fail` when DMARC
/// fails (or gives `permerror` for a domain that states a policy), or when the
/// From domain publishes no DMARC policy and SPF fails or every DKIM
/// signature fails; `none` otherwise (nothing to judge, or a lookup that did
/// not finish). A message naming several From domains passes only when each
/// passes, and fails when any fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Summary {
    Pass,
    Fail,
    None,
}

impl Summary {
    pub fn as_str(self) -> &'static str {
        match self {
            Summary::Pass => "pass",
            Summary::Fail => "fail",
            Summary::None => "none",
        }
    }
}

/// SPF of the envelope sender (or of the HELO name when the sender is empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpfCheck {
    pub result: Verdict,
    /// The domain whose SPF record was checked.
    pub domain: String,
    /// The connecting client's address, as the mail host saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<String>,
    /// The name the client gave in HELO/EHLO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helo: Option<String>,
}

/// One DKIM signature's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DkimCheck {
    pub result: Verdict,
    /// The signing domain (d=); empty for a signature that does not parse.
    pub domain: String,
    /// The selector (s=).
    pub selector: String,
}

/// A DMARC policy (p=, or sp= for a subdomain), as applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DmarcPolicy {
    None,
    Quarantine,
    Reject,
}

/// DMARC of the From domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DmarcCheck {
    pub result: Verdict,
    /// The From header's domain.
    pub domain: String,
    /// The policy the domain publishes; absent when it publishes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<DmarcPolicy>,
    /// An SPF pass whose domain aligns with the From domain.
    pub spf_aligned: bool,
    /// A DKIM pass whose signing domain aligns with the From domain.
    pub dkim_aligned: bool,
    /// The trusted ARC sealer whose recorded DMARC pass decided the result
    /// (forwarded mail whose own checks failed on the way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_arc: Option<String>,
}

/// The ARC chain's check, when the message carries one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArcCheck {
    pub result: Verdict,
    /// Sets in the chain (i= 1 to n).
    pub sets: usize,
    /// The sealing domain of the last set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealer: Option<String>,
}

/// The verdicts on one received message, computed by this service when it
/// filed the message. List rows and webhooks carry `summary` and `spoofed`
/// only; a read of one message carries every check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Authentication {
    /// pass, fail or none.
    pub summary: Summary,
    /// The DMARC policy of a domain the From headers name is quarantine or
    /// reject and the message fails it (or that domain's record could not be
    /// read): whoever sent it is not who the From header names.
    pub spoofed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spf: Option<SpfCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dkim: Option<Vec<DkimCheck>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dmarc: Option<DmarcCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcCheck>,
    /// Every address the From headers name, when they name more than one
    /// (several From headers, several addresses, a group): DMARC judged each
    /// of their domains, and `dmarc` is the check that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authors: Option<Vec<String>>,
}

impl Authentication {
    /// `summary` and `spoofed` alone, as list rows and webhooks show it.
    pub fn compact(&self) -> Authentication {
        Authentication {
            summary: self.summary,
            spoofed: self.spoofed,
            spf: None,
            dkim: None,
            dmarc: None,
            arc: None,
            authors: None,
        }
    }

    /// Every check `temperror`: what a message gets whose checks did not
    /// finish within [`CEILING`].
    pub fn unfinished(envelope: Option<&Envelope>) -> Authentication {
        let connection = Connection::of(envelope);
        Authentication {
            summary: Summary::None,
            spoofed: false,
            spf: Some(SpfCheck {
                result: Verdict::Temperror,
                domain: connection.spf_domain().to_string(),
                client_ip: connection.ip.map(|ip| ip.to_string()),
                helo: connection.helo_given(),
            }),
            dkim: None,
            dmarc: None,
            arc: None,
            authors: None,
        }
    }
}

/// What the mail host knew of the connection.
struct Connection<'a> {
    ip: Option<IpAddr>,
    helo: &'a str,
    /// The envelope sender; empty for a bounce or an unknown one.
    sender: &'a str,
}

impl<'a> Connection<'a> {
    fn of(envelope: Option<&'a Envelope>) -> Connection<'a> {
        let ip = envelope.and_then(|e| e.client_address.as_deref()).and_then(|a| {
            a.trim()
                .trim_start_matches("ipv6:")
                .trim_start_matches("IPv6:")
                .parse()
                .ok()
        });
        Connection {
            ip,
            helo: envelope.and_then(|e| e.helo.as_deref()).unwrap_or_default(),
            sender: envelope.and_then(|e| e.sender.as_deref()).unwrap_or_default(),
        }
    }

    fn helo_given(&self) -> Option<String> {
        (!self.helo.is_empty()).then(|| self.helo.to_string())
    }

    /// The MAIL FROM domain, else the HELO name (RFC 7208 section 2.4).
    fn spf_domain(&self) -> &'a str {
        match self.sender.rsplit_once('@') {
            Some((_, domain)) if !domain.is_empty() => domain,
            _ => self.helo,
        }
    }
}

/// Checks one message (the bytes after the mail host's envelope and trace
/// lines). `authors` are the addresses its From headers name, as the inbox
/// shows them (`Inbound::judged_authors`): DMARC judges each of their
/// domains (RFC 7489 6.6.1 lets a receiver judge a message naming several),
/// never the headers read again another way. `host` is the receiving host's
/// name (SPF's `%{r}`).
pub async fn authenticate(
    resolver: &MessageAuthenticator,
    raw: &[u8],
    envelope: Option<&Envelope>,
    authors: &[String],
    host: &str,
    trusted_sealers: &[String],
) -> Authentication {
    let judged = checks(resolver, raw, envelope, authors, host, trusted_sealers);
    match tokio::time::timeout(CEILING, judged).await {
        Ok(auth) => auth,
        Err(_) => Authentication::unfinished(envelope),
    }
}

async fn checks(
    resolver: &MessageAuthenticator,
    raw: &[u8],
    envelope: Option<&Envelope>,
    authors: &[String],
    host: &str,
    trusted_sealers: &[String],
) -> Authentication {
    let connection = Connection::of(envelope);
    let spf = spf(resolver, &connection, host).await;
    let spf_check = SpfCheck {
        result: spf_verdict(spf.result()),
        domain: connection.spf_domain().to_string(),
        client_ip: connection.ip.map(|ip| ip.to_string()),
        helo: connection.helo_given(),
    };
    let several = (authors.len() > 1).then(|| authors.to_vec());
    let Some(message) = AuthenticatedMessage::parse(raw) else {
        // Not a message mail-auth can read: SPF alone says anything.
        return Authentication {
            summary: summary(None, spf_check.result, &[]),
            spoofed: false,
            spf: Some(spf_check),
            dkim: None,
            dmarc: None,
            arc: None,
            authors: several,
        };
    };
    let dkim_outputs = resolver.verify_dkim(&message).await;
    let dkim: Vec<DkimCheck> = dkim_outputs.iter().map(DkimCheck::of).collect();
    let arc_output = arc_chain(resolver, &message).await;
    let arc = arc_output.as_ref().map(ArcCheck::of);
    let mut judged: Vec<DmarcCheck> = Vec::new();
    for author in one_per_domain(authors) {
        // mail-auth's DMARC reads the author from the message it is given:
        // given exactly this one, it judges exactly this address's domain.
        let one = AuthenticatedMessage {
            from: vec![author.to_string()],
            ..Default::default()
        };
        let output = resolver
            .verify_dmarc(DmarcParameters::new(&one, &dkim_outputs, connection.spf_domain(), &spf))
            .await;
        if output.domain().is_empty() {
            continue;
        }
        let mut d = DmarcCheck::of(&output);
        if let Some(chain) = arc_output.as_ref()
            && d.result == Verdict::Fail
        {
            d.by_arc = trusted_pass(chain, trusted_sealers, &d.domain);
            if d.by_arc.is_some() {
                d.result = Verdict::Pass;
            }
        }
        // A record that does not parse still says what its owner wants.
        if d.result == Verdict::Permerror && d.policy.is_none() {
            d.policy = published_policy(resolver, &d.domain).await;
        }
        judged.push(d);
    }
    let each: Vec<Summary> = judged
        .iter()
        .map(|d| summary(Some(d), spf_check.result, &dkim))
        .collect();
    Authentication {
        summary: match judged.is_empty() {
            true => summary(None, spf_check.result, &dkim),
            false => each.iter().copied().fold(Summary::Pass, Summary::and),
        },
        spoofed: judged.iter().any(DmarcCheck::spoofs),
        spf: Some(spf_check),
        dkim: Some(dkim),
        dmarc: deciding(judged, &each),
        arc,
        authors: several,
    }
}

/// The first address of each domain among `authors` (any case).
fn one_per_domain(authors: &[String]) -> Vec<&str> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for author in authors {
        let domain = author.rsplit_once('@').map_or("", |(_, d)| d).to_lowercase();
        if !seen.contains(&domain) {
            seen.push(domain);
            out.push(author.as_str());
        }
    }
    out
}

/// The check that decided the message's verdict, `each` its summaries: the
/// first that spoofs, else the first that fails, else the first that could
/// not say, else the first.
fn deciding(judged: Vec<DmarcCheck>, each: &[Summary]) -> Option<DmarcCheck> {
    let at = judged
        .iter()
        .position(DmarcCheck::spoofs)
        .or_else(|| each.iter().position(|s| *s == Summary::Fail))
        .or_else(|| each.iter().position(|s| *s == Summary::None))
        .unwrap_or(0);
    judged.into_iter().nth(at)
}

/// The policy `_dmarc.<domain>` (or, for a subdomain, its nearest parent's
/// `sp=`, else `p=`) states, read leniently: for a record mail-auth could not
/// read (a `permerror`), whose owner still said what should become of mail
/// that fails it.
async fn published_policy(resolver: &MessageAuthenticator, domain: &str) -> Option<DmarcPolicy> {
    let labels: Vec<&str> = domain.trim_end_matches('.').split('.').collect();
    for skip in 0..labels.len().saturating_sub(1) {
        let name = labels[skip..].join(".");
        let Ok(text) = resolver.txt_raw_lookup(format!("_dmarc.{name}.")).await else {
            continue;
        };
        let tags = if skip == 0 { &["p"][..] } else { &["sp", "p"][..] };
        if let Some(policy) = stated_policy(&String::from_utf8_lossy(&text), tags) {
            return Some(policy);
        }
    }
    None
}

/// The first of `tags` a `v=DMARC1` record's text states, as a policy.
fn stated_policy(text: &str, tags: &[&str]) -> Option<DmarcPolicy> {
    let lower = text.to_ascii_lowercase();
    let at = lower.find("v=dmarc1")?;
    let stated: Vec<(&str, &str)> = lower[at..]
        .split(';')
        .skip(1)
        .filter_map(|tag| tag.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    tags.iter().find_map(|want| {
        stated.iter().find(|(k, _)| k == want).and_then(|(_, v)| match *v {
            "none" => Some(DmarcPolicy::None),
            "quarantine" => Some(DmarcPolicy::Quarantine),
            "reject" => Some(DmarcPolicy::Reject),
            _ => None,
        })
    })
}

impl Summary {
    /// Two verdicts together: a fail fails, both must pass to pass.
    fn and(self, other: Summary) -> Summary {
        match (self, other) {
            (Summary::Fail, _) | (_, Summary::Fail) => Summary::Fail,
            (Summary::Pass, Summary::Pass) => Summary::Pass,
            _ => Summary::None,
        }
    }
}

impl DkimCheck {
    fn of(output: &DkimOutput<'_>) -> Self {
        DkimCheck {
            result: dkim_verdict(output.result()),
            domain: output.signature().map(|s| s.d.clone()).unwrap_or_default(),
            selector: output.signature().map(|s| s.s.clone()).unwrap_or_default(),
        }
    }
}

impl DmarcCheck {
    /// The domain's policy is quarantine or reject and the message fails it,
    /// or its record could not be read (a `permerror` is never a pass).
    fn spoofs(&self) -> bool {
        matches!(self.result, Verdict::Fail | Verdict::Permerror)
            && matches!(self.policy, Some(DmarcPolicy::Quarantine | DmarcPolicy::Reject))
    }

    fn of(output: &DmarcOutput) -> Self {
        let policy = match output.policy() {
            Policy::None | Policy::Unspecified => DmarcPolicy::None,
            Policy::Quarantine => DmarcPolicy::Quarantine,
            Policy::Reject => DmarcPolicy::Reject,
        };
        DmarcCheck {
            result: dmarc_verdict(&output.result()),
            domain: output.domain().to_string(),
            policy: output.dmarc_record().is_some().then_some(policy),
            spf_aligned: *output.spf_result() == DmarcResult::Pass,
            dkim_aligned: *output.dkim_result() == DmarcResult::Pass,
            by_arc: None,
        }
    }
}

/// The ARC chain's check, when the message carries one.
async fn arc_chain<'m>(
    resolver: &MessageAuthenticator,
    message: &'m AuthenticatedMessage<'m>,
) -> Option<ArcOutput<'m>> {
    if message.ams_headers.is_empty() && message.as_headers.is_empty() && !message.has_arc_errors {
        return None;
    }
    Some(resolver.verify_arc(message).await)
}

impl ArcCheck {
    fn of(output: &ArcOutput<'_>) -> Self {
        ArcCheck {
            result: dkim_verdict(output.result()),
            sets: output.sets().len(),
            sealer: output.sets().last().map(|s| s.seal.header.d.clone()),
        }
    }
}

/// The sealer, when a passing chain's newest seal is one the operator trusts
/// and its recorded results say DMARC passed for this From domain. Every
/// other `Authentication-Results` a message carries is never believed.
fn trusted_pass(chain: &ArcOutput<'_>, trusted: &[String], from_domain: &str) -> Option<String> {
    if *chain.result() != DkimResult::Pass {
        return None;
    }
    let newest = chain.sets().last()?;
    let sealer = &newest.seal.header.d;
    if !trusted.iter().any(|t| !t.is_empty() && t.eq_ignore_ascii_case(sealer)) {
        return None;
    }
    recorded_dmarc_pass(&String::from_utf8_lossy(newest.results.value), from_domain).then(|| sealer.clone())
}

/// Whether an ARC-Authentication-Results value records `dmarc=pass` for
/// `from_domain` (its `header.from`).
fn recorded_dmarc_pass(results: &str, from_domain: &str) -> bool {
    results.split(';').map(str::trim).any(|method| {
        let mut words = method.split_whitespace();
        words.next().is_some_and(|w| w.eq_ignore_ascii_case("dmarc=pass"))
            && words.any(|w| {
                w.strip_prefix("header.from=")
                    .is_some_and(|d| d.eq_ignore_ascii_case(from_domain))
            })
    })
}

/// SPF of the connection: `none` without a client address.
async fn spf(resolver: &MessageAuthenticator, c: &Connection<'_>, host: &str) -> SpfOutput {
    let Some(ip) = c.ip else {
        return SpfOutput::new(c.spf_domain().to_string()).with_result(SpfResult::None);
    };
    if c.sender.is_empty() {
        if c.helo.is_empty() {
            return SpfOutput::new(String::new()).with_result(SpfResult::None);
        }
        return resolver.verify_spf(SpfParameters::verify_ehlo(ip, c.helo, host)).await;
    }
    resolver
        .verify_spf(SpfParameters::verify_mail_from(ip, c.helo, host, c.sender))
        .await
}

fn summary(dmarc: Option<&DmarcCheck>, spf: Verdict, dkim: &[DkimCheck]) -> Summary {
    if let Some(d) = dmarc.filter(|d| d.policy.is_some()) {
        return match d.result {
            Verdict::Pass => Summary::Pass,
            Verdict::Fail | Verdict::Permerror => Summary::Fail,
            _ => Summary::None,
        };
    }
    let dkim_failed = !dkim.is_empty() && dkim.iter().all(|c| c.result == Verdict::Fail);
    if spf == Verdict::Fail || dkim_failed {
        Summary::Fail
    } else {
        Summary::None
    }
}

fn spf_verdict(r: SpfResult) -> Verdict {
    match r {
        SpfResult::Pass => Verdict::Pass,
        SpfResult::Fail => Verdict::Fail,
        SpfResult::SoftFail => Verdict::Softfail,
        SpfResult::Neutral => Verdict::Neutral,
        SpfResult::TempError => Verdict::Temperror,
        SpfResult::PermError => Verdict::Permerror,
        SpfResult::None => Verdict::None,
    }
}

/// mail-auth calls a body hash that does not match `neutral`; RFC 6376
/// (6.1.3: "body hash did not verify" is PERMFAIL) and RFC 8601 call a
/// signature that does not verify `fail`, and so do we.
fn dkim_verdict(r: &DkimResult) -> Verdict {
    match r {
        DkimResult::Pass => Verdict::Pass,
        DkimResult::Neutral(mail_auth::Error::Dkim(mail_auth::dkim::DkimError::FailedBodyHashMatch)) => Verdict::Fail,
        DkimResult::Neutral(_) => Verdict::Neutral,
        DkimResult::Fail(_) => Verdict::Fail,
        DkimResult::PermError(_) => Verdict::Permerror,
        DkimResult::TempError(_) => Verdict::Temperror,
        DkimResult::None => Verdict::None,
    }
}

fn dmarc_verdict(r: &DmarcResult) -> Verdict {
    match r {
        DmarcResult::Pass => Verdict::Pass,
        DmarcResult::Fail(_) => Verdict::Fail,
        DmarcResult::TempError(_) => Verdict::Temperror,
        DmarcResult::PermError(_) => Verdict::Permerror,
        DmarcResult::None => Verdict::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dmarc(result: Verdict, policy: Option<DmarcPolicy>) -> DmarcCheck {
        DmarcCheck {
            result,
            domain: "example.com".into(),
            policy,
            spf_aligned: false,
            dkim_aligned: false,
            by_arc: None,
        }
    }

    #[test]
    fn only_a_recorded_dmarc_pass_for_the_from_domain_counts() {
        let google = "i=1; mx.google.com;\r\n       dkim=pass header.i=@bank.example;\r\n       \
                      dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=bank.example";
        assert!(recorded_dmarc_pass(google, "bank.example"));
        assert!(recorded_dmarc_pass(google, "BANK.example"));
        assert!(!recorded_dmarc_pass(google, "other.example"));
        assert!(!recorded_dmarc_pass(
            "i=1; mx.example; dmarc=fail header.from=bank.example",
            "bank.example"
        ));
        assert!(!recorded_dmarc_pass(
            "i=1; mx.example; dkim=pass header.from=bank.example",
            "bank.example"
        ));
        assert!(!recorded_dmarc_pass(
            "i=1; mx.example; x-dmarc=pass header.from=bank.example",
            "bank.example"
        ));
    }

    fn dkim(result: Verdict) -> DkimCheck {
        DkimCheck {
            result,
            domain: "example.com".into(),
            selector: "s".into(),
        }
    }

    #[test]
    fn the_summary_follows_dmarc_where_the_domain_has_a_policy() {
        let pass = dmarc(Verdict::Pass, Some(DmarcPolicy::Reject));
        assert_eq!(summary(Some(&pass), Verdict::Fail, &[]), Summary::Pass);
        let fail = dmarc(Verdict::Fail, Some(DmarcPolicy::None));
        assert_eq!(
            summary(Some(&fail), Verdict::Pass, &[dkim(Verdict::Pass)]),
            Summary::Fail
        );
        let temp = dmarc(Verdict::Temperror, Some(DmarcPolicy::Reject));
        assert_eq!(summary(Some(&temp), Verdict::None, &[]), Summary::None);
    }

    #[test]
    fn a_permerror_under_a_stated_policy_is_no_pass() {
        let broken = dmarc(Verdict::Permerror, Some(DmarcPolicy::Reject));
        assert!(broken.spoofs());
        assert_eq!(summary(Some(&broken), Verdict::Pass, &[]), Summary::Fail);
        assert!(!dmarc(Verdict::Permerror, None).spoofs());
        assert!(!dmarc(Verdict::Permerror, Some(DmarcPolicy::None)).spoofs());
        assert!(!dmarc(Verdict::Temperror, Some(DmarcPolicy::Reject)).spoofs());
        assert!(!dmarc(Verdict::Fail, Some(DmarcPolicy::None)).spoofs());
        assert!(dmarc(Verdict::Fail, Some(DmarcPolicy::Quarantine)).spoofs());
    }

    #[test]
    fn a_record_that_does_not_parse_still_states_its_policy() {
        let text = "v=DMARC1; p=reject; adkim=x; rua=mailto:d@bank.example";
        assert_eq!(stated_policy(text, &["p"]), Some(DmarcPolicy::Reject));
        assert_eq!(
            stated_policy("V=DMARC1;SP=Quarantine;p=none", &["sp", "p"]),
            Some(DmarcPolicy::Quarantine)
        );
        assert_eq!(stated_policy("v=DMARC1; p=none", &["sp", "p"]), Some(DmarcPolicy::None));
        assert_eq!(stated_policy("v=spf1 -all", &["p"]), None);
        assert_eq!(stated_policy("v=DMARC1; p=bogus", &["p"]), None);
    }

    #[test]
    fn several_domains_are_judged_together() {
        use Summary::*;
        assert_eq!([Pass, Pass].into_iter().fold(Pass, Summary::and), Pass);
        assert_eq!([Pass, None].into_iter().fold(Pass, Summary::and), None);
        assert_eq!([None, Fail, Pass].into_iter().fold(Pass, Summary::and), Fail);
        let authors = ["a@x.example".to_string(), "b@X.example".into(), "c@y.example".into()];
        assert_eq!(one_per_domain(&authors), ["a@x.example", "c@y.example"]);
        // The check that decided: one that spoofs first, then one that fails.
        let none = dmarc(Verdict::None, Option::None);
        let fails = dmarc(Verdict::Fail, Some(DmarcPolicy::None));
        let spoofs = dmarc(Verdict::Fail, Some(DmarcPolicy::Reject));
        let decided = deciding(vec![none.clone(), fails.clone(), spoofs.clone()], &[None, Fail, Fail]);
        assert_eq!(decided, Some(spoofs));
        assert_eq!(deciding(vec![none.clone(), fails.clone()], &[None, Fail]), Some(fails));
        assert_eq!(deciding(Vec::new(), &[]), Option::None);
    }

    #[test]
    fn without_a_policy_a_failed_spf_or_every_signature_failing_is_a_fail() {
        assert_eq!(summary(None, Verdict::Fail, &[]), Summary::Fail);
        assert_eq!(summary(None, Verdict::None, &[dkim(Verdict::Fail)]), Summary::Fail);
        assert_eq!(
            summary(None, Verdict::None, &[dkim(Verdict::Fail), dkim(Verdict::Pass)]),
            Summary::None
        );
        assert_eq!(summary(None, Verdict::Softfail, &[]), Summary::None);
        assert_eq!(summary(None, Verdict::None, &[]), Summary::None);
    }

    #[test]
    fn a_connection_without_a_client_address_has_no_spf_ip() {
        let envelope = Envelope {
            recipient: Some("me@tom.example".into()),
            sender: Some("a@b.example".into()),
            client_address: None,
            helo: Some("mx.b.example".into()),
        };
        let c = Connection::of(Some(&envelope));
        assert_eq!(c.ip, None);
        assert_eq!(c.spf_domain(), "b.example");
        let bounce = Envelope {
            sender: None,
            ..envelope
        };
        assert_eq!(Connection::of(Some(&bounce)).spf_domain(), "mx.b.example");
        assert_eq!(Connection::of(None).spf_domain(), "");
    }

    #[test]
    fn the_compact_form_keeps_summary_and_spoofed_alone() {
        let full = Authentication {
            summary: Summary::Fail,
            spoofed: true,
            spf: Some(SpfCheck {
                result: Verdict::Fail,
                domain: "b.example".into(),
                client_ip: Some("192.0.2.1".into()),
                helo: None,
            }),
            dkim: Some(vec![]),
            dmarc: Some(dmarc(Verdict::Fail, Some(DmarcPolicy::Reject))),
            arc: None,
            authors: Some(vec!["a@b.example".into(), "c@d.example".into()]),
        };
        assert_eq!(
            serde_json::to_value(full.compact()).unwrap(),
            serde_json::json!({"summary": "fail", "spoofed": true})
        );
    }
}
