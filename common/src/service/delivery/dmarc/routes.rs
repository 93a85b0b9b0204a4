//! GET /dmarcReports and the summary alone (MCP `get_dmarc_summary`): the
//! reports kept about one domain of the caller's account, newest period
//! first, and what they add up to.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::stored::{Period, StoredReport};
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::delivery::boundary::{Boundary, Envelope};
use crate::service::domains;
use crate::service::mail_store::page_raw;
use crate::values::Page;
use crate::values::{Cursor, DomainName, Limit};

crate::input! {
    /// GET /dmarcReports and get_dmarc_summary.
    pub struct DmarcReportsInput {
        /// The domain's hostname.
        pub domain_id or "domain": DomainName = (error::DOMAIN_ID_REQUIRED, error::DOMAIN_INVALID),
        /// Reports per page, 1 to 50 (default 25).
        pub limit: Option<Limit<50>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
    }
}

/// The most-failing sources a summary names.
pub const TOP_FAILING: usize = 5;

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailingSource {
    pub source_ip: String,
    /// Messages from it that failed DMARC in the listed reports.
    pub messages: u64,
}

/// What the listed reports whose mail proved its reporter add up to
/// (`authenticated`); the others are counted apart.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Authenticated reports counted here.
    pub reports: usize,
    /// Listed reports left out: their mail did not prove the reporter (it
    /// failed or had no DMARC pass for the reporter's domain), so what they
    /// claim is not added up.
    pub unauthenticated: usize,
    /// From the earliest period's begin to the latest period's end; absent
    /// when no report is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    pub messages: u64,
    /// Messages that passed DMARC (aligned DKIM or SPF).
    pub passing: u64,
    pub failing: u64,
    /// The sources with the most failing messages, most first (at most 5).
    pub top_failing_sources: Vec<FailingSource>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DmarcReportsOutput {
    pub ok: bool,
    pub domain: String,
    /// Newest period first.
    pub reports: Vec<StoredReport>,
    /// Over the reports listed here.
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The MCP tool: what each report's author wrote (the reporter's name,
    /// email and report id; each source's header From, DKIM and SPF domains
    /// and selectors) is wrapped in this response's random delimiter (see
    /// notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DmarcSummaryOutput {
    pub ok: bool,
    pub domain: String,
    /// Over the same reports GET /dmarcReports lists with this input.
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The reports about a domain of the caller's account, newest first.
pub async fn list_dmarc_reports(call: &Call<'_>, input: DmarcReportsInput) -> Result<DmarcReportsOutput, ApiError> {
    let (domain, reports, next_cursor) = page(call, input).await?;
    let boundary = Boundary::for_tool(call);
    Ok(DmarcReportsOutput {
        ok: true,
        domain,
        summary: summarize(&reports),
        reports: match &boundary {
            Some(b) => reports.into_iter().map(|r| r.for_agent(b)).collect(),
            None => reports,
        },
        next_cursor,
        envelope: boundary.map(|b| b.describe(None)),
    })
}

/// What one page of reports adds up to, without the reports.
pub async fn get_dmarc_summary(call: &Call<'_>, input: DmarcReportsInput) -> Result<DmarcSummaryOutput, ApiError> {
    let (domain, reports, next_cursor) = page(call, input).await?;
    Ok(DmarcSummaryOutput {
        ok: true,
        domain,
        summary: summarize(&reports),
        next_cursor,
    })
}

async fn page(
    call: &Call<'_>,
    input: DmarcReportsInput,
) -> Result<(String, Vec<StoredReport>, Option<String>), ApiError> {
    // A report is about every mailbox of the domain and mail sent as it from
    // anywhere: a key held to some mailboxes does not read it.
    if call.caller.scope().is_some_and(|s| s.mailboxes.is_some()) {
        return Err(error::DMARC_KEY_MAILBOXES.into());
    }
    let account = call.account().await?;
    let domain = domains::owned(call.ctx, &account, input.domain_id.as_str()).await?;
    let limit = Limit::rows(input.limit, 25);
    let pk = keys::dmarc_reports(&account.uid, &domain.name);
    let Page {
        items,
        next_cursor: next,
    } = page_raw(call.ctx, pk, true, input.cursor.as_deref(), limit).await?;
    let reports = items
        .iter()
        .map(|i| i.record())
        .collect::<Result<Vec<StoredReport>, _>>()?;
    Ok((domain.name, reports, next))
}

/// Totals over the authenticated reports, and the sources failing most.
pub fn summarize(listed: &[StoredReport]) -> Summary {
    let reports: Vec<&StoredReport> = listed.iter().filter(|r| r.authenticated).collect();
    let mut failing_by_ip: HashMap<&str, u64> = HashMap::new();
    for source in reports.iter().flat_map(|r| &r.sources).filter(|s| !s.passes()) {
        *failing_by_ip.entry(source.source_ip.as_str()).or_default() += source.count;
    }
    let mut top: Vec<FailingSource> = failing_by_ip
        .into_iter()
        .map(|(ip, messages)| FailingSource {
            source_ip: ip.to_string(),
            messages,
        })
        .collect();
    top.sort_by(|a, b| b.messages.cmp(&a.messages).then_with(|| a.source_ip.cmp(&b.source_ip)));
    top.truncate(TOP_FAILING);
    let period = (!reports.is_empty()).then(|| Period {
        begin: reports.iter().map(|r| r.period.begin.clone()).min().unwrap_or_default(),
        end: reports.iter().map(|r| r.period.end.clone()).max().unwrap_or_default(),
    });
    Summary {
        reports: reports.len(),
        unauthenticated: listed.len() - reports.len(),
        period,
        messages: reports.iter().map(|r| r.messages).sum(),
        passing: reports.iter().map(|r| r.passing).sum(),
        failing: reports.iter().map(|r| r.failing).sum(),
        top_failing_sources: top,
    }
}
