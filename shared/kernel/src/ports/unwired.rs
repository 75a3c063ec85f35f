//! A stand-in for a port a Lambda function does not use.
//!
//! Each function wires only the AWS clients it needs, so the others are not linked into its
//! binary. Should code reach an unwired port anyway, it gets a clear `Unavailable` error
//! naming the port (a deployment mistake, reported like any unreachable backend).

use async_trait::async_trait;
use bytes::Bytes;
use std::time::Duration;

use super::blobs::{BlobError, BlobStore, BlobStream, Taken};
use super::queue::{EventQueue, QueueError, ReceivedMessage};
use super::secrets::{SecretError, SecretSource};

/// A port that is not wired into this process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwired;

const BLOBS: &str = "the blob store is not wired into this function";
const QUEUE: &str = "the event queue is not wired into this function";
const SECRETS: &str = "the secret source is not wired into this function";

#[async_trait]
impl BlobStore for Unwired {
    async fn put(&self, _: &str, _: Bytes, _: &str) -> Result<(), BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn get(&self, _: &str) -> Result<Option<Bytes>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn delete(&self, _: &str) -> Result<(), BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn list(&self, _: &str) -> Result<Vec<String>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn presigned_get(
        &self,
        _: &str,
        _: Duration,
        _: Option<&str>,
    ) -> Result<Option<String>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn presigned_put(
        &self,
        _: &str,
        _: Duration,
        _: u64,
    ) -> Result<Option<String>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn put_file(&self, _: &str, _: &std::path::Path, _: &str) -> Result<(), BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn take_to_file(
        &self,
        _: &str,
        _: &str,
        _: &std::path::Path,
    ) -> Result<Option<Taken>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn publish_taken(
        &self,
        _: &Taken,
        _: &std::path::Path,
        _: &str,
    ) -> Result<bool, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
    async fn get_stream(&self, _: &str) -> Result<Option<BlobStream>, BlobError> {
        Err(BlobError::Unavailable(BLOBS.into()))
    }
}

#[async_trait]
impl EventQueue for Unwired {
    async fn send(&self, _: Vec<String>) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
    async fn receive(&self, _: usize, _: Duration) -> Result<Vec<ReceivedMessage>, QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
    async fn ack(&self, _: &str) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
    async fn retry_later(&self, _: &str, _: Duration) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
    async fn dead_letter(&self, _: &ReceivedMessage, _: &str) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
    async fn dead_letters(&self, _: usize) -> Result<Vec<String>, QueueError> {
        Err(QueueError::Unavailable(QUEUE.into()))
    }
}

#[async_trait]
impl SecretSource for Unwired {
    async fn get(&self, _: &str) -> Result<Option<String>, SecretError> {
        Err(SecretError::Unavailable(SECRETS.into()))
    }
}
