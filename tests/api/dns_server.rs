//! `common::dns` against a real DNS server on 127.0.0.1 (the test support's TestDns).

use std::time::{Duration, Instant};

use crate::support::dns::TestDns;
use common::dns::{Dns, Lookup};

async fn setup() -> (TestDns, Dns) {
    let server = TestDns::start().await;
    let client = Dns::new(Some(&server.addr.to_string())).expect("a resolver for the test server");
    (server, client)
}

fn dkim_key() -> String {
    // As long as a real 2048-bit DKIM record: well past one 255-byte character-string.
    let body: String = (0..392).map(|i| (b'A' + (i % 26) as u8) as char).collect();
    format!("v=DKIM1; k=rsa; p={body}")
}

#[tokio::test]
async fn mx_sorted_by_preference_and_lowercased() {
    let (server, dns) = setup().await;
    server.set_mx(
        "Example.TEST",
        &[
            (20, "MX2.Example.Test."),
            (5, "mx0.example.test"),
            (10, "Mx1.example.test"),
        ],
    );
    let expected = vec![
        (5, "mx0.example.test".to_string()),
        (10, "mx1.example.test".to_string()),
        (20, "mx2.example.test".to_string()),
    ];
    assert_eq!(dns.mx("example.test").await, Lookup::Found(expected.clone()));
    assert_eq!(dns.mx("EXAMPLE.test.").await, Lookup::Found(expected));
}

#[tokio::test]
async fn long_txt_round_trips_concatenated() {
    let (server, dns) = setup().await;
    let key = dkim_key();
    assert!(key.len() > 255);
    server.set_txt("mail._domainkey.example.test", &[&key]);
    assert_eq!(dns.txt("mail._domainkey.example.test").await, Lookup::Found(vec![key]));
}

#[tokio::test]
async fn two_txt_records_are_two_strings() {
    let (server, dns) = setup().await;
    server.set_txt(
        "example.test",
        &["v=spf1 include:svc.test -all", "site-verification=abc"],
    );
    let Lookup::Found(mut found) = dns.txt("example.test").await else {
        panic!("TXT records expected");
    };
    found.sort();
    assert_eq!(found, vec!["site-verification=abc", "v=spf1 include:svc.test -all"]);
}

#[tokio::test]
async fn missing_name_and_missing_type_are_missing() {
    let (server, dns) = setup().await;
    assert_eq!(dns.mx("nowhere.test").await, Lookup::Missing);
    assert_eq!(dns.txt("_dmarc.nowhere.test").await, Lookup::Missing);

    server.set_mx("example.test", &[(10, "mx.svc.test")]);
    assert_eq!(dns.txt("example.test").await, Lookup::Missing);
    assert!(matches!(dns.mx("example.test").await, Lookup::Found(_)));
}

#[tokio::test]
async fn servfail_is_transient() {
    let (server, dns) = setup().await;
    server.set_txt("_dmarc.example.test", &["v=DMARC1; p=none"]);
    server.fail("_dmarc.example.test", true);
    let started = Instant::now();
    assert!(dns.txt("_dmarc.example.test").await.is_transient());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "SERVFAIL is no timeout: {:?}",
        started.elapsed()
    );
    // A name that fails without any record is no different.
    server.fail("broken.test", true);
    assert!(dns.mx("broken.test").await.is_transient());

    server.fail("_dmarc.example.test", false);
    assert_eq!(
        dns.txt("_dmarc.example.test").await,
        Lookup::Found(vec!["v=DMARC1; p=none".into()])
    );
}

#[tokio::test]
async fn updates_are_seen_at_once() {
    let (server, dns) = setup().await;
    // A cached negative answer would hide the record published next.
    assert_eq!(dns.txt("example.test").await, Lookup::Missing);
    server.set_txt("example.test", &["v=spf1 -all"]);
    assert_eq!(dns.txt("example.test").await, Lookup::Found(vec!["v=spf1 -all".into()]));
    server.set_txt("example.test", &["v=spf1 include:svc.test -all"]);
    assert_eq!(
        dns.txt("example.test").await,
        Lookup::Found(vec!["v=spf1 include:svc.test -all".into()])
    );

    server.set_mx("example.test", &[(10, "old.example.net")]);
    assert_eq!(
        dns.mx("example.test").await,
        Lookup::Found(vec![(10, "old.example.net".into())])
    );
    server.set_mx("example.test", &[(10, "mx.svc.test")]);
    assert_eq!(
        dns.mx("example.test").await,
        Lookup::Found(vec![(10, "mx.svc.test".into())])
    );

    server.remove("example.test");
    assert_eq!(dns.mx("example.test").await, Lookup::Missing);
    assert_eq!(dns.txt("example.test").await, Lookup::Missing);
}

#[tokio::test]
async fn silent_nameserver_is_transient_within_seconds() {
    // Bound, so nothing answers "port unreachable"; never read, so nothing answers at all.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dns = Dns::new(Some(&silent.local_addr().unwrap().to_string())).unwrap();
    let started = Instant::now();
    let outcome = dns.mx("example.test").await;
    let took = started.elapsed();
    assert!(outcome.is_transient(), "{outcome:?}");
    assert!(took < Duration::from_secs(6), "took {took:?}");
    drop(silent);
}

#[tokio::test]
async fn tcp_is_served_too() {
    let (server, _) = setup().await;
    server.set_txt("example.test", &["over tcp"]);
    // A minimal query over TCP: two-byte length, header, one question for TXT.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["example", "test"] {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 16, 0, 1]);
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(&(query.len() as u16).to_be_bytes()).await.unwrap();
    stream.write_all(&query).await.unwrap();
    let len = stream.read_u16().await.unwrap() as usize;
    let mut answer = vec![0; len];
    stream.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer[..2], &[0x12, 0x34]);
    assert_eq!(answer[3] & 0x0f, 0, "NOERROR");
    assert_eq!(u16::from_be_bytes([answer[6], answer[7]]), 1, "one answer");
    assert!(answer.windows(8).any(|w| w == b"over tcp"));
}

#[tokio::test]
async fn a_and_aaaa_come_back_together() {
    let (server, client) = setup().await;
    let both: Vec<std::net::IpAddr> = vec!["93.184.216.34".parse().unwrap(), "2606:2800:220:1::1".parse().unwrap()];
    server.set_ips("hooks.example.org", &both);
    let Lookup::Found(mut found) = client.ips("hooks.example.org").await else {
        panic!("the addresses are there");
    };
    found.sort();
    assert_eq!(found, both);
    server.set_ips("v6.example.org", &["2606:2800:220:1::1".parse().unwrap()]);
    assert_eq!(
        client.ips("v6.example.org").await,
        Lookup::Found(vec!["2606:2800:220:1::1".parse().unwrap()])
    );
    assert_eq!(client.ips("nothing.example.org").await, Lookup::Missing);
    server.fail("hooks.example.org", true);
    assert!(client.ips("hooks.example.org").await.is_transient());
}
