//! The upload: session, laps, idempotency record, track count, processing job and the
//! `session.uploaded` event, written in one transaction.

use serde::Serialize;
use utoipa::ToSchema;

use super::records::{UploadRecord, client_key, new_session_id, session_item};
use super::upload::SessionUpload;
use crate::tracks::{self, TrackKey, jobs, maps};
use paddock_kernel::events::{Event, EventKind, SessionUploaded};
use paddock_kernel::ids::{JobId, SessionId, TrackId, UserId};
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Item, Key, StoreError, TxOp};
use paddock_kernel::ports::{BlobError, Ports};
use paddock_kernel::retry::retry_on_conflict;
use paddock_kernel::tables::Table;

/// Attempts of the transaction while it collides with another (a concurrent duplicate in
/// flight): the first and four more.
const CONFLICT_ATTEMPTS: u32 = 5;

/// What `POST /v1/sessions` answers.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The session.
    #[schema(value_type = String)]
    pub session_id: SessionId,
    /// The canonical track.
    #[schema(value_type = String)]
    pub track_id: TrackId,
    /// Laps in the session.
    pub lap_count: usize,
    /// True when this ClientSessionId was uploaded before; nothing was written.
    pub duplicate: bool,
}

impl Receipt {
    /// The answer to a repeat of the upload that stored `record`.
    fn repeat(record: UploadRecord) -> Self {
        Self {
            session_id: record.session_id,
            track_id: record.track_id,
            lap_count: record.lap_count,
            duplicate: true,
        }
    }
}

async fn earlier_upload(
    ports: &Ports,
    user_id: &UserId,
    client_session_id: &str,
) -> Result<Option<Receipt>, StoreError> {
    let record = ports
        .items
        .get(Table::Sessions, &client_key(user_id, client_session_id))
        .await?;
    repeat_of(record)
}

/// The answer to a repeat of the upload whose idempotency record is `record`, if any.
fn repeat_of(record: Option<Item>) -> Result<Option<Receipt>, StoreError> {
    record
        .map(|item| UploadRecord::from_item(item).map(Receipt::repeat))
        .transpose()
}

/// What an upload reads before it writes: its idempotency record (an earlier upload of its
/// ClientSessionId) and its track (whose `lastSessionAt` it may move).
#[derive(Debug, Default)]
pub struct FirstReads {
    earlier: Option<Item>,
    track: Option<Item>,
}

impl FirstReads {
    /// The keys to read for `upload` of `user_id`, in the order [`FirstReads::of`] takes.
    pub fn keys(user_id: &UserId, upload: &SessionUpload) -> [(Table, Key); 2] {
        let track = TrackKey::new(&upload.game_id, &upload.track_name, &upload.track_layout);
        [
            (
                Table::Sessions,
                client_key(user_id, &upload.client_session_id),
            ),
            (Table::Tracks, tracks::key(&track.id())),
        ]
    }

    /// What was read under [`FirstReads::keys`], in that order.
    pub fn of(found: [Option<Item>; 2]) -> Self {
        let [earlier, track] = found;
        Self { earlier, track }
    }
}

/// Slowest minus fastest valid lap, for sessions with at least five valid laps.
fn valid_lap_spread(upload: &SessionUpload) -> Option<i64> {
    let valid = upload
        .laps
        .iter()
        .filter(|l| l.is_valid)
        .map(|l| l.lap_time_ms);
    let (count, min, max) = valid.fold((0, i64::MAX, i64::MIN), |(n, lo, hi), t| {
        (n + 1, lo.min(t), hi.max(t))
    });
    (count >= 5).then(|| max - min)
}

/// Why an upload was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// A concurrent upload of the same ClientSessionId holds the idempotency record but is
    /// not committed yet.
    #[error("a concurrent upload is in progress, retry")]
    InProgress,
    /// The item store failed.
    #[error("storing the session failed")]
    Store(#[from] StoreError),
    /// The blob store failed.
    #[error("storing the track points failed")]
    Blob(#[from] BlobError),
}

/// Stores an upload of `user_id`, or answers the earlier upload of its ClientSessionId.
pub async fn create(
    ports: &Ports,
    user_id: &UserId,
    upload: SessionUpload,
) -> Result<Receipt, CreateError> {
    let keys = FirstReads::keys(user_id, &upload).to_vec();
    let found: [Option<Item>; 2] = ports
        .items
        .get_many(keys)
        .await?
        .try_into()
        .map_err(|_| StoreError::Unavailable("a read of two items answered others".into()))?;
    create_read(ports, user_id, upload, FirstReads::of(found)).await
}

/// The index of the track's update in the upload's transaction.
const TRACK_OP: usize = 2;
/// Rounds of the transaction when concurrent uploads keep moving the track's `lastSessionAt`.
const TRACK_ROUNDS: u32 = 10;

/// [`create`] from what it reads first ([`FirstReads`], read beside other items).
pub async fn create_read(
    ports: &Ports,
    user_id: &UserId,
    upload: SessionUpload,
    first: FirstReads,
) -> Result<Receipt, CreateError> {
    if let Some(earlier) = repeat_of(first.earlier)? {
        return Ok(earlier);
    }
    let now = ports.clock.now();
    let track = TrackKey::new(&upload.game_id, &upload.track_name, &upload.track_layout);
    let track_id = track.id();
    let session_id = new_session_id(upload.recorded_at);
    let receipt = Receipt {
        session_id: session_id.clone(),
        track_id: track_id.clone(),
        lap_count: upload.laps.len(),
        duplicate: false,
    };

    // Points go to the blob store first; the job that refers to them is part of the
    // transaction, so a failed transaction leaves at most an unreferenced blob, removed below.
    let job = match &upload.track_points {
        Some(points) => {
            let key = maps::points_key(&track_id, &session_id);
            ports
                .blobs
                .put(&key, maps::encode_points(points), "application/json")
                .await?;
            Some((JobId::new(), key))
        }
        None => None,
    };
    let job_id = job.as_ref().map(|(id, _)| id);

    let record = UploadRecord {
        session_id: session_id.clone(),
        track_id: track_id.clone(),
        lap_count: upload.laps.len(),
    };
    let record = TxOp::Put {
        table: Table::Sessions,
        item: record.to_item(user_id, &upload.client_session_id),
        condition: Some(Condition::NotExists),
    };
    let session = TxOp::Put {
        table: Table::Sessions,
        item: session_item(user_id, &session_id, &track_id, &upload, job_id, now),
        condition: Some(Condition::NotExists),
    };
    let event = Event::new(
        EventKind::SessionUploaded(SessionUploaded {
            session_id: session_id.clone(),
            track_id: track_id.clone(),
            game_id: upload.game_id.clone(),
            track_name: upload.track_name.clone(),
            track_layout: upload.track_layout.clone(),
            vehicle_name: upload.vehicle_name.clone(),
            recorded_at: rfc3339(upload.recorded_at),
            session_phase: upload.session_phase.clone(),
            best_lap_ms: upload.best_lap_ms,
            lap_count: upload.laps.len(),
            job_id: job_id.cloned(),
            valid_lap_count: upload.laps.iter().filter(|l| l.is_valid).count(),
            driving_ms: upload.laps.iter().map(|l| l.lap_time_ms.max(0)).sum(),
            valid_lap_spread_ms: valid_lap_spread(&upload),
        }),
        Some(user_id.clone()),
        now,
    );
    let mut ops = vec![
        record,
        session,
        tracks::count_session_at_op(&track, upload.recorded_at, first.track.as_ref()),
        event.outbox_op(),
    ];
    if let Some((id, key)) = &job {
        ops.push(jobs::create_op(
            id,
            &track_id,
            &session_id,
            user_id,
            key,
            now,
        ));
    }

    let conflict = |e: &StoreError| matches!(e, StoreError::Conflict);
    let mut rounds = 0;
    let outcome = loop {
        rounds += 1;
        let outcome = retry_on_conflict(CONFLICT_ATTEMPTS, conflict, || {
            ports.items.transact(ops.clone())
        })
        .await;
        match outcome {
            // Another upload moved the track's lastSessionAt since it was read: read it again.
            Err(e) if e.is_condition_failed_at(TRACK_OP) && rounds < TRACK_ROUNDS => {
                let track_item = ports
                    .items
                    .get(Table::Tracks, &tracks::key(&track_id))
                    .await;
                match track_item {
                    Ok(read) => {
                        ops[TRACK_OP] =
                            tracks::count_session_at_op(&track, upload.recorded_at, read.as_ref());
                    }
                    Err(e) => break Err(e),
                }
            }
            other => break other,
        }
    };
    match outcome {
        Ok(()) => {
            paddock_platform::metrics::global()
                .sessions_uploaded
                .with_label_values(&["created"])
                .inc();
            Ok(receipt)
        }
        Err(e) => {
            if let Some((_, key)) = &job {
                let _ = ports.blobs.delete(key).await;
            }
            match e {
                // A concurrent duplicate won: answer with its session.
                e @ (StoreError::ConditionFailed { .. } | StoreError::Conflict)
                    if !e.is_condition_failed_at(TRACK_OP) =>
                {
                    earlier_upload(ports, user_id, &upload.client_session_id)
                        .await?
                        .ok_or(CreateError::InProgress)
                }
                other => Err(other.into()),
            }
        }
    }
}
