//! DynamoDB item store.

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_get_items::TransactGetItemsError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Get, KeysAndAttributes, PutRequest, ReturnConsumedCapacity, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactGetItem, WriteRequest,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::describe;
use crate::call_limits;
use paddock_core::ports::Clock;
use paddock_core::ports::items::{
    Condition, Item, ItemStore, Key, KeyPage, PK, Page, Query, SK, SkRange, StoreError, TTL, TxOp,
    Update, check_size, check_snapshot, check_transaction, checked_key, decode_cursor,
    encode_cursor, is_expired,
};
use paddock_core::retry::retry_on_conflict;
use paddock_core::tables::Table;

mod batch_get;
mod expressions;

use expressions::{Expression, from_attributes, key_attributes, to_attributes, transact_item};

type Attributes = HashMap<String, AttributeValue>;

/// Keys one BatchGetItem takes, as DynamoDB allows.
const BATCH_GET_KEYS: usize = 100;
/// Times a batch read is sent while DynamoDB leaves some of its keys unprocessed (it does
/// under throttling): about six seconds of pauses in all.
const BATCH_GET_ROUNDS: u32 = 10;
/// Times a snapshot read is sent while transactions keep writing its items.
const SNAPSHOT_ATTEMPTS: u32 = 8;

/// The DynamoDB item store; tables are named `prefix + logical name`.
pub struct DynamoItemStore {
    client: Client,
    prefix: String,
    clock: Arc<dyn Clock>,
    consumed: Arc<Mutex<Capacity>>,
}

/// Capacity units consumed so far, as DynamoDB reports them (`ReturnConsumedCapacity`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Capacity {
    /// Read capacity units consumed.
    pub read_units: f64,
    /// Write capacity units consumed.
    pub write_units: f64,
}

/// Which kind of capacity a call consumes.
#[derive(Clone, Copy)]
enum Units {
    Read,
    Write,
}

impl DynamoItemStore {
    /// A store on `client` with tables named `prefix + logical name`.
    pub fn new(client: Client, prefix: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            prefix: prefix.into(),
            clock,
            consumed: Arc::default(),
        }
    }

    /// Capacity consumed by this store since it was made.
    pub fn consumed(&self) -> Capacity {
        *self.consumed.lock().expect("capacity lock")
    }

    fn table(&self, table: Table) -> String {
        table.physical(&self.prefix)
    }

    fn record(&self, capacity: Option<&aws_sdk_dynamodb::types::ConsumedCapacity>, kind: Units) {
        if let Some(c) = capacity {
            let mut total = self.consumed.lock().expect("capacity lock");
            let before = total.read_units;
            total.read_units += c.read_capacity_units().unwrap_or(0.0);
            total.write_units += c.write_capacity_units().unwrap_or(0.0);
            if c.read_capacity_units().is_none() && c.write_capacity_units().is_none() {
                // Responses to `ReturnConsumedCapacity::Total` carry only the total: it is
                // read units for reads and write units for writes.
                let units = c.capacity_units().unwrap_or(0.0);
                match kind {
                    Units::Read => total.read_units += units,
                    Units::Write => total.write_units += units,
                }
            }
            let read = total.read_units - before;
            if read > 0.0 {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                paddock_core::metrics::global()
                    .store_read_milliunits
                    .inc_by((read * 1000.0).round() as u64);
            }
        }
    }

    /// Counts items read (Prometheus only).
    fn items_read(n: usize) {
        // Resolved once: the label lookup would otherwise run on every read.
        static ITEMS_READ: std::sync::LazyLock<paddock_core::metrics::LabelledCounter> =
            std::sync::LazyLock::new(|| {
                paddock_core::metrics::global()
                    .store_items_read
                    .with_label_values(&["dynamodb"])
            });
        ITEMS_READ.inc_by(n as u64);
    }
}

/// Maps an SDK error; `condition` is the error to report for a failed condition.
fn sdk_error<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    if let SdkError::ServiceError(service) = &err {
        let e = service.err();
        match e.code() {
            Some("ConditionalCheckFailedException") => {
                return StoreError::ConditionFailed { index: 0 };
            }
            Some("TransactionConflictException") => return StoreError::Conflict,
            Some("ValidationException") if e.message().is_some_and(|m| m.contains("size")) => {
                return StoreError::TooLarge(0);
            }
            _ => {}
        }
    }
    StoreError::Unavailable(describe(&err))
}

#[async_trait]
impl ItemStore for DynamoItemStore {
    async fn get(&self, table: Table, key: &Key) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(self.table(table))
            .set_key(Some(key_attributes(key)))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .customize()
            .config_override(call_limits::DYNAMODB_READS.dynamodb_call())
            .send()
            .await
            .map_err(sdk_error)?;
        self.record(out.consumed_capacity(), Units::Read);
        Self::items_read(usize::from(out.item.is_some()));
        let now = self.clock.unix();
        out.item
            .map(from_attributes)
            .transpose()
            .map(|i| i.filter(|i| !is_expired(i, now)))
    }

    async fn get_many(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        // BatchGetItem refuses a key asked twice: each is asked once and answered where asked.
        let mut distinct: Vec<(Table, Key)> = keys.clone();
        distinct.sort();
        distinct.dedup();
        let batches = distinct
            .chunks(BATCH_GET_KEYS)
            .map(|chunk| self.batch_get(chunk));
        let mut found = HashMap::new();
        for batch in futures::future::try_join_all(batches).await? {
            found.extend(batch);
        }
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
    }

    async fn transact_get(&self, keys: Vec<(Table, Key)>) -> Result<Vec<Option<Item>>, StoreError> {
        check_snapshot(&keys)?;
        let gets = keys
            .iter()
            .map(|(table, key)| {
                Get::builder()
                    .table_name(self.table(*table))
                    .set_key(Some(key_attributes(key)))
                    .build()
                    .map(|get| TransactGetItem::builder().get(get).build())
                    .map_err(|e| StoreError::Invalid(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // A snapshot read is refused while a transaction writes one of its items: it is asked
        // again after a pause (the project's one conflict retry), as the SDK does not retry it.
        let read = || async {
            self.client
                .transact_get_items()
                .set_transact_items(Some(gets.clone()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .customize()
                .config_override(call_limits::DYNAMODB_READS.dynamodb_call())
                .send()
                .await
                .map_err(|err| match err.as_service_error() {
                    Some(TransactGetItemsError::TransactionCanceledException(_)) => {
                        StoreError::Conflict
                    }
                    _ => sdk_error(err),
                })
        };
        let out = retry_on_conflict(
            SNAPSHOT_ATTEMPTS,
            |e| matches!(e, StoreError::Conflict),
            read,
        )
        .await?;
        for c in out.consumed_capacity() {
            self.record(Some(c), Units::Read);
        }
        let now = self.clock.unix();
        let responses = out.responses.unwrap_or_default();
        if responses.len() != keys.len() {
            return Err(StoreError::Unavailable(format!(
                "a snapshot read of {} items answered {}",
                keys.len(),
                responses.len()
            )));
        }
        let mut found = Vec::with_capacity(keys.len());
        for response in responses {
            let item = response.item.map(from_attributes).transpose()?;
            Self::items_read(usize::from(item.is_some()));
            found.push(item.filter(|i| !is_expired(i, now)));
        }
        Ok(found)
    }

    async fn put(
        &self,
        table: Table,
        item: Item,
        condition: Option<Condition>,
    ) -> Result<(), StoreError> {
        checked_key(&item)?;
        check_size(&item)?;
        let mut expr = Expression::new(self.clock.unix());
        let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
        let attributes = to_attributes(&item)?;
        // A refused put answers the item it found: the SDK's retry of a put that was applied
        // but whose answer was lost finds exactly its own item, and that is a success.
        let on_refusal = cond
            .as_ref()
            .map(|_| ReturnValuesOnConditionCheckFailure::AllOld);
        let out = self
            .client
            .put_item()
            .table_name(self.table(table))
            .set_item(Some(attributes.clone()))
            .set_condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .set_return_values_on_condition_check_failure(on_refusal)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match out {
            Ok(out) => {
                self.record(out.consumed_capacity(), Units::Write);
                Ok(())
            }
            Err(err) => match err.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(refused))
                    if refused.item() == Some(&attributes) =>
                {
                    Ok(())
                }
                _ => Err(sdk_error(err)),
            },
        }
    }

    async fn put_many(&self, table: Table, items: Vec<Item>) -> Result<(), StoreError> {
        let name = self.table(table);
        // BatchWriteItem takes 25 items a call; what DynamoDB leaves unprocessed (throttling)
        // is sent again after a pause.
        for chunk in items.chunks(25) {
            let mut requests = Vec::with_capacity(chunk.len());
            for item in chunk {
                checked_key(item)?;
                check_size(item)?;
                let put = PutRequest::builder()
                    .set_item(Some(to_attributes(item)?))
                    .build()
                    .map_err(|e| StoreError::Invalid(e.to_string()))?;
                requests.push(WriteRequest::builder().put_request(put).build());
            }
            let mut pause = Duration::from_millis(20);
            while !requests.is_empty() {
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&name, requests)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .customize()
                    .config_override(call_limits::DYNAMODB_SWEEPS.dynamodb_call())
                    .send()
                    .await
                    .map_err(sdk_error)?;
                for c in out.consumed_capacity() {
                    self.record(Some(c), Units::Write);
                }
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&name))
                    .unwrap_or_default();
                if !requests.is_empty() {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
        Ok(())
    }

    async fn update(
        &self,
        table: Table,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        update.check()?;
        let mut expr = Expression::new(self.clock.unix());
        let update_expr = expr.update(&update)?;
        let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
        let out = self
            .client
            .update_item()
            .table_name(self.table(table))
            .set_key(Some(key_attributes(key)))
            .set_update_expression(update_expr)
            .set_condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values(ReturnValue::AllNew)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(sdk_error)?;
        self.record(out.consumed_capacity(), Units::Write);
        from_attributes(out.attributes.unwrap_or_else(|| key_attributes(key)))
    }

    async fn delete(
        &self,
        table: Table,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let mut expr = Expression::new(self.clock.unix());
        let cond = condition.as_ref().map(|c| expr.condition(c)).transpose()?;
        let out = self
            .client
            .delete_item()
            .table_name(self.table(table))
            .set_key(Some(key_attributes(key)))
            .set_condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values(ReturnValue::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(sdk_error)?;
        self.record(out.consumed_capacity(), Units::Write);
        let now = self.clock.unix();
        out.attributes
            .map(from_attributes)
            .transpose()
            .map(|i| i.filter(|i| !is_expired(i, now)))
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let mut start = query
            .cursor_sk()?
            .map(|sk| key_attributes(&Key::new(query.pk.clone(), sk)));
        let mut items = Vec::new();
        loop {
            let mut expr = Expression::new(self.clock.unix());
            let pk = format!(
                "{} = {}",
                expr.name(PK),
                expr.value(AttributeValue::S(query.pk.clone()))
            );
            let key_cond = match &query.range {
                SkRange::All => pk,
                SkRange::BeginsWith(p) => {
                    format!(
                        "{pk} AND begins_with({}, {})",
                        expr.name(SK),
                        expr.value(AttributeValue::S(p.clone()))
                    )
                }
                SkRange::Between(a, b) => format!(
                    "{pk} AND {} BETWEEN {} AND {}",
                    expr.name(SK),
                    expr.value(AttributeValue::S(a.clone())),
                    expr.value(AttributeValue::S(b.clone()))
                ),
            };
            let filter = expr.live();
            let want = query.limit + 1 - items.len();
            let out = self
                .client
                .query()
                .table_name(self.table(query.table))
                .key_condition_expression(key_cond)
                .filter_expression(filter)
                .set_expression_attribute_names(expr.names())
                .set_expression_attribute_values(expr.values())
                .scan_index_forward(!query.descending)
                .consistent_read(true)
                .limit(i32::try_from(want).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .customize()
                .config_override(call_limits::DYNAMODB_READS.dynamodb_call())
                .send()
                .await
                .map_err(sdk_error)?;
            self.record(out.consumed_capacity(), Units::Read);
            Self::items_read(usize::try_from(out.scanned_count()).unwrap_or(0));
            for attrs in out.items.unwrap_or_default() {
                items.push(from_attributes(attrs)?);
            }
            match out.last_evaluated_key {
                Some(lek) if items.len() <= query.limit => start = Some(lek),
                _ => break,
            }
        }
        let next_cursor = if items.len() > query.limit {
            items.truncate(query.limit);
            items.last().and_then(Key::of).map(|k| encode_cursor(&k.sk))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), StoreError> {
        check_transaction(&ops)?;
        let now = self.clock.unix();
        let writes = ops
            .iter()
            .map(|op| transact_item(op, now, |t| self.table(t)))
            .collect::<Result<Vec<_>, _>>()?;
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .customize()
            .config_override(call_limits::DYNAMODB_TRANSACTIONS.dynamodb_call())
            .send()
            .await
        {
            Ok(out) => {
                for c in out.consumed_capacity() {
                    self.record(Some(c), Units::Write);
                }
                Ok(())
            }
            Err(err) => {
                if let Some(TransactWriteItemsError::TransactionCanceledException(canceled)) =
                    err.as_service_error()
                {
                    let reasons = canceled.cancellation_reasons();
                    if let Some(index) = reasons
                        .iter()
                        .position(|r| r.code() == Some("ConditionalCheckFailed"))
                    {
                        return Err(StoreError::ConditionFailed { index });
                    }
                    if reasons
                        .iter()
                        .any(|r| r.code() == Some("TransactionConflict"))
                    {
                        return Err(StoreError::Conflict);
                    }
                }
                Err(sdk_error(err))
            }
        }
    }

    async fn scan_expired(
        &self,
        table: Table,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        // The cursor is the last evaluated key (pk and sk) of the previous page.
        let start = cursor
            .as_deref()
            .map(|c| {
                decode_cursor(c).and_then(|raw| {
                    serde_json::from_str::<(String, String)>(&raw)
                        .map_err(|_| StoreError::InvalidCursor)
                })
            })
            .transpose()?
            .map(|(pk, sk)| key_attributes(&Key::new(pk, sk)));
        let mut expr = Expression::new(self.clock.unix());
        let ttl = expr.name(TTL);
        let now = expr.value(AttributeValue::N(self.clock.unix().to_string()));
        let projection = format!("{}, {}", expr.name(PK), expr.name(SK));
        let out = self
            .client
            .scan()
            .table_name(self.table(table))
            .filter_expression(format!("{ttl} <= {now}"))
            .projection_expression(projection)
            // What expired a moment ago must be seen now, as in the embedded store.
            .consistent_read(true)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .customize()
            .config_override(call_limits::DYNAMODB_SWEEPS.dynamodb_call())
            .send()
            .await
            .map_err(sdk_error)?;
        self.record(out.consumed_capacity(), Units::Read);
        let keys = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|attrs| from_attributes(attrs).map(|item| Key::of(&item)))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        let next_cursor = out
            .last_evaluated_key
            .map(from_attributes)
            .transpose()?
            .and_then(|item| Key::of(&item))
            .map(|k| encode_cursor(&serde_json::json!([k.pk, k.sk]).to_string()));
        Ok(KeyPage { keys, next_cursor })
    }

    async fn delete_expired(&self, table: Table, key: &Key) -> Result<bool, StoreError> {
        let mut expr = Expression::new(self.clock.unix());
        let (pk, ttl) = (expr.name(PK), expr.name(TTL));
        let now = expr.value(AttributeValue::N(self.clock.unix().to_string()));
        let out = self
            .client
            .delete_item()
            .table_name(self.table(table))
            .set_key(Some(key_attributes(key)))
            .condition_expression(format!("attribute_exists({pk}) AND {ttl} <= {now}"))
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .customize()
            .config_override(call_limits::DYNAMODB_SWEEPS.dynamodb_call())
            .send()
            .await;
        match out {
            Ok(out) => {
                self.record(out.consumed_capacity(), Units::Write);
                Ok(true)
            }
            Err(e) => match sdk_error(e) {
                StoreError::ConditionFailed { .. } => Ok(false),
                other => Err(other),
            },
        }
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.get(Table::Limits, &Key::new("health", "ping"))
            .await
            .map(|_| ())
    }
}
