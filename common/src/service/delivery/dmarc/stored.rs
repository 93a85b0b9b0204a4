//! One aggregate report as it is kept and shown: who sent it, the period it
//! covers, and one row per source the reporter saw sending as the domain.

use mail_auth::report::{ActionDisposition, DkimResult, DmarcResult, Record, Report, SpfResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::iso_epoch;
use crate::mail::authenticate::{Authentication, Summary};
use crate::service::delivery::boundary::Boundary;

/// The most source rows kept of one report: the busiest are kept (a row is
/// a few hundred bytes, and a stored item holds at most 400 KB).
pub const MAX_SOURCES: usize = 500;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reporter {
    /// The reporting organisation, such as google.com.
    pub org_name: String,
    pub email: String,
    pub report_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Period {
    /// ISO 8601, UTC.
    pub begin: String,
    pub end: String,
}

/// One DKIM signature the reporter checked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DkimCheck {
    pub domain: String,
    pub selector: String,
    /// pass, fail, none, policy, neutral, temperror or permerror.
    pub result: String,
}

/// One SPF check the reporter made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SpfCheck {
    pub domain: String,
    /// pass, fail, softfail, neutral, none, temperror or permerror.
    pub result: String,
}

/// One row of a report: mail from one source IP with one outcome.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub source_ip: String,
    /// Messages from this source with this outcome.
    pub count: u64,
    /// What the receiver did: none, quarantine or reject.
    pub disposition: String,
    /// DKIM as DMARC judged it (aligned with the From domain): pass or fail.
    pub dkim: String,
    /// SPF as DMARC judged it (aligned with the From domain): pass or fail.
    pub spf: String,
    pub header_from: String,
    pub dkim_results: Vec<DkimCheck>,
    pub spf_results: Vec<SpfCheck>,
}

impl Source {
    /// DMARC passes when either aligned check passes.
    pub fn passes(&self) -> bool {
        self.dkim == "pass" || self.spf == "pass"
    }
}

/// The mail a report came in, as this service judged it on arrival: a
/// stranger can mail anything to the report address, in anyone's name.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportMail {
    /// The address its From header names (the first, when it names several).
    pub from: String,
    /// Its verdicts: `summary` (pass, fail or none) and `spoofed`.
    pub authentication: Authentication,
}

impl ReportMail {
    /// Whether the mail proves its reporter: it passed DMARC for its From
    /// domain, and the report's own `email` is on that domain (or a parent or
    /// subdomain of it). Only such reports count in a summary.
    pub fn vouches_for(&self, reporter_email: &str) -> bool {
        let domain = |address: &str| address.rsplit_once('@').map(|(_, d)| d.trim().to_lowercase());
        let (Some(from), Some(reporter)) = (domain(&self.from), domain(reporter_email)) else {
            return false;
        };
        let related = |a: &str, b: &str| a == b || a.ends_with(&format!(".{b}"));
        self.authentication.summary == Summary::Pass
            && !self.authentication.spoofed
            && !from.is_empty()
            && (related(&from, &reporter) || related(&reporter, &from))
    }
}

/// A report as stored (and listed, without the key fields).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredReport {
    /// The report's id in this API (its sort key; a cursor to page from).
    pub id: String,
    /// The customer domain it was attributed to.
    pub domain: String,
    /// The domain the report is about (that domain or one of its subdomains).
    pub policy_domain: String,
    /// The policy the domain published, as the reporter saw it: none,
    /// quarantine or reject.
    pub policy: String,
    pub reporter: Reporter,
    pub period: Period,
    /// Messages in the whole report, and how many passed or failed DMARC.
    pub messages: u64,
    pub passing: u64,
    pub failing: u64,
    /// The busiest sources first.
    pub sources: Vec<Source>,
    /// Sources left out past the first [`MAX_SOURCES`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sources_omitted: usize,
    pub received_at: String,
    /// The mail it came in and its verdicts; absent on reports kept before
    /// they were judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<ReportMail>,
    /// Its mail passed DMARC for the reporter's own domain (see `mail`): only
    /// authenticated reports count in a summary; the others are listed, and
    /// counted apart.
    #[serde(default)]
    pub authenticated: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl StoredReport {
    /// The stored form of a parsed report, attributed to `domain`, that
    /// came in `mail`.
    pub fn from_report(report: &Report, domain: &str, received_at: String, mail: ReportMail) -> StoredReport {
        let mut sources: Vec<Source> = report.records().iter().map(source).collect();
        let messages = sources.iter().map(|s| s.count).sum();
        let passing = sources.iter().filter(|s| s.passes()).map(|s| s.count).sum();
        sources.sort_by_key(|s| std::cmp::Reverse(s.count));
        let sources_omitted = sources.len().saturating_sub(MAX_SOURCES);
        sources.truncate(MAX_SOURCES);
        let reporter = Reporter {
            org_name: short(report.org_name()),
            email: short(report.email()),
            report_id: short(report.report_id()),
        };
        let authenticated = mail.vouches_for(report.email());
        StoredReport {
            id: sort_key(report.date_range_end(), &reporter),
            domain: domain.to_string(),
            policy_domain: policy_domain(report),
            policy: format!("{:?}", report.p()).to_ascii_lowercase(),
            period: Period {
                begin: iso_epoch(clamp(report.date_range_begin())),
                end: iso_epoch(clamp(report.date_range_end())),
            },
            reporter,
            messages,
            passing,
            failing: messages - passing,
            sources,
            sources_omitted,
            received_at,
            mail: Some(ReportMail {
                authentication: mail.authentication.compact(),
                ..mail
            }),
            authenticated,
        }
    }
}

impl StoredReport {
    /// The report with what its author wrote inside `boundary`'s envelope.
    pub fn for_agent(self, boundary: &Boundary) -> StoredReport {
        let wrap = |text: &str| boundary.wrap(text);
        StoredReport {
            reporter: Reporter {
                org_name: wrap(&self.reporter.org_name),
                email: wrap(&self.reporter.email),
                report_id: wrap(&self.reporter.report_id),
            },
            sources: self
                .sources
                .into_iter()
                .map(|s| Source {
                    header_from: wrap(&s.header_from),
                    dkim_results: s
                        .dkim_results
                        .into_iter()
                        .map(|d| DkimCheck {
                            domain: wrap(&d.domain),
                            selector: wrap(&d.selector),
                            ..d
                        })
                        .collect(),
                    spf_results: s
                        .spf_results
                        .into_iter()
                        .map(|c| SpfCheck {
                            domain: wrap(&c.domain),
                            ..c
                        })
                        .collect(),
                    ..s
                })
                .collect(),
            ..self
        }
    }
}

/// A reporter's text, trimmed and cut to a length worth showing.
fn short(text: &str) -> String {
    text.trim().chars().take(256).collect()
}

/// The domain a report is about, lower case, without a trailing dot.
pub fn policy_domain(report: &Report) -> String {
    report.domain().trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Newest period last in key order (the list reads backwards); one reporter's
/// one report id always lands on one key.
fn sort_key(end: u64, reporter: &Reporter) -> String {
    let digest = Sha256::digest(format!("{}\n{}", reporter.org_name, reporter.report_id));
    format!("{:011}-{}", clamp(end), &hex::encode(digest)[..16])
}

/// A period bound as epoch seconds a date can hold (a report may say anything).
fn clamp(secs: u64) -> i64 {
    secs.min(99_999_999_999) as i64
}

fn source(record: &Record) -> Source {
    Source {
        source_ip: record.source_ip().map(|ip| ip.to_string()).unwrap_or_default(),
        count: u64::from(record.count()),
        disposition: disposition(record.action_disposition()).into(),
        dkim: dmarc(record.dmarc_dkim_result()).into(),
        spf: dmarc(record.dmarc_spf_result()).into(),
        header_from: short(record.header_from()).to_ascii_lowercase(),
        dkim_results: record
            .dkim_auth_result()
            .iter()
            .map(|r| DkimCheck {
                domain: short(r.domain()).to_ascii_lowercase(),
                selector: short(r.selector()),
                result: dkim(r.result()).into(),
            })
            .collect(),
        spf_results: record
            .spf_auth_result()
            .iter()
            .map(|r| SpfCheck {
                domain: short(r.domain()).to_ascii_lowercase(),
                result: spf(r.result()).into(),
            })
            .collect(),
    }
}

fn disposition(d: ActionDisposition) -> &'static str {
    match d {
        ActionDisposition::None | ActionDisposition::Pass => "none",
        ActionDisposition::Quarantine => "quarantine",
        ActionDisposition::Reject => "reject",
        ActionDisposition::Unspecified => "unspecified",
    }
}

fn dmarc(r: DmarcResult) -> &'static str {
    match r {
        DmarcResult::Pass => "pass",
        DmarcResult::Fail => "fail",
        DmarcResult::Unspecified => "unspecified",
    }
}

fn dkim(r: DkimResult) -> &'static str {
    match r {
        DkimResult::None => "none",
        DkimResult::Pass => "pass",
        DkimResult::Fail => "fail",
        DkimResult::Policy => "policy",
        DkimResult::Neutral => "neutral",
        DkimResult::TempError => "temperror",
        DkimResult::PermError => "permerror",
    }
}

fn spf(r: SpfResult) -> &'static str {
    match r {
        SpfResult::None => "none",
        SpfResult::Neutral => "neutral",
        SpfResult::Pass => "pass",
        SpfResult::Fail => "fail",
        SpfResult::SoftFail => "softfail",
        SpfResult::TempError => "temperror",
        SpfResult::PermError => "permerror",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(from: &str, summary: Summary, spoofed: bool) -> ReportMail {
        ReportMail {
            from: from.into(),
            authentication: Authentication {
                summary,
                spoofed,
                spf: None,
                dkim: None,
                dmarc: None,
                arc: None,
                authors: None,
            },
        }
    }

    #[test]
    fn only_a_passing_mail_from_the_reporters_own_domain_vouches_for_it() {
        let google = "noreply-dmarc-support@google.com";
        assert!(mail(google, Summary::Pass, false).vouches_for(google));
        assert!(mail("dmarc@reports.google.com", Summary::Pass, false).vouches_for(google));
        assert!(mail(google, Summary::Pass, false).vouches_for("dmarc@reports.google.com"));
        // Not proven, failing, or proving another domain.
        assert!(!mail(google, Summary::None, false).vouches_for(google));
        assert!(!mail(google, Summary::Fail, true).vouches_for(google));
        assert!(!mail("x@attacker.test", Summary::Pass, false).vouches_for(google));
        assert!(!mail("x@notgoogle.com", Summary::Pass, false).vouches_for(google));
        assert!(!mail("", Summary::Pass, false).vouches_for(google));
        assert!(!mail(google, Summary::Pass, false).vouches_for("Google Inc."));
    }
}
