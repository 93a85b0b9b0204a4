//! `ApiError` is the only error that reaches a client: a status, the spec's exact
//! sentence, and optionally a machine `code` or a `retryAfter` in seconds.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub error: String,
    pub code: Option<&'static str>,
    pub retry_after: Option<u64>,
}

/// The spec uses one sentence for every 404.
pub const NOT_FOUND: &str = "Message not found";
pub const RATE_LIMITED: &str = "Rate limit exceeded";

impl ApiError {
    pub fn new(status: u16, error: impl Into<String>) -> Self {
        Self {
            status,
            error: error.into(),
            code: None,
            retry_after: None,
        }
    }
    pub fn bad_request(error: impl Into<String>) -> Self {
        Self::new(400, error)
    }
    pub fn unauthorized(error: impl Into<String>) -> Self {
        Self::new(401, error)
    }
    pub fn forbidden(error: impl Into<String>) -> Self {
        Self::new(403, error)
    }
    pub fn not_found() -> Self {
        Self::new(404, NOT_FOUND)
    }
    pub fn conflict(error: impl Into<String>, code: &'static str) -> Self {
        Self {
            code: Some(code),
            ..Self::new(409, error)
        }
    }
    pub fn rate_limited(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after.max(1)),
            ..Self::new(429, RATE_LIMITED)
        }
    }
    pub fn internal(error: impl Into<String>) -> Self {
        Self::new(500, error)
    }
    pub fn method_not_allowed() -> Self {
        Self::new(405, "Method not allowed")
    }
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({ "ok": false, "error": self.error });
        if let Some(code) = self.code {
            body["code"] = json!(code);
        }
        if let Some(retry_after) = self.retry_after {
            body["retryAfter"] = json!(retry_after);
        }
        body
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.error)
    }
}

impl std::error::Error for ApiError {}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        // A condition that fails here was not expected by the caller: the service
        // layer handles every condition it means to branch on before this point.
        tracing::error!(error = %err, "storage request failed");
        ApiError::internal("Internal error")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(retry_after) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}
