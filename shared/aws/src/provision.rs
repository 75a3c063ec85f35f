//! Creates the tables, bucket, queues and secret for local emulators and tests.
//!
//! In AWS the SAM template creates them; this mirrors it for DynamoDB Local and moto_server.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    StreamSpecification, StreamViewType, TimeToLiveSpecification,
};

use super::describe;
use paddock_core::ports::items::{PK, SK, TTL};
use paddock_core::tables::Table;

/// Creates every table under `prefix` (existing ones are kept) with TTL on `ttl`.
pub async fn create_tables(client: &aws_sdk_dynamodb::Client, prefix: &str) -> anyhow::Result<()> {
    for table in Table::ALL {
        let name = table.physical(prefix);
        let mut create = client
            .create_table()
            .table_name(&name)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute(PK)?)
            .attribute_definitions(attribute(SK)?)
            .key_schema(key(PK, KeyType::Hash)?)
            .key_schema(key(SK, KeyType::Range)?);
        if table.has_stream() {
            create = create.stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(if table.stream_holds_old_images() {
                        StreamViewType::OldImage
                    } else {
                        StreamViewType::NewImage
                    })
                    .build()?,
            );
        }
        match create.send().await {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(aws_sdk_dynamodb::operation::create_table::CreateTableError::is_resource_in_use_exception) =>
            {
                continue;
            }
            Err(e) => anyhow::bail!("creating table {name}: {}", describe(&e)),
        }
        client
            .update_time_to_live()
            .table_name(&name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(TTL)
                    .build()?,
            )
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("enabling TTL on {name}: {}", describe(&e)))?;
    }
    Ok(())
}

fn attribute(name: &str) -> anyhow::Result<AttributeDefinition> {
    Ok(AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()?)
}

fn key(name: &str, kind: KeyType) -> anyhow::Result<KeySchemaElement> {
    Ok(KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()?)
}

/// Creates `bucket` if missing.
#[cfg(feature = "s3")]
pub async fn create_bucket(client: &aws_sdk_s3::Client, bucket: &str) -> anyhow::Result<()> {
    match client.create_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error().is_some_and(|s| {
                s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()
            }) =>
        {
            Ok(())
        }
        Err(e) => anyhow::bail!("creating bucket {bucket}: {}", describe(&e)),
    }
}

/// Creates a queue and its dead-letter queue; returns (queue URL, dead-letter URL).
#[cfg(feature = "sqs")]
pub async fn create_queues(
    client: &aws_sdk_sqs::Client,
    name: &str,
) -> anyhow::Result<(String, String)> {
    let dlq = client
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("creating {name}-dlq: {}", describe(&e)))?;
    let queue = client
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("creating {name}: {}", describe(&e)))?;
    Ok((
        queue.queue_url.unwrap_or_default(),
        dlq.queue_url.unwrap_or_default(),
    ))
}

/// Creates (or overwrites) a JSON secret; returns its ARN.
#[cfg(feature = "secretsmanager")]
pub async fn put_secret(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
    value: &serde_json::Value,
) -> anyhow::Result<String> {
    let text = value.to_string();
    match client
        .create_secret()
        .name(name)
        .secret_string(&text)
        .send()
        .await
    {
        Ok(out) => Ok(out.arn.unwrap_or_else(|| name.to_owned())),
        Err(e)
            if e.as_service_error()
                .is_some_and(aws_sdk_secretsmanager::operation::create_secret::CreateSecretError::is_resource_exists_exception) =>
        {
            let out = client
                .put_secret_value()
                .secret_id(name)
                .secret_string(&text)
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("updating secret {name}: {}", describe(&e)))?;
            Ok(out.arn.unwrap_or_else(|| name.to_owned()))
        }
        Err(e) => anyhow::bail!("creating secret {name}: {}", describe(&e)),
    }
}
