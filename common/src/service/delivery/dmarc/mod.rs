//! DMARC aggregate reports (RFC 7489 section 7.2): the DNS instructions ask
//! each customer domain to send them to `dmarc@<service domain>`.
//!
//! The files: `intake` (the poller hands it every message to that address:
//! read, bounded, attributed to a customer domain and kept 180 days with
//! its mail's own verdicts, or dropped and counted), `stored` (a report as kept and shown) and `routes`
//! (GET /dmarcReports and the summary alone).
//!
//! Items (see `keys`): `DMARC#<uid>#<domain>/<end>-<digest>` one report,
//! `DMARC#dropped/C` the count of reports about domains not on the service.

mod intake;
mod routes;
mod stored;

pub use intake::{Intake, KEPT_DAYS, LOCAL_PART, MAX_MESSAGE, MAX_UNPACKED, addressed_to_us, consume};
pub use routes::{
    DmarcReportsInput, DmarcReportsOutput, DmarcSummaryOutput, FailingSource, Summary, get_dmarc_summary,
    list_dmarc_reports, summarize,
};
pub use stored::{DkimCheck, MAX_SOURCES, Period, ReportMail, Reporter, Source, SpfCheck, StoredReport};
