//! common's integration tests, one binary (one link when common changes),
//! one module per area.

mod architecture;
mod cloud_backends;
mod dsn;
mod lambda_client_ip;
mod store_conformance;
mod store_dynamodb;
