//! Track maps: the merged centreline of a track, kept in the blob store, and the worker step
//! that builds it from a session's track points.
//!
//! Versioning: the track item's `mapVersion` counts the map's versions and `mapBlob` names the
//! blob of the current one. A worker writes its merged map to a blob of its own (named by
//! version and job) and then moves the item from version `v` to `v + 1` with a condition, so
//! two workers merging into one track at once never lose a session: the loser deletes its
//! blob, re-reads and merges again.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use utoipa::ToSchema;

use super::centreline::TrackPoint;
use super::centreline::{self, GridPoint, SPACING_M};
use super::jobs::{self, Job};
use super::{MAP_BLOB, MAP_VERSION, TrackRecord};
use paddock_kernel::events::ProcessError;
use paddock_kernel::ids::{JobId, SessionId, TrackId};
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, StoreError, Update};
use paddock_kernel::ports::{BlobError, Ports};
use paddock_kernel::retry::retry_on_conflict;
use paddock_kernel::tables::Table;

/// How many merged job ids a map remembers, so a redelivered job is not merged twice.
const REMEMBERED_JOBS: usize = 200;
/// Attempts to win the map version race before giving the job back.
const MERGE_ROUNDS: u32 = 5;
/// Why a build gave up when every merge round lost the version race.
const RACED: &str = "the track map kept changing under concurrent merges";

/// The blob key of an upload's track points.
pub fn points_key(track_id: &TrackId, session_id: &SessionId) -> String {
    format!("tracks/{track_id}/points/{session_id}.json")
}

fn map_key(track_id: &TrackId, version: i64, job_id: &JobId) -> String {
    format!("tracks/{track_id}/map-{version}-{job_id}.json")
}

/// Track points as stored: `[[distance, x, y], ...]` (compact; up to 10,000 per upload).
pub fn encode_points(points: &[TrackPoint]) -> Bytes {
    let rows: Vec<[f64; 3]> = points.iter().map(|p| [p.distance, p.x, p.y]).collect();
    Bytes::from(serde_json::to_vec(&rows).unwrap_or_default())
}

fn decode_points(bytes: &[u8]) -> Option<Vec<TrackPoint>> {
    let rows: Vec<[f64; 3]> = serde_json::from_slice(bytes).ok()?;
    Some(
        rows.into_iter()
            .map(|[distance, x, y]| TrackPoint { x, y, distance })
            .collect(),
    )
}

/// A stored map.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMap {
    spacing_m: f64,
    sessions: u32,
    updated_at: String,
    /// Recently merged job ids (newest last).
    jobs: Vec<JobId>,
    /// `[index, x, y, weight]`.
    points: Vec<(i64, f64, f64, u32)>,
}

impl StoredMap {
    fn grid(&self) -> Vec<GridPoint> {
        self.points
            .iter()
            .map(|&(index, x, y, weight)| GridPoint {
                index,
                x,
                y,
                weight,
            })
            .collect()
    }
}

/// One point of a map as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MapPoint {
    /// Track distance in metres.
    pub distance: f64,
    /// World-space X, metres.
    pub x: f64,
    /// World-space Y, metres.
    pub y: f64,
}

/// A track's centreline (`GET /v1/tracks/{id}/map`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrackMap {
    /// The canonical track.
    #[schema(value_type = String)]
    pub track_id: TrackId,
    /// Distance between points, in metres.
    pub spacing_m: f64,
    /// Sessions merged into the map.
    pub sessions: u32,
    /// RFC 3339 time of the last merge.
    pub updated_at: String,
    /// Points ordered by distance.
    pub points: Vec<MapPoint>,
}

/// The track's map version (0: none yet) and the blob of the current map.
async fn map_version(
    ports: &Ports,
    track_id: &TrackId,
) -> Result<Option<(i64, Option<String>)>, StoreError> {
    let Some(track) = ports
        .items
        .get(Table::Tracks, &super::key(track_id))
        .await?
    else {
        return Ok(None);
    };
    let record = TrackRecord::from_item(track)?;
    Ok(Some((record.map_version, record.map_blob)))
}

async fn read_map(ports: &Ports, blob: Option<&str>) -> Result<Option<StoredMap>, BlobError> {
    let Some(blob) = blob else { return Ok(None) };
    let bytes = ports.blobs.get(blob).await?;
    Ok(bytes.and_then(|b| serde_json::from_slice(&b).ok()))
}

/// Why a stored map could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MapReadError {
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The blob store failed.
    #[error(transparent)]
    Blob(#[from] BlobError),
}

/// The stored current map of `track_id`, if the track exists and has one.
async fn stored(ports: &Ports, track_id: &TrackId) -> Result<Option<StoredMap>, MapReadError> {
    let Some((_, blob)) = map_version(ports, track_id).await? else {
        return Ok(None);
    };
    Ok(read_map(ports, blob.as_deref()).await?)
}

/// The current map of `track_id`: `Ok(None)` when the track is unknown or has no map yet.
pub async fn current(ports: &Ports, track_id: &TrackId) -> Result<Option<TrackMap>, MapReadError> {
    let Some(map) = stored(ports, track_id).await? else {
        return Ok(None);
    };
    Ok(Some(TrackMap {
        track_id: track_id.clone(),
        spacing_m: map.spacing_m,
        sessions: map.sessions,
        updated_at: map.updated_at,
        points: map
            .points
            .iter()
            .map(|&(index, x, y, _)| MapPoint {
                distance: index as f64 * map.spacing_m,
                x,
                y,
            })
            .collect(),
    }))
}

/// The length in metres of the current map's centreline of `track_id`: `Ok(None)` when the
/// track has no map, or a map of fewer than two points.
pub async fn length_m(ports: &Ports, track_id: &TrackId) -> Result<Option<f64>, MapReadError> {
    Ok(stored(ports, track_id)
        .await?
        .map(|map| centreline_length_m(&map.points))
        .filter(|&length| length > 0.0))
}

/// The length of the line through `points` (ordered by grid index), summed segment by
/// segment from their positions.
///
/// Why not "points × spacing": the grid index comes from the `Distance` the client reported,
/// which nothing else checks (in another unit it would stretch the grid), while the
/// positions are the line the map draws. And the summed line comes out shorter than the
/// driven path, not longer: each 5 m step is a chord of the curve it cuts, a gap left open
/// in the map is crossed in a straight line, merged sessions are averaged positions (an
/// average of lines is never longer than the lines are on average), and the closing step
/// from the last point back to the first is not counted. A length that errs short makes
/// the speed floor err towards accepting a lap, the side a plausibility check must err on.
fn centreline_length_m(points: &[(i64, f64, f64, u32)]) -> f64 {
    points
        .windows(2)
        .map(|pair| {
            let ((_, x0, y0, _), (_, x1, y1, _)) = (pair[0], pair[1]);
            (x1 - x0).hypot(y1 - y0)
        })
        .sum()
}

/// The map as an SVG picture: the centreline as one path, north up (world Y grows upwards).
pub fn svg(map: &TrackMap) -> String {
    let (mut min_x, mut max_x, mut min_y, mut max_y) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for p in &map.points {
        min_x = min_x.min(p.x);
        max_x = max_x.max(p.x);
        min_y = min_y.min(p.y);
        max_y = max_y.max(p.y);
    }
    if map.points.is_empty() {
        (min_x, max_x, min_y, max_y) = (0.0, 1.0, 0.0, 1.0);
    }
    let size = (max_x - min_x).max(max_y - min_y).max(1.0);
    let margin = size * 0.05;
    let stroke = size / 150.0;
    let mut path = String::new();
    for (i, p) in map.points.iter().enumerate() {
        let command = if i == 0 { 'M' } else { 'L' };
        // SVG's y axis points down; flip so the picture matches the world's orientation.
        let _ = write!(path, "{command}{:.1} {:.1} ", p.x - min_x, max_y - p.y);
    }
    if let (Some(first), Some(last)) = (map.points.first(), map.points.last()) {
        let gap = ((first.x - last.x).powi(2) + (first.y - last.y).powi(2)).sqrt();
        if map.points.len() > 2 && gap <= 4.0 * map.spacing_m {
            path.push('Z');
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"{:.1} {:.1} {:.1} {:.1}\">\
         <title>Track map {}</title>\
         <path d=\"{}\" fill=\"none\" stroke=\"#1f2937\" stroke-width=\"{:.2}\" \
         stroke-linejoin=\"round\" stroke-linecap=\"round\"/></svg>",
        -margin,
        -margin,
        (max_x - min_x) + 2.0 * margin,
        (max_y - min_y) + 2.0 * margin,
        map.track_id,
        path.trim_end(),
        stroke
    )
}

/// Why building a map failed.
enum BuildError {
    /// The job can never succeed (its points are unusable).
    Permanent(String),
    /// Worth another attempt.
    Transient(String),
}

impl From<StoreError> for BuildError {
    fn from(e: StoreError) -> Self {
        Self::Transient(e.to_string())
    }
}

impl From<BlobError> for BuildError {
    fn from(e: BlobError) -> Self {
        Self::Transient(e.to_string())
    }
}

/// The worker step for job `job_id`: claim it, build and merge the map, record the outcome.
pub async fn process_job(ports: &Ports, job_id: &JobId) -> Result<(), ProcessError> {
    let retry = |e: StoreError| ProcessError::Retry(anyhow::Error::new(e));
    let Some(job) = jobs::claim(ports, job_id).await.map_err(retry)? else {
        tracing::debug!(
            %job_id,
            "track job not claimable (held, finished or unknown)"
        );
        return Ok(());
    };
    let counter = |outcome: &str| {
        paddock_platform::metrics::global()
            .track_jobs
            .with_label_values(&[outcome])
            .inc();
    };
    match build(ports, &job).await {
        Ok(()) => {
            counter("done");
            jobs::complete(ports, &job).await.map_err(retry)
        }
        Err(BuildError::Permanent(reason)) => {
            tracing::warn!(%job_id, %reason, "track job failed");
            counter("failed");
            jobs::fail(ports, &job, &reason).await.map_err(retry)
        }
        Err(BuildError::Transient(reason)) => {
            let again = jobs::release(ports, &job, &reason).await.map_err(retry)?;
            counter(if again { "retry" } else { "failed" });
            if again {
                Err(ProcessError::Retry(anyhow::anyhow!(
                    "track job {job_id}: {reason}"
                )))
            } else {
                tracing::warn!(%job_id, %reason, "track job failed after its last attempt");
                Ok(())
            }
        }
    }
}

async fn build(ports: &Ports, job: &Job) -> Result<(), BuildError> {
    let bytes = ports
        .blobs
        .get(&job.points_key)
        .await?
        .ok_or_else(|| BuildError::Permanent("the uploaded track points are missing".into()))?;
    let points = decode_points(&bytes)
        .ok_or_else(|| BuildError::Permanent("the stored track points are unreadable".into()))?;
    let fresh = centreline::resample(&points).map_err(|e| BuildError::Permanent(e.to_string()))?;

    // Another merge won the version read: drop ours and merge into theirs.
    let raced = |e: &BuildError| matches!(e, BuildError::Transient(reason) if reason == RACED);
    retry_on_conflict(MERGE_ROUNDS, raced, || async {
        let (version, current_blob) = map_version(ports, &job.track_id)
            .await?
            .ok_or_else(|| BuildError::Permanent("the track does not exist".into()))?;
        let existing = read_map(ports, current_blob.as_deref()).await?;
        if existing
            .as_ref()
            .is_some_and(|m| m.jobs.iter().any(|j| j == &job.id))
        {
            return Ok(()); // merged by an earlier attempt that could not record it
        }
        let (grid, sessions, mut merged_jobs) = match &existing {
            Some(m) => (
                centreline::merge(&m.grid(), &fresh),
                m.sessions + 1,
                m.jobs.clone(),
            ),
            None => (fresh.clone(), 1, Vec::new()),
        };
        merged_jobs.push(job.id.clone());
        let skip = merged_jobs.len().saturating_sub(REMEMBERED_JOBS);
        merged_jobs.drain(..skip);
        let map = StoredMap {
            spacing_m: SPACING_M,
            sessions,
            updated_at: rfc3339(ports.clock.now()),
            jobs: merged_jobs,
            points: grid.iter().map(|p| (p.index, p.x, p.y, p.weight)).collect(),
        };
        let next = version + 1;
        let blob = map_key(&job.track_id, next, &job.id);
        let body = serde_json::to_vec(&map).map_err(|e| BuildError::Transient(e.to_string()))?;
        ports
            .blobs
            .put(&blob, Bytes::from(body), "application/json")
            .await?;
        let same_version = if version == 0 {
            Condition::AttrNotExists(MAP_VERSION.into())
        } else {
            Condition::eq(MAP_VERSION, version)
        };
        match ports
            .items
            .update(
                Table::Tracks,
                &super::key(&job.track_id),
                Update::set(MAP_VERSION, next).and_set(MAP_BLOB, blob.as_str()),
                Some(Condition::And(vec![Condition::Exists, same_version])),
            )
            .await
        {
            Ok(_) => {
                if let Some(old) = current_blob {
                    let _ = ports.blobs.delete(&old).await;
                }
                Ok(())
            }
            Err(e) => {
                let _ = ports.blobs.delete(&blob).await;
                Err(match e {
                    StoreError::ConditionFailed { .. } => BuildError::Transient(RACED.into()),
                    other => other.into(),
                })
            }
        }
    })
    .await
}
