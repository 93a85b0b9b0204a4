//! A TCP forwarder that holds each chunk for a fixed time in each
//! direction: a server as far away as a network's round trip, for a
//! benchmark whose server and clients are otherwise on loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Listens on loopback and forwards to `upstream`, each chunk `one_way`
/// late; its address.
pub fn start(upstream: SocketAddr, one_way: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(upstream) else {
                continue;
            };
            for (from, to) in [(&client, &server), (&server, &client)] {
                let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                from.set_nodelay(true).ok();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n @ 1..) = from.read(&mut buf) {
                        std::thread::sleep(one_way);
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    to.shutdown(std::net::Shutdown::Write).ok();
                });
            }
        }
    });
    addr
}
