//! The scheduled jobs, declared once: each job's name (its Lambda function,
//! `functions/<name>`), how often it runs, and what one run does and answers.
//!
//! Three readers take the list as it is: the local server (`src/lib.rs`) runs
//! every job each `--poll-interval` seconds, in list order (the poller also
//! on its quick local tick); `lambda::schedule` serves one job as a
//! scheduled Lambda function (`functions/mta-export`, `functions/poller`); and
//! the Lambda test (`tests/api/lambda_functions.rs`) invokes each job's
//! function with a scheduled event and checks that `template.yaml` gives it
//! its schedule and no route. A new job is declared here, gets its function
//! and its `events/<name>/scheduled.json`, and is tested by being declared.

use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::time::Duration;

use crate::context::Context;
use crate::error::ApiError;
use crate::service::{domains::recheck, operators::mta_export, receiving::poller, sending::pending};

/// How often a job runs: an EventBridge `rate(...)` in AWS, in whole minutes
/// (EventBridge's smallest rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
}

impl Schedule {
    pub const fn every_minutes(minutes: u64) -> Schedule {
        Schedule { minutes }
    }

    pub fn period(self) -> Duration {
        Duration::from_secs(60 * self.minutes)
    }

    /// The schedule expression `template.yaml` gives the job's function:
    /// `rate(1 minute)`, `rate(5 minutes)`.
    pub fn rate(self) -> String {
        let unit = if self.minutes == 1 { "minute" } else { "minutes" };
        format!("rate({} {unit})", self.minutes)
    }
}

/// One run of a job for the event that started it (EventBridge's, in AWS;
/// `Value::Null` for the local server's timer): its summary (what the
/// scheduled function returns and the log shows), or why it failed.
pub type Run = for<'a> fn(&'a Context, &'a Value) -> BoxFuture<'a, Result<Value, ApiError>>;

pub struct Job {
    /// Its Lambda function and binary (`functions/<name>`), and its name in logs.
    pub name: &'static str,
    pub schedule: Schedule,
    pub run: Run,
    /// Its function's first run in each Lambda container runs
    /// `service::bootstrap::run` first (the one function allowed to create the
    /// service domain's DKIM secret). The local server bootstraps at start.
    pub bootstraps: bool,
}

/// The inbound poller: files what the mail host dropped under
/// `inbound/pending/`. The schedule is a safety net: in AWS each message's
/// object-created event runs it too, and locally its quick tick
/// (`--inbound-poll-ms`).
pub const POLLER: Job = Job {
    name: "poller",
    schedule: Schedule::every_minutes(1),
    run: run_poller,
    bootstraps: false,
};

/// The mail host's mailbox export, then the daily MX look at the verified
/// domains it carried.
pub const MTA_EXPORT: Job = Job {
    name: "mta-export",
    schedule: Schedule::every_minutes(1),
    run: run_mta_export,
    bootstraps: true,
};

/// The scheduled sends that are due (`sendAt`, `undoSeconds`, a hold
/// approved before its time), each sent once. A send is due to the minute
/// in AWS; locally each `--poll-interval`.
pub const SCHEDULED_SENDS: Job = Job {
    name: "scheduled-sends",
    schedule: Schedule::every_minutes(1),
    run: run_scheduled_sends,
    bootstraps: false,
};

/// Every scheduled job, in the order the local server runs them.
pub const JOBS: &[Job] = &[POLLER, MTA_EXPORT, SCHEDULED_SENDS];

fn run_scheduled_sends<'a>(ctx: &'a Context, _: &'a Value) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move { serde_json::to_value(pending::run_due(ctx).await?).map_err(ApiError::internal) })
}

/// An object-created event files its one file; a schedule's runs over the spool.
fn run_poller<'a>(ctx: &'a Context, event: &'a Value) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let outcome = poller::run_for_event(ctx, event).await?;
        Ok(json!({
            "filed": outcome.filed,
            "duplicates": outcome.duplicates,
            "failed": outcome.failed,
            "pending": outcome.pending,
        }))
    })
}

fn run_mta_export<'a>(ctx: &'a Context, _: &'a Value) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let outcome = mta_export::run_once(ctx).await?;
        // A domain dropped now leaves the next minute's export.
        let looked = recheck::run_once(ctx, &outcome.routed).await?;
        Ok(json!({
            "version": outcome.version,
            "mailboxes": outcome.mailboxes,
            "mxLooked": looked.looked,
            "dropped": looked.dropped,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_reads_as_eventbridge_writes_it() {
        assert_eq!(Schedule::every_minutes(1).rate(), "rate(1 minute)");
        assert_eq!(Schedule::every_minutes(5).rate(), "rate(5 minutes)");
        assert_eq!(Schedule::every_minutes(2).period(), Duration::from_secs(120));
    }

    #[test]
    fn each_job_is_named_once() {
        let mut names: Vec<&str> = JOBS.iter().map(|j| j.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), JOBS.len());
    }
}
