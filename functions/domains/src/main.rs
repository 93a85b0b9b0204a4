//! The `domains` function: serves its route family under API Gateway.

common::serve!(DOMAINS);
