//! S3 blob store.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use std::path::Path;
use std::time::Duration;

use super::describe;
use crate::ports::blobs::{BlobError, BlobStore, BlobStream, check_key};

/// Blobs as objects of one private bucket.
pub struct S3BlobStore {
    client: Client,
    bucket: String,
}

impl S3BlobStore {
    /// A store on `bucket`.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }
}

fn unavailable(e: &(dyn std::error::Error + 'static)) -> BlobError {
    BlobError::Unavailable(describe(e))
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<(), BlobError> {
        check_key(key)?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        match self.object(key).await? {
            Some(out) => {
                let data = out.body.collect().await.map_err(|e| unavailable(&e))?;
                Ok(Some(data.into_bytes()))
            }
            None => Ok(None),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        check_key(key)?;
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| unavailable(&e))?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        keys.sort();
        Ok(keys)
    }

    async fn presigned_get(
        &self,
        key: &str,
        ttl: Duration,
        download_name: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        check_key(key)?;
        let config = PresigningConfig::expires_in(ttl).map_err(|e| unavailable(&e))?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .set_response_content_disposition(download_name.map(attachment))
            .presigned(config)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(Some(request.uri().to_owned()))
    }

    async fn presigned_put(
        &self,
        key: &str,
        ttl: Duration,
        length: u64,
    ) -> Result<Option<String>, BlobError> {
        check_key(key)?;
        let config = PresigningConfig::expires_in(ttl).map_err(|e| unavailable(&e))?;
        // The length is part of the signature: S3 refuses a body of any other size.
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_length(i64::try_from(length).unwrap_or(i64::MAX))
            .content_type("application/zip")
            .presigned(config)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(Some(request.uri().to_owned()))
    }

    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<(), BlobError> {
        check_key(key)?;
        let body = ByteStream::from_path(path)
            .await
            .map_err(|e| unavailable(&e))?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn get_to_file(&self, key: &str, path: &Path) -> Result<Option<u64>, BlobError> {
        use tokio::io::AsyncWriteExt;
        let Some(mut stream) = self.get_stream(key).await? else {
            return Ok(None);
        };
        let mut file = tokio::fs::File::create(path)
            .await
            .map_err(|e| unavailable(&e))?;
        let mut written = 0u64;
        while let Some(chunk) = futures::StreamExt::next(&mut stream.body).await {
            let chunk = chunk.map_err(|e| unavailable(&e))?;
            written += chunk.len() as u64;
            file.write_all(&chunk).await.map_err(|e| unavailable(&e))?;
        }
        file.flush().await.map_err(|e| unavailable(&e))?;
        Ok(Some(written))
    }

    async fn rename(&self, from: &str, to: &str) -> Result<bool, BlobError> {
        check_key(from)?;
        check_key(to)?;
        // A server-side copy (up to 5 GB in one call), then the source goes.
        let copied = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .copy_source(format!("{}/{from}", self.bucket))
            .key(to)
            .send()
            .await;
        match copied {
            Ok(_) => {}
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => {
                return Ok(false);
            }
            Err(e) => return Err(unavailable(&e)),
        }
        self.delete(from).await?;
        Ok(true)
    }

    async fn get_stream(&self, key: &str) -> Result<Option<BlobStream>, BlobError> {
        let Some(out) = self.object(key).await? else {
            return Ok(None);
        };
        let length = out
            .content_length()
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or_default();
        let reader = out.body.into_async_read();
        Ok(Some(BlobStream {
            length,
            body: Box::pin(tokio_util::io::ReaderStream::with_capacity(
                reader,
                64 * 1024,
            )),
        }))
    }
}

impl S3BlobStore {
    /// The object under `key` (its body not yet read), or `None`.
    async fn object(
        &self,
        key: &str,
    ) -> Result<Option<aws_sdk_s3::operation::get_object::GetObjectOutput>, BlobError> {
        check_key(key)?;
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(out)),
            Err(e)
                if e.as_service_error().is_some_and(
                    aws_sdk_s3::operation::get_object::GetObjectError::is_no_such_key,
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(unavailable(&e)),
        }
    }
}

/// `attachment; filename="<name>"` with the name made safe for a header.
fn attachment(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{safe}\"")
}
