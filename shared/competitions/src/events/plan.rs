//! What a new event is asked to be, checked before anything is read: its name, track, car,
//! window, rules and recurrence, each against its bounds.

use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use hidden_characters::shown_text;
use paddock_kernel::ids::TrackId;
use paddock_kernel::problems::{FieldProblems, Problems};

use super::ms_of;

/// Longest event name, in characters.
pub const MAX_NAME_CHARS: usize = 60;
/// Longest car name, in characters.
pub const MAX_CAR_CHARS: usize = 100;
/// Shortest window.
pub const MIN_WINDOW_MS: i64 = 10 * MINUTE_MS;
/// Longest window.
pub const MAX_WINDOW_MS: i64 = 31 * DAY_MS;
/// How far ahead a window may open.
pub const MAX_AHEAD_MS: i64 = 180 * DAY_MS;
/// How long before the request a window may have opened (clocks differ a little).
pub const LATE_START_MS: i64 = 5 * MINUTE_MS;
/// The least quality score an event may ask for: the boards' own.
pub const MIN_QUALITY: f64 = 0.8;
/// Bounds of a recurrence: days between rounds, and rounds.
pub const EVERY_DAYS: (u32, u32) = (1, 28);
/// Rounds of a series, at least and at most.
pub const ROUNDS: (u32, u32) = (2, 52);
/// A series ends within this long of its first round's opening.
pub const MAX_SERIES_MS: i64 = 366 * DAY_MS;

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

/// A request for a new event, as sent (absent or null fields are `None`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanFields {
    /// 1 to 60 characters (trimmed); no control, invisible or text-direction characters.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 60)]
    pub name: Option<String>,
    /// The track (a track id of `GET /v1/tracks`).
    #[schema(required = true, value_type = String, format = Uuid)]
    pub track_id: Option<String>,
    /// The one car laps must be driven in: a car raced on the track (names match
    /// case-insensitively); absent for any car.
    #[schema(value_type = Option<String>, min_length = 1, max_length = 100)]
    pub car: Option<String>,
    /// When the window opens: RFC 3339 in UTC, not in the past, at most 180 days ahead.
    #[schema(required = true, value_type = String, format = DateTime)]
    pub opens_at: Option<String>,
    /// When it closes: 10 minutes to 31 days after it opens.
    #[schema(required = true, value_type = String, format = DateTime)]
    pub closes_at: Option<String>,
    /// The least quality score a lap needs, 0.8 (the default) to 1.
    #[schema(value_type = Option<f64>, minimum = 0.8, maximum = 1.0)]
    pub min_quality: Option<Value>,
    /// Makes a series: the maintenance tick makes each next round as a round opens.
    pub recurrence: Option<RecurrenceFields>,
}

/// A series' recurrence, as sent.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecurrenceFields {
    /// Days from one round's opening to the next's, 1 to 28, at least the window's length.
    #[schema(required = true, value_type = u32, minimum = 1, maximum = 28)]
    pub every_days: Option<Value>,
    /// Rounds in all, 2 to 52; the last opens within 366 days of the first.
    #[schema(required = true, value_type = u32, minimum = 2, maximum = 52)]
    pub rounds: Option<Value>,
}

/// A new event, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPlan {
    /// Its name.
    pub name: String,
    /// The track (whether it exists is checked when the event is made).
    pub track_id: TrackId,
    /// The car, as sent (whether it has been raced on the track is checked when it is made).
    pub car: Option<String>,
    /// The window, in milliseconds since the epoch.
    pub opens_ms: i64,
    /// Its end.
    pub closes_ms: i64,
    /// The least quality score a lap needs.
    pub min_quality: f64,
    /// Days between rounds and rounds, for a series.
    pub recurrence: Option<(u32, u32)>,
}

/// An RFC 3339 time in UTC.
fn utc_time(text: String) -> Result<i64, String> {
    let rule = "must be an RFC 3339 time in UTC, such as 2026-05-01T18:00:00Z";
    let t = OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|_| rule.to_owned())?;
    if !t.offset().is_utc() {
        return Err(rule.to_owned());
    }
    Ok(ms_of(t))
}

/// A whole number from `min` to `max`.
fn whole(value: Value, (min, max): (u32, u32)) -> Result<u32, String> {
    value
        .as_f64()
        .filter(|n| n.fract() == 0.0 && (f64::from(min)..=f64::from(max)).contains(n))
        .map(|n| n as u32)
        .ok_or_else(|| format!("must be a whole number from {min} to {max}"))
}

impl EventPlan {
    /// Checks `fields` at `now_ms`, listing every problem: a name of 1 to [`MAX_NAME_CHARS`]
    /// shown characters; a track id; a window in UTC that ends after it opens, lasts from
    /// [`MIN_WINDOW_MS`] to [`MAX_WINDOW_MS`], opens no earlier than now (within
    /// [`LATE_START_MS`]) and no further ahead than [`MAX_AHEAD_MS`]; a minimum quality from
    /// [`MIN_QUALITY`] to 1; a recurrence within [`EVERY_DAYS`] and [`ROUNDS`] whose rounds do
    /// not overlap and end within [`MAX_SERIES_MS`].
    pub fn check(fields: PlanFields, now_ms: i64) -> Result<Self, FieldProblems> {
        let mut p = Problems::default();
        let name = p.required("name", fields.name, |n| shown_text(&n, 1, MAX_NAME_CHARS));
        let track_id = p.required("trackId", fields.track_id, |t| {
            t.trim()
                .parse::<TrackId>()
                .map_err(|_| "must be a track id".to_owned())
        });
        let car = match fields.car {
            Some(car) => p.check("car", shown_text(&car, 1, MAX_CAR_CHARS)).map(Some),
            None => Some(None),
        };
        let opens_ms = p.required("opensAt", fields.opens_at, utc_time);
        let closes_ms = p.required("closesAt", fields.closes_at, utc_time);
        if let Some(opens) = opens_ms {
            if opens < now_ms - LATE_START_MS {
                p.add("opensAt", "must not lie in the past");
            } else if opens > now_ms + MAX_AHEAD_MS {
                p.add("opensAt", "must be at most 180 days ahead");
            }
        }
        let length = opens_ms.zip(closes_ms).map(|(o, c)| c - o);
        let window_rule = match length {
            Some(l) if l <= 0 => Some("must be after opensAt"),
            Some(l) if l < MIN_WINDOW_MS => Some("must be at least 10 minutes after opensAt"),
            Some(l) if l > MAX_WINDOW_MS => Some("must be at most 31 days after opensAt"),
            _ => None,
        };
        if let Some(rule) = window_rule {
            p.add("closesAt", rule);
        }
        let min_quality = match fields.min_quality {
            None => Some(MIN_QUALITY),
            Some(q) => p.check(
                "minQuality",
                q.as_f64()
                    .filter(|q| (MIN_QUALITY..=1.0).contains(q))
                    .ok_or_else(|| format!("must be a number from {MIN_QUALITY} to 1")),
            ),
        };
        let recurrence = match fields.recurrence {
            None => Some(None),
            Some(RecurrenceFields {
                every_days: every,
                rounds,
            }) => {
                let every = p.required("recurrence.everyDays", every, |v| whole(v, EVERY_DAYS));
                let rounds = p.required("recurrence.rounds", rounds, |v| whole(v, ROUNDS));
                if let (Some(every), Some(l)) = (every, length)
                    && i64::from(every) * DAY_MS < l
                {
                    p.add(
                        "recurrence.everyDays",
                        "must be at least the window's length in days (rounds do not overlap)",
                    );
                }
                if let (Some(every), Some(rounds)) = (every, rounds)
                    && i64::from(every) * i64::from(rounds - 1) * DAY_MS > MAX_SERIES_MS
                {
                    p.add(
                        "recurrence.rounds",
                        "the last round must open within 366 days",
                    );
                }
                every.zip(rounds).map(Some)
            }
        };
        let plan = (|| {
            Some(Self {
                name: name?,
                track_id: track_id?,
                car: car?,
                opens_ms: opens_ms?,
                closes_ms: closes_ms?,
                min_quality: min_quality?,
                recurrence: recurrence?,
            })
        })();
        p.into_result(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_780_000_000_000;
    const TRACK: &str = "5f0c7d4e-0000-4000-8000-000000000001";

    fn at(ms: i64) -> Option<String> {
        Some(super::super::time_text(ms))
    }

    fn fields(opens: i64, closes: i64) -> PlanFields {
        PlanFields {
            name: Some(" Monza week ".into()),
            track_id: Some(TRACK.into()),
            opens_at: at(opens),
            closes_at: at(closes),
            ..PlanFields::default()
        }
    }

    #[test]
    fn a_plan_within_its_bounds_is_taken() {
        let plan = EventPlan::check(fields(NOW + DAY_MS, NOW + 8 * DAY_MS), NOW).unwrap();
        assert_eq!(plan.name, "Monza week");
        assert_eq!(plan.closes_ms - plan.opens_ms, 7 * DAY_MS);
        assert_eq!(plan.min_quality, MIN_QUALITY);
        assert_eq!(plan.car, None);
        let mut f = fields(NOW, NOW + DAY_MS);
        f.recurrence = Some(RecurrenceFields {
            every_days: Some(json!(7)),
            rounds: Some(json!(4.0)),
        });
        f.min_quality = Some(json!(0.9));
        let plan = EventPlan::check(f, NOW).unwrap();
        assert_eq!(plan.recurrence, Some((7, 4)));
        assert_eq!(plan.min_quality, 0.9);
    }

    #[test]
    fn windows_that_end_first_last_too_long_or_lie_in_the_past_are_refused() {
        let refused = |opens, closes| {
            EventPlan::check(fields(opens, closes), NOW)
                .unwrap_err()
                .to_string()
        };
        let e = refused(NOW + DAY_MS, NOW);
        assert!(e.contains("closesAt: must be after opensAt"), "{e}");
        let e = refused(NOW, NOW + MINUTE_MS);
        assert!(e.contains("closesAt: must be at least 10 minutes"), "{e}");
        let e = refused(NOW, NOW + 32 * DAY_MS);
        assert!(e.contains("closesAt: must be at most 31 days"), "{e}");
        let e = refused(NOW - DAY_MS, NOW - DAY_MS + MINUTE_MS * 30);
        assert!(e.contains("opensAt: must not lie in the past"), "{e}");
        let e = refused(NOW + 200 * DAY_MS, NOW + 201 * DAY_MS);
        assert!(e.contains("opensAt: must be at most 180 days ahead"), "{e}");
        let mut f = fields(NOW, NOW + DAY_MS);
        f.opens_at = Some("2026-05-01T18:00:00+02:00".into());
        f.closes_at = Some("tomorrow".into());
        let e = EventPlan::check(f, NOW).unwrap_err().to_string();
        assert!(
            e.contains("opensAt: must be an RFC 3339 time in UTC"),
            "{e}"
        );
        assert!(
            e.contains("closesAt: must be an RFC 3339 time in UTC"),
            "{e}"
        );
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let f = PlanFields {
            name: Some("\u{202e}x".into()),
            track_id: Some("monza".into()),
            car: Some(String::new()),
            min_quality: Some(json!(0.5)),
            recurrence: Some(RecurrenceFields {
                every_days: Some(json!(0)),
                rounds: None,
            }),
            ..PlanFields::default()
        };
        let e = EventPlan::check(f, NOW).unwrap_err().to_string();
        for named in [
            "name: ",
            "trackId: must be a track id",
            "car: ",
            "opensAt: is required",
            "closesAt: is required",
            "minQuality: must be a number from 0.8 to 1",
            "recurrence.everyDays: must be a whole number from 1 to 28",
            "recurrence.rounds: is required",
        ] {
            assert!(e.contains(named), "{named} in {e}");
        }
    }

    #[test]
    fn a_recurrence_past_its_bounds_is_refused() {
        let mut f = fields(NOW, NOW + 3 * DAY_MS);
        f.recurrence = Some(RecurrenceFields {
            every_days: Some(json!(2)),
            rounds: Some(json!(5)),
        });
        let e = EventPlan::check(f, NOW).unwrap_err().to_string();
        assert!(
            e.contains("recurrence.everyDays: must be at least the window's length"),
            "{e}"
        );
        let mut f = fields(NOW, NOW + DAY_MS);
        f.recurrence = Some(RecurrenceFields {
            every_days: Some(json!(28)),
            rounds: Some(json!(52)),
        });
        let e = EventPlan::check(f, NOW).unwrap_err().to_string();
        assert!(
            e.contains("recurrence.rounds: the last round must open within 366 days"),
            "{e}"
        );
        let mut f = fields(NOW, NOW + DAY_MS);
        f.recurrence = Some(RecurrenceFields {
            every_days: Some(json!(7)),
            rounds: Some(json!(53)),
        });
        assert!(EventPlan::check(f, NOW).is_err());
    }
}
