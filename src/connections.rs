//! The local server's connections: hyper's HTTP/1 serving each accepted
//! socket, with deadlines for a request's headers and for its body and a cap
//! on the connections open at once, so clients that send half a request (or
//! nothing) cannot hold the server's sockets and tasks open.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::{Body as HttpBody, Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How long a client may take over what it sends, and how many may be
/// connected at once.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From the moment the server waits for a request (a new connection, or
    /// one kept alive after an answer) to the end of its headers; past it
    /// the connection is closed.
    pub header_read: Duration,
    /// From the end of a request's headers to the end of its body; past it
    /// the body fails to read (a 400, `BODY_UNREADABLE`, where the handler
    /// reads it) and the connection is closed after the answer.
    pub body_read: Duration,
    /// Connections open at once; more wait in the listen backlog until one
    /// closes. Kept below the usual 1024 open files, so the server's own
    /// files and outbound connections still open.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            body_read: Duration::from_secs(30),
            connections: 512,
        }
    }
}

/// Serves `router` on every connection `listener` accepts, until dropped.
pub async fn serve(listener: TcpListener, router: Router, limits: Limits) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.connections.max(1)));
    loop {
        let permit = open
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                refused(e).await;
                continue;
            }
        };
        let service = router.clone().map_request(move |req: Request<Incoming>| {
            let (mut parts, body) = req.into_parts();
            parts.extensions.insert(ConnectInfo(peer));
            Request::from_parts(parts, Body::new(Deadline::new(body, limits.body_read)))
        });
        tokio::spawn(async move {
            let _open = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read);
            // A connection that fails (a timeout, a reset) has nothing to tell.
            let _ = builder
                .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                .await;
        });
    }
}

/// An accept that failed: a client that went away is nothing; anything else
/// (out of open files) is logged and waited out for a second, as hyper did.
async fn refused(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// A request body that must arrive whole by a deadline; past it, reading
/// fails.
struct Deadline<B> {
    body: B,
    expires: Pin<Box<tokio::time::Sleep>>,
}

impl<B> Deadline<B> {
    fn new(body: B, within: Duration) -> Self {
        Self {
            body,
            expires: Box::pin(tokio::time::sleep(within)),
        }
    }
}

impl<B> HttpBody for Deadline<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.expires.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err("the request body did not arrive in time".into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
