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

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use time::OffsetDateTime;

use paddock_kernel::events::{Event, EventKind, TrackProcessRequested};
use paddock_kernel::ids::{JobId, SessionId, TrackId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{
    Condition, Item, Key, Query, SK, StoreError, TTL, TxOp, Update, decode, item,
};
use paddock_kernel::tables::Table;

const JOBS: &str = "JOBS";
const LEASES: &str = "LEASES";
/// A job is attempted at most this many times before it is marked failed.
pub const MAX_ATTEMPTS: i64 = 3;
/// How long a claim holds a job before another worker may take it over.
pub const LEASE: Duration = Duration::from_secs(120);
/// Finished jobs are kept this long for operators, then expire.
const KEEP_FINISHED_SECS: i64 = 7 * 24 * 3600;

// Attribute names the transitions update, as [`JobRecord`] and [`LeaseRecord`] spell them
// (a test checks that they agree).
const STATUS: &str = "status";
const ATTEMPTS: &str = "attempts";
const LEASE_UNTIL: &str = "leaseUntil";
const UPDATED_AT: &str = "updatedAt";
const REASON: &str = "reason";

/// The job item's attributes (besides its key `JOBS` / `<job id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobRecord {
    /// `pending`, `processing`, `done` or `failed`.
    status: String,
    track_id: TrackId,
    session_id: SessionId,
    user_id: UserId,
    /// Blob key of the uploaded track points.
    points_key: String,
    /// Claims so far; a transition's condition on it fences off earlier holders.
    attempts: i64,
    /// RFC 3339.
    created_at: String,
    /// While processing: Unix seconds until which the claim holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_until: Option<i64>,
    /// RFC 3339 time of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    /// Why the last attempt failed, or why the job was returned to pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Expiry of a finished job (Unix seconds, the store's TTL attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl: Option<i64>,
}

impl JobRecord {
    fn from_item(item: Item) -> Result<Self, StoreError> {
        decode(item, "track job")
    }

    /// The claimed job of this record, at attempt `attempt`.
    fn job(self, id: &JobId, attempt: i64) -> Job {
        Job {
            id: id.clone(),
            track_id: self.track_id,
            session_id: self.session_id,
            user_id: self.user_id,
            points_key: self.points_key,
            attempt,
        }
    }
}

/// The lease item's attributes (besides its key `LEASES` / `<job id>`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseRecord {
    /// Unix seconds until which the claim holds.
    lease_until: i64,
}

/// A claimed job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The id.
    pub id: JobId,
    /// The canonical track.
    pub track_id: TrackId,
    /// The session.
    pub session_id: SessionId,
    /// The driver's id.
    pub user_id: UserId,
    /// Blob key of the uploaded track points.
    pub points_key: String,
    /// This claim's attempt number (1 for the first).
    pub attempt: i64,
}

/// A job's state, for reads and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStatus {
    /// `pending`, `processing`, `done` or `failed`.
    pub status: String,
    /// Processing attempts so far.
    pub attempts: i64,
    /// Why it failed or was returned, if it was.
    pub reason: Option<String>,
}

fn job_key(id: &JobId) -> Key {
    Key::new(JOBS, id.as_str())
}

fn lease_key(id: &JobId) -> Key {
    Key::new(LEASES, id.as_str())
}

/// The transaction operation that records a new pending job.
pub fn create_op(
    id: &JobId,
    track_id: &TrackId,
    session_id: &SessionId,
    user_id: &UserId,
    points_key: &str,
    now: OffsetDateTime,
) -> TxOp {
    let record = JobRecord {
        status: "pending".into(),
        track_id: track_id.clone(),
        session_id: session_id.clone(),
        user_id: user_id.clone(),
        points_key: points_key.to_owned(),
        attempts: 0,
        created_at: rfc3339(now),
        lease_until: None,
        updated_at: None,
        reason: None,
        ttl: None,
    };
    TxOp::Put {
        table: Table::Tracks,
        item: item(
            &job_key(id),
            serde_json::to_value(&record).expect("a job record serialises"),
        ),
        condition: Some(Condition::NotExists),
    }
}

/// The state of job `id`.
pub async fn status(ports: &Ports, id: &JobId) -> Result<Option<JobStatus>, StoreError> {
    let Some(found) = ports.items.get(Table::Tracks, &job_key(id)).await? else {
        return Ok(None);
    };
    let record = JobRecord::from_item(found)?;
    Ok(Some(JobStatus {
        status: record.status,
        attempts: record.attempts,
        reason: record.reason,
    }))
}

/// Claims job `id`: pending → processing, or takes over a processing job whose lease ran
/// out. `None` when someone else holds it, it is finished, or it does not exist.
pub async fn claim(ports: &Ports, id: &JobId) -> Result<Option<Job>, StoreError> {
    let Some(current) = ports.items.get(Table::Tracks, &job_key(id)).await? else {
        return Ok(None);
    };
    let current = JobRecord::from_item(current)?;
    let now = ports.clock.unix();
    let attempts = current.attempts;
    let status = current.status.as_str();
    let lease_over = current.lease_until.is_some_and(|until| until <= now);
    if !(status == "pending" || (status == "processing" && lease_over)) {
        return Ok(None);
    }
    let lease_until = now + LEASE.as_secs() as i64;
    // The attempt count read above is the fence: a concurrent claim changes it.
    let claim = TxOp::Update {
        table: Table::Tracks,
        key: job_key(id),
        update: Update::set(STATUS, "processing")
            .and_set(LEASE_UNTIL, lease_until)
            .and_set(UPDATED_AT, rfc3339(ports.clock.now()))
            .and_add(ATTEMPTS, 1),
        condition: Some(Condition::And(vec![
            Condition::eq(STATUS, status),
            Condition::eq(ATTEMPTS, attempts),
        ])),
    };
    let lease = LeaseRecord { lease_until };
    let lease = TxOp::Put {
        table: Table::Tracks,
        item: item(
            &lease_key(id),
            serde_json::to_value(lease).expect("a lease record serialises"),
        ),
        condition: None,
    };
    match ports.items.transact(vec![claim, lease]).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => return Ok(None),
        Err(e) => return Err(e),
    }
    Ok(Some(current.job(id, attempts + 1)))
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
        update: Update::set(STATUS, "pending")
            .and_set(REASON, reason)
            .and_set(UPDATED_AT, rfc3339(ports.clock.now()))
            .and_remove(LEASE_UNTIL),
        condition: Some(held_by(job)),
    };
    transact_fenced(ports, vec![back, drop_lease(job)]).await?;
    Ok(true)
}

fn held_by(job: &Job) -> Condition {
    Condition::And(vec![
        Condition::eq(STATUS, "processing"),
        Condition::eq(ATTEMPTS, job.attempt),
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
    let mut update = Update::set(STATUS, status)
        .and_set(UPDATED_AT, rfc3339(ports.clock.now()))
        .and_set(TTL, ports.clock.unix() + KEEP_FINISHED_SECS)
        .and_remove(LEASE_UNTIL);
    if let Some(reason) = reason {
        update = update.and_set(REASON, reason);
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
        for lease in page.items {
            let Some(id) = lease
                .get(SK)
                .and_then(Value::as_str)
                .and_then(|id| id.parse::<JobId>().ok())
            else {
                continue;
            };
            // A lease only points at its job, which `reset_one` checks under a condition: one
            // that does not read counts as run out rather than stopping the sweep.
            let until =
                decode::<LeaseRecord>(lease, "track job lease").map_or(0, |l| l.lease_until);
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

async fn reset_one(ports: &Ports, id: &JobId) -> Result<bool, StoreError> {
    let Some(current) = ports.items.get(Table::Tracks, &job_key(id)).await? else {
        ports
            .items
            .delete(Table::Tracks, &lease_key(id), None)
            .await?;
        return Ok(false);
    };
    let current = match JobRecord::from_item(current) {
        Ok(current) if current.status == "processing" => current,
        held_by_nobody => {
            // A lease without a held job (it finished meanwhile): nothing to reset. A job
            // that does not read cannot be resumed either; its lease goes, so that it does not
            // come up again in every later sweep.
            if let Err(e) = held_by_nobody {
                tracing::warn!(error = %e, job_id = %id, "stuck track job unreadable; lease dropped");
            }
            ports
                .items
                .delete(Table::Tracks, &lease_key(id), None)
                .await?;
            return Ok(false);
        }
    };
    let attempts = current.attempts;
    let job = current.job(id, attempts);
    let back = TxOp::Update {
        table: Table::Tracks,
        key: job_key(id),
        update: Update::set(STATUS, "pending")
            .and_set(REASON, "returned to pending: left in processing")
            .and_set(UPDATED_AT, rfc3339(ports.clock.now()))
            .and_remove(LEASE_UNTIL),
        condition: Some(held_by(&job)),
    };
    let again = Event::new(
        EventKind::TrackProcessRequested(TrackProcessRequested {
            job_id: id.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const U1: &str = "5e1f0000-0000-4000-8000-000000000001";
    const S1: &str = "0190a0b2-0000-7000-8000-000000000001";
    const T1: &str = "7a2c0000-0000-8000-8000-000000000001";
    const J1: &str = "0190a0b2-0000-7000-8000-0000000000a1";

    fn record() -> JobRecord {
        JobRecord {
            status: "pending".into(),
            track_id: T1.parse().unwrap(),
            session_id: S1.parse().unwrap(),
            user_id: U1.parse().unwrap(),
            points_key: "tracks/t1/points/s1.json".into(),
            attempts: 0,
            created_at: "2023-11-14T22:13:20Z".into(),
            lease_until: None,
            updated_at: None,
            reason: None,
            ttl: None,
        }
    }

    #[test]
    fn new_jobs_keep_their_attributes_and_read_back() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let r = record();
        let TxOp::Put { item, .. } = create_op(
            &J1.parse().unwrap(),
            &r.track_id,
            &r.session_id,
            &r.user_id,
            &r.points_key,
            now,
        ) else {
            panic!("a new job is a put");
        };
        assert_eq!(
            Value::Object(item.clone()),
            json!({
                "pk": "JOBS", "sk": J1, "status": "pending", "trackId": T1,
                "sessionId": S1, "userId": U1, "pointsKey": "tracks/t1/points/s1.json",
                "attempts": 0, "createdAt": "2023-11-14T22:13:20Z",
            })
        );
        assert_eq!(JobRecord::from_item(item).unwrap(), r);
    }

    #[test]
    fn update_attribute_names_are_the_records_fields() {
        let every_field = JobRecord {
            lease_until: Some(1),
            updated_at: Some("2023-11-14T22:13:20Z".into()),
            reason: Some("r".into()),
            ttl: Some(1),
            ..record()
        };
        let fields = serde_json::to_value(&every_field).unwrap();
        for name in [STATUS, ATTEMPTS, LEASE_UNTIL, UPDATED_AT, REASON, TTL] {
            assert!(fields.get(name).is_some(), "{name} is not a job field");
        }
        let lease = serde_json::to_value(LeaseRecord { lease_until: 1 }).unwrap();
        assert_eq!(lease, json!({ LEASE_UNTIL: 1 }));
    }
}
