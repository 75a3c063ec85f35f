//! The table layout, defined once for both adapters and mirrored by `template.yaml`.
//!
//! Every table has the key schema `pk` (string, partition) + `sk` (string, sort) and the
//! expiry attribute `ttl`. The key patterns each feature uses are documented where the
//! feature builds its keys.

use serde::{Deserialize, Serialize};

/// A logical table. The physical name is the configured prefix plus [`Table::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Table {
    /// Accounts, email claims and provider identity links.
    Users,
    /// Refresh tokens, token families, exchange codes and sign-in flows.
    Tokens,
    /// Uploaded sessions with their laps, and upload idempotency records.
    Sessions,
    /// Canonical tracks, track maps and track-processing jobs.
    Tracks,
    /// Ranked best laps and each driver's best per track.
    Leaderboards,
    /// Feed entries, unlocked achievements and processed-event markers.
    Activity,
    /// Share-pack metadata (the ZIPs live in the blob store).
    Sharepacks,
    /// Transactional outbox of events awaiting relay to the queue.
    Outbox,
    /// Rate-limit counters.
    Limits,
    /// Stored coaching answers (reused for a day).
    Coaching,
    /// Competitions: leagues, their members and invite codes, and each driver's leagues.
    Competitions,
}

impl Table {
    /// Every table, in a stable order.
    pub const ALL: [Table; 11] = [
        Table::Users,
        Table::Tokens,
        Table::Sessions,
        Table::Tracks,
        Table::Leaderboards,
        Table::Activity,
        Table::Sharepacks,
        Table::Outbox,
        Table::Limits,
        Table::Coaching,
        Table::Competitions,
    ];

    /// The logical name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Users => "users",
            Table::Tokens => "tokens",
            Table::Sessions => "sessions",
            Table::Tracks => "tracks",
            Table::Leaderboards => "leaderboards",
            Table::Activity => "activity",
            Table::Sharepacks => "sharepacks",
            Table::Outbox => "outbox",
            Table::Limits => "limits",
            Table::Coaching => "coaching",
            Table::Competitions => "competitions",
        }
    }

    /// The table whose logical name is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The physical name under `prefix`.
    pub fn physical(self, prefix: &str) -> String {
        format!("{prefix}{}", self.name())
    }

    /// Whether the table publishes a change stream: the outbox relay reads the outbox's new
    /// images, the retention function the share packs' old images (of TTL's removals).
    pub fn has_stream(self) -> bool {
        matches!(self, Table::Outbox | Table::Sharepacks)
    }

    /// What the table's stream records carry (when it has one).
    pub fn stream_holds_old_images(self) -> bool {
        self == Table::Sharepacks
    }
}
