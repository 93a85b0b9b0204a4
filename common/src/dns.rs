//! DNS lookups for domain checks (the MX, SPF, DKIM and DMARC records a
//! customer publishes) and for webhook hosts (their A and AAAA records). Every lookup goes to the nameserver afresh (no cache), is
//! bounded in time, and says apart "the records are not there" ([`Lookup::Missing`])
//! from "the lookup did not finish" ([`Lookup::Transient`]). Received mail's
//! checks (`mail::authenticate`) use a second resolver on the same nameserver,
//! [`Dns::authenticator`], whose answers are cached within their TTL.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};

/// How long one try at a nameserver may take (UDP retransmits happen inside it).
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Tries after the first one fails (timeout, SERVFAIL, network error): two tries in all.
pub const RETRIES: usize = 1;
/// A ceiling over everything the resolver does for one lookup, whatever it does.
const CEILING: Duration = Duration::from_secs(2 * (RETRIES as u64 + 1) + 1);

/// The outcome of one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    /// The records of the asked type, never empty.
    Found(T),
    /// The name does not exist (NXDOMAIN), or has no records of that type.
    Missing,
    /// The lookup did not finish: timeout, SERVFAIL, REFUSED, a network error.
    Transient(String),
}

impl<T> Lookup<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Lookup<U> {
        match self {
            Lookup::Found(v) => Lookup::Found(f(v)),
            Lookup::Missing => Lookup::Missing,
            Lookup::Transient(e) => Lookup::Transient(e),
        }
    }

    pub fn found(self) -> Option<T> {
        match self {
            Lookup::Found(v) => Some(v),
            _ => None,
        }
    }

    pub fn is_transient(&self) -> bool {
        matches!(self, Lookup::Transient(_))
    }
}

/// A stub resolver: asks one configured nameserver (or the system's), caches
/// nothing. It is built at its first lookup: most functions never resolve a
/// name, and reading resolv.conf and building the resolver was a sixth of a
/// Lambda function's own work at init (docs/benchmarks.md).
#[derive(Clone)]
pub struct Dns {
    /// The configured nameserver; `None`: the system's resolv.conf.
    nameserver: Option<SocketAddr>,
    resolver: Arc<OnceLock<TokioResolver>>,
    /// The received-mail checks' resolver (SPF, DKIM, DMARC, ARC): the same
    /// nameserver, but answers kept within their TTL.
    authenticator: Arc<OnceLock<mail_auth::MessageAuthenticator>>,
}

impl fmt::Debug for Dns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dns").field("nameserver", &self.nameserver).finish()
    }
}

impl Dns {
    /// `nameserver`: "host:port" or "ip" (port 53), or None for the system's
    /// resolv.conf. A nameserver that does not parse is refused here; the
    /// system's configuration is read at the first lookup.
    ///
    /// Names are always asked as given (fully qualified): no search domains, no hosts file.
    pub fn new(nameserver: Option<&str>) -> anyhow::Result<Self> {
        Ok(Dns {
            nameserver: nameserver.map(parse_nameserver).transpose()?,
            resolver: Arc::default(),
            authenticator: Arc::default(),
        })
    }

    fn resolver(&self) -> anyhow::Result<&TokioResolver> {
        if let Some(resolver) = self.resolver.get() {
            return Ok(resolver);
        }
        // Two first lookups at once may both build one; either is kept.
        let built = build_resolver(self.nameserver, options())?;
        Ok(self.resolver.get_or_init(|| built))
    }

    /// The resolver that checks received mail: the same nameserver, built at
    /// its first use, with a cache that keeps each answer within its TTL (a
    /// sender's SPF, DKIM and DMARC records are asked for message after
    /// message), negative answers at most [`NEGATIVE_TTL_CAP`].
    pub fn authenticator(&self) -> anyhow::Result<&mail_auth::MessageAuthenticator> {
        if let Some(authenticator) = self.authenticator.get() {
            return Ok(authenticator);
        }
        let built = mail_auth::MessageAuthenticator(build_resolver(self.nameserver, caching_options())?);
        Ok(self.authenticator.get_or_init(|| built))
    }

    /// MX records as (preference, exchange), the exchange lowercased without its
    /// trailing dot, sorted by preference (then exchange). A null MX (RFC 7505)
    /// comes back as `(0, ".")`.
    pub async fn mx(&self, name: &str) -> Lookup<Vec<(u16, String)>> {
        self.lookup(name, RecordType::MX, mx_records).await
    }

    /// TXT records, each record's character-strings concatenated into one string.
    pub async fn txt(&self, name: &str) -> Lookup<Vec<String>> {
        self.lookup(name, RecordType::TXT, txt_records).await
    }

    /// The IPv4 and IPv6 addresses of a name (A and AAAA together): found when
    /// either has records; transient when either lookup did not finish.
    pub async fn ips(&self, name: &str) -> Lookup<Vec<IpAddr>> {
        let (v4, v6) = tokio::join!(
            self.lookup(name, RecordType::A, ip_records),
            self.lookup(name, RecordType::AAAA, ip_records)
        );
        match (v4, v6) {
            (Lookup::Transient(e), _) | (_, Lookup::Transient(e)) => Lookup::Transient(e),
            (Lookup::Missing, Lookup::Missing) => Lookup::Missing,
            (a, b) => Lookup::Found(a.found().into_iter().chain(b.found()).flatten().collect()),
        }
    }

    async fn lookup<T>(&self, name: &str, kind: RecordType, extract: fn(&[Record]) -> Vec<T>) -> Lookup<Vec<T>> {
        // A name that cannot be written in DNS cannot have records.
        let Some(name) = fqdn(name) else {
            return Lookup::Missing;
        };
        let resolver = match self.resolver() {
            Ok(resolver) => resolver,
            Err(e) => return Lookup::Transient(format!("{e:#}")),
        };
        match tokio::time::timeout(CEILING, resolver.lookup(name, kind)).await {
            Err(_) => Lookup::Transient(format!("no answer within {} s", CEILING.as_secs())),
            Ok(Err(e)) => classify(e),
            Ok(Ok(found)) => {
                let records = extract(found.answers());
                if records.is_empty() {
                    Lookup::Missing
                } else {
                    Lookup::Found(records)
                }
            }
        }
    }
}

fn build_resolver(nameserver: Option<SocketAddr>, opts: ResolverOpts) -> anyhow::Result<TokioResolver> {
    let servers = match nameserver {
        Some(addr) => {
            let mut udp = ConnectionConfig::udp();
            udp.port = addr.port();
            let mut tcp = ConnectionConfig::tcp();
            tcp.port = addr.port();
            vec![NameServerConfig::new(addr.ip(), true, vec![udp, tcp])]
        }
        None => {
            let (config, _) =
                hickory_resolver::system_conf::read_system_conf().context("reading the system's resolv.conf")?;
            let (_, _, servers) = config.into_parts();
            if servers.is_empty() {
                bail!("the system's resolv.conf names no nameserver");
            }
            servers
        }
    };
    let config = ResolverConfig::from_parts(None, vec![], servers);
    TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        .with_options(opts)
        .build()
        .context("building the DNS resolver")
}

fn options() -> ResolverOpts {
    let mut opts = ResolverOpts::default();
    opts.ndots = 0;
    opts.timeout = TIMEOUT;
    opts.attempts = RETRIES;
    opts.use_hosts_file = ResolveHosts::Never;
    // No caching: a check right after the customer publishes must see the new record.
    opts.cache_size = 0;
    opts.positive_min_ttl = Some(Duration::ZERO);
    opts.negative_min_ttl = Some(Duration::ZERO);
    opts.positive_max_ttl = Some(Duration::ZERO);
    opts.negative_max_ttl = Some(Duration::ZERO);
    opts
}

/// The longest a "no such record" answer is kept by the mail checks' cache.
pub const NEGATIVE_TTL_CAP: Duration = Duration::from_secs(300);

/// The mail checks' options: bounded like the domain checks', with hickory's
/// cache on (each answer kept for its own TTL).
fn caching_options() -> ResolverOpts {
    let mut opts = options();
    let defaults = ResolverOpts::default();
    opts.cache_size = 4096;
    opts.positive_min_ttl = defaults.positive_min_ttl;
    opts.positive_max_ttl = defaults.positive_max_ttl;
    opts.negative_min_ttl = defaults.negative_min_ttl;
    opts.negative_max_ttl = Some(NEGATIVE_TTL_CAP);
    opts
}

/// "ip", "ip:port", "[v6]:port", or "host[:port]" resolved once, here.
fn parse_nameserver(spec: &str) -> anyhow::Result<SocketAddr> {
    let spec = spec.trim();
    if let Ok(addr) = spec.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = spec.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 53));
    }
    let (host, port) = match spec.rsplit_once(':') {
        Some((host, port)) => (
            host,
            port.parse::<u16>()
                .with_context(|| format!("nameserver port in {spec:?}"))?,
        ),
        None => (spec, 53),
    };
    if host.is_empty() {
        bail!("nameserver {spec:?} names no host");
    }
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving nameserver {spec:?}"))?
        .next()
        .ok_or_else(|| anyhow!("nameserver {spec:?} has no address"))
}

fn fqdn(name: &str) -> Option<Name> {
    let mut name = Name::from_utf8(name.trim()).ok()?;
    name.set_fqdn(true);
    Some(name)
}

fn classify<T>(e: NetError) -> Lookup<T> {
    match e {
        NetError::Dns(DnsError::NoRecordsFound(none))
            if matches!(none.response_code, ResponseCode::NXDomain | ResponseCode::NoError) =>
        {
            Lookup::Missing
        }
        NetError::Dns(DnsError::NoRecordsFound(none)) => Lookup::Transient(format!("{}", none.response_code)),
        NetError::Dns(DnsError::ResponseCode(code)) => Lookup::Transient(format!("{code}")),
        e => Lookup::Transient(e.to_string()),
    }
}

fn mx_records(answers: &[Record]) -> Vec<(u16, String)> {
    let mut out: Vec<(u16, String)> = answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::MX(mx) => Some((mx.preference, host(&mx.exchange))),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn ip_records(answers: &[Record]) -> Vec<IpAddr> {
    answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
            _ => None,
        })
        .collect()
}

fn txt_records(answers: &[Record]) -> Vec<String> {
    answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::TXT(txt) => Some(String::from_utf8_lossy(&txt.txt_data.concat()).into_owned()),
            _ => None,
        })
        .collect()
}

fn host(name: &Name) -> String {
    let text = name.to_ascii().to_ascii_lowercase();
    match text.strip_suffix('.') {
        Some(bare) if !bare.is_empty() => bare.to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_resolver::net::NoRecords;
    use hickory_resolver::proto::op::Query;
    use hickory_resolver::proto::rr::rdata::{MX, TXT};

    fn name(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    #[test]
    fn nameserver_specs() {
        assert_eq!(
            parse_nameserver("127.0.0.1:5353").unwrap(),
            "127.0.0.1:5353".parse().unwrap()
        );
        assert_eq!(parse_nameserver("10.0.0.2").unwrap(), "10.0.0.2:53".parse().unwrap());
        assert_eq!(parse_nameserver("::1").unwrap(), "[::1]:53".parse().unwrap());
        assert_eq!(parse_nameserver("[::1]").unwrap(), "[::1]:53".parse().unwrap());
        assert_eq!(parse_nameserver("[::1]:5300").unwrap(), "[::1]:5300".parse().unwrap());
        assert_eq!(parse_nameserver("localhost:5300").unwrap().port(), 5300);
        assert!(parse_nameserver("127.0.0.1:notaport").is_err());
        assert!(parse_nameserver(":53").is_err());
    }

    #[test]
    fn builds_outside_a_runtime() {
        let dns = Dns::new(Some("127.0.0.1:5353")).unwrap();
        assert_eq!(dns.nameserver, Some("127.0.0.1:5353".parse().unwrap()));
        assert!(dns.resolver().is_ok());
        assert!(Dns::new(Some("nowhere:port")).is_err());
    }

    #[test]
    fn options_cache_nothing_and_give_up_soon() {
        let o = options();
        assert_eq!(o.cache_size, 0);
        assert_eq!(o.positive_max_ttl, Some(Duration::ZERO));
        assert_eq!(o.negative_max_ttl, Some(Duration::ZERO));
        assert_eq!(o.ndots, 0);
        assert!(o.timeout * (o.attempts as u32 + 1) <= Duration::from_secs(5));
    }

    #[test]
    fn the_mail_checks_cache_within_ttl_and_give_up_as_soon() {
        let o = caching_options();
        assert!(o.cache_size > 0);
        assert_eq!(o.positive_max_ttl, ResolverOpts::default().positive_max_ttl);
        assert_eq!(o.negative_max_ttl, Some(NEGATIVE_TTL_CAP));
        assert_eq!((o.timeout, o.attempts, o.ndots), (TIMEOUT, RETRIES, 0));
        let dns = Dns::new(Some("127.0.0.1:5353")).unwrap();
        assert!(dns.authenticator().is_ok());
    }

    #[test]
    fn names_are_fully_qualified() {
        assert!(fqdn("example.com").unwrap().is_fqdn());
        assert_eq!(
            fqdn("Example.COM.").unwrap().to_ascii().to_ascii_lowercase(),
            "example.com."
        );
        assert!(fqdn(&format!("{}.com", "a".repeat(64))).is_none());
    }

    #[test]
    fn classifies_errors() {
        let q = Query::query(name("example.com."), RecordType::MX);
        let nx = NetError::Dns(DnsError::NoRecordsFound(NoRecords::new(
            q.clone(),
            ResponseCode::NXDomain,
        )));
        assert_eq!(classify::<()>(nx), Lookup::Missing);
        let empty = NetError::Dns(DnsError::NoRecordsFound(NoRecords::new(
            q.clone(),
            ResponseCode::NoError,
        )));
        assert_eq!(classify::<()>(empty), Lookup::Missing);
        let refused = NetError::Dns(DnsError::NoRecordsFound(NoRecords::new(q, ResponseCode::Refused)));
        assert!(classify::<()>(refused).is_transient());
        assert!(classify::<()>(NetError::Dns(DnsError::ResponseCode(ResponseCode::ServFail))).is_transient());
        assert!(classify::<()>(NetError::Dns(DnsError::ResponseCode(ResponseCode::Refused))).is_transient());
        assert!(classify::<()>(NetError::Timeout).is_transient());
    }

    #[test]
    fn extracts_mx_sorted_and_lowercased() {
        let owner = name("example.com.");
        let answers = vec![
            Record::from_rdata(owner.clone(), 60, RData::MX(MX::new(20, name("MX2.Example.com.")))),
            Record::from_rdata(owner.clone(), 60, RData::TXT(TXT::new(vec!["ignored".into()]))),
            Record::from_rdata(owner, 60, RData::MX(MX::new(10, name("mx1.example.com.")))),
        ];
        assert_eq!(
            mx_records(&answers),
            vec![(10, "mx1.example.com".to_string()), (20, "mx2.example.com".to_string())]
        );
        // A null MX (RFC 7505) keeps its "." exchange.
        let null = [Record::from_rdata(
            name("example.com."),
            60,
            RData::MX(MX::new(0, Name::root())),
        )];
        assert_eq!(mx_records(&null), vec![(0, ".".to_string())]);
    }

    #[test]
    fn extracts_txt_concatenated() {
        let owner = name("example.com.");
        let answers = vec![
            Record::from_rdata(
                owner.clone(),
                60,
                RData::TXT(TXT::new(vec!["v=DKIM1; p=".into(), "AAAA".into()])),
            ),
            Record::from_rdata(owner, 60, RData::TXT(TXT::new(vec!["v=spf1 -all".into()]))),
        ];
        assert_eq!(
            txt_records(&answers),
            vec!["v=DKIM1; p=AAAA".to_string(), "v=spf1 -all".to_string()]
        );
    }

    #[test]
    fn lookup_helpers() {
        assert_eq!(Lookup::Found(2).map(|n| n * 2), Lookup::Found(4));
        assert_eq!(Lookup::<u8>::Missing.found(), None);
        assert!(Lookup::<u8>::Transient("x".into()).is_transient());
    }
}
