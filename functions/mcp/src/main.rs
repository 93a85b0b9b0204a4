//! The `mcp` function: `POST /mcp` (every tool of the catalogue), `GET /mcp`,
//! and the API description (`/docs`, `/docs/openapi.json`).

common::serve!(MCP);
