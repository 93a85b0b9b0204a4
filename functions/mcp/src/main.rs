//! The `mcp` function: `POST /mcp` (every tool of the catalogue), `GET /mcp`,
//! and the API description (`/docs`, `/docs/openapi.json`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(common::http::mcp_router).await
}
