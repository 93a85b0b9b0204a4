//! MCP over stateless JSON-RPC 2.0 (spec 4.12).

use axum::routing::MethodRouter;

use crate::http::AppState;

pub fn endpoint() -> MethodRouter<AppState> {
    axum::routing::get(|| async { "todo" })
}
