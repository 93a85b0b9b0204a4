//! The local transport: every message becomes `<dir>/<time>-<random>.eml`.

use std::path::PathBuf;

use async_trait::async_trait;

use super::{MailError, Outgoing, Transport};

pub struct SpoolTransport {
    dir: PathBuf,
}

impl SpoolTransport {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
}

#[async_trait]
impl Transport for SpoolTransport {
    async fn send(&self, message: &Outgoing) -> Result<(), MailError> {
        let io = |e: std::io::Error| MailError(e.to_string());
        tokio::fs::create_dir_all(&self.dir).await.map_err(io)?;
        let name = format!(
            "{}-{:08x}.eml",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.6f"),
            rand::random::<u32>()
        );
        // The envelope travels with the message, as a delivery agent's Return-Path
        // and X-Original-To would.
        let mut bytes = format!(
            "Return-Path: <{}>\r\nX-Original-To: {}\r\n",
            message.envelope_from,
            message.recipients.join(", ")
        )
        .into_bytes();
        bytes.extend_from_slice(&message.raw);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        tokio::fs::write(&tmp, bytes).await.map_err(io)?;
        tokio::fs::rename(&tmp, self.dir.join(name)).await.map_err(io)
    }
}
