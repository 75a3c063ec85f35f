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
use paddock_boards::leaderboards::board::BoardId;
use paddock_boards::leaderboards::cache::{forget_driver_in_process, invalidate_in_process};
use paddock_boards::leaderboards::removal::remove_entry;
use paddock_driving::sessions::records::{CLIENT_PREFIX, SESSION_PREFIX, partition};
use paddock_identity::identity::authentication::{AuthenticationError, Unconfirmed};
use paddock_identity::identity::refresh_tokens::{
    FAMILY_INDEX_PREFIX, family_key, token_key_of_hash,
};
use paddock_identity::identity::users::{
    self, LINK_INDEX_PREFIX, StoredProfile, TOMBSTONE_SECS, email_key, identity_key, profile_key,
    tombstone_key,
};
use paddock_kernel::events::{AccountDeleted, Event, EventKind, ProcessError};
use paddock_kernel::ids::{SessionId, SharePackId, TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{
    Condition, Item, Key, MAX_TX_OPS, Query, StoreError, TTL, TxOp, Update, item,
};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

mod batches;
use batches::*;

/// The order the job deletes in: what is found through another kind goes before it (entries
/// through the board index, jobs and points through sessions, tokens through their family),
/// and the profile, which the job resumes from, goes last.
pub const ORDER: [DriverData; 27] = [
    // First, so nothing more is delivered to the driver's receivers, and no app acts for them.
    DriverData::Webhooks,
    DriverData::AppGrants,
    // The driver's apps, and every other driver's grant to them.
    DriverData::Apps,
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
    DriverData::Leagues,
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
    /// The caller is not admitted.
    #[error(transparent)]
    Caller(#[from] AuthenticationError),
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
    paddock_platform::metrics::global()
        .account_deletions
        .with_label_values(&["started"])
        .inc();
    tracing::info!(user_id = %user_id, job_id = %ticket.job_id, "account deleted; deletion job queued");
    Ok(ticket)
}

/// [`start`] for `caller`, whose sign-in is confirmed beside the read of the account. The
/// deletion revokes the sign-in it was asked with: the same request sent again (its answer
/// lost after the deletion, or a 503 or 504 after it) is answered the same ticket, not a 401.
pub async fn start_for(
    ports: &Ports,
    caller: Unconfirmed,
) -> Result<DeletionTicket, DeletionError> {
    let user_id = caller.user_id().clone();
    let (confirmed, profile) = caller
        .confirmed_beside(ports, users::get_stored(ports, &user_id))
        .await;
    match confirmed {
        Ok(caller) => start(ports, &caller.user_id).await,
        Err(AuthenticationError::Refused(reason)) => match profile?.as_ref().and_then(ticket_of) {
            Some(ticket) => Ok(ticket),
            None => Err(AuthenticationError::Refused(reason).into()),
        },
        Err(e) => Err(e.into()),
    }
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
            paddock_platform::metrics::global()
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
    paddock_platform::metrics::global()
        .account_deletion_items
        .with_label_values(&[DriverData::Profile.name()])
        .inc();
    paddock_platform::metrics::global()
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
