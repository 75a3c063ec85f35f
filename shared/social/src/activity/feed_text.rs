//! The words of feed entries: short sentences built from an event's payload, dated by the
//! thing itself (the session's RecordedAt, the submission, the unlock).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use paddock_boards::leaderboards::format_lap_time;
use paddock_kernel::events::{
    AchievementUnlocked, Event, EventFinished, EventKind, EventStarted, LeaderboardSubmitted,
    SessionUploaded, WebhookDisabled,
};
use utoipa::ToSchema;

/// What a feed entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FeedKind {
    /// A synced session.
    Session,
    /// A leaderboard submission.
    Leaderboard,
    /// An unlocked achievement.
    Achievement,
    /// The driver's own post.
    Post,
    /// A notice about the driver's webhooks (a subscription disabled after failing).
    Webhook,
    /// A competition event: one the driver finished, or one of their league's that opened.
    Event,
}

/// What a feed entry says, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FeedText {
    pub kind: FeedKind,
    pub title: String,
    pub subtitle: String,
    pub date: OffsetDateTime,
}

/// The entry `event` makes, if its kind makes one.
pub(crate) fn for_event(event: &Event) -> Option<FeedText> {
    match &event.kind {
        EventKind::SessionUploaded(s) => Some(session(s, event.occurred_at)),
        EventKind::LeaderboardSubmitted(s) => Some(submission(s, event.occurred_at)),
        EventKind::AchievementUnlocked(a) => Some(achievement(a, event.occurred_at)),
        EventKind::WebhookDisabled(w) => Some(webhook_disabled(w, event.occurred_at)),
        EventKind::EventFinished(e) => Some(event_finished(e, event.occurred_at)),
        EventKind::EventStarted(e) => Some(event_started(e, event.occurred_at)),
        EventKind::TrackProcessRequested(_)
        | EventKind::ProfileUpdated(_)
        | EventKind::AccountDeleted(_)
        | EventKind::BoardPassed(_)
        | EventKind::WebhookTest(_)
        | EventKind::WebhookRedelivery(_) => None,
    }
}

/// `Spa-Francorchamps (GP)`, or the name alone for tracks without layouts.
fn track(name: &str, layout: &str) -> String {
    match (name.trim(), layout.trim()) {
        ("", _) => "an unnamed track".into(),
        (name, "") => name.into(),
        (name, layout) => format!("{name} ({layout})"),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn session(s: &SessionUploaded, uploaded: OffsetDateTime) -> FeedText {
    let phase = s.session_phase.trim();
    let mut subtitle = vec![s.vehicle_name.trim().to_owned()];
    if s.best_lap_ms > 0 {
        subtitle.push(format!("best lap {}", format_lap_time(s.best_lap_ms)));
    }
    if !phase.is_empty() {
        subtitle.push(phase.to_lowercase());
    }
    subtitle.retain(|part| !part.is_empty());
    FeedText {
        kind: FeedKind::Session,
        title: format!(
            "Drove {} at {}",
            plural(s.lap_count, "lap", "laps"),
            track(&s.track_name, &s.track_layout)
        ),
        subtitle: subtitle.join(" · "),
        // The session's own time; an unreadable one (no version writes it) falls back to
        // the upload.
        date: OffsetDateTime::parse(&s.recorded_at, &Rfc3339).unwrap_or(uploaded),
    }
}

fn event_finished(e: &EventFinished, closed: OffsetDateTime) -> FeedText {
    FeedText {
        kind: FeedKind::Event,
        title: format!(
            "Finished P{} of {} in {}",
            e.position,
            e.entrants,
            e.name.trim()
        ),
        subtitle: format!(
            "{} · {}",
            e.track_name.trim(),
            format_lap_time(e.lap_time_ms)
        ),
        date: closed,
    }
}

fn event_started(e: &EventStarted, opened: OffsetDateTime) -> FeedText {
    let car = e.car.as_deref().map_or("any car", str::trim);
    let closes = e
        .closes_at
        .get(..16)
        .unwrap_or(&e.closes_at)
        .replace('T', " ");
    FeedText {
        kind: FeedKind::Event,
        title: format!("{} is open", e.name.trim()),
        subtitle: format!("{} · {car} · until {closes} UTC", e.track_name.trim()),
        date: opened,
    }
}

fn submission(s: &LeaderboardSubmitted, submitted: OffsetDateTime) -> FeedText {
    let at = track(&s.track_name, &s.track_layout);
    let time = format_lap_time(s.lap_time_ms);
    let title = match (s.improved, s.previous_best_ms) {
        (true, Some(_)) => format!("New personal best at {at}"),
        (true, None) => format!("Set a leaderboard time at {at}"),
        (false, _) => format!("Submitted a lap at {at}"),
    };
    let mut subtitle = vec![time];
    if let Some(rank) = s.rank {
        subtitle.push(format!("P{rank}"));
    }
    match (s.improved, s.previous_best_ms) {
        (true, Some(previous)) => {
            subtitle.push(format!("{} faster", format_gap(previous - s.lap_time_ms)));
        }
        (false, Some(best)) => subtitle.push(format!("best stays {}", format_lap_time(best))),
        _ => {}
    }
    if !s.vehicle_name.trim().is_empty() {
        subtitle.push(s.vehicle_name.trim().to_owned());
    }
    FeedText {
        kind: FeedKind::Leaderboard,
        title,
        subtitle: subtitle.join(" · "),
        date: submitted,
    }
}

/// A gap between two lap times: `0.412 s`, or `1:02.000` from a minute up.
fn format_gap(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 60_000 {
        format!("{}.{:03} s", ms / 1000, ms % 1000)
    } else {
        format_lap_time(ms)
    }
}

fn webhook_disabled(w: &WebhookDisabled, disabled: OffsetDateTime) -> FeedText {
    FeedText {
        kind: FeedKind::Webhook,
        title: "A webhook was turned off".into(),
        subtitle: format!(
            "Deliveries to {} failed since {}; fix the receiver and turn it back on",
            w.url, w.failing_since
        ),
        date: disabled,
    }
}

fn achievement(a: &AchievementUnlocked, unlocked: OffsetDateTime) -> FeedText {
    FeedText {
        kind: FeedKind::Achievement,
        title: format!("Achievement unlocked: {}", a.title),
        subtitle: a.description.clone(),
        date: unlocked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn submitted(
        improved: bool,
        previous: Option<i64>,
        rank: Option<usize>,
    ) -> LeaderboardSubmitted {
        LeaderboardSubmitted {
            track_id: uuid::Uuid::from_u128(1).into(),
            session_id: uuid::Uuid::from_u128(2).into(),
            lap_time_ms: 138_456,
            previous_best_ms: previous,
            improved,
            rank,
            game_id: "acc".into(),
            track_name: "Spa-Francorchamps".into(),
            track_layout: "GP".into(),
            vehicle_name: "Porsche 911 GT3 R".into(),
            passing: None,
            car_passing: None,
            event_passing: Vec::new(),
        }
    }

    #[test]
    fn submissions_read_as_sentences_with_the_lap_time_and_rank() {
        let at = datetime!(2026-03-01 12:00 UTC);
        let first = submission(&submitted(true, None, Some(3)), at);
        assert_eq!(
            first.title,
            "Set a leaderboard time at Spa-Francorchamps (GP)"
        );
        assert_eq!(first.subtitle, "2:18.456 · P3 · Porsche 911 GT3 R");
        assert_eq!(first.date, at);
        let better = submission(&submitted(true, Some(138_868), Some(1)), at);
        assert_eq!(better.title, "New personal best at Spa-Francorchamps (GP)");
        assert_eq!(
            better.subtitle,
            "2:18.456 · P1 · 0.412 s faster · Porsche 911 GT3 R"
        );
        let slower = submission(&submitted(false, Some(137_000), Some(2)), at);
        assert_eq!(slower.title, "Submitted a lap at Spa-Francorchamps (GP)");
        assert_eq!(
            slower.subtitle,
            "2:18.456 · P2 · best stays 2:17.000 · Porsche 911 GT3 R"
        );
    }

    #[test]
    fn sessions_are_dated_by_their_recorded_time() {
        let s = SessionUploaded {
            session_id: uuid::Uuid::from_u128(2).into(),
            track_id: uuid::Uuid::from_u128(1).into(),
            game_id: "acc".into(),
            track_name: "Monza".into(),
            track_layout: String::new(),
            vehicle_name: "Ferrari 296 GT3".into(),
            recorded_at: "2026-02-01T20:15:00+01:00".into(),
            session_phase: "Race".into(),
            best_lap_ms: 107_250,
            lap_count: 1,
            job_id: None,
            valid_lap_count: 1,
            driving_ms: 107_250,
            valid_lap_spread_ms: None,
        };
        let text = session(&s, datetime!(2026-03-01 12:00 UTC));
        assert_eq!(text.title, "Drove 1 lap at Monza");
        assert_eq!(text.subtitle, "Ferrari 296 GT3 · best lap 1:47.250 · race");
        assert_eq!(text.date, datetime!(2026-02-01 19:15 UTC));
    }
}
