//! One batch of each kind of driver data: the deletes (each conditional on the item existing),
//! the objects beside the items, and the kinds whose items are found through an index or
//! another partition.

use super::*;

/// Deletes one batch of `kind`; answers how many items (and objects) it removed, 0 when
/// none are left.
pub(super) async fn delete_batch(
    kind: DriverData,
    ports: &Ports,
    driver: &Driver,
) -> Result<u64, StoreError> {
    let user = &driver.id;
    let user_pk = format!("USER#{user}");
    match kind {
        // Removed with the kind they are found through, or by the relay, or last.
        DriverData::TrackPoints
        | DriverData::TrackJobs
        | DriverData::SharePackObjects
        | DriverData::RefreshTokens
        | DriverData::PendingEvents
        | DriverData::Profile => Ok(0),
        DriverData::LeaderboardEntries => leaderboard_batch(ports, user).await,
        DriverData::Sessions => sessions_batch(ports, user).await,
        DriverData::UploadRecords => {
            partition_batch(ports, Table::Sessions, partition(user), Some(CLIENT_PREFIX)).await
        }
        DriverData::LapHistory => {
            partition_batch(
                ports,
                Table::Leaderboards,
                user_pk,
                Some(paddock_boards::leaderboards::lap_history::LAP_HISTORY_PREFIX),
            )
            .await
        }
        DriverData::RequestKeys => {
            let keys = paddock_kernel::request_keys::partition(user);
            partition_batch(ports, Table::Limits, keys, None).await
        }
        DriverData::Feed => {
            partition_batch(ports, Table::Activity, format!("FEED#{user}"), None).await
        }
        DriverData::Achievements => {
            partition_batch(ports, Table::Activity, format!("ACH#{user}"), None).await
        }
        DriverData::SharePacks => share_pack_batch(ports, user).await,
        DriverData::Exports => {
            let keys = ports
                .blobs
                .list(&super::super::exports_of(user))
                .await
                .map_err(|e| StoreError::Unavailable(format!("listing exports: {e}")))?;
            for key in keys.iter().take(MAX_TX_OPS) {
                ports
                    .blobs
                    .delete(key)
                    .await
                    .map_err(|e| StoreError::Unavailable(format!("deleting an export: {e}")))?;
            }
            Ok(keys.len().min(MAX_TX_OPS) as u64)
        }
        DriverData::CoachingAnswers => {
            partition_batch(ports, Table::Coaching, format!("AI#{user}"), None).await
        }
        DriverData::Leagues => paddock_competitions::leagues::leave_all(ports, user)
            .await
            .map_err(crate::driver_data::league_store_error),
        DriverData::Apps => Ok(paddock_authorization::apps::remove_all(ports, user).await? as u64),
        DriverData::AppGrants => {
            Ok(paddock_authorization::grants::revoke_all(ports, user).await? as u64)
        }
        DriverData::Webhooks => {
            partition_batch(
                ports,
                Table::Activity,
                paddock_social::webhooks::partition(user),
                None,
            )
            .await
        }
        DriverData::UsageCounters => {
            for scope in USAGE_SCOPES {
                let n = partition_batch(ports, Table::Limits, format!("RL#{scope}#{user}"), None)
                    .await?;
                if n > 0 {
                    return Ok(n);
                }
            }
            Ok(0)
        }
        DriverData::SignInAddresses => {
            let (Some(account), Some(email)) = (&driver.account, &driver.email) else {
                return Ok(0);
            };
            // Registered again meanwhile: the counters now belong to the new account too.
            if users::find_by_email(ports, email).await?.is_some() {
                return Ok(0);
            }
            for pk in [
                format!("KNOWN#{account}"),
                format!("RL#login-failures#{account}"),
            ] {
                let n = partition_batch(ports, Table::Limits, pk, None).await?;
                if n > 0 {
                    return Ok(n);
                }
            }
            Ok(0)
        }
        DriverData::ExchangeCodes => {
            let prefix = paddock_identity::identity::exchange_codes::CODE_INDEX_PREFIX;
            let rows = first_page(ports, Table::Tokens, user_pk, Some(prefix), 50).await?;
            let mut keys = Vec::new();
            for row in &rows {
                if let Some(hash) = sk_after(row, prefix) {
                    keys.push((
                        paddock_identity::identity::exchange_codes::code_key_of_hash(&hash),
                        false,
                    ));
                }
                keys.extend(Key::of(row).map(|k| (k, true)));
            }
            delete_keys(ports, Table::Tokens, keys).await
        }
        DriverData::AccessTokens => {
            let prefix = paddock_identity::identity::personal_tokens::TOKEN_INDEX_PREFIX;
            let rows = first_page(ports, Table::Tokens, user_pk, Some(prefix), 50).await?;
            let mut keys = Vec::new();
            for row in &rows {
                // The lookup row may have gone with the table's expiry: not known to exist.
                let (lookup, index) = paddock_identity::identity::personal_tokens::keys_of_row(row);
                keys.extend(lookup.map(|k| (k, false)));
                keys.extend(index.map(|k| (k, true)));
            }
            delete_keys(ports, Table::Tokens, keys).await
        }
        DriverData::SignIns => sign_ins_batch(ports, user).await,
        DriverData::ProviderLinks => {
            let rows =
                first_page(ports, Table::Users, user_pk, Some(LINK_INDEX_PREFIX), 50).await?;
            let mut n = 0;
            for row in &rows {
                if let (Some(provider), Some(subject)) =
                    (text(row, "provider"), text(row, "subject"))
                {
                    // Only while it is still this account's (a later sign-in links anew).
                    n += delete_if(ports, Table::Users, identity_key(&provider, &subject), user)
                        .await?;
                }
                if let Some(key) = Key::of(row) {
                    n += u64::from(
                        ports
                            .items
                            .delete(Table::Users, &key, None)
                            .await?
                            .is_some(),
                    );
                }
            }
            Ok(n)
        }
        DriverData::EmailSignIn => match &driver.email {
            Some(email) => delete_if(ports, Table::Users, email_key(email), user).await,
            None => Ok(0),
        },
    }
}

/// Deletes `key` if its `userId` is `user`; answers 1 when it did.
pub(super) async fn delete_if(
    ports: &Ports,
    table: Table,
    key: Key,
    user: &UserId,
) -> Result<u64, StoreError> {
    match ports
        .items
        .delete(table, &key, Some(Condition::eq("userId", user.as_str())))
        .await
    {
        Ok(removed) => Ok(u64::from(removed.is_some())),
        Err(e) if e.is_condition_failed_at(0) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Up to 100 items of a partition (part) in one transaction.
pub(super) async fn partition_batch(
    ports: &Ports,
    table: Table,
    pk: String,
    prefix: Option<&str>,
) -> Result<u64, StoreError> {
    let rows = first_page(ports, table, pk, prefix, MAX_TX_OPS).await?;
    let keys = rows.iter().filter_map(Key::of).map(|k| (k, true)).collect();
    delete_keys(ports, table, keys).await
}

/// Deletes `keys` (each with whether it is known to exist, which makes its delete conditional
/// on that) in transactions of up to 100; answers how many existed. A transaction that meets
/// an item already gone (a concurrent run) is redone item by item, counting only what this
/// run removed.
pub(super) async fn delete_keys(
    ports: &Ports,
    table: Table,
    keys: Vec<(Key, bool)>,
) -> Result<u64, StoreError> {
    let mut deleted = 0;
    for chunk in keys.chunks(MAX_TX_OPS) {
        let ops = chunk
            .iter()
            .map(|(key, known)| TxOp::Delete {
                table,
                key: key.clone(),
                condition: known.then_some(Condition::Exists),
            })
            .collect();
        match ports.items.transact(ops).await {
            Ok(()) => deleted += chunk.iter().filter(|(_, known)| *known).count() as u64,
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                for (key, _) in chunk {
                    if ports.items.delete(table, key, None).await?.is_some() {
                        deleted += 1;
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(deleted)
}

/// A batch of the driver's board entries: each entry, its rank row and its index row, with
/// the entry's share of the board's counts.
pub(super) async fn leaderboard_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
    let prefix = paddock_boards::leaderboards::board::BOARD_INDEX_PREFIX;
    let rows = first_page(
        ports,
        Table::Leaderboards,
        format!("USER#{user}"),
        Some(prefix),
        30,
    )
    .await?;
    let mut deleted = 0;
    for row in &rows {
        let Some(board) = row
            .get(paddock_kernel::ports::items::SK)
            .and_then(Value::as_str)
            .and_then(BoardId::from_index_sk)
        else {
            continue;
        };
        deleted += remove_entry(ports, &board, user).await?;
        invalidate_in_process(&board.track);
    }
    Ok(deleted)
}

/// A batch of sessions with their track points and processing jobs.
pub(super) async fn sessions_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
    let rows = first_page(
        ports,
        Table::Sessions,
        partition(user),
        Some(SESSION_PREFIX),
        SESSIONS_PER_BATCH,
    )
    .await?;
    let mut keys = Vec::new();
    let mut objects = 0;
    for row in &rows {
        let Some(key) = Key::of(row) else { continue };
        if let (Some(job), Some(track), Some(session)) = (
            text(row, "trackJobId"),
            text(row, "trackId").and_then(|t| t.parse::<TrackId>().ok()),
            key.sk
                .strip_prefix(SESSION_PREFIX)
                .and_then(|s| s.parse::<SessionId>().ok()),
        ) {
            let points = paddock_driving::tracks::maps::points_key(&track, &session);
            if ports
                .blobs
                .get_stream(&points)
                .await
                .ok()
                .flatten()
                .is_some()
            {
                objects += 1;
            }
            ports
                .blobs
                .delete(&points)
                .await
                .map_err(|e| StoreError::Unavailable(format!("deleting track points: {e}")))?;
            keys.push((Key::new("JOBS", job.as_str()), false));
            keys.push((Key::new("LEASES", job.as_str()), false));
        }
        keys.push((key, true));
    }
    let sessions = delete_keys(
        ports,
        Table::Sessions,
        keys.iter()
            .filter(|(k, _)| k.pk != "JOBS" && k.pk != "LEASES")
            .cloned()
            .collect(),
    )
    .await?;
    let jobs = delete_keys(
        ports,
        Table::Tracks,
        keys.into_iter()
            .filter(|(k, _)| k.pk == "JOBS" || k.pk == "LEASES")
            .collect(),
    )
    .await?;
    Ok(sessions + jobs + objects)
}

/// A batch of share packs with their objects; the quota item once the list is empty.
pub(super) async fn share_pack_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
    let rows = first_page(ports, Table::Sharepacks, format!("OWNER#{user}"), None, 40).await?;
    if rows.is_empty() {
        let usage = Key::new(format!("USAGE#{user}"), "USAGE");
        return Ok(u64::from(
            ports
                .items
                .delete(Table::Sharepacks, &usage, None)
                .await?
                .is_some(),
        ));
    }
    let mut keys = Vec::new();
    for row in &rows {
        let Some(key) = Key::of(row) else { continue };
        if let Some((_, id)) = key.sk.rsplit_once('#') {
            // Objects are only ever written under a pack's id, so a text that is not one has
            // none; its items go all the same.
            if let Ok(pack) = id.parse::<SharePackId>() {
                for object in paddock_packs::sharepacks::object_keys(&pack) {
                    ports.blobs.delete(&object).await.map_err(|e| {
                        StoreError::Unavailable(format!("deleting a share pack: {e}"))
                    })?;
                }
            }
            keys.push((Key::new(format!("PACK#{id}"), "META"), false));
        }
        keys.push((key, true));
    }
    delete_keys(ports, Table::Sharepacks, keys).await
}

/// A batch of sign-ins: each family's refresh tokens (oldest first, following the chain from
/// the newest), then the family and its index row.
pub(super) async fn sign_ins_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
    let rows = first_page(
        ports,
        Table::Tokens,
        format!("USER#{user}"),
        Some(FAMILY_INDEX_PREFIX),
        FAMILIES_PER_BATCH,
    )
    .await?;
    let mut deleted = 0;
    for row in &rows {
        let Some(family) = sk_after(row, FAMILY_INDEX_PREFIX) else {
            continue;
        };
        let mut chain = Vec::new();
        if let Some(state) = ports.items.get(Table::Tokens, &family_key(&family)).await? {
            let mut next = text(&state, "currentToken");
            // A family lives 30 days; the bound only guards against a corrupt chain.
            while let Some(hash) = next.take().filter(|_| chain.len() < 100_000) {
                let key = token_key_of_hash(&hash);
                let Some(token) = ports.items.get(Table::Tokens, &key).await? else {
                    break;
                };
                next = text(&token, "previous");
                chain.push((key, true));
            }
        }
        chain.reverse();
        chain.push((family_key(&family), false));
        if let Some(index) = Key::of(row) {
            chain.push((index, true));
        }
        deleted += delete_keys(ports, Table::Tokens, chain).await?;
    }
    Ok(deleted)
}

/// The first page of up to `limit` items of a partition (part).
pub(super) async fn first_page(
    ports: &Ports,
    table: Table,
    pk: String,
    prefix: Option<&str>,
    limit: usize,
) -> Result<Vec<Item>, StoreError> {
    let mut query = Query::partition(table, pk).limit(limit);
    if let Some(prefix) = prefix {
        query = query.begins_with(prefix);
    }
    Ok(ports.items.query(query).await?.items)
}

pub(super) fn text(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(Value::as_str).map(str::to_owned)
}
