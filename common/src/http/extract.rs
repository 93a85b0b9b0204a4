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

/// The address this request came in on, as API Gateway tells it
/// (`https://<domainName>`, then `/<stage>` unless the stage is `$default`):
/// where a link in mail or the docs link points when no public URL is
/// configured. Never the client's Host header, which anyone can set.
pub fn gateway_origin(parts: &Parts) -> Option<String> {
    use lambda_http::request::RequestContext;
    let (domain, stage) = match parts.extensions.get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(c) => (c.domain_name.as_deref()?, c.stage.as_deref()),
        RequestContext::ApiGatewayV1(c) => (c.domain_name.as_deref()?, c.stage.as_deref()),
        _ => return None,
    };
    let valid = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    if !valid(domain) {
        return None;
    }
    Some(match stage.filter(|s| *s != "$default") {
        Some(stage) if valid(stage) => format!("https://{domain}/{stage}"),
        Some(_) => return None,
        None => format!("https://{domain}"),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
    use lambda_http::request::RequestContext;

    fn parts_from(context: Option<(&str, &str)>) -> Parts {
        let mut request = axum::http::Request::new(());
        if let Some((domain, stage)) = context {
            let mut gateway = ApiGatewayV2httpRequestContext::default();
            gateway.domain_name = Some(domain.into());
            gateway.stage = Some(stage.into());
            request.extensions_mut().insert(RequestContext::ApiGatewayV2(gateway));
        }
        request
            .headers_mut()
            .insert("host", "attacker.example".parse().unwrap());
        request.into_parts().0
    }

    /// A link points at the API the request came through, never at the
    /// Host header a client sent.
    #[test]
    fn the_origin_is_the_gateways_domain_and_stage() {
        let domain = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com";
        for (context, origin) in [
            (Some((domain, "$default")), Some(format!("https://{domain}"))),
            (Some((domain, "Prod")), Some(format!("https://{domain}/Prod"))),
            (
                Some(("mail.example.com", "$default")),
                Some("https://mail.example.com".into()),
            ),
            (Some(("evil.example/x?", "$default")), None),
            (Some((domain, "a/b")), None),
            (Some(("", "$default")), None),
            (None, None),
        ] {
            assert_eq!(gateway_origin(&parts_from(context)), origin, "{context:?}");
        }
    }
}
