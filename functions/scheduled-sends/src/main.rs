//! The `scheduled-sends` function: sends every scheduled send that is due
//! (the job `common::jobs::SCHEDULED_SENDS`), each exactly once: a send is
//! taken with a conditional write, so two runs that overlap never both send.

#[tokio::main]
async fn main() -> Result<(), common::lambda::Error> {
    common::lambda::schedule(&common::jobs::SCHEDULED_SENDS).await
}
