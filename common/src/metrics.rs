//! Business metrics in CloudWatch's embedded metric format (EMF): under
//! Lambda each record is one JSON line on stdout with an `_aws` member, which
//! CloudWatch Logs turns into metrics as it ingests the function's log. No
//! API call of ours publishes them (never PutMetricData): a record costs a
//! `write` of a few hundred bytes, and nothing waits on CloudWatch.
//!
//! Locally there is no CloudWatch: a record is a debug-level log line
//! (`RUST_LOG=debug` shows it in a debug build), so the readable log is not
//! filled with JSON, and a release build, whose debug lines are compiled out,
//! does nothing (docs/decisions.md, Operations).
//!
//! Each named event is counted where it happens, once: a send's recipients in
//! `delivery::dispatch`, the spool in `poller::run_once`, each webhook attempt
//! in `webhooks::deliver`, a bounce or complaint in `delivery::apply`, the
//! export's age in `mta_export::run_once` and its acknowledgement in
//! `mta_export::acknowledge`. `template.yaml`'s alarms and dashboard read the
//! same names in the namespace `MAILHOST_METRICS_NAMESPACE` (the template sets
//! `mailhost/<stack name>`), with no dimension: one stack, one series each.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use crate::context::Context;

/// Recipients the relay accepted (simulator recipients are not counted).
pub const SEND_ACCEPTED: &str = "SendAccepted";
/// Recipients the relay refused, or that had no relay to go to.
pub const SEND_FAILED: &str = "SendFailed";
/// Files waiting in the inbound spool when a poller run starts: mail arriving
/// (or stuck).
pub const INBOUND_PENDING: &str = "InboundPending";
/// Spool files filed (and set aside): mail copies, reports applied.
pub const INBOUND_FILED: &str = "InboundFiled";
/// Spool files refused (moved to `inbound/failed/` with a reason).
pub const INBOUND_FAILED: &str = "InboundFailed";
/// From a file's drop in the spool (the time in its name) to its filing.
pub const DROP_TO_FILED: &str = "DropToFiledLatency";
/// Webhook POSTs tried, and those that got no 2xx (or whose URL was refused).
pub const WEBHOOK_ATTEMPTS: &str = "WebhookAttempts";
pub const WEBHOOK_FAILURES: &str = "WebhookFailures";
/// Seconds since the mail host last acknowledged an export (since the first
/// export while none was ever acknowledged); every mta-export run.
pub const EXPORT_AGE: &str = "ExportAge";
/// Acknowledgements received from the mail host.
pub const EXPORT_ACKNOWLEDGED: &str = "ExportAcknowledged";
/// Recipients that moved to bounced, or complained (simulator ones excepted).
pub const BOUNCES: &str = "Bounces";
pub const COMPLAINTS: &str = "Complaints";

/// Every metric name, for the tests that hold the template to them.
pub const NAMES: &[&str] = &[
    SEND_ACCEPTED,
    SEND_FAILED,
    INBOUND_PENDING,
    INBOUND_FILED,
    INBOUND_FAILED,
    DROP_TO_FILED,
    WEBHOOK_ATTEMPTS,
    WEBHOOK_FAILURES,
    EXPORT_AGE,
    EXPORT_ACKNOWLEDGED,
    BOUNCES,
    COMPLAINTS,
];

/// EMF allows at most 100 values in one metric's array.
const MAX_VALUES: usize = 100;

static EMF: AtomicBool = AtomicBool::new(false);

/// Records go to stdout as EMF from now on (a Lambda function's start).
pub(crate) fn write_emf() {
    EMF.store(true, Ordering::Relaxed);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }
}

/// Values of one named metric in a record.
#[derive(Debug, Clone)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
    pub values: Vec<f64>,
}

pub fn count(name: &'static str, n: usize) -> Metric {
    Metric {
        name,
        unit: Unit::Count,
        values: vec![n as f64],
    }
}

pub fn seconds(name: &'static str, secs: i64) -> Metric {
    Metric {
        name,
        unit: Unit::Seconds,
        values: vec![secs.max(0) as f64],
    }
}

/// Several observations at once (EMF sends each as a value of its own, so
/// percentiles stay right).
pub fn millis(name: &'static str, values: impl IntoIterator<Item = i64>) -> Metric {
    Metric {
        name,
        unit: Unit::Milliseconds,
        values: values.into_iter().map(|v| v.max(0) as f64).collect(),
    }
}

/// Records the metrics: under Lambda one EMF line each (more when a metric
/// has over 100 values), locally a debug line.
pub fn emit(ctx: &Context, metrics: &[Metric]) {
    let emf = EMF.load(Ordering::Relaxed);
    // Locally, with debug lines off (always in a release build), nothing is built.
    if !emf && !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let at = chrono::Utc::now().timestamp_millis();
    for record in documents(&ctx.config.metrics_namespace, at, metrics) {
        let line = record.to_string();
        if emf {
            // One write of the whole line, so no other log line lands inside it.
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(format!("{line}\n").as_bytes());
            let _ = out.flush();
        } else {
            tracing::debug!(metrics = %line, "metrics");
        }
    }
}

/// The EMF documents of one record: the first carries every metric's first
/// 100 values; a metric with more goes on in further documents. A metric with
/// no value is left out (an empty array is not a metric value).
pub fn documents(namespace: &str, at_ms: i64, metrics: &[Metric]) -> Vec<Value> {
    let mut documents = Vec::new();
    for chunk in 0.. {
        let mut root = Map::new();
        let mut definitions = Vec::new();
        for metric in metrics {
            let values = metric.values.chunks(MAX_VALUES).nth(chunk).unwrap_or_default();
            let value = match values {
                [] => continue,
                [one] => json!(one),
                many => json!(many),
            };
            definitions.push(json!({ "Name": metric.name, "Unit": metric.unit.name() }));
            root.insert(metric.name.to_string(), value);
        }
        if definitions.is_empty() {
            break;
        }
        root.insert(
            "_aws".into(),
            json!({
                "Timestamp": at_ms,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    // No dimension: each metric is the stack's one series.
                    "Dimensions": [[]],
                    "Metrics": definitions,
                }],
            }),
        );
        documents.push(Value::Object(root));
    }
    documents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_each_metric_once_beside_its_value() {
        let docs = documents(
            "mailhost/test",
            1_700_000_000_000,
            &[
                count(SEND_ACCEPTED, 2),
                count(SEND_FAILED, 0),
                millis(DROP_TO_FILED, []),
            ],
        );
        assert_eq!(docs.len(), 1);
        let doc = &docs[0];
        assert_eq!(doc[SEND_ACCEPTED], 2.0);
        assert_eq!(doc[SEND_FAILED], 0.0);
        assert!(doc.get(DROP_TO_FILED).is_none(), "no value, no metric: {doc}");
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "mailhost/test");
        assert_eq!(directive["Dimensions"], json!([[]]));
        assert_eq!(
            directive["Metrics"],
            json!([{"Name": "SendAccepted", "Unit": "Count"}, {"Name": "SendFailed", "Unit": "Count"}])
        );
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000_i64);
    }

    #[test]
    fn more_than_a_hundred_values_go_on_in_another_document() {
        let docs = documents("n", 1, &[count(INBOUND_FILED, 250), millis(DROP_TO_FILED, 0..250)]);
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0][DROP_TO_FILED].as_array().unwrap().len(), 100);
        assert_eq!(docs[0][INBOUND_FILED], 250.0);
        assert!(docs[1].get(INBOUND_FILED).is_none());
        assert_eq!(docs[2][DROP_TO_FILED].as_array().unwrap().len(), 50);
        let names: Vec<_> = docs[2]["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].clone())
            .collect();
        assert_eq!(names, [json!(DROP_TO_FILED)]);
    }
}
