//! The `credits` function: serves its route family under API Gateway.

common::serve!(CREDITS);
