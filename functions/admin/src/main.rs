//! The `admin` function: serves its route family under API Gateway.

common::serve!(ADMIN);
