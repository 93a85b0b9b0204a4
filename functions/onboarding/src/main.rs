//! The `onboarding` function: serves its route family under API Gateway.

common::serve!(ONBOARDING);
