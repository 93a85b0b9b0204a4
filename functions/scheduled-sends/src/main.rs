//! The `scheduled-sends` function: sends every scheduled send that is due
//! (the job `common::jobs::SCHEDULED_SENDS`), each exactly once: a send is
//! taken with a conditional write, so two runs that overlap never both send.

common::schedule!(SCHEDULED_SENDS);
