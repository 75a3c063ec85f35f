//! The named event queues and which event kinds each one subscribes to.
//!
//! The outbox relay sends every event to each queue that subscribes to its kind; each queue
//! has one consumer (a Lambda function in AWS, a tokio task locally) and its own dead letters,
//! so a failing consumer is retried, throttled and alarmed on without touching the others.

use serde::{Deserialize, Serialize};

use crate::events::{EventKind, LeaderboardSubmitted, SessionUploaded};

/// A queue and its consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum QueueName {
    /// Builds track maps from uploaded track points.
    TrackMaps,
    /// Keeps driver statistics and unlocks achievements.
    Achievements,
    /// Writes feed entries.
    Feed,
    /// Carries profile changes to the leaderboards and runs account deletion jobs.
    Accounts,
    /// Delivers events to the drivers' webhook subscriptions.
    Webhooks,
}

impl QueueName {
    /// Every queue, in a stable order (metric labels are bounded by this list).
    pub const ALL: [QueueName; 5] = [
        Self::TrackMaps,
        Self::Achievements,
        Self::Feed,
        Self::Accounts,
        Self::Webhooks,
    ];

    /// The queue's name: its metric label, its embedded queue's name and (after `paddock-`)
    /// the SQS queue created for emulators.
    pub fn name(self) -> &'static str {
        match self {
            Self::TrackMaps => "track-maps",
            Self::Achievements => "achievements",
            Self::Feed => "feed",
            Self::Accounts => "accounts",
            Self::Webhooks => "webhooks",
        }
    }

    /// The configuration section of its URLs: `Queue__<section>__Url` and `__DeadLetterUrl`.
    pub fn config_section(self) -> &'static str {
        match self {
            Self::TrackMaps => "TrackMaps",
            Self::Achievements => "Achievements",
            Self::Feed => "Feed",
            Self::Accounts => "Accounts",
            Self::Webhooks => "Webhooks",
        }
    }

    /// Whether the queue's consumer wants events of `kind`.
    pub fn subscribes_to(self, kind: &EventKind) -> bool {
        match self {
            // Only an upload that brought track points has a map to build.
            Self::TrackMaps => matches!(
                kind,
                EventKind::SessionUploaded(SessionUploaded {
                    job_id: Some(_),
                    ..
                }) | EventKind::TrackProcessRequested(_)
            ),
            Self::Achievements => matches!(
                kind,
                EventKind::SessionUploaded(_)
                    | EventKind::LeaderboardSubmitted(_)
                    | EventKind::EventFinished(_)
            ),
            Self::Feed => matches!(
                kind,
                EventKind::SessionUploaded(_)
                    | EventKind::LeaderboardSubmitted(_)
                    | EventKind::AchievementUnlocked(_)
                    | EventKind::WebhookDisabled(_)
                    | EventKind::EventFinished(_)
                    | EventKind::EventStarted(_)
            ),
            Self::Accounts => matches!(
                kind,
                EventKind::ProfileUpdated(_) | EventKind::AccountDeleted(_)
            ),
            // The kinds a subscription can ask for (a submission only when it is a new best).
            Self::Webhooks => matches!(
                kind,
                EventKind::SessionUploaded(_)
                    | EventKind::LeaderboardSubmitted(LeaderboardSubmitted { improved: true, .. })
                    | EventKind::AchievementUnlocked(_)
                    | EventKind::BoardPassed(_)
                    | EventKind::WebhookTest(_)
                    | EventKind::EventFinished(_)
                    | EventKind::EventStarted(_)
            ),
        }
    }

    /// The queues that subscribe to `kind`.
    pub fn subscribers(kind: &EventKind) -> impl Iterator<Item = QueueName> + '_ {
        Self::ALL.into_iter().filter(|q| q.subscribes_to(kind))
    }
}

impl std::fmt::Display for QueueName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
