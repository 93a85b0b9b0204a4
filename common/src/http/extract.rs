//! Request pieces the handlers need: the caller, the client address, a JSON body.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;

use crate::auth::Authenticated;
use crate::error::ApiError;
use crate::validate::Fields;

/// Largest request body accepted (a send with three 2MB attachments in base64).
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// How much of an oversized body is read and dropped before answering 413, so
/// a client still writing it reads the answer instead of a reset connection.
const DRAIN_LIMIT: usize = 4 * MAX_BODY;

/// The caller the auth middleware admitted.
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
pub struct ClientIp(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        use lambda_http::request::RequestContext;
        let from_gateway = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(c)) => c.http.source_ip.clone(),
            Some(RequestContext::ApiGatewayV1(c)) => c.identity.source_ip.clone(),
            _ => None,
        };
        let ip = from_gateway
            .or_else(|| {
                parts
                    .extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|c| c.0.ip().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Ok(ClientIp(ip))
    }
}

/// A JSON object body; an empty body reads as `{}`.
pub struct Json(pub Fields);

impl<S: Send + Sync> FromRequest<S> for Json {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        use http_body_util::BodyExt;
        let mut body = req.into_body();
        let mut bytes = Vec::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| ApiError::bad_request("The request body could not be read"))?;
            let Ok(data) = frame.into_data() else { continue };
            seen += data.len();
            if seen > DRAIN_LIMIT {
                break;
            }
            if seen <= MAX_BODY {
                bytes.extend_from_slice(&data);
            }
        }
        if seen > MAX_BODY {
            return Err(ApiError::new(413, "Request body too large"));
        }
        Ok(Json(Fields::parse(&bytes)?))
    }
}
