//! Account deletion.
//!
//! [`start`] does at once, in one transaction: the profile is marked deleted, a tombstone is
//! written (so late events and in-flight writes of the driver are refused), the email claim is
//! freed for a new registration, the provider links are removed, every token family is
//! revoked (every access token answers 401 on its next request, refresh and login fail) and
//! an `account.deleted` event is put in the outbox. A driver with more sign-ins than one
//! transaction holds has the rest revoked right after, and every other credential is ended
//! too ([`credentials::end_all`]: exchange codes, personal access tokens, webhook
//! subscriptions), before the answer.
//!
//! The event's consumer runs the deletion job, [`run`]: it walks the registry in
//! [`ORDER`], deleting each kind in batches (a transaction holds at most 100 items; each
//! delete is conditional on the item existing, so nothing is deleted twice and nothing
//! already gone fails), records on the profile each kind it finished (so a restarted job picks
//! up where it stopped), and deletes the profile last. Progress goes to the log (one line per
//! kind) and to `paddock_account_deletion_items_total{kind}`.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{Driver, DriverData, Pages, USAGE_SCOPES, sk_after};
use crate::credentials::{self, Cause};
use crate::events::{AccountDeleted, Event, EventKind, ProcessError};
use crate::identity::refresh_tokens::{FAMILY_INDEX_PREFIX, family_key, token_key_of_hash};
use crate::identity::users::{
    self, LINK_INDEX_PREFIX, StoredProfile, TOMBSTONE_SECS, email_key, identity_key, profile_key,
    tombstone_key,
};
use crate::ids::{TrackId, UserId};
use crate::leaderboards::board::BoardId;
use crate::leaderboards::cache::{forget_driver_in_process, invalidate_in_process};
use crate::leaderboards::removal::remove_entry;
use crate::ports::Ports;
use crate::ports::clock::rfc3339;
use crate::ports::items::{
    Condition, Item, Key, MAX_TX_OPS, Query, StoreError, TTL, TxOp, Update, item,
};
use crate::retry::{is_conflict, retry_on_conflict};
use crate::sessions::records::{CLIENT_PREFIX, SESSION_PREFIX, partition};
use crate::tables::Table;

/// The order the job deletes in: what is found through another kind goes before it (entries
/// through the board index, jobs and points through sessions, tokens through their family),
/// and the profile, which the job resumes from, goes last.
pub const ORDER: [DriverData; 24] = [
    // First, so nothing more is delivered to the driver's receivers.
    DriverData::Webhooks,
    DriverData::LeaderboardEntries,
    DriverData::LapHistory,
    DriverData::TrackPoints,
    DriverData::TrackJobs,
    DriverData::Sessions,
    DriverData::UploadRecords,
    DriverData::Feed,
    DriverData::Achievements,
    DriverData::SharePackObjects,
    DriverData::SharePacks,
    DriverData::Exports,
    DriverData::CoachingAnswers,
    DriverData::UsageCounters,
    DriverData::SignInAddresses,
    DriverData::RequestKeys,
    DriverData::ExchangeCodes,
    DriverData::AccessTokens,
    DriverData::RefreshTokens,
    DriverData::SignIns,
    DriverData::ProviderLinks,
    DriverData::EmailSignIn,
    DriverData::PendingEvents,
    DriverData::Profile,
];

/// Sessions (with their jobs and points) deleted per batch: three items each.
const SESSIONS_PER_BATCH: usize = 30;
/// Token families deleted per batch.
const FAMILIES_PER_BATCH: usize = 10;
/// Attempts of the immediate transaction before giving up under concurrent changes.
const ROUNDS: u32 = 5;

/// The answer to a deletion request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionTicket {
    /// The deletion job that removes the rest of the driver's data.
    pub job_id: String,
    /// When the account was deleted (RFC 3339).
    pub deleted_at: String,
}

/// Why a deletion could not start.
#[derive(Debug, thiserror::Error)]
pub enum DeletionError {
    /// No such account.
    #[error("account no longer exists")]
    Gone,
    /// Sign-ins and links kept changing under the transaction.
    #[error("the account changed concurrently, please retry")]
    Contended,
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Deletes `user_id`'s account at once and queues the deletion of the rest of its data. A
/// second request (or one racing the first) answers the same job.
pub async fn start(ports: &Ports, user_id: &UserId) -> Result<DeletionTicket, DeletionError> {
    // The profile changed, a claim, link or family moved on: read again.
    let contended = |e: &DeletionError| matches!(e, DeletionError::Store(e) if is_conflict(e));
    let ticket = match retry_on_conflict(ROUNDS, contended, || delete_account(ports, user_id)).await
    {
        Ok(Started::Before(ticket)) => return Ok(ticket),
        Ok(Started::Now(ticket)) => ticket,
        Err(e) if contended(&e) => return Err(DeletionError::Contended),
        Err(e) => return Err(e),
    };
    // Every credential stops working before the answer: the sign-ins one transaction did not
    // hold, and every other kind.
    credentials::end_all(ports, user_id, Cause::Deletion).await?;
    forget_driver_in_process(user_id);
    crate::metrics::global()
        .account_deletions
        .with_label_values(&["started"])
        .inc();
    tracing::info!(user_id = %user_id, job_id = %ticket.job_id, "account deleted; deletion job queued");
    Ok(ticket)
}

/// How an attempt at the immediate deletion ended.
enum Started {
    /// The account was deleted before (an earlier or a racing request): its ticket.
    Before(DeletionTicket),
    /// This attempt deleted it.
    Now(DeletionTicket),
}

/// One attempt at the immediate deletion: the profile marked deleted, the tombstone, the
/// event, the email claim, the provider links and the sign-ins revoked, in one transaction
/// conditional on what was read.
async fn delete_account(ports: &Ports, user_id: &UserId) -> Result<Started, DeletionError> {
    let Some(profile) = users::get_stored(ports, user_id).await? else {
        return Err(DeletionError::Gone);
    };
    if let Some(ticket) = ticket_of(&profile) {
        return Ok(Started::Before(ticket));
    }
    let driver = Driver::of(&profile.user);
    let now = ports.clock.now();
    let ticket = DeletionTicket {
        job_id: uuid::Uuid::now_v7().to_string(),
        deleted_at: rfc3339(now),
    };
    let event = Event::new(
        EventKind::AccountDeleted(AccountDeleted {
            job_id: ticket.job_id.clone(),
        }),
        Some(user_id.clone()),
        now,
    );
    let mut ops = vec![
        TxOp::Update {
            table: Table::Users,
            key: profile_key(user_id),
            update: Update::set("deletedAt", ticket.deleted_at.as_str())
                .and_set("deletionJob", ticket.job_id.as_str()),
            condition: Some(Condition::And(vec![
                Condition::Exists,
                Condition::AttrNotExists("deletedAt".into()),
            ])),
        },
        TxOp::Put {
            table: Table::Users,
            item: item(
                &tombstone_key(user_id),
                json!({"deletedAt": ticket.deleted_at, TTL: now.unix_timestamp() + TOMBSTONE_SECS}),
            ),
            condition: None,
        },
        event.outbox_op(),
    ];
    if let Some(email) = &driver.email
        && let Some(claim) = users::find_by_email(ports, email).await?
        && &claim.user_id == user_id
    {
        ops.push(TxOp::Delete {
            table: Table::Users,
            key: email_key(email),
            condition: Some(Condition::eq("userId", user_id.as_str())),
        });
    }
    let links = Pages::new(
        Table::Users,
        format!("USER#{user_id}"),
        Some(LINK_INDEX_PREFIX),
    );
    for row in links.all(ports).await? {
        let (Some(provider), Some(subject)) = (text(&row, "provider"), text(&row, "subject"))
        else {
            continue;
        };
        ops.push(TxOp::Delete {
            table: Table::Users,
            key: identity_key(&provider, &subject),
            condition: Some(Condition::eq("userId", user_id.as_str())),
        });
        ops.push(TxOp::Delete {
            table: Table::Users,
            key: users::link_index_key(user_id, &provider, &subject),
            condition: None,
        });
    }
    // As many as the transaction holds; `credentials::end_all` revokes the rest after it.
    for family in live_families(ports, user_id).await? {
        let revoke = TxOp::Update {
            table: Table::Tokens,
            key: family_key(&family),
            update: Update::set("revoked", true),
            condition: Some(Condition::Exists),
        };
        if ops.len() < MAX_TX_OPS {
            ops.push(revoke);
        }
    }
    match ports.items.transact(ops).await {
        Ok(()) => {}
        // Not answered after the SDK's retries, perhaps applied: the profile tells, and an
        // applied deletion is finished (the rest of the sign-ins and the personal tokens
        // revoked) rather than answered 503 half-done.
        Err(e @ StoreError::Unavailable(_)) => {
            let stored = users::get_stored(ports, user_id).await.ok().flatten();
            if stored.and_then(|p| p.deletion_job) != Some(ticket.job_id.clone()) {
                return Err(e.into());
            }
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Started::Now(ticket))
}

fn ticket_of(profile: &StoredProfile) -> Option<DeletionTicket> {
    Some(DeletionTicket {
        job_id: profile.deletion_job.clone().unwrap_or_default(),
        deleted_at: profile.deleted_at.clone()?,
    })
}

/// The ids of `user_id`'s families that exist and are not revoked.
async fn live_families(ports: &Ports, user_id: &UserId) -> Result<Vec<String>, StoreError> {
    let mut live = Vec::new();
    let families = Pages::new(
        Table::Tokens,
        format!("USER#{user_id}"),
        Some(FAMILY_INDEX_PREFIX),
    );
    for row in families.all(ports).await? {
        let Some(id) = sk_after(&row, FAMILY_INDEX_PREFIX) else {
            continue;
        };
        if let Some(family) = ports.items.get(Table::Tokens, &family_key(&id)).await?
            && family.get("revoked").and_then(Value::as_bool) == Some(false)
        {
            live.push(id);
        }
    }
    Ok(live)
}

/// How a job run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Everything is gone (the profile last); items deleted by this run.
    Finished(u64),
    /// Stopped after the batch budget; items deleted by this run.
    Interrupted(u64),
    /// Nothing to do: no profile left (a finished job delivered again).
    NothingLeft,
    /// The account is not marked deleted: the event is not this account's deletion.
    NotDeleted,
}

/// Runs the deletion job of `user_id` from where it stopped. `max_batches` stops it after
/// that many batches that deleted something (as a crash would), for operators draining a
/// large account in steps and for tests.
pub async fn run(
    ports: &Ports,
    user_id: &UserId,
    max_batches: Option<usize>,
) -> Result<JobOutcome, StoreError> {
    let Some(mut profile) = users::get_stored(ports, user_id).await? else {
        return Ok(JobOutcome::NothingLeft);
    };
    let Some(ticket) = ticket_of(&profile) else {
        return Ok(JobOutcome::NotDeleted);
    };
    let driver = Driver::of(&profile.user);
    let started = std::time::Instant::now();
    let (mut deleted, mut batches) = (0u64, 0usize);
    for kind in ORDER {
        if kind == DriverData::Profile || profile.deletion_done.iter().any(|d| d == kind.name()) {
            continue;
        }
        let mut of_kind = 0u64;
        loop {
            if max_batches.is_some_and(|max| batches >= max) {
                tracing::warn!(user_id = %user_id, job_id = %ticket.job_id, kind = kind.name(), deleted, "account deletion stopped early; it resumes from here");
                return Ok(JobOutcome::Interrupted(deleted));
            }
            let n = delete_batch(kind, ports, &driver).await?;
            if n == 0 {
                break;
            }
            batches += 1;
            of_kind += n;
            deleted += n;
            crate::metrics::global()
                .account_deletion_items
                .with_label_values(&[kind.name()])
                .inc_by(n);
        }
        profile.deletion_done.push(kind.name().to_owned());
        ports
            .items
            .update(
                Table::Users,
                &profile_key(user_id),
                Update::set("deletionDone", json!(profile.deletion_done)),
                Some(Condition::Exists),
            )
            .await?;
        tracing::info!(user_id = %user_id, job_id = %ticket.job_id, kind = kind.name(), deleted = of_kind, "account deletion: kind done");
    }
    match ports
        .items
        .delete(Table::Users, &profile_key(user_id), Some(Condition::Exists))
        .await
    {
        Ok(_) => deleted += 1,
        Err(e) if e.is_condition_failed_at(0) => {}
        Err(e) => return Err(e),
    }
    crate::metrics::global()
        .account_deletion_items
        .with_label_values(&[DriverData::Profile.name()])
        .inc();
    crate::metrics::global()
        .account_deletions
        .with_label_values(&["finished"])
        .inc();
    tracing::info!(user_id = %user_id, job_id = %ticket.job_id, deleted, elapsed_ms = started.elapsed().as_millis() as u64, "account deletion finished");
    Ok(JobOutcome::Finished(deleted))
}

/// The `account.deleted` consumer: runs the job to its end.
pub async fn process(ports: &Ports, event: &Event) -> Result<(), ProcessError> {
    let user_id = event
        .user_id
        .as_ref()
        .ok_or_else(|| ProcessError::Poison("account.deleted without a user".into()))?;
    match run(ports, user_id, None).await {
        Ok(JobOutcome::NotDeleted) => Err(ProcessError::Poison(format!(
            "account {user_id} is not marked deleted"
        ))),
        Ok(_) => Ok(()),
        Err(e) => Err(ProcessError::Retry(
            anyhow::Error::new(e).context("running the account deletion job"),
        )),
    }
}

/// Deletes one batch of `kind`; answers how many items (and objects) it removed, 0 when
/// none are left.
async fn delete_batch(kind: DriverData, ports: &Ports, driver: &Driver) -> Result<u64, StoreError> {
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
                Some(crate::leaderboards::lap_history::LAP_HISTORY_PREFIX),
            )
            .await
        }
        DriverData::RequestKeys => {
            let keys = crate::request_keys::partition(user);
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
                .list(&super::exports_of(user))
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
        DriverData::Webhooks => {
            partition_batch(
                ports,
                Table::Activity,
                crate::webhooks::partition(user),
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
            let prefix = crate::identity::exchange_codes::CODE_INDEX_PREFIX;
            let rows = first_page(ports, Table::Tokens, user_pk, Some(prefix), 50).await?;
            let mut keys = Vec::new();
            for row in &rows {
                if let Some(hash) = sk_after(row, prefix) {
                    keys.push((
                        crate::identity::exchange_codes::code_key_of_hash(&hash),
                        false,
                    ));
                }
                keys.extend(Key::of(row).map(|k| (k, true)));
            }
            delete_keys(ports, Table::Tokens, keys).await
        }
        DriverData::AccessTokens => {
            let prefix = crate::identity::personal_tokens::TOKEN_INDEX_PREFIX;
            let rows = first_page(ports, Table::Tokens, user_pk, Some(prefix), 50).await?;
            let mut keys = Vec::new();
            for row in &rows {
                // The lookup row may have gone with the table's expiry: not known to exist.
                let (lookup, index) = crate::identity::personal_tokens::keys_of_row(row);
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
async fn delete_if(
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
async fn partition_batch(
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
async fn delete_keys(
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
async fn leaderboard_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
    let prefix = crate::leaderboards::board::BOARD_INDEX_PREFIX;
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
            .get(crate::ports::items::SK)
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
async fn sessions_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
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
            text(row, "trackId"),
            key.sk.strip_prefix(SESSION_PREFIX),
        ) {
            let points = crate::tracks::maps::points_key(&TrackId::from(track), &session.into());
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
async fn share_pack_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
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
            for object in crate::sharepacks::object_keys(id) {
                ports
                    .blobs
                    .delete(&object)
                    .await
                    .map_err(|e| StoreError::Unavailable(format!("deleting a share pack: {e}")))?;
            }
            keys.push((Key::new(format!("PACK#{id}"), "META"), false));
        }
        keys.push((key, true));
    }
    delete_keys(ports, Table::Sharepacks, keys).await
}

/// A batch of sign-ins: each family's refresh tokens (oldest first, following the chain from
/// the newest), then the family and its index row.
async fn sign_ins_batch(ports: &Ports, user: &UserId) -> Result<u64, StoreError> {
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
async fn first_page(
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

fn text(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_walks_every_kind_once() {
        let mut ordered: Vec<&str> = ORDER.iter().map(|k| k.name()).collect();
        let mut registered: Vec<&str> = DriverData::ALL.iter().map(|k| k.name()).collect();
        ordered.sort_unstable();
        registered.sort_unstable();
        assert_eq!(ordered, registered);
        assert_eq!(ORDER.last(), Some(&DriverData::Profile));
    }
}
