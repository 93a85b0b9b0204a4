//! HTTP for both hosts: axum routers built from the catalogue. A Lambda
//! serves its family's router with `lambda_http::run`; the local server
//! serves every family's. Every route answers at its root path and
//! under `/api`; every verb of a known path reaches us (405, OPTIONS 204).

pub mod extract;
pub mod mcp;
pub mod preamble;
mod rest;
pub mod web;
pub mod web_sign_in;

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
use crate::api::{CATALOGUE, Operation, Section};
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
    let catalogued = CATALOGUE.iter().flat_map(|section| {
        section.operations.iter().filter_map(|op| {
            op.rest.as_ref().map(|rest| Route {
                method: rest.method.clone(),
                path: rest.path,
                family: crate::api::family_of(section),
                access: op.access,
            })
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

/// The router of a family's function: the REST routes of its catalogue
/// sections. Only the sections named here are linked into the binary.
pub fn router(ctx: AppState, sections: &[&'static Section]) -> Router {
    Paths::default().catalogue(sections).into_router(ctx)
}

/// The router of the `mcp` function: `/mcp` (every tool), the API
/// description and the web app.
pub fn mcp_router(ctx: AppState) -> Router {
    web::router(false).merge(Paths::default().mcp().into_router(ctx))
}

/// The local server's router: every route of every family, the web app, and
/// its operator sign-in (local only).
pub fn local_router(ctx: AppState) -> Router {
    web::router(ctx.config.jwks_url.is_none())
        .merge(web_sign_in::router(ctx.clone()))
        .merge(Paths::default().catalogue(CATALOGUE).mcp().into_router(ctx))
}

/// The endpoints by path, merged across verbs before they become routes.
#[derive(Default)]
struct Paths(BTreeMap<&'static str, MethodRouter<AppState>>);

impl Paths {
    fn add(&mut self, path: &'static str, endpoint: MethodRouter<AppState>) {
        let merged = match self.0.remove(path) {
            Some(existing) => existing.merge(endpoint),
            None => endpoint,
        };
        self.0.insert(path, merged);
    }

    fn catalogue(mut self, sections: &[&'static Section]) -> Self {
        for op in sections.iter().flat_map(|section| section.operations) {
            if let Some(rest) = &op.rest {
                self.add(rest.path, endpoint(op, rest));
            }
        }
        self
    }

    fn mcp(mut self) -> Self {
        self.add("/mcp", mcp::endpoint());
        self.add("/docs", axum::routing::get(crate::openapi::legacy_page));
        self.add("/docs/openapi.json", axum::routing::get(crate::openapi::serve));
        self
    }

    /// Every path at its root and under `/api`, with the 405, the OPTIONS
    /// 204, the 404 and the request log.
    fn into_router(self, ctx: AppState) -> Router {
        let mut router = Router::new();
        for (path, methods) in self.0 {
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

/// One structured line per request: route, status, latency in µs. Never a header,
/// a body or a query string, so never a key, a token or a code.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let response = next.run(req).await;
    // Plain values (a str, integers): no float or Display formatting per request.
    tracing::info!(
        method = method.as_str(),
        route = route.as_ref().map_or("unmatched", MatchedPath::as_str),
        status = response.status().as_u16(),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

pub(crate) async fn preflight() -> StatusCode {
    StatusCode::NO_CONTENT
}

pub(crate) async fn method_not_allowed() -> ApiError {
    error::METHOD_NOT_ALLOWED.into()
}

async fn not_found() -> ApiError {
    error::NO_ROUTE.into()
}

/// A Lambda function's whole life: build the context once (cold start), then
/// serve the routes `routes` makes ([`router`] of its family's section, or
/// [`mcp_router`]). The cold start writes nothing to the store: the agent
/// balance and the operators' bootstrap are the scheduled `mta-export`
/// function's (`service::bootstrap::run`).
pub async fn serve_lambda(routes: fn(AppState) -> Router) -> Result<(), lambda_http::Error> {
    crate::telemetry::init(true);
    let built = Context::build(crate::config::Config::from_env()?, crate::context::Mode::Lambda).await?;
    lambda_http::run(routes(built.context)).await
}

/// A route family's function's whole `main`: `common::serve!(SEND)` serves
/// the sections `common::api::functions::SEND` names (and links only their
/// services); `common::serve!(MCP)` serves every tool and the API description.
#[macro_export]
macro_rules! serve {
    (MCP) => {
        #[tokio::main]
        async fn main() -> Result<(), lambda_http::Error> {
            $crate::http::serve_lambda($crate::http::mcp_router).await
        }
    };
    ($function:ident) => {
        #[tokio::main]
        async fn main() -> Result<(), lambda_http::Error> {
            $crate::http::serve_lambda(|ctx| $crate::http::router(ctx, $crate::api::functions::$function)).await
        }
    };
}
