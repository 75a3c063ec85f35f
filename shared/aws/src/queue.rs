//! SQS event queue with a dead-letter queue.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, MessageSystemAttributeNameForSends,
    MessageSystemAttributeValue, QueueAttributeName, SendMessageBatchRequestEntry,
};
use std::sync::Arc;
use std::time::Duration;

use super::{OnFirstUse, describe};
use paddock_core::ports::queue::{
    EventQueue, MAX_MESSAGE_BYTES, MAX_SEND_DELAY, QueueError, ReceivedMessage,
};
use paddock_core::trace_context::EventHeader;

/// An SQS queue and its dead-letter queue.
pub struct SqsQueue {
    // Shared by the queues of one process, each of which may be the first to use it.
    client: Arc<OnFirstUse<Client>>,
    url: String,
    dead_letter_url: Option<String>,
    visibility: Duration,
}

impl SqsQueue {
    /// The queue at `url`; `dead_letter_url` receives poison messages. The client is built at
    /// the first call of any queue sharing it.
    pub fn on_first_use(
        client: Arc<OnFirstUse<Client>>,
        url: impl Into<String>,
        dead_letter_url: Option<String>,
        visibility: Duration,
    ) -> Self {
        Self {
            client,
            url: url.into(),
            dead_letter_url,
            visibility,
        }
    }
}

fn unavailable(e: &(dyn std::error::Error + 'static)) -> QueueError {
    QueueError::Unavailable(describe(e))
}

fn secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

#[async_trait]
impl EventQueue for SqsQueue {
    async fn send(&self, bodies: Vec<String>) -> Result<(), QueueError> {
        if let Some(big) = bodies.iter().find(|b| b.len() > MAX_MESSAGE_BYTES) {
            return Err(QueueError::TooLarge(big.len()));
        }
        for chunk in bodies.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    let mut entry = SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body);
                    // An event's trace goes along as the message's trace header, so X-Ray
                    // links the consumer's invocation to the request that caused the event.
                    if let Some(trace) = EventHeader::of(body).trace {
                        let attribute = MessageSystemAttributeValue::builder()
                            .data_type("String")
                            .string_value(trace)
                            .build()
                            .map_err(|e| unavailable(&e))?;
                        entry = entry.message_system_attributes(
                            MessageSystemAttributeNameForSends::AwsTraceHeader,
                            attribute,
                        );
                    }
                    entry.build().map_err(|e| unavailable(&e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .client
                .get()
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| unavailable(&e))?;
            if let Some(failed) = out.failed().first() {
                return Err(QueueError::Unavailable(format!(
                    "message {} refused: {}",
                    failed.id(),
                    failed.message().unwrap_or("no reason given")
                )));
            }
        }
        Ok(())
    }

    async fn send_delayed(&self, body: String, delay: Duration) -> Result<(), QueueError> {
        if body.len() > MAX_MESSAGE_BYTES {
            return Err(QueueError::TooLarge(body.len()));
        }
        let mut request = self
            .client
            .get()
            .send_message()
            .queue_url(&self.url)
            .delay_seconds(secs(delay.min(MAX_SEND_DELAY)));
        if let Some(trace) = EventHeader::of(&body).trace {
            let attribute = MessageSystemAttributeValue::builder()
                .data_type("String")
                .string_value(trace)
                .build()
                .map_err(|e| unavailable(&e))?;
            request = request.message_system_attributes(
                MessageSystemAttributeNameForSends::AwsTraceHeader,
                attribute,
            );
        }
        request
            .message_body(body)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn receive(
        &self,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<ReceivedMessage>, QueueError> {
        let out = self
            .client
            .get()
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .wait_time_seconds(secs(wait).min(20))
            .visibility_timeout(secs(self.visibility))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .customize()
            .config_override(aws_sdk_sqs::config::Builder::default().timeout_config(
                super::call_limits::long_poll(wait.min(Duration::from_secs(20))),
            ))
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(out
            .messages()
            .iter()
            .map(|m| ReceivedMessage {
                id: m.message_id().unwrap_or_default().to_owned(),
                body: m.body().unwrap_or_default().to_owned(),
                receipt: m.receipt_handle().unwrap_or_default().to_owned(),
                receive_count: m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1),
            })
            .collect())
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        self.client
            .get()
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn ack_all(&self, receipts: &[String]) -> Result<(), QueueError> {
        for chunk in receipts.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, receipt)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(receipt)
                        .build()
                        .map_err(|e| unavailable(&e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .client
                .get()
                .delete_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| unavailable(&e))?;
            if let Some(failed) = out.failed().first() {
                return Err(QueueError::Unavailable(format!(
                    "acknowledgement {} refused: {}",
                    failed.id(),
                    failed.message().unwrap_or("no reason given")
                )));
            }
        }
        Ok(())
    }

    async fn retry_later(&self, receipt: &str, delay: Duration) -> Result<(), QueueError> {
        self.client
            .get()
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .visibility_timeout(secs(delay))
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }

    async fn dead_letter(&self, message: &ReceivedMessage, reason: &str) -> Result<(), QueueError> {
        let Some(dlq) = &self.dead_letter_url else {
            // Without a configured DLQ the queue's own redrive policy moves it after max receives.
            return self.retry_later(&message.receipt, Duration::ZERO).await;
        };
        tracing::warn!(message_id = %message.id, %reason, "moving message to the dead-letter queue");
        self.client
            .get()
            .send_message()
            .queue_url(dlq)
            .message_body(&message.body)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        self.ack(&message.receipt).await
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        let Some(dlq) = &self.dead_letter_url else {
            return Ok(Vec::new());
        };
        // Peek: a zero visibility timeout leaves the messages where they are.
        let out = self
            .client
            .get()
            .receive_message()
            .queue_url(dlq)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .visibility_timeout(0)
            .wait_time_seconds(1)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| m.body().map(str::to_owned))
            .collect())
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        let out = self
            .client
            .get()
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(|e| unavailable(&e))?;
        let attributes = out.attributes();
        let count = |name: QueueAttributeName| {
            attributes
                .and_then(|a| a.get(&name))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Ok(Some(
            count(QueueAttributeName::ApproximateNumberOfMessages)
                + count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        ))
    }
}
