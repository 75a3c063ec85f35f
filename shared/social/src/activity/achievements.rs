//! The achievement processor (statistics and unlocks, exactly once per event) and the
//! driver's view of the catalogue.
//!
//! Key layout (table `activity`, partition `ACH#<user id>`):
//! - `STATS`: the driver's [`Statistics`] and a `version` every update is conditional on;
//! - `SEEN#<track|game|vehicle>#<value>`: a track, game or car the driver has synced;
//! - `UNLOCKED#<achievement id>`: an unlock, written only if absent.
//!
//! One transaction per event holds the statistics update, the seen markers, every unlock with
//! its `achievement.unlocked` outbox event, and the processed-event marker. A redelivered
//! event finds its marker; two deliveries racing each other meet on the statistics version, and
//! the loser reads again and finds the marker. So statistics count an event once and an
//! achievement unlocks once.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use utoipa::ToSchema;

use super::catalog::{self, Achievement, CATALOG, Category, Rule};
use super::statistics::{FirstTimes, Statistics};
use paddock_identity::identity::users;
use paddock_kernel::events::{
    AchievementUnlocked, Event, EventKind, ProcessError, SessionUploaded,
};
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::rfc3339;
use paddock_kernel::ports::items::{Condition, Key, Query, StoreError, TxOp, decode, item};
use paddock_kernel::processed_events::{marker_key, marker_op};
use paddock_kernel::queues::QueueName;
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Read-and-commit rounds before a contended event is handed back to the queue.
const ROUNDS: u32 = 10;
/// Sort-key prefix of unlocks.
const UNLOCKED_PREFIX: &str = "UNLOCKED#";

/// The partition of a driver's achievements.
pub(crate) fn partition(user_id: &UserId) -> String {
    format!("ACH#{user_id}")
}

fn stats_key(user_id: &UserId) -> Key {
    Key::new(partition(user_id), "STATS")
}

fn seen_key(user_id: &UserId, dimension: &str, value: &str) -> Key {
    Key::new(
        partition(user_id),
        format!("SEEN#{dimension}#{}", value.trim().to_lowercase()),
    )
}

fn unlocked_key(user_id: &UserId, achievement_id: &str) -> Key {
    Key::new(
        partition(user_id),
        format!("{UNLOCKED_PREFIX}{achievement_id}"),
    )
}

/// The statistics item.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatsRecord {
    #[serde(flatten)]
    stats: Statistics,
    /// Bumped by every update; each update is conditional on the version it read.
    version: u64,
}

/// An unlock item.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnlockRecord {
    /// The catalogue id.
    pub achievement_id: String,
    /// RFC 3339.
    pub unlocked_at: String,
    /// The event that unlocked it.
    pub event_id: String,
}

/// Applies `event` to its driver's statistics and unlocks what it earns, once.
pub async fn process(ports: &Ports, event: &Event) -> Result<(), ProcessError> {
    let user_id = event
        .user_id
        .as_ref()
        .ok_or_else(|| ProcessError::Poison(format!("{} without a user", event.kind.name())))?;
    if !QueueName::Achievements.subscribes_to(&event.kind) {
        return Ok(());
    }
    // Another delivery or event of this driver committed first: read again.
    match retry_on_conflict(ROUNDS, is_conflict, || attempt(ports, user_id, event)).await {
        Ok(()) => Ok(()),
        Err(e) if is_conflict(&e) => Err(ProcessError::Retry(anyhow::anyhow!(
            "achievements of {user_id} stayed contended for {ROUNDS} rounds"
        ))),
        Err(e) => Err(ProcessError::Retry(
            anyhow::Error::new(e).context("updating achievements"),
        )),
    }
}

/// One read-and-commit round.
async fn attempt(ports: &Ports, user_id: &UserId, event: &Event) -> Result<(), StoreError> {
    let items = &ports.items;
    if items
        .get(Table::Activity, &marker_key(QueueName::Achievements, event))
        .await?
        .is_some()
    {
        return Ok(());
    }
    let stored = match items.get(Table::Activity, &stats_key(user_id)).await? {
        Some(item) => Some(decode::<StatsRecord>(item, "achievement statistics")?),
        None => None,
    };
    // The check keeps a late event of a deleted account from writing anything (index 1).
    let mut ops = vec![
        marker_op(QueueName::Achievements, event),
        users::not_deleted_op(user_id),
    ];
    let mut stats = stored.as_ref().map(|s| s.stats.clone()).unwrap_or_default();
    match &event.kind {
        EventKind::SessionUploaded(session) => {
            let first = first_times(ports, user_id, session, &mut ops).await?;
            stats.add_session(session, first);
        }
        EventKind::LeaderboardSubmitted(submission) => stats.add_submission(submission),
        EventKind::EventFinished(finished) => stats.add_event(finished),
        EventKind::TrackProcessRequested(_)
        | EventKind::AchievementUnlocked(_)
        | EventKind::ProfileUpdated(_)
        | EventKind::AccountDeleted(_)
        | EventKind::BoardPassed(_)
        | EventKind::WebhookTest(_)
        | EventKind::WebhookDisabled(_)
        | EventKind::WebhookRedelivery(_)
        | EventKind::EventStarted(_) => {
            return Ok(());
        }
    }

    let unlocked = unlocked_ids(ports, user_id).await?;
    let now = ports.clock.now();
    let earned: Vec<&Achievement> = CATALOG
        .iter()
        .filter(|a| !unlocked.contains(a.id) && stats.satisfies(a.rule))
        .collect();
    for achievement in &earned {
        let record = UnlockRecord {
            achievement_id: achievement.id.into(),
            unlocked_at: rfc3339(now),
            event_id: event.id.to_string(),
        };
        ops.push(TxOp::Put {
            table: Table::Activity,
            item: item(
                &unlocked_key(user_id, achievement.id),
                serde_json::to_value(&record).expect("an unlock serialises"),
            ),
            condition: Some(Condition::NotExists),
        });
        let unlock = Event::new(
            EventKind::AchievementUnlocked(AchievementUnlocked {
                achievement_id: achievement.id.into(),
                title: achievement.title.into(),
                description: achievement.description.into(),
                cause_event_id: event.id,
            }),
            Some(user_id.clone()),
            now,
        );
        ops.push(unlock.outbox_op());
    }

    let version = stored.as_ref().map_or(0, |s| s.version);
    let record = StatsRecord {
        stats,
        version: version + 1,
    };
    ops.push(TxOp::Put {
        table: Table::Activity,
        item: item(
            &stats_key(user_id),
            serde_json::to_value(&record).expect("statistics serialise"),
        ),
        condition: Some(match stored {
            Some(_) => Condition::eq("version", version),
            None => Condition::NotExists,
        }),
    });
    match items.transact(ops).await {
        Ok(()) => {}
        Err(e) if e.is_condition_failed_at(1) => {
            tracing::info!(%user_id, event_id = %event.id, "event of a deleted account ignored");
            return Ok(());
        }
        Err(e) => return Err(e),
    }
    for achievement in earned {
        paddock_platform::metrics::global()
            .achievements_unlocked
            .with_label_values(&[achievement.id])
            .inc();
        tracing::info!(%user_id, achievement = achievement.id, "achievement unlocked");
    }
    Ok(())
}

/// Which of the session's track, game and car are new to the driver; adds their markers to
/// `ops` (conditional on absence, so a race between two events is caught).
async fn first_times(
    ports: &Ports,
    user_id: &UserId,
    session: &SessionUploaded,
    ops: &mut Vec<TxOp>,
) -> Result<FirstTimes, StoreError> {
    let mut first = FirstTimes::default();
    let dimensions = [
        ("track", session.track_id.as_str(), &mut first.track),
        ("game", session.game_id.as_str(), &mut first.game),
        ("vehicle", session.vehicle_name.as_str(), &mut first.vehicle),
    ];
    for (dimension, value, is_first) in dimensions {
        if value.trim().is_empty() {
            continue;
        }
        let key = seen_key(user_id, dimension, value);
        if ports.items.get(Table::Activity, &key).await?.is_none() {
            *is_first = true;
            ops.push(TxOp::Put {
                table: Table::Activity,
                item: item(&key, serde_json::json!({})),
                condition: Some(Condition::NotExists),
            });
        }
    }
    Ok(first)
}

/// The driver's unlocks.
async fn unlocks(ports: &Ports, user_id: &UserId) -> Result<Vec<UnlockRecord>, StoreError> {
    // The catalogue is small: one page holds every unlock.
    let page = ports
        .items
        .query(
            Query::partition(Table::Activity, partition(user_id))
                .begins_with(UNLOCKED_PREFIX)
                .limit(CATALOG.len() + 50),
        )
        .await?;
    page.items
        .into_iter()
        .map(|item| decode(item, "achievement unlock"))
        .collect()
}

async fn unlocked_ids(
    ports: &Ports,
    user_id: &UserId,
) -> Result<HashSet<&'static str>, StoreError> {
    Ok(unlocks(ports, user_id)
        .await?
        .iter()
        .filter_map(|u| catalog::find(&u.achievement_id).map(|a| a.id))
        .collect())
}

/// A catalogue entry as a driver sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// Stable id.
    pub id: &'static str,
    /// The title; a hidden achievement the caller has not unlocked shows `Hidden achievement`.
    pub title: &'static str,
    /// What it is awarded for (hidden ones: a hint only).
    pub description: &'static str,
    /// Its category.
    pub category: Category,
    /// Whether it stays secret until unlocked.
    pub hidden: bool,
}

/// Progress towards a locked achievement.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Where the driver stands (capped at the target).
    pub current: i64,
    /// What unlocks it.
    pub target: i64,
}

/// One achievement of the caller: unlocked (with its time) or locked (with progress).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriverAchievement {
    /// The catalogue entry.
    #[serde(flatten)]
    pub entry: CatalogEntry,
    /// When the caller unlocked it (RFC 3339); null while locked.
    pub unlocked_at: Option<String>,
    /// Progress while locked and countable; null once unlocked, and for rank achievements.
    pub progress: Option<Progress>,
}

/// The catalogue entry of `a` for a driver who has (`unlocked`) or has not unlocked it.
fn entry(a: &Achievement, unlocked: bool) -> CatalogEntry {
    let secret = a.hidden && !unlocked;
    CatalogEntry {
        id: a.id,
        title: if secret {
            "Hidden achievement"
        } else {
            a.title
        },
        description: if secret {
            "Keep driving to find out."
        } else {
            a.description
        },
        category: a.category,
        hidden: a.hidden,
    }
}

/// The whole catalogue as `user_id` sees it.
pub async fn catalog_for(ports: &Ports, user_id: &UserId) -> Result<Vec<CatalogEntry>, StoreError> {
    let unlocked = unlocked_ids(ports, user_id).await?;
    Ok(CATALOG
        .iter()
        .map(|a| entry(a, unlocked.contains(a.id)))
        .collect())
}

/// Every achievement of `user_id`: unlocked ones first (newest first), then locked ones in
/// catalogue order with their progress.
pub async fn for_driver(
    ports: &Ports,
    user_id: &UserId,
) -> Result<Vec<DriverAchievement>, StoreError> {
    // The statistics and the unlocks do not depend on each other: one round trip for both.
    let stats_key = stats_key(user_id);
    let (stats, mut unlocks) = futures::try_join!(
        ports.items.get(Table::Activity, &stats_key),
        unlocks(ports, user_id)
    )?;
    let stats = match stats {
        Some(item) => decode::<StatsRecord>(item, "achievement statistics")?.stats,
        None => Statistics::default(),
    };
    unlocks.sort_by(|a, b| b.unlocked_at.cmp(&a.unlocked_at));
    let mut out: Vec<DriverAchievement> = unlocks
        .iter()
        .filter_map(|u| {
            catalog::find(&u.achievement_id).map(|a| DriverAchievement {
                entry: entry(a, true),
                unlocked_at: Some(u.unlocked_at.clone()),
                progress: None,
            })
        })
        .collect();
    for a in &CATALOG {
        if out.iter().any(|d| d.entry.id == a.id) {
            continue;
        }
        let progress = match a.rule {
            Rule::AtLeast(stat, target) => Some(Progress {
                current: stats.get(stat).min(target),
                target,
            }),
            Rule::RankAtMost(_) => None,
        };
        out.push(DriverAchievement {
            entry: entry(a, false),
            unlocked_at: None,
            progress,
        });
    }
    Ok(out)
}
