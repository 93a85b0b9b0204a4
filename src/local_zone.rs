//! The local server's own DNS zone on loopback: a real nameserver (UDP and
//! TCP) that publishes, for a domain under a reserved name (`.test`,
//! `.localhost`, `.example`, `.invalid`: RFC 2606 and 6761, names no one
//! else can publish), exactly the records the service told its owner to
//! publish. On a laptop no public resolver answers for such a domain, so
//! without this zone `verifyDomain` could never pass; with it the same check
//! runs, over the network, against records that are really served.
//!
//! Every other name is looked up with the system's resolver and its answer
//! passed on (MX, TXT, A and AAAA: what the service asks), so the local
//! server can use this zone as its only nameserver. Names under `.localhost`
//! that no account holds answer the loopback addresses (RFC 6761).

use std::iter;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::context::Context;
use common::dns::{Dns, Lookup};
use common::service::domains;
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::proto::op::{Edns, Header, HeaderCounts, Metadata, ResponseCode};
use hickory_server::proto::rr::rdata::{A, AAAA, MX, SOA, TXT};
use hickory_server::proto::rr::{Name, RData, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use tokio::net::{TcpListener, UdpSocket};

/// The top-level names this zone answers from the store.
pub const RESERVED: [&str; 4] = ["test", "localhost", "example", "invalid"];

/// Short: a record published a moment ago is seen by the next check.
const TTL: u32 = 5;

/// The zone, bound before the server's context exists (the context's
/// resolver is pointed at it); it answers once [`LocalZone::serve`] hands it
/// the context, and SERVFAIL (a transient failure) until then.
pub struct LocalZone {
    pub addr: SocketAddr,
    context: Arc<OnceLock<Arc<Context>>>,
    _server: Server<Handler>,
}

impl LocalZone {
    /// Binds UDP and TCP on one free port of `ip` and starts answering.
    pub async fn start(ip: IpAddr) -> anyhow::Result<LocalZone> {
        let context = Arc::new(OnceLock::new());
        let handler = Handler {
            context: context.clone(),
            upstream: Dns::new(None)?,
        };
        let mut server = Server::new(handler);
        let (udp, tcp) = bind_pair(ip).await?;
        let addr = udp.local_addr()?;
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 64);
        Ok(LocalZone {
            addr,
            context,
            _server: server,
        })
    }

    /// From now on, reserved names are answered from this context's store.
    pub fn serve(&self, context: Arc<Context>) {
        let _ = self.context.set(context);
    }
}

async fn bind_pair(ip: IpAddr) -> anyhow::Result<(UdpSocket, TcpListener)> {
    for _ in 0..20 {
        let udp = UdpSocket::bind(SocketAddr::new(ip, 0)).await?;
        if let Ok(tcp) = TcpListener::bind(udp.local_addr()?).await {
            return Ok((udp, tcp));
        }
    }
    anyhow::bail!("no port of {ip} was free for both UDP and TCP")
}

/// Lower case, without the trailing dot.
fn key(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether the name is under one of the reserved top-level names.
pub fn reserved(name: &str) -> bool {
    let name = key(name);
    let top = name.rsplit('.').next().unwrap_or("");
    RESERVED.contains(&top)
}

fn fqdn(name: &str) -> Option<Name> {
    let mut name = Name::from_utf8(name).ok()?;
    name.set_fqdn(true);
    Some(name)
}

fn txt(text: &str) -> TXT {
    let chunks: Vec<&[u8]> = if text.is_empty() {
        vec![b""]
    } else {
        text.as_bytes().chunks(255).collect()
    };
    TXT::from_bytes(chunks)
}

/// What one question gets: a response code and the answer's data.
type Answer = (ResponseCode, Vec<RData>);

struct Handler {
    context: Arc<OnceLock<Arc<Context>>>,
    upstream: Dns,
}

impl Handler {
    async fn answer(&self, name: &str, kind: RecordType) -> Answer {
        if !reserved(name) {
            return self.forward(name, kind).await;
        }
        let Some(ctx) = self.context.get() else {
            return (ResponseCode::ServFail, vec![]);
        };
        match published(ctx, name, kind).await {
            Ok(Some(data)) => (ResponseCode::NoError, data),
            Ok(None) => (ResponseCode::NXDomain, vec![]),
            Err(e) => {
                tracing::warn!(error = %e, "local zone: reading the store failed");
                (ResponseCode::ServFail, vec![])
            }
        }
    }

    /// The system resolver's answer, passed on.
    async fn forward(&self, name: &str, kind: RecordType) -> Answer {
        let relay = |lookup: Lookup<Vec<RData>>| match lookup {
            Lookup::Found(data) => (ResponseCode::NoError, data),
            // Missing may be NXDOMAIN or no records of this type: answer
            // "no records of this type", which is true either way.
            Lookup::Missing => (ResponseCode::NoError, vec![]),
            Lookup::Transient(_) => (ResponseCode::ServFail, vec![]),
        };
        match kind {
            RecordType::MX => relay(self.upstream.mx(name).await.map(|records| {
                records
                    .into_iter()
                    .filter_map(|(pref, host)| Some(RData::MX(MX::new(pref, fqdn(&host)?))))
                    .collect()
            })),
            RecordType::TXT => relay(
                self.upstream
                    .txt(name)
                    .await
                    .map(|records| records.iter().map(|t| RData::TXT(txt(t))).collect()),
            ),
            RecordType::A | RecordType::AAAA => relay(
                self.upstream
                    .ips(name)
                    .await
                    .map(|ips| ips.into_iter().filter_map(|ip| address(ip, kind)).collect()),
            ),
            _ => (ResponseCode::NotImp, vec![]),
        }
    }
}

fn address(ip: IpAddr, kind: RecordType) -> Option<RData> {
    match (ip, kind) {
        (IpAddr::V4(v4), RecordType::A) => Some(RData::A(A(v4))),
        (IpAddr::V6(v6), RecordType::AAAA) => Some(RData::AAAA(AAAA(v6))),
        _ => None,
    }
}

/// The records of `kind` at `name` that the domain holding it was told to
/// publish: `None` when no live domain holds the name (NXDOMAIN).
async fn published(ctx: &Context, name: &str, kind: RecordType) -> anyhow::Result<Option<Vec<RData>>> {
    let name = key(name);
    let loopback = name == "localhost" || name.ends_with(".localhost");
    let mut data = Vec::new();
    let mut held = false;
    if let Some(domain) = holder(ctx, &name).await? {
        held = true;
        for record in domains::instructions(ctx, &domain).records {
            if key(&record.host) != name || record.kind != kind.to_string() {
                continue;
            }
            match kind {
                RecordType::MX => {
                    if let Some(host) = fqdn(&record.value) {
                        data.push(RData::MX(MX::new(record.priority.unwrap_or(10), host)));
                    }
                }
                RecordType::TXT => data.push(RData::TXT(txt(&record.value))),
                _ => {}
            }
        }
    }
    if loopback {
        match kind {
            RecordType::A => data.push(RData::A(A(Ipv4Addr::LOCALHOST))),
            RecordType::AAAA => data.push(RData::AAAA(AAAA(Ipv6Addr::LOCALHOST))),
            _ => {}
        }
        return Ok(Some(data));
    }
    Ok(held.then_some(data))
}

/// The live domain whose records include `name`: the name itself or the
/// nearest enclosing domain an account holds (`mail._domainkey.example.test`
/// and `_dmarc.example.test` belong to `example.test`).
async fn holder(ctx: &Context, name: &str) -> anyhow::Result<Option<domains::Domain>> {
    let labels: Vec<&str> = name.split('.').collect();
    for start in 0..labels.len().saturating_sub(1) {
        let candidate = labels[start..].join(".");
        let Some(uid) = domains::claimant(ctx, &candidate).await? else {
            continue;
        };
        if let Some(domain) = domains::get(ctx, &uid, &candidate).await? {
            return Ok(Some(domain));
        }
    }
    Ok(None)
}

/// The SOA a negative answer carries.
fn soa() -> Record {
    let name = |n: &str| fqdn(n).expect("a fixed name");
    let soa = SOA::new(
        name("ns.mailhost.localhost"),
        name("hostmaster.mailhost.localhost"),
        1,
        3600,
        600,
        86_400,
        TTL,
    );
    Record::from_rdata(Name::root(), TTL, RData::SOA(soa))
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, mut handle: R) -> ResponseInfo {
        let edns = request.edns.as_ref().map(|theirs| {
            let mut ours = Edns::new();
            ours.set_max_payload(theirs.max_payload().max(512));
            ours
        });
        let builder = MessageResponseBuilder::new(&request.queries, edns.as_ref());
        let mut metadata = Metadata::response_from_request(&request.metadata);
        let (owner, (code, data)) = match request.request_info() {
            Ok(info) => {
                let owner = info.query.original().name().clone();
                let answer = self.answer(&owner.to_ascii(), info.query.query_type()).await;
                (Some(owner), answer)
            }
            Err(_) => (None, (ResponseCode::FormErr, vec![])),
        };
        let answers: Vec<Record> = match &owner {
            Some(owner) => data
                .into_iter()
                .map(|rdata| Record::from_rdata(owner.clone(), TTL, rdata))
                .collect(),
            None => vec![],
        };
        metadata.authoritative = matches!(code, ResponseCode::NoError | ResponseCode::NXDomain);
        metadata.recursion_available = true;
        metadata.response_code = code;
        let negative = if answers.is_empty() && metadata.authoritative {
            vec![soa()]
        } else {
            vec![]
        };
        let response = builder.build(metadata, answers.iter(), iter::empty(), negative.iter(), iter::empty());
        match handle.send_response(response).await {
            Ok(info) => info,
            Err(_) => {
                let mut metadata = Metadata::response_from_request(&request.metadata);
                metadata.response_code = ResponseCode::ServFail;
                ResponseInfo::from(Header {
                    metadata,
                    counts: HeaderCounts::default(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reserved_names_come_from_the_store() {
        for name in [
            "example.test",
            "MAIL._domainkey.Example.TEST.",
            "mx.mailhost.localhost",
            "a.example",
            "x.invalid",
        ] {
            assert!(reserved(name), "{name}");
        }
        for name in ["example.com", "test.com", "localhost.example.com", "testing"] {
            assert!(!reserved(name), "{name}");
        }
    }
}
