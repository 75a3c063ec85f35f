//! The achievement catalogue: defined once, as data. Each achievement has a rule over the
//! driver's statistics ([`super::statistics`]); the processor unlocks an achievement the first
//! time its rule holds.

use serde::Serialize;
use utoipa::ToSchema;

/// What an achievement rewards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Syncing sessions.
    Sessions,
    /// Laps and time at the wheel.
    Laps,
    /// Distinct tracks.
    Tracks,
    /// Distinct games and cars, kinds of session.
    Variety,
    /// Leaderboard submissions and ranks.
    Leaderboards,
    /// Valid and even laps.
    Consistency,
}

/// A statistic kept per driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Sessions synced.
    Sessions,
    /// Laps driven.
    Laps,
    /// Valid laps driven.
    ValidLaps,
    /// Time at the wheel, milliseconds (the sum of lap times).
    DrivingMs,
    /// Distinct tracks.
    Tracks,
    /// Distinct games.
    Games,
    /// Distinct cars.
    Vehicles,
    /// Leaderboard submissions.
    Submissions,
    /// Submissions that beat the driver's own earlier entry.
    PersonalBests,
    /// Qualifying sessions.
    QualifyingSessions,
    /// Race sessions.
    RaceSessions,
    /// Sessions whose phase says night.
    NightSessions,
    /// Sessions of at least 10 laps, every one valid.
    CleanSessions,
    /// Sessions of at least 5 valid laps within half a second of each other.
    SteadySessions,
    /// Competition events finished.
    EventsFinished,
    /// Competition events finished in the top three.
    Podiums,
}

/// When an achievement unlocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The statistic reaches the target.
    AtLeast(Stat, i64),
    /// A submission answers with this rank or better (1 is fastest).
    RankAtMost(i64),
}

/// One achievement of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Achievement {
    /// Stable id (stored with unlocks; never reuse one).
    pub id: &'static str,
    /// Shown to drivers.
    pub title: &'static str,
    /// What it is awarded for.
    pub description: &'static str,
    /// Its category.
    pub category: Category,
    /// Hidden achievements show their title only once unlocked.
    pub hidden: bool,
    /// When it unlocks.
    pub rule: Rule,
}

const fn at_least(
    id: &'static str,
    title: &'static str,
    description: &'static str,
    category: Category,
    stat: Stat,
    target: i64,
) -> Achievement {
    Achievement {
        id,
        title,
        description,
        category,
        hidden: false,
        rule: Rule::AtLeast(stat, target),
    }
}

const fn hidden(mut achievement: Achievement) -> Achievement {
    achievement.hidden = true;
    achievement
}

/// The id of the achievement the first synced session unlocks.
pub const FIRST_SESSION: &str = "first-session";

/// Every achievement, in the order drivers see them.
#[rustfmt::skip] // one achievement a line reads as the table it is
pub const CATALOG: [Achievement; 22] = [
    at_least(FIRST_SESSION, "First synced session", "Sync your first session.", Category::Sessions, Stat::Sessions, 1),
    at_least("sessions-10", "Regular", "Sync 10 sessions.", Category::Sessions, Stat::Sessions, 10),
    at_least("sessions-100", "Centurion", "Sync 100 sessions.", Category::Sessions, Stat::Sessions, 100),
    at_least("laps-100", "Hundred laps", "Drive 100 laps.", Category::Laps, Stat::Laps, 100),
    at_least("laps-1000", "Thousand laps", "Drive 1,000 laps.", Category::Laps, Stat::Laps, 1000),
    at_least("driving-10h", "Ten hours at the wheel", "Drive for 10 hours in total.", Category::Laps, Stat::DrivingMs, 10 * 3_600_000),
    at_least("tracks-5", "Explorer", "Drive 5 different tracks.", Category::Tracks, Stat::Tracks, 5),
    at_least("tracks-25", "Globetrotter", "Drive 25 different tracks.", Category::Tracks, Stat::Tracks, 25),
    at_least("games-3", "Multi-sim", "Sync sessions from 3 different games.", Category::Variety, Stat::Games, 3),
    at_least("vehicles-10", "Full garage", "Drive 10 different cars.", Category::Variety, Stat::Vehicles, 10),
    at_least("qualifying", "Quali mode", "Sync a qualifying session.", Category::Variety, Stat::QualifyingSessions, 1),
    at_least("race", "Race day", "Sync a race session.", Category::Variety, Stat::RaceSessions, 1),
    hidden(at_least("night", "Night owl", "Sync a night session.", Category::Variety, Stat::NightSessions, 1)),
    at_least("first-submission", "On the board", "Submit a lap to a leaderboard.", Category::Leaderboards, Stat::Submissions, 1),
    at_least("personal-bests-10", "Always improving", "Beat your own leaderboard time 10 times.", Category::Leaderboards, Stat::PersonalBests, 10),
    Achievement {
        id: "top-10",
        title: "Top ten",
        description: "Rank in the top 10 of any leaderboard.",
        category: Category::Leaderboards,
        hidden: false,
        rule: Rule::RankAtMost(10),
    },
    Achievement {
        id: "fastest",
        title: "Fastest on a track",
        description: "Take first place on a leaderboard.",
        category: Category::Leaderboards,
        hidden: true,
        rule: Rule::RankAtMost(1),
    },
    at_least("valid-laps-500", "Clean driver", "Drive 500 valid laps.", Category::Consistency, Stat::ValidLaps, 500),
    at_least("clean-session", "Spotless", "Sync a session of at least 10 laps, every one valid.", Category::Consistency, Stat::CleanSessions, 1),
    hidden(at_least("steady", "Metronome", "Drive 5 valid laps within half a second of each other in one session.", Category::Consistency, Stat::SteadySessions, 1)),
    at_least("first-event", "Entrant", "Finish a competition event.", Category::Leaderboards, Stat::EventsFinished, 1),
    at_least("podium", "On the podium", "Finish a competition event in the top three.", Category::Leaderboards, Stat::Podiums, 1),
];

/// The achievement with `id`.
pub fn find(id: &str) -> Option<&'static Achievement> {
    CATALOG.iter().find(|a| a.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_catalogue_is_well_formed() {
        let ids: HashSet<_> = CATALOG.iter().map(|a| a.id).collect();
        assert_eq!(ids.len(), CATALOG.len(), "ids are unique");
        assert!(CATALOG.len() >= 15);
        for category in [
            Category::Sessions,
            Category::Laps,
            Category::Tracks,
            Category::Variety,
            Category::Leaderboards,
            Category::Consistency,
        ] {
            assert!(
                CATALOG.iter().any(|a| a.category == category),
                "{category:?}"
            );
        }
        assert_eq!(find(FIRST_SESSION).unwrap().title, "First synced session");
        for a in &CATALOG {
            assert!(
                a.id.len() <= 32
                    && a.id
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
        }
    }
}
