//! S3 blob store.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use std::path::Path;
use std::time::Duration;

use super::{OnFirstUse, describe};
use paddock_core::ports::blobs::{BlobError, BlobStore, BlobStream, Taken, check_key};

/// Blobs as objects of one private bucket.
pub struct S3BlobStore {
    client: OnFirstUse<Client>,
    bucket: String,
}

impl S3BlobStore {
    /// A store on `bucket`.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self::on_first_use(OnFirstUse::built(client), bucket)
    }

    /// A store on `bucket` whose client is built at its first call.
    pub fn on_first_use(client: OnFirstUse<Client>, bucket: impl Into<String>) -> Self {
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
            .get()
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
            .get()
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
            .get()
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
            .get()
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
            .get()
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
            .get()
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

    async fn take_to_file(
        &self,
        key: &str,
        hold: &str,
        path: &Path,
    ) -> Result<Option<Taken>, BlobError> {
        use tokio::io::AsyncWriteExt;
        check_key(key)?;
        check_key(hold)?;
        // The staging file first, so a refused one changes nothing in the bucket.
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(path).await.map_err(|e| unavailable(&e))?;
        // A server-side copy is one version of the object, whatever is PUT to `key` after it;
        // what is checked and published is that copy.
        let Some(tag) = self.copy(key, hold, None).await? else {
            drop(file);
            let _ = tokio::fs::remove_file(path).await;
            return Ok(None);
        };
        let out = self
            .client
            .get()
            .get_object()
            .bucket(&self.bucket)
            .key(hold)
            .set_if_match((!tag.is_empty()).then(|| tag.clone()))
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        let mut body = out.body.into_async_read();
        let length = tokio::io::copy(&mut body, &mut file)
            .await
            .map_err(|e| unavailable(&e))?;
        file.flush().await.map_err(|e| unavailable(&e))?;
        self.delete(key).await?;
        Ok(Some(Taken {
            length,
            held_at: Some(hold.to_owned()),
            tag: Some(tag),
        }))
    }

    async fn publish_taken(
        &self,
        taken: &Taken,
        _path: &Path,
        to: &str,
    ) -> Result<bool, BlobError> {
        let (Some(held), Some(tag)) = (&taken.held_at, &taken.tag) else {
            return Err(BlobError::Unavailable(
                "S3 publishes only what it holds from take_to_file".into(),
            ));
        };
        check_key(held)?;
        check_key(to)?;
        if self.copy(held, to, Some(tag)).await?.is_none() {
            return Ok(false);
        }
        self.delete(held).await?;
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
    /// Copies `from` to `to` server-side (up to 5 GB in one call), on condition that `from`
    /// still has the ETag `if_match` when given; the new object's ETag, or `None` when `from`
    /// is missing or changed.
    async fn copy(
        &self,
        from: &str,
        to: &str,
        if_match: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        let copied = self
            .client
            .get()
            .copy_object()
            .bucket(&self.bucket)
            .copy_source(format!("{}/{from}", self.bucket))
            .set_copy_source_if_match(if_match.filter(|t| !t.is_empty()).map(str::to_owned))
            .key(to)
            .send()
            .await;
        match copied {
            Ok(out) => Ok(Some(
                out.copy_object_result()
                    .and_then(|r| r.e_tag())
                    .unwrap_or_default()
                    .to_owned(),
            )),
            Err(e)
                if e.raw_response()
                    .is_some_and(|r| matches!(r.status().as_u16(), 404 | 412)) =>
            {
                Ok(None)
            }
            Err(e) => Err(unavailable(&e)),
        }
    }

    /// The object under `key` (its body not yet read), or `None`.
    async fn object(
        &self,
        key: &str,
    ) -> Result<Option<aws_sdk_s3::operation::get_object::GetObjectOutput>, BlobError> {
        check_key(key)?;
        match self
            .client
            .get()
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
