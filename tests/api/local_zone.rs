//! The local server's own DNS zone (src/local_zone.rs): a domain under a
//! reserved name verifies through a real DNS query against records the zone
//! really serves, and only such a domain; every other name is the system
//! resolver's.

use serde_json::json;

use crate::support::{Auth, Backend, TestApp};
use common::dns::{Dns, Lookup};
use mailhost::local_zone::LocalZone;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_domain_verifies_against_the_records_the_zone_serves() {
    let zone = LocalZone::start(std::net::Ipv4Addr::LOCALHOST.into()).await.unwrap();
    let addr = zone.addr.to_string();
    let Some(app) = TestApp::spawn_with(Backend::Embedded, |config| config.dns_server = Some(addr)).await else {
        return;
    };
    let dns = Dns::new(Some(&zone.addr.to_string())).unwrap();
    // Before it has the store, the zone knows nothing: a transient failure.
    assert!(dns.mx("example.test").await.is_transient());
    zone.serve(app.ctx.clone());
    assert_eq!(dns.mx("example.test").await, Lookup::Missing, "no account holds it yet");

    let key = app.onboard("you@example.test").await;
    let added = app
        .post("/addDomain", Auth::Bearer(&key), json!({ "domain": "example.test" }))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    // addDomain's own check already found what the zone publishes.
    assert_eq!(added.body["domain"]["status"], "verified", "{}", added.body);
    let records = added.body["domain"]["dnsInstructions"]["records"]
        .as_array()
        .unwrap()
        .clone();

    // What a resolver reads is what the owner was told to publish.
    assert_eq!(
        dns.mx("Example.TEST.").await,
        Lookup::Found(vec![(10, "mx.svc.test".into())])
    );
    for record in records.iter().filter(|r| r["type"] == "TXT") {
        let host = record["host"].as_str().unwrap();
        let Lookup::Found(found) = dns.txt(host).await else {
            panic!("{host} has no TXT record");
        };
        assert!(
            found.iter().any(|t| t == record["value"].as_str().unwrap()),
            "{host}: {found:?}"
        );
    }
    let verified = app
        .post(
            "/verifyDomain",
            Auth::Bearer(&key),
            json!({ "domainId": "example.test" }),
        )
        .await;
    assert_eq!(verified.body["domain"]["status"], "verified", "{}", verified.body);
    assert_eq!(verified.body["checks"]["dmarc"], true, "{}", verified.body);

    // A name no account holds under a reserved name does not exist, and a
    // .localhost name is the loopback (RFC 6761).
    assert_eq!(dns.txt("other.test").await, Lookup::Missing);
    assert_eq!(
        dns.ips("mx.mailhost.localhost").await,
        Lookup::Found(vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()])
    );
}

#[test]
fn only_reserved_names_are_answered_from_the_store() {
    for name in [
        "example.test",
        "MAIL._domainkey.Example.TEST.",
        "mx.mailhost.localhost",
        "a.example",
        "x.invalid",
    ] {
        assert!(mailhost::local_zone::reserved(name), "{name}");
    }
    for name in ["example.com", "test.com", "localhost.example.com", "testing"] {
        assert!(!mailhost::local_zone::reserved(name), "{name}");
    }
}
