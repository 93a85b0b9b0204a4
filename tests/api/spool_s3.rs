//! The inbound spool as deployed: an S3 bucket with versioning on (moto
//! here, which `scripts/test` points the AWS SDK at). Filing a dropped file
//! writes no copy of it: the file is deleted, and its message's row names
//! the version the delete keeps, which a spam report's lesson reads back. An
//! object-created event files the one file it names and lists nothing; the
//! schedule's run lists the spool. A bucket without versions gets the file
//! system's move to `inbound/done/`.

use crate::support::{Auth, Backend, SYNC_TOKEN, TestApp};
use base64::Engine;
use common::mail::inbound::{DONE, Envelope, PENDING, drop_raw};
use common::service::receiving::poller;
use serde_json::{Value, json};

on_both_stores!(
    a_filed_file_is_deleted_and_its_kept_version_is_what_a_lesson_reads,
    a_bucket_without_versions_moves_filed_files_to_done,
);

const TO: &str = "me@tom.example";

fn s3(endpoint: &str) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::new()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .force_path_style(true)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "static",
        ))
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// A service whose blobs are a fresh bucket in moto (with versioning on, or
/// never turned on), and an S3 client of the test's own; `None` without moto.
async fn app_on_bucket(backend: Backend, versioned: bool) -> Option<(TestApp, aws_sdk_s3::Client, String)> {
    let moto = crate::support::standin("MAILHOST_TEST_MOTO_ENDPOINT")?;
    assert_eq!(
        std::env::var("AWS_ENDPOINT_URL").ok().as_deref(),
        Some(moto.as_str()),
        "AWS_ENDPOINT_URL must point at moto (scripts/test sets it; DynamoDB has its own)"
    );
    let client = s3(&moto);
    let bucket = format!("spool-{:016x}", rand::random::<u64>());
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    if versioned {
        let enabled = aws_sdk_s3::types::VersioningConfiguration::builder()
            .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
            .build();
        client
            .put_bucket_versioning()
            .bucket(&bucket)
            .versioning_configuration(enabled)
            .send()
            .await
            .unwrap();
    }
    let named = bucket.clone();
    let app = TestApp::spawn_with(backend, move |config| config.bucket = Some(named)).await?;
    Some((app, client, bucket))
}

/// A letter to [`TO`] as the mail host drops it, its envelope line first.
fn letter(n: u32) -> (Vec<u8>, Vec<u8>) {
    let body = format!(
        "From: ann@example.org\r\nTo: {TO}\r\nSubject: Letter {n}\r\nMessage-ID: <letter-{n}@example.org>\r\n\
         Date: Mon, 07 Dec 2026 10:00:00 +0000\r\n\r\nHello {n}.\r\n"
    )
    .into_bytes();
    let envelope = Envelope {
        recipient: Some(TO.into()),
        sender: Some("ann@example.org".into()),
        ..Default::default()
    };
    (envelope.prepend(&body), body)
}

/// The event S3 sends EventBridge for a new object (events/poller/object-created.json's shape).
fn object_created(bucket: &str, key: &str) -> Value {
    json!({
        "version": "0",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "detail": {"bucket": {"name": bucket}, "object": {"key": key}, "reason": "PutObject"}
    })
}

fn scheduled() -> Value {
    json!({"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}})
}

/// Reports the one message of `subject` as spam and answers the message its
/// lesson hands the mail host (decoded).
async fn lesson_of(app: &TestApp, key: &str, subject: &str) -> Vec<u8> {
    let listed = app.get("/inbox", Auth::Bearer(key)).await.body;
    let row = listed["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subject"] == subject)
        .unwrap_or_else(|| panic!("{subject} listed: {listed}"))
        .clone();
    let reported = app
        .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "spam": true}))
        .await;
    assert_eq!(reported.status, 200, "{}", reported.body);
    let lessons = app.get("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN)).await.body;
    let jobs = lessons["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{lessons}");
    let message = jobs[0]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("the lesson carries the received file: {lessons}"));
    base64::engine::general_purpose::STANDARD.decode(message).unwrap()
}

async fn a_filed_file_is_deleted_and_its_kept_version_is_what_a_lesson_reads(backend: Backend) {
    let Some((app, s3, bucket)) = app_on_bucket(backend, true).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let (first, first_body) = letter(1);
    let first = drop_raw(&*app.ctx.blobs, first).await.unwrap();
    let second = drop_raw(&*app.ctx.blobs, letter(2).0).await.unwrap();

    // The event's run files its file and reads no other: the second waits.
    let outcome = poller::run_for_event(&app.ctx, &object_created(&bucket, &first))
        .await
        .unwrap();
    assert_eq!(
        (outcome.filed, outcome.failed, outcome.pending),
        (1, 0, 0),
        "{outcome:?}"
    );
    assert_eq!(app.ctx.blobs.list(PENDING).await.unwrap(), vec![second.clone()]);

    // No copy: nothing under done/; the file's versions are its drop and the
    // delete's marker over it.
    assert!(app.ctx.blobs.list(DONE).await.unwrap().is_empty());
    let versions = s3
        .list_object_versions()
        .bucket(&bucket)
        .prefix(&first)
        .send()
        .await
        .unwrap();
    assert_eq!(versions.versions().len(), 1, "{versions:?}");
    assert_eq!(versions.delete_markers().len(), 1, "{versions:?}");
    assert_eq!(versions.delete_markers()[0].is_latest(), Some(true), "{versions:?}");

    // The row names that version: a spam report's lesson is the message as
    // received (without the mail host's envelope line).
    assert_eq!(
        String::from_utf8(lesson_of(&app, &key, "Letter 1").await).unwrap(),
        String::from_utf8(first_body).unwrap()
    );

    // Any other event runs over the spool: the second is filed.
    let outcome = poller::run_for_event(&app.ctx, &scheduled()).await.unwrap();
    assert_eq!((outcome.filed, outcome.failed), (1, 0), "{outcome:?}");
    assert!(app.ctx.blobs.list(PENDING).await.unwrap().is_empty());

    // An event for a file already filed (S3 delivers events at least once)
    // files nothing again.
    let outcome = poller::run_for_event(&app.ctx, &object_created(&bucket, &first))
        .await
        .unwrap();
    assert_eq!((outcome.filed, outcome.duplicates), (0, 0), "{outcome:?}");
}

async fn a_bucket_without_versions_moves_filed_files_to_done(backend: Backend) {
    let Some((app, _, bucket)) = app_on_bucket(backend, false).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let (raw, body) = letter(3);
    let dropped = drop_raw(&*app.ctx.blobs, raw).await.unwrap();
    let outcome = poller::run_for_event(&app.ctx, &object_created(&bucket, &dropped))
        .await
        .unwrap();
    assert_eq!(outcome.filed, 1, "{outcome:?}");
    assert!(app.ctx.blobs.list(PENDING).await.unwrap().is_empty());
    let name = &dropped[PENDING.len()..];
    assert_eq!(app.ctx.blobs.list(DONE).await.unwrap(), vec![format!("{DONE}{name}")]);
    assert_eq!(
        String::from_utf8(lesson_of(&app, &key, "Letter 3").await).unwrap(),
        String::from_utf8(body).unwrap()
    );
}
