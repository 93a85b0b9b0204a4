//! Blobs as objects in one S3 bucket, keys used as-is.

use async_trait::async_trait;
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;

use super::{BlobError, BlobResult, BlobStore, Versioned, split_version};

pub struct S3BlobStore {
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl S3BlobStore {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }
}

/// An S3 client for `conf`. Path-style addressing only when an endpoint URL
/// is configured: stand-ins such as moto or MinIO listen on `127.0.0.1:<port>`,
/// where `<bucket>.127.0.0.1` does not resolve, while real S3 wants
/// virtual-hosted addressing (path style is deprecated there and unsupported
/// for some bucket kinds).
pub fn client_for(conf: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let builder = aws_sdk_s3::config::Builder::from(conf).force_path_style(conf.endpoint_url().is_some());
    aws_sdk_s3::Client::from_conf(builder.build())
}

fn err(e: impl std::error::Error) -> BlobError {
    // The SDK's own Display is just "service error"; the context names the cause.
    BlobError(DisplayErrorContext(e).to_string())
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(err)?;
        Ok(())
    }

    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>> {
        Ok(self.get_versioned(key).await?.map(|read| read.bytes))
    }

    async fn get_versioned(&self, key: &str) -> BlobResult<Option<Versioned>> {
        let (key, version) = split_version(key);
        let request = self.client.get_object().bucket(&self.bucket).key(key);
        let out = match request.set_version_id(version.map(str::to_string)).send().await {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        // A bucket that never had versioning on names none; one where it is
        // suspended names "null", which a delete does not keep.
        let version = out.version_id().filter(|v| *v != "null").map(str::to_string);
        let body = out.body.collect().await.map_err(err)?;
        Ok(Some(Versioned {
            bytes: body.into_bytes().to_vec(),
            version,
        }))
    }

    async fn delete(&self, key: &str) -> BlobResult<()> {
        // S3 answers 204 for a missing key too, which is the contract we want.
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(err)?;
        Ok(())
    }

    async fn list(&self, prefix: &str) -> BlobResult<Vec<String>> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(err)?;
            keys.extend(page.contents().iter().filter_map(|o| o.key().map(str::to_string)));
        }
        // ListObjectsV2 already returns UTF-8 binary order; sorting keeps the
        // contract independent of the server.
        keys.sort();
        Ok(keys)
    }
}
