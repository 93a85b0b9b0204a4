//! HTTP for both hosts: one axum router per family built from the route table.
//! A Lambda serves its family's router with `lambda_http::run`; the local server
//! merges all of them. Every route answers at its root path and under `/api`.

pub mod extract;
mod handlers;
pub mod routes;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use crate::auth::{Access, Authenticated, Caller, Presented, Via};
use crate::context::Context;
use crate::error::ApiError;
pub use routes::{Family, ROUTES, Route};

pub type AppState = Arc<Context>;

/// The router serving the given families.
pub fn router(ctx: AppState, families: &[Family]) -> Router {
    let mut by_path: BTreeMap<&'static str, MethodRouter<AppState>> = BTreeMap::new();
    for route in ROUTES.iter().filter(|r| families.contains(&r.family)) {
        let endpoint = handlers::endpoint(route);
        let merged = match by_path.remove(route.path) {
            Some(existing) => existing.merge(endpoint),
            None => endpoint,
        };
        by_path.insert(route.path, merged);
    }
    let mut router = Router::new();
    for (path, methods) in by_path {
        let methods = methods.options(preflight).fallback(method_not_allowed);
        router = router
            .route(path, methods.clone())
            .route(&format!("/api{path}"), methods);
    }
    router
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(ctx.clone(), authorize))
        .layer(middleware::from_fn(log_request))
        .with_state(ctx)
}

/// Authenticates and admits the caller by the route's access rule, before the
/// handler runs: a refused request never reaches a service.
async fn authorize(State(ctx): State<AppState>, mut req: Request, next: Next) -> Response {
    let Some(route) = routes::find(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    let admitted = match route.access {
        Access::Public => Ok(Authenticated {
            caller: Caller::Public,
            via: Via::None,
        }),
        access => match ctx.authenticate(&Presented::from_headers(req.headers())).await {
            Ok(auth) => access.admit(&auth).map(|()| auth),
            Err(e) => Err(e),
        },
    };
    match admitted {
        Ok(auth) => {
            req.extensions_mut().insert(auth);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// One structured line per request: route, status, latency. Never a header,
/// a body or a query string, so never a key, a token or a code.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let response = next.run(req).await;
    tracing::info!(
        method = %method,
        route = route.as_deref().unwrap_or("unmatched"),
        status = response.status().as_u16(),
        latency_ms = %format_args!("{:.3}", started.elapsed().as_secs_f64() * 1000.0),
        "request"
    );
    response
}

async fn preflight() -> StatusCode {
    StatusCode::NO_CONTENT
}

async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

async fn not_found() -> ApiError {
    ApiError::new(404, "Not found")
}
