//! Track-processing jobs: pending → processing → done, or failed with a reason.
//!
//! Key layout (table `tracks`): a job is `JOBS` / `<job id>`. While a worker holds it, a lease
//! item `LEASES` / `<job id>` exists too, written in the same transaction as the claim, so
//! finding stuck jobs reads only the (small) lease partition, never the job history.
//!
//! A claim is a conditional update (pending, or processing with an expired lease), so two
//! workers never hold one job; the attempt number doubles as a fencing token for the
//! transitions that follow. Jobs left in processing return to pending at service start
//! (locally) and when their lease expires (the maintenance schedule in AWS), with a
//! `track.process` event through the outbox so a worker picks them up again.

use serde_json::{Value, json};
use std::time::Duration;
use time::OffsetDateTime;

use crate::events::{Event, EventKind, TrackProcessRequested};
use crate::ports::Ports;
use crate::ports::clock::rfc3339;
use crate::ports::items::{Condition, Item, Key, Query, StoreError, TxOp, Update, item};
use crate::tables::Table;

const JOBS: &str = "JOBS";
const LEASES: &str = "LEASES";
/// A job is attempted at most this many times before it is marked failed.
pub const MAX_ATTEMPTS: i64 = 3;
/// How long a claim holds a job before another worker may take it over.
pub const LEASE: Duration = Duration::from_secs(120);
/// Finished jobs are kept this long for operators, then expire.
const KEEP_FINISHED_SECS: i64 = 7 * 24 * 3600;

/// A claimed job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub track_id: String,
    pub session_id: String,
    pub user_id: String,
    /// Blob key of the uploaded track points.
    pub points_key: String,
    /// This claim's attempt number (1 for the first).
    pub attempt: i64,
}

/// A job's state, for reads and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStatus {
    pub status: String,
    pub attempts: i64,
    pub reason: Option<String>,
}

fn job_key(id: &str) -> Key {
    Key::new(JOBS, id)
}

fn lease_key(id: &str) -> Key {
    Key::new(LEASES, id)
}

/// The transaction operation that records a new pending job.
pub fn create_op(
    id: &str,
    track_id: &str,
    session_id: &str,
    user_id: &str,
    points_key: &str,
    now: OffsetDateTime,
) -> TxOp {
    TxOp::Put {
        table: Table::Tracks,
        item: item(
            &job_key(id),
            json!({
                "status": "pending",
                "trackId": track_id,
                "sessionId": session_id,
                "userId": user_id,
                "pointsKey": points_key,
                "attempts": 0,
                "createdAt": rfc3339(now),
            }),
        ),
        condition: Some(Condition::NotExists),
    }
}

/// The state of job `id`.
pub async fn status(ports: &Ports, id: &str) -> Result<Option<JobStatus>, StoreError> {
    let found = ports.items.get(Table::Tracks, &job_key(id)).await?;
    Ok(found.map(|item| JobStatus {
        status: text(&item, "status").unwrap_or_default(),
        attempts: item.get("attempts").and_then(Value::as_i64).unwrap_or(0),
        reason: text(&item, "reason"),
    }))
}

fn text(item: &Item, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Claims job `id`: pending → processing, or takes over a processing job whose lease ran
/// out. `None` when someone else holds it, it is finished, or it does not exist.
pub async fn claim(ports: &Ports, id: &str) -> Result<Option<Job>, StoreError> {
    let Some(current) = ports.items.get(Table::Tracks, &job_key(id)).await? else {
        return Ok(None);
    };
    let now = ports.clock.unix();
    let attempts = current.get("attempts").and_then(Value::as_i64).unwrap_or(0);
    let status = text(&current, "status").unwrap_or_default();
    let lease_over = current
        .get("leaseUntil")
        .and_then(Value::as_i64)
        .is_some_and(|until| until <= now);
    if !(status == "pending" || (status == "processing" && lease_over)) {
        return Ok(None);
    }
    let lease_until = now + LEASE.as_secs() as i64;
    // The attempt count read above is the fence: a concurrent claim changes it.
    let claim = TxOp::Update {
        table: Table::Tracks,
        key: job_key(id),
        update: Update::set("status", "processing")
            .and_set("leaseUntil", lease_until)
            .and_set("updatedAt", rfc3339(ports.clock.now()))
            .and_add("attempts", 1),
        condition: Some(Condition::And(vec![
            Condition::eq("status", status.as_str()),
            Condition::eq("attempts", attempts),
        ])),
    };
    let lease = TxOp::Put {
        table: Table::Tracks,
        item: item(&lease_key(id), json!({ "leaseUntil": lease_until })),
        condition: None,
    };
    match ports.items.transact(vec![claim, lease]).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => return Ok(None),
        Err(e) => return Err(e),
    }
    let field = |k: &str| text(&current, k).unwrap_or_default();
    Ok(Some(Job {
        id: id.to_owned(),
        track_id: field("trackId"),
        session_id: field("sessionId"),
        user_id: field("userId"),
        points_key: field("pointsKey"),
        attempt: attempts + 1,
    }))
}

/// processing → done.
pub async fn complete(ports: &Ports, job: &Job) -> Result<(), StoreError> {
    finish(ports, job, "done", None).await
}

/// processing → failed with `reason` (no further attempts).
pub async fn fail(ports: &Ports, job: &Job, reason: &str) -> Result<(), StoreError> {
    finish(ports, job, "failed", Some(reason)).await
}

/// After a transient failure: back to pending for another attempt, or failed when the
/// attempts are used up. Answers whether another attempt will follow.
pub async fn release(ports: &Ports, job: &Job, reason: &str) -> Result<bool, StoreError> {
    if job.attempt >= MAX_ATTEMPTS {
        let reason = format!("gave up after {} attempts: {reason}", job.attempt);
        fail(ports, job, &reason).await?;
        return Ok(false);
    }
    let back = TxOp::Update {
        table: Table::Tracks,
        key: job_key(&job.id),
        update: Update::set("status", "pending")
            .and_set("reason", reason)
            .and_set("updatedAt", rfc3339(ports.clock.now()))
            .and_remove("leaseUntil"),
        condition: Some(held_by(job)),
    };
    transact_fenced(ports, vec![back, drop_lease(job)]).await?;
    Ok(true)
}

fn held_by(job: &Job) -> Condition {
    Condition::And(vec![
        Condition::eq("status", "processing"),
        Condition::eq("attempts", job.attempt),
    ])
}

fn drop_lease(job: &Job) -> TxOp {
    TxOp::Delete {
        table: Table::Tracks,
        key: lease_key(&job.id),
        condition: None,
    }
}

async fn finish(
    ports: &Ports,
    job: &Job,
    status: &str,
    reason: Option<&str>,
) -> Result<(), StoreError> {
    let mut update = Update::set("status", status)
        .and_set("updatedAt", rfc3339(ports.clock.now()))
        .and_set("ttl", ports.clock.unix() + KEEP_FINISHED_SECS)
        .and_remove("leaseUntil");
    if let Some(reason) = reason {
        update = update.and_set("reason", reason);
    }
    let done = TxOp::Update {
        table: Table::Tracks,
        key: job_key(&job.id),
        update,
        condition: Some(held_by(job)),
    };
    transact_fenced(ports, vec![done, drop_lease(job)]).await
}

/// A transition guarded by the claim; losing the claim meanwhile (another worker took over
/// an expired lease) is not an error for this worker: the new holder decides.
async fn transact_fenced(ports: &Ports, ops: Vec<TxOp>) -> Result<(), StoreError> {
    match ports.items.transact(ops).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Which stuck jobs [`reset_stuck`] returns to pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stuck {
    /// Every job in processing: at service start, when no worker of this process runs yet.
    All,
    /// Jobs whose lease has run out (the maintenance schedule, with workers running).
    LeaseExpired,
}

/// Returns stuck jobs to pending and asks for them to be processed again; answers how many.
pub async fn reset_stuck(ports: &Ports, which: Stuck) -> Result<usize, StoreError> {
    let now = ports.clock.unix();
    let mut cursor = None;
    let mut reset = 0;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Tracks, LEASES)
                    .limit(100)
                    .after(cursor),
            )
            .await?;
        for lease in &page.items {
            let Some(id) = text(lease, "sk") else {
                continue;
            };
            let until = lease.get("leaseUntil").and_then(Value::as_i64).unwrap_or(0);
            if which == Stuck::LeaseExpired && until > now {
                continue;
            }
            if reset_one(ports, &id).await? {
                reset += 1;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if reset > 0 {
        tracing::info!(reset, "stuck track-processing jobs returned to pending");
    }
    Ok(reset)
}

async fn reset_one(ports: &Ports, id: &str) -> Result<bool, StoreError> {
    let Some(current) = ports.items.get(Table::Tracks, &job_key(id)).await? else {
        ports
            .items
            .delete(Table::Tracks, &lease_key(id), None)
            .await?;
        return Ok(false);
    };
    if text(&current, "status").as_deref() != Some("processing") {
        // A lease without a held job (it finished meanwhile): nothing to reset.
        ports
            .items
            .delete(Table::Tracks, &lease_key(id), None)
            .await?;
        return Ok(false);
    }
    let attempts = current.get("attempts").and_then(Value::as_i64).unwrap_or(0);
    let job = Job {
        id: id.to_owned(),
        track_id: text(&current, "trackId").unwrap_or_default(),
        session_id: String::new(),
        user_id: text(&current, "userId").unwrap_or_default(),
        points_key: String::new(),
        attempt: attempts,
    };
    let back = TxOp::Update {
        table: Table::Tracks,
        key: job_key(id),
        update: Update::set("status", "pending")
            .and_set("reason", "returned to pending: left in processing")
            .and_set("updatedAt", rfc3339(ports.clock.now()))
            .and_remove("leaseUntil"),
        condition: Some(held_by(&job)),
    };
    let again = Event::new(
        EventKind::TrackProcessRequested(TrackProcessRequested {
            job_id: id.to_owned(),
            track_id: job.track_id.clone(),
        }),
        Some(job.user_id.clone()),
        ports.clock.now(),
    );
    match ports
        .items
        .transact(vec![back, drop_lease(&job), again.outbox_op()])
        .await
    {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => Ok(false),
        Err(e) => Err(e),
    }
}
