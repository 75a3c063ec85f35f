//! The event source mappings of the template, run locally: the outbox table's new items go to
//! its stream's function as DynamoDB stream batches (the table is polled, as DynamoDB Local's
//! tables are read without their stream), each queue's messages to its consumer as SQS batches
//! (messages the consumer lists in `batchItemFailures`, or all of a batch whose invocation
//! failed, come back after the visibility timeout; a message received more than the redrive
//! policy's `maxReceiveCount` times goes to the dead-letter queue), and each schedule fires at
//! its rate.

use super::functions::Function;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const REGION: &str = "us-east-1";
const ACCOUNT: &str = "123456789012";

/// An item's attribute value in DynamoDB's JSON (as stream records carry images).
pub fn dynamodb_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": STANDARD.encode(b.as_ref()) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::M(m) => json!({ "M": image(m) }),
        AttributeValue::L(l) => json!({ "L": l.iter().map(dynamodb_json).collect::<Vec<_>>() }),
        AttributeValue::Ss(s) => json!({ "SS": s }),
        AttributeValue::Ns(n) => json!({ "NS": n }),
        AttributeValue::Bs(b) => {
            json!({ "BS": b.iter().map(|b| STANDARD.encode(b.as_ref())).collect::<Vec<_>>() })
        }
        _ => Value::Null,
    }
}

fn image(item: &HashMap<String, AttributeValue>) -> Value {
    Value::Object(
        item.iter()
            .map(|(k, v)| (k.clone(), dynamodb_json(v)))
            .collect(),
    )
}

/// A table's stream: its new items, polled.
pub struct TableStream {
    /// The physical table name.
    pub table: String,
    /// The function its records go to.
    pub function: Arc<Function>,
    /// Records per batch.
    pub batch_size: usize,
    /// Attempts of a failing record before it is skipped.
    pub max_retries: u32,
    /// How often the table is read.
    pub poll: Duration,
}

impl TableStream {
    /// Runs until dropped.
    pub async fn run(self, client: aws_sdk_dynamodb::Client) {
        let arn = format!(
            "arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{}/stream/local",
            self.table
        );
        // Each item is one INSERT record; once handed over it is not again, as a stream
        // carries each write once.
        let mut delivered: HashSet<(String, String)> = HashSet::new();
        let mut attempts: HashMap<(String, String), u32> = HashMap::new();
        let mut sequence: u64 = 0;
        loop {
            tokio::time::sleep(self.poll).await;
            let mut items = match scan(&client, &self.table).await {
                Ok(items) => items,
                Err(e) => {
                    tracing::warn!(table = self.table, "reading the table: {e:#}");
                    continue;
                }
            };
            let key = |item: &HashMap<String, AttributeValue>| {
                let s = |k: &str| {
                    item.get(k)
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default()
                };
                (s("pk"), s("sk"))
            };
            items.retain(|item| !delivered.contains(&key(item)));
            // Event ids are time-ordered: the stream's order.
            items.sort_by_key(|item| key(item).1);
            for batch in items.chunks(self.batch_size) {
                let keys: Vec<_> = batch.iter().map(key).collect();
                let records: Vec<Value> = batch
                    .iter()
                    .map(|item| {
                        sequence += 1;
                        let (pk, sk) = key(item);
                        json!({
                            "eventID": format!("{sequence:032x}"),
                            "eventName": "INSERT",
                            "eventVersion": "1.1",
                            "eventSource": "aws:dynamodb",
                            "awsRegion": REGION,
                            "eventSourceARN": arn,
                            "dynamodb": {
                                "ApproximateCreationDateTime": now_seconds(),
                                "Keys": { "pk": { "S": pk }, "sk": { "S": sk } },
                                "NewImage": image(item),
                                "SequenceNumber": format!("{sequence:021}"),
                                "SizeBytes": 512,
                                "StreamViewType": "NEW_IMAGE",
                            },
                        })
                    })
                    .collect();
                let sequences: Vec<String> = records
                    .iter()
                    .map(|r| {
                        r["dynamodb"]["SequenceNumber"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned()
                    })
                    .collect();
                let failed_from = match self.function.invoke(&json!({ "Records": records })).await {
                    Ok(answer) => match answer.json() {
                        // The shard resumes from the first reported record.
                        Ok(response) => response["batchItemFailures"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|f| f["itemIdentifier"].as_str())
                            .filter_map(|id| sequences.iter().position(|s| s == id))
                            .min(),
                        Err(e) => {
                            tracing::warn!(table = self.table, "{e:#}");
                            Some(0)
                        }
                    },
                    Err(e) => {
                        tracing::warn!(table = self.table, "{e:#}");
                        Some(0)
                    }
                };
                let done = failed_from.unwrap_or(keys.len());
                delivered.extend(keys[..done].iter().cloned());
                for key in &keys[done..] {
                    let n = attempts.entry(key.clone()).or_default();
                    *n += 1;
                    if *n > self.max_retries {
                        tracing::error!(
                            table = self.table,
                            ?key,
                            "record skipped after its retries"
                        );
                        delivered.insert(key.clone());
                    }
                }
                if failed_from.is_some() {
                    break;
                }
            }
        }
    }
}

async fn scan(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> anyhow::Result<Vec<HashMap<String, AttributeValue>>> {
    let mut all = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await?;
        all.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(next) if !next.is_empty() => start = Some(next),
            _ => return Ok(all),
        }
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// One queue's event source mapping.
pub struct QueuePoller {
    /// The queue's URL.
    pub url: String,
    /// Its dead-letter queue's URL.
    pub dead_letter_url: String,
    /// The consumer.
    pub function: Arc<Function>,
    /// Records per batch.
    pub batch_size: usize,
    /// How long a batch may wait to fill.
    pub batching_window: Duration,
    /// How long a received message stays hidden.
    pub visibility: Duration,
    /// Receives after which a message goes to the dead-letter queue.
    pub max_receive_count: u32,
}

impl QueuePoller {
    /// Runs until dropped.
    pub async fn run(self, client: aws_sdk_sqs::Client) {
        let name = self.url.rsplit('/').next().unwrap_or_default().to_owned();
        let arn = format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{name}");
        loop {
            let messages = match self.receive(&client).await {
                Ok(messages) => messages,
                Err(e) => {
                    tracing::warn!(queue = name, "receiving: {e:#}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let mut batch = Vec::new();
            for m in messages {
                let receives: u32 = m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                if receives > self.max_receive_count {
                    self.dead_letter(&client, &m).await;
                } else {
                    batch.push(m);
                }
            }
            if batch.is_empty() {
                continue;
            }
            let records: Vec<Value> = batch
                .iter()
                .map(|m| {
                    let attributes: serde_json::Map<String, Value> = m
                        .attributes()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.as_str().to_owned(), json!(v)))
                        .collect();
                    json!({
                        "messageId": m.message_id(),
                        "receiptHandle": m.receipt_handle(),
                        "body": m.body(),
                        "attributes": attributes,
                        "messageAttributes": {},
                        "md5OfBody": m.md5_of_body(),
                        "eventSource": "aws:sqs",
                        "eventSourceARN": arn,
                        "awsRegion": REGION,
                    })
                })
                .collect();
            let failed: Option<HashSet<String>> =
                match self.function.invoke(&json!({ "Records": records })).await {
                    Ok(answer) => match answer.json() {
                        Ok(response) => Some(
                            response["batchItemFailures"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
                                .collect(),
                        ),
                        Err(e) => {
                            tracing::warn!(queue = name, "{e:#}");
                            None
                        }
                    },
                    Err(e) => {
                        tracing::warn!(queue = name, "{e:#}");
                        None
                    }
                };
            // A failed invocation leaves the whole batch to come back.
            let Some(failed) = failed else { continue };
            for m in &batch {
                if failed.contains(m.message_id().unwrap_or_default()) {
                    continue;
                }
                if let Err(e) = client
                    .delete_message()
                    .queue_url(&self.url)
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .send()
                    .await
                {
                    tracing::warn!(queue = name, "deleting a message: {e}");
                }
            }
        }
    }

    /// Up to a batch, waiting at most the batching window (or a second) for the first.
    async fn receive(
        &self,
        client: &aws_sdk_sqs::Client,
    ) -> anyhow::Result<Vec<aws_sdk_sqs::types::Message>> {
        let mut got = Vec::new();
        let until = tokio::time::Instant::now() + self.batching_window;
        loop {
            let wanted = (self.batch_size - got.len()).min(10) as i32;
            let out = client
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(wanted)
                .visibility_timeout(self.visibility.as_secs() as i32)
                .wait_time_seconds(if got.is_empty() { 1 } else { 0 })
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send()
                .await?;
            let none = out.messages().is_empty();
            got.extend(out.messages.unwrap_or_default());
            if got.len() >= self.batch_size
                || (none && !got.is_empty())
                || tokio::time::Instant::now() >= until
            {
                return Ok(got);
            }
            if got.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Moves a message past its receive count to the dead-letter queue, as SQS's redrive does.
    async fn dead_letter(&self, client: &aws_sdk_sqs::Client, m: &aws_sdk_sqs::types::Message) {
        let sent = client
            .send_message()
            .queue_url(&self.dead_letter_url)
            .message_body(m.body().unwrap_or_default())
            .send()
            .await;
        match sent {
            Ok(_) => {
                let _ = client
                    .delete_message()
                    .queue_url(&self.url)
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .send()
                    .await;
                tracing::warn!(
                    queue = self.url,
                    message = m.message_id(),
                    "moved to the dead-letter queue after {} receives",
                    self.max_receive_count
                );
            }
            Err(e) => tracing::warn!(queue = self.url, "dead-lettering: {e}"),
        }
    }
}

/// Whether the queue answers (for a clear error at start).
pub async fn queue_exists(client: &aws_sdk_sqs::Client, url: &str) -> bool {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .is_ok()
}

/// One schedule: the function gets EventBridge's scheduled event every `every`.
pub async fn run_schedule(function: Arc<Function>, rule: String, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        ticks.tick().await;
        let time = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default();
        let event = json!({
            "version": "0",
            "id": uuid::Uuid::new_v4().to_string(),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": time,
            "region": REGION,
            "resources": [format!("arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule}")],
            "detail": {}
        });
        match function.invoke(&event).await.and_then(|a| a.json()) {
            Ok(_) => tracing::info!(rule, "the schedule fired"),
            Err(e) => tracing::warn!(rule, "{e:#}"),
        }
    }
}
