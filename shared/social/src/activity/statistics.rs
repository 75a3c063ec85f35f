//! Per-driver statistics, the facts achievement rules are judged on.

use serde::{Deserialize, Serialize};

use super::catalog::{Rule, Stat};
use paddock_kernel::events::{EventFinished, LeaderboardSubmitted, SessionUploaded};

/// Laps a session needs, every one valid, to count as clean.
const CLEAN_SESSION_LAPS: usize = 10;
/// The widest spread of valid laps (slowest minus fastest, at least five of them) that counts
/// as a steady session.
const STEADY_SPREAD_MS: i64 = 500;

/// A driver's statistics. Stored with the achievements (`ACH#<user>` / `STATS`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Statistics {
    /// Sessions synced.
    pub sessions: i64,
    /// Laps driven.
    pub laps: i64,
    /// Valid laps driven.
    pub valid_laps: i64,
    /// Time at the wheel, milliseconds.
    pub driving_ms: i64,
    /// Distinct tracks.
    pub tracks: i64,
    /// Distinct games.
    pub games: i64,
    /// Distinct cars.
    pub vehicles: i64,
    /// Leaderboard submissions.
    pub submissions: i64,
    /// Submissions that beat the driver's own earlier entry.
    pub personal_bests: i64,
    /// The best rank any submission answered with (1 is fastest).
    pub best_rank: Option<i64>,
    /// Qualifying sessions.
    pub qualifying_sessions: i64,
    /// Race sessions.
    pub race_sessions: i64,
    /// Night sessions.
    pub night_sessions: i64,
    /// Sessions of at least 10 laps, every one valid.
    pub clean_sessions: i64,
    /// Sessions of at least five valid laps within half a second.
    pub steady_sessions: i64,
    /// Competition events finished (entered and closed).
    pub events_finished: i64,
    /// Competition events finished in the top three.
    pub podiums: i64,
}

/// Which of a session's track, game and car the driver had not driven before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FirstTimes {
    /// A track never driven before.
    pub track: bool,
    /// A game never synced before.
    pub game: bool,
    /// A car never driven before.
    pub vehicle: bool,
}

impl Statistics {
    /// The value of `stat`.
    pub fn get(&self, stat: Stat) -> i64 {
        match stat {
            Stat::Sessions => self.sessions,
            Stat::Laps => self.laps,
            Stat::ValidLaps => self.valid_laps,
            Stat::DrivingMs => self.driving_ms,
            Stat::Tracks => self.tracks,
            Stat::Games => self.games,
            Stat::Vehicles => self.vehicles,
            Stat::Submissions => self.submissions,
            Stat::PersonalBests => self.personal_bests,
            Stat::QualifyingSessions => self.qualifying_sessions,
            Stat::RaceSessions => self.race_sessions,
            Stat::NightSessions => self.night_sessions,
            Stat::CleanSessions => self.clean_sessions,
            Stat::SteadySessions => self.steady_sessions,
            Stat::EventsFinished => self.events_finished,
            Stat::Podiums => self.podiums,
        }
    }

    /// Whether `rule` holds.
    pub fn satisfies(&self, rule: Rule) -> bool {
        match rule {
            Rule::AtLeast(stat, target) => self.get(stat) >= target,
            Rule::RankAtMost(rank) => self.best_rank.is_some_and(|best| best <= rank),
        }
    }

    /// Counts an uploaded session.
    pub fn add_session(&mut self, session: &SessionUploaded, first: FirstTimes) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.sessions += 1;
        self.laps += count(session.lap_count);
        self.valid_laps += count(session.valid_lap_count);
        self.driving_ms = self.driving_ms.saturating_add(session.driving_ms.max(0));
        self.tracks += i64::from(first.track);
        self.games += i64::from(first.game);
        self.vehicles += i64::from(first.vehicle);
        let phase = session.session_phase.to_lowercase();
        self.qualifying_sessions += i64::from(phase.contains("qual"));
        self.race_sessions += i64::from(phase.contains("race"));
        self.night_sessions += i64::from(phase.contains("night"));
        let clean =
            session.lap_count >= CLEAN_SESSION_LAPS && session.valid_lap_count == session.lap_count;
        self.clean_sessions += i64::from(clean);
        let steady = session
            .valid_lap_spread_ms
            .is_some_and(|spread| spread <= STEADY_SPREAD_MS);
        self.steady_sessions += i64::from(steady);
    }

    /// Counts a leaderboard submission, with the rank it answered with.
    pub fn add_submission(&mut self, submission: &LeaderboardSubmitted) {
        self.submissions += 1;
        if submission.improved && submission.previous_best_ms.is_some() {
            self.personal_bests += 1;
        }
        if let Some(rank) = submission.rank.and_then(|r| i64::try_from(r).ok()) {
            self.best_rank = Some(self.best_rank.map_or(rank, |best| best.min(rank)));
        }
    }

    /// Counts a competition event the driver finished.
    pub fn add_event(&mut self, finished: &EventFinished) {
        self.events_finished += 1;
        if finished.position <= 3 {
            self.podiums += 1;
        }
    }
}
