//! Where a mailbox's stored mail lives, so removal can delete all of it.
//!
//! Items: `MSG#<address>/<sort key>` message rows of a mailbox. Blobs:
//! `mail/<address>/...` raw messages and attachments.

use crate::context::Context;
use crate::error::ApiError;
use crate::store::StoreExt;

pub fn rows_partition(address: &str) -> String {
    format!("MSG#{address}")
}

pub fn blob_prefix(address: &str) -> String {
    format!("mail/{address}/")
}

/// Permanently deletes a mailbox's stored mail: every row, then every blob.
pub async fn purge_mailbox(ctx: &Context, address: &str) -> Result<usize, ApiError> {
    let mut deleted = ctx.store.delete_partition(&rows_partition(address)).await?;
    deleted += ctx
        .store
        .delete_partition(&super::keys::message_ids_of(address))
        .await?;
    let blobs = ctx
        .blobs
        .list(&blob_prefix(address))
        .await
        .map_err(ApiError::internal)?;
    for key in blobs {
        ctx.blobs.delete(&key).await.map_err(ApiError::internal)?;
        deleted += 1;
    }
    Ok(deleted)
}

// ------------------------------------------------------------ stored messages
//
// Items: `MSG#<mailbox>/<ingestedAt>#<id>` one message row (newest last in sort
// order); `MSGID#<mailbox>/<Message-ID>` which row holds a Message-ID and its
// thread. Blobs: `mail/<mailbox>/<id>/body.txt`, `.../att-<index>`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::{Cond, Key, StoreError, Write, item, record};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentMeta {
    pub index: usize,
    pub filename: String,
    pub content_type: String,
    pub size: usize,
    pub blob: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
    #[serde(rename = "box")]
    pub direction: Direction,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub preview: String,
    pub date: Option<String>,
    pub ingested_at: String,
    pub unread: bool,
    #[serde(default)]
    pub folder: Option<String>,
    pub source: String,
    pub thread_id: String,
    pub attachments: Vec<AttachmentMeta>,
    pub body_blob: String,
}

fn message_id_key(mailbox: &str, message_id: &str) -> Key {
    super::keys::message_id(mailbox, message_id)
}

/// A thread's id: 64 lowercase hex characters, from the mailbox and the
/// Message-ID that started the conversation.
pub fn thread_id(mailbox: &str, root_message_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{mailbox}\n{root_message_id}")))
}

pub fn new_message_row_id() -> String {
    format!("m_{}", hex::encode(rand::random::<[u8; 12]>()))
}

pub fn preview(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(160).collect()
}

/// The thread that holds any of these Message-IDs in the mailbox, if one does.
pub async fn find_thread(ctx: &Context, mailbox: &str, message_ids: &[String]) -> Result<Option<String>, ApiError> {
    for id in message_ids.iter().rev() {
        if let Some(found) = ctx.store.get(&message_id_key(mailbox, id)).await?
            && let Some(thread) = found.get("threadId").and_then(|v| v.as_str())
        {
            return Ok(Some(thread.to_string()));
        }
    }
    Ok(None)
}

/// Files a message: its body and attachments as blobs, then its row and its
/// Message-ID index in one transaction. Filing the same Message-ID in the same
/// mailbox twice is refused (`Ok(false)`), so ingest is idempotent.
pub async fn file_message(
    ctx: &Context,
    message: &StoredMessage,
    body: &str,
    files: &[(AttachmentMeta, Vec<u8>)],
) -> Result<bool, ApiError> {
    let blob_err = |e: crate::blob::BlobError| ApiError::internal(e.to_string());
    ctx.blobs
        .put(
            &message.body_blob,
            body.as_bytes().to_vec(),
            "text/plain; charset=utf-8",
        )
        .await
        .map_err(blob_err)?;
    for (meta, bytes) in files {
        ctx.blobs
            .put(&meta.blob, bytes.clone(), &meta.content_type)
            .await
            .map_err(blob_err)?;
    }
    let row_key = Key::new(
        rows_partition(&message.mailbox),
        format!("{}#{}", message.ingested_at, message.id),
    );
    let index = serde_json::json!({ "id": message.id, "rowSk": row_key.sk, "threadId": message.thread_id });
    let writes = vec![
        Write::Put {
            item: item(&message_id_key(&message.mailbox, &message.message_id), &index),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&row_key, message),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A stored message by its Message-ID.
pub async fn by_message_id(ctx: &Context, mailbox: &str, message_id: &str) -> Result<Option<StoredMessage>, ApiError> {
    let Some(index) = ctx.store.get(&message_id_key(mailbox, message_id)).await? else {
        return Ok(None);
    };
    let sk = index.get("rowSk").and_then(|v| v.as_str()).unwrap_or_default();
    match ctx.store.get(&Key::new(rows_partition(mailbox), sk)).await? {
        Some(row) => Ok(Some(record(row)?)),
        None => Ok(None),
    }
}
