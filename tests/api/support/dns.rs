//! A real authoritative DNS server for tests: UDP and TCP on one random port of
//! 127.0.0.1, answering MX, TXT, A and AAAA queries from an in-memory map the test edits
//! while it runs. Records carry long TTLs (and negative answers an SOA with a long
//! minimum), so a resolver that caches would be caught by a test that changes them.

use std::collections::{HashMap, HashSet};
use std::iter;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::proto::op::{Edns, Header, HeaderCounts, Metadata, ResponseCode};
use hickory_server::proto::rr::rdata::{MX, SOA, TXT};
use hickory_server::proto::rr::{Name, RData, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use tokio::net::{TcpListener, UdpSocket};

/// TTL of every answer: long, so caching would show.
const TTL: u32 = 3600;

#[derive(Default)]
struct Entry {
    mx: Vec<RData>,
    txt: Vec<RData>,
    a: Vec<RData>,
    aaaa: Vec<RData>,
}

#[derive(Default)]
struct State {
    names: HashMap<String, Entry>,
    failing: HashSet<String>,
}

type Shared = Arc<Mutex<State>>;

/// Serves until dropped.
pub struct TestDns {
    pub addr: SocketAddr,
    state: Shared,
    _server: Server<Handler>,
}

impl TestDns {
    pub async fn start() -> TestDns {
        let state = Shared::default();
        let mut server = Server::new(Handler { state: state.clone() });
        let (udp, tcp) = bind_pair().await;
        let addr = udp.local_addr().unwrap();
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 32);
        TestDns {
            addr,
            state,
            _server: server,
        }
    }

    /// Replaces the MX records of `name` with (preference, exchange) pairs.
    pub fn set_mx(&self, name: &str, records: &[(u16, &str)]) {
        let records = records
            .iter()
            .map(|(pref, host)| RData::MX(MX::new(*pref, fqdn(host))))
            .collect();
        self.state.lock().unwrap().names.entry(key(name)).or_default().mx = records;
    }

    /// Replaces the TXT records of `name`: one record per string, split into
    /// character-strings of at most 255 bytes.
    pub fn set_txt(&self, name: &str, records: &[&str]) {
        let records = records.iter().map(|text| RData::TXT(txt(text))).collect();
        self.state.lock().unwrap().names.entry(key(name)).or_default().txt = records;
    }

    /// Replaces the A and AAAA records of `name` with these addresses.
    pub fn set_ips(&self, name: &str, ips: &[std::net::IpAddr]) {
        use hickory_server::proto::rr::rdata::{A, AAAA};
        let mut state = self.state.lock().unwrap();
        let entry = state.names.entry(key(name)).or_default();
        entry.a = ips
            .iter()
            .filter_map(|ip| match ip {
                std::net::IpAddr::V4(v4) => Some(RData::A(A(*v4))),
                _ => None,
            })
            .collect();
        entry.aaaa = ips
            .iter()
            .filter_map(|ip| match ip {
                std::net::IpAddr::V6(v6) => Some(RData::AAAA(AAAA(*v6))),
                _ => None,
            })
            .collect();
    }

    /// Forgets every record of `name`: it no longer exists (NXDOMAIN).
    pub fn remove(&self, name: &str) {
        self.state.lock().unwrap().names.remove(&key(name));
    }

    /// While `fail` holds, every query for `name` gets SERVFAIL.
    pub fn fail(&self, name: &str, fail: bool) {
        let mut state = self.state.lock().unwrap();
        if fail {
            state.failing.insert(key(name));
        } else {
            state.failing.remove(&key(name));
        }
    }
}

/// A UDP socket on a random port of 127.0.0.1 and a TCP listener on the same port.
async fn bind_pair() -> (UdpSocket, TcpListener) {
    for _ in 0..20 {
        let udp = UdpSocket::bind("127.0.0.1:0").await.expect("binding a UDP socket");
        if let Ok(tcp) = TcpListener::bind(udp.local_addr().unwrap()).await {
            return (udp, tcp);
        }
    }
    panic!("no port of 127.0.0.1 was free for both UDP and TCP");
}

fn key(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

fn fqdn(name: &str) -> Name {
    let mut name = Name::from_utf8(name).unwrap_or_else(|e| panic!("{name:?} is no DNS name: {e}"));
    name.set_fqdn(true);
    name
}

fn txt(text: &str) -> TXT {
    let chunks: Vec<&[u8]> = if text.is_empty() {
        vec![b""]
    } else {
        text.as_bytes().chunks(255).collect()
    };
    TXT::from_bytes(chunks)
}

/// The SOA a negative answer carries; its minimum is the negative-caching TTL.
fn soa() -> Record {
    let soa = SOA::new(
        fqdn("ns.test-dns.invalid"),
        fqdn("hostmaster.test-dns.invalid"),
        1,
        3600,
        600,
        86_400,
        TTL,
    );
    Record::from_rdata(Name::root(), TTL, RData::SOA(soa))
}

struct Handler {
    state: Shared,
}

impl Handler {
    /// The answer records and response code for one question.
    fn answer(&self, owner: &Name, kind: RecordType) -> (ResponseCode, Vec<Record>) {
        let name = key(&owner.to_ascii());
        let state = self.state.lock().unwrap();
        if state.failing.contains(&name) {
            return (ResponseCode::ServFail, vec![]);
        }
        let Some(entry) = state.names.get(&name) else {
            return (ResponseCode::NXDomain, vec![]);
        };
        let data = match kind {
            RecordType::MX => &entry.mx[..],
            RecordType::TXT => &entry.txt[..],
            RecordType::A => &entry.a[..],
            RecordType::AAAA => &entry.aaaa[..],
            _ => &[],
        };
        let records = data
            .iter()
            .map(|rdata| Record::from_rdata(owner.clone(), TTL, rdata.clone()))
            .collect();
        (ResponseCode::NoError, records)
    }
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
        let (code, answers) = match request.request_info() {
            Ok(info) => self.answer(info.query.original().name(), info.query.query_type()),
            Err(_) => (ResponseCode::FormErr, vec![]),
        };
        metadata.authoritative = code != ResponseCode::ServFail && code != ResponseCode::FormErr;
        metadata.response_code = code;
        let negative = if answers.is_empty() && matches!(code, ResponseCode::NoError | ResponseCode::NXDomain) {
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
