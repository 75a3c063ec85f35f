//! BatchGetItem in rounds: distinct keys a call, the unprocessed asked again after a pause.

use super::*;

impl DynamoItemStore {
    /// One BatchGetItem of at most [`BATCH_GET_KEYS`] distinct keys, its unprocessed keys
    /// asked again after a pause until none is left: the items found, by table and key.
    pub(super) async fn batch_get(
        &self,
        keys: &[(Table, Key)],
    ) -> Result<HashMap<(Table, Key), Item>, StoreError> {
        let by_name: HashMap<String, Table> =
            keys.iter().map(|(t, _)| (self.table(*t), *t)).collect();
        let mut request: HashMap<String, KeysAndAttributes> = HashMap::new();
        for (table, key) in keys {
            let name = self.table(*table);
            let wanted = request.remove(&name).map_or_else(
                || KeysAndAttributes::builder().consistent_read(true),
                |k| {
                    KeysAndAttributes::builder()
                        .consistent_read(true)
                        .set_keys(Some(k.keys().to_vec()))
                },
            );
            let wanted = wanted
                .keys(key_attributes(key))
                .build()
                .map_err(|e| StoreError::Invalid(e.to_string()))?;
            request.insert(name, wanted);
        }
        let mut found = HashMap::new();
        let now = self.clock.unix();
        let mut pause = Duration::from_millis(20);
        let mut rounds = 0;
        while !request.is_empty() {
            let out = self
                .client
                .batch_get_item()
                .set_request_items(Some(request))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .customize()
                .config_override(call_limits::DYNAMODB_READS.dynamodb_call())
                .send()
                .await
                .map_err(sdk_error)?;
            for c in out.consumed_capacity() {
                self.record(Some(c), Units::Read);
            }
            for (name, items) in out.responses.unwrap_or_default() {
                let table = *by_name
                    .get(&name)
                    .ok_or_else(|| StoreError::Unavailable(format!("unasked table {name}")))?;
                Self::items_read(items.len());
                for attrs in items {
                    let item = from_attributes(attrs)?;
                    let key = Key::of(&item)
                        .ok_or_else(|| StoreError::Unavailable("item without a key".into()))?;
                    if !is_expired(&item, now) {
                        found.insert((table, key), item);
                    }
                }
            }
            request = out.unprocessed_keys.unwrap_or_default();
            request.retain(|_, k| !k.keys().is_empty());
            if !request.is_empty() {
                rounds += 1;
                if rounds >= BATCH_GET_ROUNDS {
                    return Err(StoreError::Unavailable(
                        "a batch read kept leaving keys unprocessed".into(),
                    ));
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
        Ok(found)
    }
}
