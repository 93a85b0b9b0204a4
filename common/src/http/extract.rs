//! Request pieces: the caller, the client address, a size-limited body.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;

use crate::auth::Authenticated;
use crate::error::{self, ApiError};
use crate::validate::Fields;

/// How much of an oversized body is read and dropped before answering 413, so
/// a client still writing it reads the answer instead of a reset connection.
const DRAIN_LIMIT: usize = 32 * 1024 * 1024;

/// The caller the legacy auth middleware admitted.
pub struct Caller(pub Authenticated);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Authenticated>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| ApiError::internal("route has no access rule"))
    }
}

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

pub struct ClientIp(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(ClientIp(client_ip(parts)))
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

/// A JSON object body for the legacy handlers; an empty body reads as `{}`.
pub struct Json(pub Fields);

impl<S: Send + Sync> FromRequest<S> for Json {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req.into_body(), crate::api::SEND_BODY).await?;
        Ok(Json(Fields::parse(&bytes)?))
    }
}
