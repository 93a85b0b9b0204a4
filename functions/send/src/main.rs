//! The `send` function: serves its route family under API Gateway.

common::serve!(SEND);
