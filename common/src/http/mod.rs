//! HTTP for both hosts: one axum router per set of families, built from the
//! catalogue. A Lambda serves its family's router with `lambda_http::run`; the
//! local server merges all of them. Every route answers at its root path and
//! under `/api`; every verb of a known path reaches us (405, OPTIONS 204).

pub mod extract;
mod rest;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter, on};

pub use crate::api::Family;
use crate::api::{CATALOGUE, Operation};
use crate::auth::Access;
use crate::context::Context;
use crate::error::{self, ApiError};

pub type AppState = Arc<Context>;

/// A REST route: what the auth-matrix test, the Lambda routing test and the
/// SAM template check walk.
#[derive(Debug, Clone)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub family: Family,
    pub access: Access,
}

/// The routes outside the catalogue: the MCP endpoint and the API description.
const DESCRIBED: &[(Method, &str, Access)] = &[
    (Method::GET, "/mcp", Access::Public),
    (Method::POST, "/mcp", Access::Mcp),
    (Method::GET, "/docs", Access::Public),
    (Method::GET, "/docs/openapi.json", Access::Public),
];

/// Every REST route.
pub fn routes() -> Vec<Route> {
    let catalogued = CATALOGUE.iter().filter_map(|op| {
        op.rest.as_ref().map(|rest| Route {
            method: rest.method.clone(),
            path: rest.path,
            family: op.family,
            access: op.access,
        })
    });
    let described = DESCRIBED.iter().map(|(method, path, access)| Route {
        method: method.clone(),
        path,
        family: Family::Mcp,
        access: *access,
    });
    catalogued.chain(described).collect()
}

/// The route for a method and a path (with or without the `/api` prefix).
pub fn find_route(method: &Method, path: &str) -> Option<Route> {
    let path = crate::api::strip_api(path);
    routes().into_iter().find(|r| r.method == method && r.path == path)
}

/// The router serving the given families.
pub fn router(ctx: AppState, families: &[Family]) -> Router {
    let mut by_path: BTreeMap<&'static str, MethodRouter<AppState>> = BTreeMap::new();
    let mut add = |path: &'static str, endpoint: MethodRouter<AppState>| {
        let merged = match by_path.remove(path) {
            Some(existing) => existing.merge(endpoint),
            None => endpoint,
        };
        by_path.insert(path, merged);
    };
    for op in CATALOGUE.iter().filter(|op| families.contains(&op.family)) {
        if let Some(rest) = &op.rest {
            add(rest.path, endpoint(op, rest));
        }
    }
    if families.contains(&Family::Mcp) {
        add("/mcp", crate::mcp::endpoint());
        add("/docs", axum::routing::get(crate::openapi::legacy_page));
        add("/docs/openapi.json", axum::routing::get(crate::openapi::serve));
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
        .layer(middleware::from_fn(log_request))
        .with_state(ctx)
}

/// The handler of a catalogued operation: it authenticates and admits the
/// caller itself, so every verb axum sends to it (HEAD included) passes the
/// operation's access rule.
fn endpoint(op: &'static Operation, rest: &'static crate::api::Rest) -> MethodRouter<AppState> {
    // Built at start-up from the catalogue's constant methods, never per request.
    let filter = MethodFilter::try_from(rest.method.clone()).expect("catalogue methods are standard");
    on(filter, move |State(ctx): State<AppState>, req: Request| {
        rest::serve(op, rest, ctx, req)
    })
}

/// One structured line per request: route, status, latency. Never a header,
/// a body or a query string, so never a key, a token or a code.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let response = next.run(req).await;
    tracing::info!(
        method = %method,
        route = route.as_ref().map_or("unmatched", MatchedPath::as_str),
        status = response.status().as_u16(),
        latency_ms = %format_args!("{:.3}", started.elapsed().as_secs_f64() * 1000.0),
        "request"
    );
    response
}

async fn preflight() -> StatusCode {
    StatusCode::NO_CONTENT
}

pub(crate) async fn method_not_allowed() -> ApiError {
    error::METHOD_NOT_ALLOWED.into()
}

async fn not_found() -> ApiError {
    error::NO_ROUTE.into()
}

/// A Lambda function's whole life: build the context once (cold start), then
/// serve its families' routes. The cold start writes nothing to the store: the
/// agent balance and the operators' bootstrap are the scheduled `mta-export`
/// function's (`service::bootstrap::run`).
pub async fn serve_lambda(families: &[Family]) -> Result<(), lambda_http::Error> {
    crate::telemetry::init(true);
    let built = Context::build(crate::config::Config::from_env(), crate::context::Mode::Lambda).await?;
    lambda_http::run(router(built.context, families)).await
}
