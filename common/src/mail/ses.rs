//! Outbound mail through Amazon SES v2, as raw MIME so the message goes out
//! byte for byte as built (headers, attachments, our Message-ID).

use async_trait::async_trait;
use aws_sdk_sesv2::error::DisplayErrorContext;
use aws_sdk_sesv2::primitives::Blob;
use aws_sdk_sesv2::types::{Destination, EmailContent, RawMessage};

use super::{MailError, Outgoing, Transport};

pub struct SesTransport {
    client: aws_sdk_sesv2::Client,
}

impl SesTransport {
    pub fn new(client: aws_sdk_sesv2::Client) -> Self {
        Self { client }
    }
}

#[async_trait]
impl Transport for SesTransport {
    async fn send(&self, message: &Outgoing) -> Result<(), MailError> {
        let raw = RawMessage::builder()
            .data(Blob::new(message.raw.clone()))
            .build()
            .map_err(|e| MailError(e.to_string()))?;
        // The envelope, not the To/Cc headers, decides who gets it: Bcc
        // recipients are absent from the headers.
        let destination = Destination::builder()
            .set_to_addresses(Some(message.recipients.clone()))
            .build();
        self.client
            .send_email()
            .from_email_address(&message.envelope_from)
            .destination(destination)
            .content(EmailContent::builder().raw(raw).build())
            .send()
            .await
            .map_err(|e| MailError(DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
}
