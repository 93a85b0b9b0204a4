//! Outbound webhooks: which URLs may receive them, how a delivery is signed,
//! and one HTTPS attempt. What is delivered, to whom and when is
//! `service::webhooks`.
//!
//! A URL must be https and its host must not reach inside: every address its
//! name resolves to is checked (private, loopback, link-local and metadata,
//! CGNAT, multicast, documentation and reserved ranges, and IPv6 forms that
//! embed an IPv4 address are refused), and the attempt connects to an address
//! that was checked, with no second lookup and no redirect followed, so a name
//! cannot be pointed elsewhere between the check and the connection. The URL
//! keeps its host in the one form that was checked (lower case, no trailing
//! dot), and the attempt's resolver answers that name alone.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::dns::{Dns, Lookup};

/// Each attempt's limit (spec 6).
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The longest URL accepted.
pub const MAX_URL: usize = 2048;
/// The header carrying the unix seconds the X-SVC signature covers.
pub const TIMESTAMP_HEADER: &str = "X-SVC-Timestamp";

/// Why a URL may not receive webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    NotHttps,
    HostNotAllowed,
    /// A name that gave no address (it does not exist, or the lookup failed).
    Unresolved,
}

/// A URL that passed the rules, with the addresses it may be reached at.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as checked: a name host is lower case without a trailing dot,
    /// the form that is stored and connected to.
    pub url: reqwest::Url,
    pub host: String,
    pub addrs: Vec<SocketAddr>,
}

/// Whether an address may receive webhooks: public unicast only.
pub fn address_allowed(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_allowed(v4),
        IpAddr::V6(v6) => v6_allowed(v6),
    }
}

fn v4_allowed(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = ip.is_unspecified()
        || a == 0 // "this network"
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254/16, the cloud metadata service among them
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || ip.is_multicast()
        || a >= 240 // reserved, and broadcast
        || ip.is_documentation()
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99); // 6to4 relay anycast
    !refused
}

fn v6_allowed(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0xffff] // IPv4-mapped
        || s[0..6] == [0; 6] // IPv4-compatible
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local
        || (s[0] & 0xfe00) == 0xfc00 // unique local, the IPv6 metadata service among them
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x3fff && s[1] < 0x1000) // documentation 3fff::/20
        || (s[0] == 0x2001 && s[1] < 0x0200) // IETF protocol assignments (Teredo, ORCHID, ...)
        || s[0] == 0x2002 // 6to4: embeds an IPv4 address
        || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64: embeds an IPv4 address
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard
        || (s[0] & 0xe000) != 0x2000; // outside global unicast 2000::/3
    !refused
}

/// Checks a URL: https, a host, and every address of the host allowed (or the
/// host named in `allow_hosts`, which tests use for their loopback receiver).
pub async fn check(dns: &Dns, allow_hosts: &[String], raw: &str) -> Result<Target, Refused> {
    let mut url = reqwest::Url::parse(raw.trim()).map_err(|_| Refused::NotHttps)?;
    if url.scheme() != "https" || raw.chars().count() > MAX_URL {
        return Err(Refused::NotHttps);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::HostNotAllowed);
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let (host, ips) = match url.host() {
        Some(url::Host::Ipv4(v4)) => (v4.to_string(), vec![IpAddr::V4(v4)]),
        Some(url::Host::Ipv6(v6)) => (v6.to_string(), vec![IpAddr::V6(v6)]),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let exempt = allow_hosts.iter().any(|h| h.eq_ignore_ascii_case(&name));
            // localhost is this machine by definition (RFC 6761), whatever DNS
            // says, unless named as a test's receiver.
            let local = name == "localhost" || name.ends_with(".localhost");
            if name.is_empty() || (local && !exempt) {
                return Err(Refused::HostNotAllowed);
            }
            let ips = if exempt {
                // An exempt host (a test's receiver): the system resolver.
                tokio::net::lookup_host((name.as_str(), port))
                    .await
                    .map_err(|_| Refused::HostNotAllowed)?
                    .map(|a| a.ip())
                    .collect()
            } else {
                match dns.ips(&name).await {
                    Lookup::Found(ips) => ips,
                    _ => return Err(Refused::Unresolved),
                }
            };
            if !exempt && !ips.iter().all(|ip| address_allowed(*ip)) {
                return Err(Refused::HostNotAllowed);
            }
            (name, ips)
        }
        None => return Err(Refused::HostNotAllowed),
    };
    let literal = !matches!(url.host(), Some(url::Host::Domain(_)));
    if ips.is_empty() || (literal && !ips.iter().all(|ip| address_allowed(*ip))) {
        return Err(Refused::HostNotAllowed);
    }
    if !literal {
        // `name.` and `name` are one host: keep the form that was checked.
        url.set_host(Some(&host)).map_err(|_| Refused::HostNotAllowed)?;
    }
    Ok(Target {
        addrs: ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect(),
        host,
        url,
    })
}

/// A new signing secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>())
    )
}

/// The headers that sign one delivery, two ways at once: the spec's
/// `X-SVC-Signature: sha256=<hex HMAC of "<unix seconds>.<body>">` keyed with
/// the whole secret, its seconds in `X-SVC-Timestamp`; and Standard Webhooks'
/// `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC of
/// "<id>.<seconds>.<body>">` keyed with the secret's decoded bytes.
pub fn signature_headers(secret: &str, event_id: &str, unix: i64, body: &[u8]) -> Vec<(&'static str, String)> {
    let mut svc = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    svc.update(format!("{unix}.").as_bytes());
    svc.update(body);
    let svc = hex::encode(svc.finalize().into_bytes());
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap_or_else(|_| secret.as_bytes().to_vec());
    let mut standard = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    standard.update(format!("{event_id}.{unix}.").as_bytes());
    standard.update(body);
    let standard = base64::engine::general_purpose::STANDARD.encode(standard.finalize().into_bytes());
    vec![
        ("X-SVC-Signature", format!("sha256={svc}")),
        (TIMESTAMP_HEADER, unix.to_string()),
        ("webhook-id", event_id.to_string()),
        ("webhook-timestamp", unix.to_string()),
        ("webhook-signature", format!("v1,{standard}")),
    ]
}

/// What one attempt got: the status, or why there was none.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub latency_ms: u64,
}

impl Attempt {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// One POST to a checked target, connecting only to its checked addresses.
/// `extra_roots`: PEM certificates trusted beside the system's (tests' CA).
pub async fn post(target: &Target, headers: &[(&'static str, String)], body: &[u8], extra_roots: &[u8]) -> Attempt {
    let started = Instant::now();
    let outcome = send(target, headers, body, extra_roots).await;
    let latency_ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(status) => Attempt {
            status: Some(status),
            error: None,
            latency_ms,
        },
        Err(failure) => Attempt {
            status: None,
            error: Some(failure.sentence().to_string()),
            latency_ms,
        },
    }
}

/// The only resolver an attempt has: the checked name gives the checked
/// addresses, and any other name (another spelling included) gives nothing,
/// so no second lookup can happen anywhere.
struct Pinned {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let answer: Result<reqwest::dns::Addrs, Box<dyn std::error::Error + Send + Sync>> =
            if name.as_str() == self.host {
                Ok(Box::new(self.addrs.clone().into_iter()))
            } else {
                Err(format!("{} is not the checked host", name.as_str()).into())
            };
        Box::pin(std::future::ready(answer))
    }
}

/// Why an attempt got no status, as coarse as the delivery log shows it: the
/// operating system's own words (which would tell a port scanner open from
/// closed from filtered) stay out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Refused,
    TimedOut,
    Tls,
    Dns,
    Other,
}

impl Failure {
    pub fn sentence(self) -> &'static str {
        match self {
            Failure::Refused => "could not connect",
            Failure::TimedOut => "timed out",
            Failure::Tls => "TLS handshake failed",
            Failure::Dns => "the host did not resolve",
            Failure::Other => "request failed",
        }
    }

    fn of(e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            return Failure::TimedOut;
        }
        let mut chain = String::new();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            chain.push_str(&s.to_string().to_ascii_lowercase());
            chain.push('\n');
            source = s.source();
        }
        let tls = chain.contains("certificate") || chain.contains("tls") || chain.contains("handshake");
        if chain.contains("dns error") || chain.contains("is not the checked host") {
            Failure::Dns
        } else if e.is_connect() && tls {
            Failure::Tls
        } else if e.is_connect() {
            Failure::Refused
        } else {
            // Connected and sent: a receiver that closes without answering
            // (rustls names the missing close_notify) failed the request,
            // not the handshake.
            Failure::Other
        }
    }
}

async fn send(
    target: &Target,
    headers: &[(&'static str, String)],
    body: &[u8],
    extra_roots: &[u8],
) -> Result<u16, Failure> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .dns_resolver(Arc::new(Pinned {
            host: target.host.clone(),
            addrs: target.addrs.clone(),
        }))
        .user_agent(concat!("mailhost-webhooks/", env!("CARGO_PKG_VERSION")));
    if !extra_roots.is_empty() {
        let roots = reqwest::Certificate::from_pem_bundle(extra_roots).map_err(|e| {
            tracing::error!(error = %e, "the webhook CA file could not be read");
            Failure::Tls
        })?;
        builder = builder.tls_certs_merge(roots);
    }
    let client = builder.build().map_err(|e| {
        tracing::error!(error = %e, "the webhook HTTP client could not be built");
        Failure::Other
    })?;
    let mut request = client
        .post(target.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.map_err(|e| {
        tracing::debug!(error = %e, "webhook attempt");
        Failure::of(&e)
    })?;
    Ok(response.status().as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_unicast_only() {
        let refused = [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "192.0.0.192",
            "192.88.99.1",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "::8.8.8.8",
            "fe80::1",
            "fec0::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
            "64:ff9b::7f00:1",
            "100::1",
            "3fff::1:2",
            "4000::1",
        ];
        for ip in refused {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(!address_allowed(parsed), "{ip} must be refused");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450::1",
        ] {
            assert!(address_allowed(ip.parse().unwrap()), "{ip} is public");
        }
    }

    #[test]
    fn signatures_cover_the_timestamp_and_the_body() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let headers = signature_headers(
            secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        // The Standard Webhooks specification's own example.
        assert_eq!(
            get("webhook-signature"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(br#"1614265330.{"test": 2432232314}"#);
        assert_eq!(
            get("X-SVC-Signature"),
            format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
        );
        assert_eq!(get(TIMESTAMP_HEADER), "1614265330");
    }
}
