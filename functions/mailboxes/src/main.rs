//! The `mailboxes` function: serves its route family under API Gateway.

common::serve!(MAILBOXES);
