//! Request pieces: the client address and a size-limited body.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::request::Parts;

use crate::error::{self, ApiError};

/// How much of an oversized body is read and dropped before answering 413, so
/// a client still writing it reads the answer instead of a reset connection.
const DRAIN_LIMIT: usize = 32 * 1024 * 1024;

/// The client's address: API Gateway's `sourceIp` under Lambda, the socket's
/// peer locally. A client-sent X-Forwarded-For is never trusted.
pub fn client_ip(parts: &Parts) -> String {
    use lambda_http::request::RequestContext;
    let from_gateway = match parts.extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(c)) => c.http.source_ip.clone(),
        Some(RequestContext::ApiGatewayV1(c)) => c.identity.source_ip.clone(),
        _ => None,
    };
    from_gateway
        .or_else(|| {
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// API Gateway's id of this request, or a new one for a request that did
/// not come through it: what the audit log and a support question quote.
pub fn request_id(parts: &Parts) -> String {
    use lambda_http::request::RequestContext;
    let from_gateway = match parts.extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(c)) => c.request_id.clone(),
        Some(RequestContext::ApiGatewayV1(c)) => c.request_id.clone(),
        _ => None,
    };
    from_gateway.unwrap_or_else(|| format!("req_{}", hex::encode(rand::random::<[u8; 8]>())))
}

/// Reads and drops a body the answer does not need (a refused caller's), so
/// a client still writing it reads the answer instead of a reset connection.
pub async fn discard(body: Body) {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut seen = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        seen += frame.data_ref().map_or(0, |d| d.len());
        if seen > DRAIN_LIMIT {
            break;
        }
    }
}

/// The body, at most `limit` bytes; a larger one is 413 before any parsing.
pub async fn read_body(body: Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ApiError::from(error::BODY_UNREADABLE))?;
        let Ok(data) = frame.into_data() else { continue };
        seen += data.len();
        if seen > DRAIN_LIMIT {
            break;
        }
        if seen <= limit {
            bytes.extend_from_slice(&data);
        }
    }
    if seen > limit {
        return Err(error::BODY_TOO_LARGE.into());
    }
    Ok(bytes)
}
