//! What the local API reads from `template.yaml`: each function's binary, memory and timeout,
//! its HTTP API routes and its event sources (SQS queues with their redrive policies, DynamoDB
//! streams, schedules).
//!
//! Only the shapes the template uses are read; anything else in an event source is an error
//! naming the function and the event, so a template change that the local API cannot honour
//! is noticed at start rather than ignored.

use anyhow::{Context, anyhow, bail};
use serde_yaml::Value;
use std::path::Path;
use std::time::Duration;

/// The template's functions and queues.
#[derive(Debug, Clone)]
pub struct Template {
    /// Every `AWS::Serverless::Function`, in the template's order.
    pub functions: Vec<FunctionSpec>,
}

/// One function of the template.
#[derive(Debug, Clone)]
pub struct FunctionSpec {
    /// The resource's logical id (`AuthFunction`).
    pub logical_id: String,
    /// The binary cargo builds for it (`Metadata.BuildProperties.Binary`).
    pub binary: String,
    /// `MemorySize` (the function's or the globals').
    pub memory_mb: u64,
    /// `Timeout` (the function's or the globals').
    pub timeout: Duration,
    /// Its `HttpApi` events: (method, path), `ANY` and `$default` as written.
    pub routes: Vec<(String, String)>,
    /// Its SQS event source, if any.
    pub queue: Option<QueueSource>,
    /// Its DynamoDB stream event sources.
    pub streams: Vec<StreamSource>,
    /// The rates of its `Schedule` events.
    pub schedules: Vec<Duration>,
}

/// An SQS event source mapping and the queue's redrive policy.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueSource {
    /// The queue's logical id without `Queue` (`TrackMaps`): the section of its settings.
    pub section: String,
    /// `BatchSize`.
    pub batch_size: usize,
    /// `MaximumBatchingWindowInSeconds` (0 when absent).
    pub batching_window: Duration,
    /// The queue's `VisibilityTimeout`.
    pub visibility: Duration,
    /// The redrive policy's `maxReceiveCount`.
    pub max_receive_count: u32,
}

/// A DynamoDB stream event source mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSource {
    /// The table's logical name (`outbox`): its `TableName` after the stack prefix.
    pub table: String,
    /// `BatchSize`.
    pub batch_size: usize,
    /// `MaximumRetryAttempts`.
    pub max_retries: u32,
    /// Whether a `FilterCriteria` is set (only records matching it reach the function).
    pub filtered: bool,
}

impl Template {
    /// Reads `path`.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("reading {}", path.display()))
    }

    /// Reads a template's text.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let doc: Value = serde_yaml::from_str(text).context("not YAML")?;
        let resources = doc["Resources"]
            .as_mapping()
            .ok_or_else(|| anyhow!("no Resources"))?;
        let globals = &doc["Globals"]["Function"];
        let mut functions = Vec::new();
        for (id, resource) in resources {
            if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
                continue;
            }
            let id = id.as_str().unwrap_or_default().to_owned();
            functions.push(function(&doc, globals, &id, resource).with_context(|| id.clone())?);
        }
        Ok(Self { functions })
    }
}

fn function(
    doc: &Value,
    globals: &Value,
    id: &str,
    resource: &Value,
) -> anyhow::Result<FunctionSpec> {
    let properties = &resource["Properties"];
    let binary = resource["Metadata"]["BuildProperties"]["Binary"]
        .as_str()
        .ok_or_else(|| anyhow!("no Metadata.BuildProperties.Binary"))?
        .to_owned();
    let number = |key: &str| properties[key].as_u64().or_else(|| globals[key].as_u64());
    let mut spec = FunctionSpec {
        logical_id: id.to_owned(),
        binary,
        memory_mb: number("MemorySize").unwrap_or(128),
        timeout: Duration::from_secs(number("Timeout").unwrap_or(3)),
        routes: Vec::new(),
        queue: None,
        streams: Vec::new(),
        schedules: Vec::new(),
    };
    let Some(events) = properties["Events"].as_mapping() else {
        return Ok(spec);
    };
    for (name, event) in events {
        let name = name.as_str().unwrap_or_default();
        let p = &event["Properties"];
        match event["Type"].as_str() {
            Some("HttpApi") => {
                let path = p["Path"]
                    .as_str()
                    .ok_or_else(|| anyhow!("{name}: no Path"))?;
                let method = p["Method"].as_str().unwrap_or("ANY");
                spec.routes
                    .push((method.to_ascii_uppercase(), path.to_owned()));
            }
            Some("SQS") => {
                let queue_id = get_att(&p["Queue"], "Arn")
                    .ok_or_else(|| anyhow!("{name}: Queue is not !GetAtt <queue>.Arn"))?;
                let queue = &doc["Resources"][queue_id.as_str()]["Properties"];
                let section = queue_id
                    .strip_suffix("Queue")
                    .ok_or_else(|| anyhow!("{name}: queue {queue_id} is not named <Section>Queue"))?
                    .to_owned();
                spec.queue = Some(QueueSource {
                    section,
                    batch_size: p["BatchSize"].as_u64().unwrap_or(10) as usize,
                    batching_window: Duration::from_secs(
                        p["MaximumBatchingWindowInSeconds"].as_u64().unwrap_or(0),
                    ),
                    visibility: Duration::from_secs(
                        queue["VisibilityTimeout"].as_u64().unwrap_or(30),
                    ),
                    max_receive_count: queue["RedrivePolicy"]["maxReceiveCount"]
                        .as_u64()
                        .ok_or_else(|| anyhow!("{name}: queue {queue_id} has no redrive policy"))?
                        as u32,
                });
            }
            Some("DynamoDB") => {
                let table_id = get_att(&p["Stream"], "StreamArn")
                    .ok_or_else(|| anyhow!("{name}: Stream is not !GetAtt <table>.StreamArn"))?;
                let table_name =
                    tagged(&doc["Resources"][table_id.as_str()]["Properties"]["TableName"])
                        .ok_or_else(|| anyhow!("{name}: table {table_id} has no TableName"))?;
                let table = table_name
                    .rsplit_once("}-")
                    .map_or(table_name.as_str(), |(_, logical)| logical)
                    .to_owned();
                spec.streams.push(StreamSource {
                    table,
                    batch_size: p["BatchSize"].as_u64().unwrap_or(100) as usize,
                    max_retries: p["MaximumRetryAttempts"].as_u64().unwrap_or(10) as u32,
                    filtered: !p["FilterCriteria"].is_null(),
                });
            }
            Some("Schedule") => {
                let rate = p["Schedule"]
                    .as_str()
                    .ok_or_else(|| anyhow!("{name}: no Schedule"))?;
                spec.schedules
                    .push(parse_rate(rate).with_context(|| name.to_owned())?);
            }
            other => bail!("{name}: event type {other:?} is not run locally"),
        }
    }
    Ok(spec)
}

/// The string inside a tag (`!Sub "..."`), or the plain string.
fn tagged(value: &Value) -> Option<String> {
    match value {
        Value::Tagged(t) => t.value.as_str().map(str::to_owned),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The logical id of `!GetAtt <id>.<attribute>`.
fn get_att(value: &Value, attribute: &str) -> Option<String> {
    let Value::Tagged(t) = value else { return None };
    if t.tag != "GetAtt" {
        return None;
    }
    let text = t.value.as_str()?;
    let (id, att) = text.split_once('.')?;
    (att == attribute).then(|| id.to_owned())
}

/// `rate(5 minutes)` as a duration (EventBridge's rate expressions).
pub fn parse_rate(expression: &str) -> anyhow::Result<Duration> {
    let inner = expression
        .strip_prefix("rate(")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| anyhow!("{expression:?} is not rate(<n> <unit>)"))?;
    let (n, unit) = inner
        .split_once(' ')
        .ok_or_else(|| anyhow!("{expression:?} is not rate(<n> <unit>)"))?;
    let n: u64 = n
        .parse()
        .with_context(|| format!("{expression:?}: not a number"))?;
    let seconds = match unit {
        "minute" | "minutes" => 60,
        "hour" | "hours" => 3600,
        "day" | "days" => 86_400,
        _ => bail!("{expression:?}: unit {unit:?} is not minutes, hours or days"),
    };
    Ok(Duration::from_secs(n * seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_template_is_read() {
        let template = Template::read(&crate::binaries::workspace_root().join("template.yaml"))
            .expect("the template");
        let by_binary = |b: &str| {
            template
                .functions
                .iter()
                .find(|f| f.binary == b)
                .unwrap_or_else(|| panic!("{b}"))
        };
        let health = by_binary("paddock-health");
        assert!(health.routes.contains(&("ANY".into(), "$default".into())));
        assert!(
            health
                .routes
                .contains(&("GET".into(), "/health/{proxy+}".into()))
        );
        let feed = by_binary("paddock-feed")
            .queue
            .clone()
            .expect("an SQS source");
        assert_eq!(feed.section, "Feed");
        assert_eq!(feed.batch_size, 10);
        assert_eq!(feed.max_receive_count, 5);
        assert_eq!(feed.visibility, Duration::from_secs(180));
        assert_eq!(
            by_binary("paddock-accounts")
                .queue
                .as_ref()
                .unwrap()
                .batch_size,
            1
        );
        assert_eq!(by_binary("paddock-accounts").memory_mb, 512);
        assert_eq!(
            by_binary("paddock-accounts").timeout,
            Duration::from_secs(900)
        );
        let relay = by_binary("paddock-outbox-relay");
        assert_eq!(relay.streams[0].table, "outbox");
        assert!(!relay.streams[0].filtered);
        assert!(by_binary("paddock-retention").streams[0].filtered);
        assert_eq!(
            by_binary("paddock-track-maps").schedules,
            [Duration::from_secs(300)]
        );
    }

    #[test]
    fn rates_are_read_and_bad_ones_refused() {
        assert_eq!(
            parse_rate("rate(1 minute)").unwrap(),
            Duration::from_secs(60)
        );
        assert_eq!(
            parse_rate("rate(2 hours)").unwrap(),
            Duration::from_secs(7200)
        );
        assert!(parse_rate("cron(0 * * * ? *)").is_err());
        assert!(parse_rate("rate(5 weeks)").is_err());
    }
}
