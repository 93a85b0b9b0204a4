//! The stack as an operator runs it (`template.yaml`, docs/deploy.md): every
//! function keeps its log for a set time and has an error alarm, every
//! function run by a schedule or an event has a queue its failures land in,
//! with an alarm on its depth, every alarm notifies someone, and the business
//! alarms and the dashboard read the metrics the code emits
//! (`common::metrics::NAMES`).
//!
//! That the functions' metric lines are valid embedded metric format is
//! checked where the functions run under `cargo lambda watch`
//! (`lambda_functions::lambda_functions_answer_the_sample_events`), with
//! [`check_emf`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::lambda_functions::{Node, child, outline, value, workspace};

/// The resources of the template, by logical id.
fn resources(doc: &Node) -> BTreeMap<&str, &Node> {
    child(doc, "Resources")
        .expect("Resources")
        .children
        .iter()
        .map(|r| (r.key.as_str(), r))
        .collect()
}

/// `!Ref X` or `!GetAtt X.Arn` (or `...QueueName`): X.
fn target(reference: &str) -> Option<&str> {
    if let Some(id) = reference.strip_prefix("!Ref ") {
        return Some(id.trim());
    }
    let attribute = reference.strip_prefix("!GetAtt ")?;
    attribute.split('.').next()
}

fn of_type<'a>(all: &BTreeMap<&'a str, &'a Node>, kind: &str) -> Vec<(&'a str, &'a Node)> {
    all.iter()
        .filter(|(_, r)| value(r, &["Type"]) == Some(kind))
        .map(|(id, r)| (*id, *r))
        .collect()
}

/// An alarm's single metric: (namespace, metric name, dimension name -> value).
fn single_metric(alarm: &Node) -> Option<(&str, &str, BTreeMap<&str, &str>)> {
    let properties = child(alarm, "Properties")?;
    let namespace = value(properties, &["Namespace"])?;
    let name = value(properties, &["MetricName"])?;
    let dimensions = child(properties, "Dimensions")
        .map(|d| {
            d.children
                .iter()
                .filter_map(|item| Some((item.value.as_str(), value(item, &["Value"])?)))
                .collect()
        })
        .unwrap_or_default();
    Some((namespace, name, dimensions))
}

/// Every (namespace, metric name) an alarm reads, single or in metric math.
fn metrics_read(node: &Node, found: &mut Vec<(String, String)>) {
    if let (Some(namespace), Some(name)) = (value(node, &["Namespace"]), value(node, &["MetricName"])) {
        found.push((namespace.to_string(), name.to_string()));
    }
    for c in &node.children {
        metrics_read(c, found);
    }
}

const BUSINESS_NAMESPACE: &str = "!Sub mailhost/${AWS::StackName}";

#[test]
fn every_function_keeps_its_log_for_a_set_time_has_an_error_alarm_and_if_run_by_events_a_failure_queue() {
    let text = fs::read_to_string(workspace().join("template.yaml")).expect("template.yaml");
    let doc = outline(&text);
    let all = resources(&doc);
    let alarms = of_type(&all, "AWS::CloudWatch::Alarm");
    let functions = of_type(&all, "AWS::Serverless::Function");
    assert_eq!(functions.len(), crate::lambda_functions::functions().len());

    // The retention is the stack's parameter, 30 days unless set.
    let parameters = child(&doc, "Parameters").expect("Parameters");
    assert_eq!(value(parameters, &["LogRetentionDays", "Default"]), Some("30"));

    for (id, function) in &functions {
        let properties = child(function, "Properties").expect("Properties");
        // Its log group, given to the function, kept LogRetentionDays.
        let group = value(properties, &["LoggingConfig", "LogGroup"])
            .and_then(target)
            .unwrap_or_else(|| panic!("{id} has no LoggingConfig.LogGroup"));
        let log_group = all.get(group).unwrap_or_else(|| panic!("{id}: no resource {group}"));
        assert_eq!(value(log_group, &["Type"]), Some("AWS::Logs::LogGroup"), "{group}");
        assert_eq!(
            value(log_group, &["Properties", "RetentionInDays"]),
            Some("!Ref LogRetentionDays"),
            "{group}"
        );
        assert!(
            value(log_group, &["Properties", "LogGroupName"]).is_some_and(|n| n.contains("${AWS::StackName}")),
            "{group}: a name of this stack's"
        );

        // An alarm on its Lambda errors.
        let errors = alarms.iter().any(|(_, alarm)| {
            single_metric(alarm).is_some_and(|(namespace, name, dimensions)| {
                namespace == "AWS/Lambda"
                    && name == "Errors"
                    && dimensions.get("FunctionName").copied().and_then(target) == Some(id)
            })
        });
        assert!(errors, "{id} has no Errors alarm");

        // Run by a schedule or an event: the asynchronous invocations.
        let events = child(properties, "Events")
            .map(|e| e.children.as_slice())
            .unwrap_or_default();
        let asynchronous: Vec<&Node> = events
            .iter()
            .filter(|e| matches!(value(e, &["Type"]), Some("Schedule" | "EventBridgeRule")))
            .collect();
        if asynchronous.is_empty() {
            assert!(child(properties, "EventInvokeConfig").is_none(), "{id}");
            continue;
        }
        // A failed run goes to its queue, not retried (the next run does the work).
        let invoke = child(properties, "EventInvokeConfig").unwrap_or_else(|| panic!("{id}: no EventInvokeConfig"));
        assert_eq!(value(invoke, &["MaximumRetryAttempts"]), Some("0"), "{id}");
        let on_failure = child(invoke, "DestinationConfig")
            .and_then(|d| child(d, "OnFailure"))
            .unwrap_or_else(|| panic!("{id}: no OnFailure destination"));
        assert_eq!(value(on_failure, &["Type"]), Some("SQS"), "{id}");
        let queue = value(on_failure, &["Destination"])
            .and_then(target)
            .unwrap_or_else(|| panic!("{id}: OnFailure names no queue"));
        assert_eq!(
            all.get(queue).and_then(|q| value(q, &["Type"])),
            Some("AWS::SQS::Queue"),
            "{id}: {queue}"
        );
        // An event EventBridge cannot deliver goes to the same queue.
        for event in &asynchronous {
            let dlq = value(event, &["Properties", "DeadLetterConfig", "Arn"]).and_then(target);
            assert_eq!(dlq, Some(queue), "{id}: event {} has no dead-letter queue", event.key);
        }
        // EventBridge may write to it: a queue policy names each rule.
        let policy = of_type(&all, "AWS::SQS::QueuePolicy")
            .into_iter()
            .find(|(_, p)| {
                child(p, "Properties")
                    .and_then(|p| child(p, "Queues"))
                    .is_some_and(|q| q.value.contains(&format!("!Ref {queue}")))
            })
            .unwrap_or_else(|| panic!("{queue} has no policy"))
            .1;
        let mut policy_text = Vec::new();
        fn flatten(node: &Node, out: &mut Vec<String>) {
            out.push(format!("{} {}", node.key, node.value));
            node.children.iter().for_each(|c| flatten(c, out));
        }
        flatten(policy, &mut policy_text);
        for event in &asynchronous {
            let rule = format!("- !GetAtt {id}{}.Arn ", event.key);
            assert!(policy_text.contains(&rule), "{queue}'s policy does not admit {rule}");
        }
        // And its depth has an alarm.
        let depth = alarms.iter().any(|(_, alarm)| {
            single_metric(alarm).is_some_and(|(namespace, name, dimensions)| {
                namespace == "AWS/SQS"
                    && name == "ApproximateNumberOfMessagesVisible"
                    && dimensions.get("QueueName").copied().and_then(target) == Some(queue)
            })
        });
        assert!(depth, "{queue} has no depth alarm");
    }

    // Every alarm tells the topic, when it fires and when it clears.
    assert!(!alarms.is_empty());
    for (id, alarm) in &alarms {
        for actions in ["AlarmActions", "OKActions"] {
            assert_eq!(
                value(alarm, &["Properties", actions]),
                Some("[!Ref AlarmTopic]"),
                "{id}: {actions}"
            );
        }
        assert!(
            value(alarm, &["Properties", "AlarmDescription"]).is_some_and(|d| d.contains("docs/deploy.md#")),
            "{id}: its description points at what to do"
        );
    }
    assert_eq!(value(all["AlarmTopic"], &["Type"]), Some("AWS::SNS::Topic"));
}

#[test]
fn the_alarms_and_the_dashboard_read_the_metrics_the_code_emits_and_each_alarm_is_explained() {
    let text = fs::read_to_string(workspace().join("template.yaml")).expect("template.yaml");
    let doc = outline(&text);
    let all = resources(&doc);
    let alarms = of_type(&all, "AWS::CloudWatch::Alarm");
    let emitted: BTreeSet<&str> = common::metrics::NAMES.iter().copied().collect();

    let mut alarmed = BTreeSet::new();
    for (id, alarm) in &alarms {
        let mut read = Vec::new();
        metrics_read(alarm, &mut read);
        assert!(!read.is_empty(), "{id} reads no metric");
        for (namespace, name) in read {
            if namespace == BUSINESS_NAMESPACE {
                assert!(
                    emitted.contains(name.as_str()),
                    "{id} reads {name}, which nothing emits"
                );
                alarmed.insert(name);
            }
        }
    }
    // The alarms: inbound stalled, export stale, webhook failures,
    // bounce and complaint rates.
    for name in [
        "InboundPending",
        "InboundFiled",
        "ExportAge",
        "WebhookAttempts",
        "WebhookFailures",
        "SendAccepted",
        "Bounces",
        "Complaints",
    ] {
        assert!(alarmed.contains(name), "no alarm reads {name}");
    }

    // The dashboard shows every emitted metric and every alarm.
    let body = text
        .split("DashboardBody: !Sub >-\n")
        .nth(1)
        .expect("the dashboard's body")
        .split("\n\n")
        .next()
        .unwrap_or_default();
    let json: String = body.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let dashboard: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("dashboard JSON: {e}\n{json}"));
    let widgets = dashboard["widgets"].as_array().expect("widgets");
    for name in &emitted {
        let shown = widgets.iter().any(|w| {
            w["properties"]["metrics"].as_array().is_some_and(|metrics| {
                metrics
                    .iter()
                    .any(|m| m[0] == "mailhost/${AWS::StackName}" && m[1] == *name)
            })
        });
        assert!(shown, "the dashboard does not show {name}");
    }
    let listed: BTreeSet<String> = widgets
        .iter()
        .filter(|w| w["type"] == "alarm")
        .flat_map(|w| w["properties"]["alarms"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    for (id, _) in &alarms {
        assert!(
            listed.contains(&format!("${{{id}.Arn}}")),
            "the dashboard does not list {id}"
        );
    }

    // The deploy guide says what each alarm means: its description's anchor
    // is a heading there.
    let guide = fs::read_to_string(workspace().join("docs/deploy.md")).expect("docs/deploy.md");
    let anchors: BTreeSet<String> = guide
        .lines()
        .filter_map(|l| l.strip_prefix("#### ").or_else(|| l.strip_prefix("### ")))
        .map(|heading| {
            heading
                .to_ascii_lowercase()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == ' ' || *c == '-')
                .collect::<String>()
                .replace(' ', "-")
        })
        .collect();
    for (id, alarm) in &alarms {
        let description = value(alarm, &["Properties", "AlarmDescription"]).unwrap_or_default();
        let anchor = description
            .split("docs/deploy.md#")
            .nth(1)
            .and_then(|rest| rest.split(['"', ' ']).next())
            .unwrap_or_default();
        assert!(
            anchors.contains(anchor),
            "{id}: docs/deploy.md has no heading #{anchor}"
        );
    }
}

/// Validates embedded metric format lines: each against the specification's
/// JSON schema (`tests/fixtures/emf/schema.json`, with `jsonschema` from the
/// venv), and against the rules the schema does not state: every metric and
/// dimension a directive names is a member of the root (a number or up to 100
/// numbers; a string), at most 100 metrics a directive. Answers each line's
/// metric names.
pub(crate) fn check_emf(venv: &Path, lines: &[String]) -> Vec<BTreeSet<String>> {
    let scratch = std::env::temp_dir().join(format!("mailhost-emf-{}.jsonl", std::process::id()));
    fs::write(&scratch, lines.join("\n") + "\n").expect("write the lines");
    let schema = workspace().join("tests/fixtures/emf/schema.json");
    let out = Command::new(venv.join("bin/python"))
        .arg(workspace().join("tests/python/emf_check.py"))
        .arg(&schema)
        .arg(&scratch)
        .output()
        .expect("python");
    let _ = fs::remove_file(&scratch);
    assert!(
        out.status.success(),
        "embedded metric format check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split(',').filter(|n| !n.is_empty()).map(str::to_string).collect())
        .collect()
}

/// The checker itself refuses what the specification refuses, so a line it
/// passes is one CloudWatch would take.
#[test]
fn the_emf_check_refuses_a_line_the_specification_refuses() {
    let Some(venv) = crate::support::standin("MAILHOST_TEST_VENV") else {
        return;
    };
    let venv = Path::new(&venv);
    let good = common::metrics::documents(
        "mailhost/test",
        1_700_000_000_000,
        &[
            common::metrics::count(common::metrics::SEND_ACCEPTED, 1),
            common::metrics::millis(common::metrics::DROP_TO_FILED, [5, 7]),
        ],
    );
    let names = check_emf(venv, &[good[0].to_string()]);
    assert_eq!(
        names,
        [BTreeSet::from([
            "DropToFiledLatency".to_string(),
            "SendAccepted".to_string()
        ])]
    );
    let mut missing_target = good[0].clone();
    missing_target.as_object_mut().unwrap().remove("SendAccepted");
    let mut bad_unit = good[0].clone();
    bad_unit["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = "Requests".into();
    let mut no_timestamp = good[0].clone();
    no_timestamp["_aws"].as_object_mut().unwrap().remove("Timestamp");
    for bad in [missing_target, bad_unit, no_timestamp] {
        let file = std::env::temp_dir().join(format!("mailhost-emf-bad-{}.jsonl", std::process::id()));
        fs::write(&file, format!("{bad}\n")).unwrap();
        let out = Command::new(venv.join("bin/python"))
            .arg(workspace().join("tests/python/emf_check.py"))
            .arg(workspace().join("tests/fixtures/emf/schema.json"))
            .arg(&file)
            .output()
            .expect("python");
        let _ = fs::remove_file(&file);
        assert!(!out.status.success(), "accepted {bad}");
    }
}
