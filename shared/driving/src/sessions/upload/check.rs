//! The check of a deserialized upload: each field's type and limits, and the rules a schema
//! cannot state, with every problem named by its path (`laps[3].lapTimeMs: ...`).

use std::collections::HashSet;

use hidden_characters::{self, is_invisible_or_bidi};
use paddock_kernel::problems::{FieldProblems, Problems};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{
    CLIENT_SESSION_ID_CHARS, GAME_ID_CHARS, Lap, LapSummaryDto, MAX_COORDINATE, MAX_LAP_EVENTS,
    MAX_LAP_INDEX, MAX_LAP_MS, MAX_LAPS, MAX_SECTORS, MAX_TRACK_POINTS, NAME_CHARS, PHASE_CHARS,
    Sent, SessionUpload, SessionUploadDto, TrackPoint, TrackPointDto, WEATHER_CHARS,
};

/// At most this many problems are listed in one answer (the rest are counted).
const MAX_LISTED_PROBLEMS: usize = 25;

/// The checked upload, or one 400 naming every problem of the body.
pub fn check(
    body: Sent<SessionUploadDto>,
    now: OffsetDateTime,
) -> Result<SessionUpload, FieldProblems> {
    let Sent::Given(body) = body else {
        return Err(FieldProblems::one(
            "body",
            "must be a JSON object (SessionUploadDto)",
        ));
    };
    let mut p = Listed::default();
    let game_id = p.shown_text("gameId", body.game_id, 1, GAME_ID_CHARS);
    let track_name = p.shown_text("trackName", body.track_name, 1, NAME_CHARS);
    let track_layout = p.shown_text("trackLayout", body.track_layout, 0, NAME_CHARS);
    let vehicle_name = p.shown_text("vehicleName", body.vehicle_name, 1, NAME_CHARS);
    let recorded_at = p.timestamp("recordedAt", body.recorded_at, now);
    let best_lap_ms = p.integer("bestLapMs", body.best_lap_ms, 1, MAX_LAP_MS);
    let weather_summary = p.text("weatherSummary", body.weather_summary, 0, WEATHER_CHARS);
    let session_phase = p.text("sessionPhase", body.session_phase, 1, PHASE_CHARS);
    let client_session_id = p.text(
        "clientSessionId",
        body.client_session_id,
        1,
        CLIENT_SESSION_ID_CHARS,
    );
    let laps = p.list("laps", body.laps, 1, MAX_LAPS, lap);
    let track_points = match body.track_points {
        Sent::Absent => None,
        points => p.list("trackPoints", points, 0, MAX_TRACK_POINTS, track_point),
    };
    if let Some(laps) = &laps {
        let mut seen = HashSet::new();
        for (i, lap) in laps.iter().enumerate() {
            if !seen.insert(lap.lap_index) {
                p.problem(
                    &format!("laps[{i}].lapIndex"),
                    "must be unique within the session",
                );
            }
        }
    }
    // The upload exists only when every field passed; otherwise every problem is listed.
    let upload = (|| {
        Some(SessionUpload {
            game_id: game_id?,
            track_name: track_name?,
            track_layout: track_layout?,
            vehicle_name: vehicle_name?,
            recorded_at: recorded_at?,
            laps: laps?,
            best_lap_ms: best_lap_ms?,
            weather_summary: weather_summary?,
            session_phase: session_phase?,
            client_session_id: client_session_id?,
            track_points: track_points.filter(|points| !points.is_empty()),
        })
    })();
    p.finish().into_result(upload)
}

/// One lap; every field is checked before any is required, so all its problems are listed.
fn lap(p: &mut Listed, lap: LapSummaryDto) -> Option<Lap> {
    let lap_index = p.integer("lapIndex", lap.lap_index, 0, MAX_LAP_INDEX);
    let lap_time_ms = p.integer("lapTimeMs", lap.lap_time_ms, 1, MAX_LAP_MS);
    let is_valid = p.boolean("isValid", lap.is_valid);
    let counts_for_session_timing =
        p.boolean("countsForSessionTiming", lap.counts_for_session_timing);
    let quality_combined = p.number("qualityCombined", lap.quality_combined, 0.0, 1.0);
    let quality_coherence = p.number("qualityCoherence", lap.quality_coherence, 0.0, 1.0);
    let quality_stability = p.number("qualityStability", lap.quality_stability, 0.0, 1.0);
    let quality_completeness = p.number("qualityCompleteness", lap.quality_completeness, 0.0, 1.0);
    let num_penalties = p.integer("numPenalties", lap.num_penalties, 0, MAX_LAP_EVENTS);
    let num_pitstops = p.integer("numPitstops", lap.num_pitstops, 0, MAX_LAP_EVENTS);
    let in_pits_at_lap_end = p.boolean("inPitsAtLapEnd", lap.in_pits_at_lap_end);
    let sector_times_ms = match lap.sector_times_ms {
        Sent::Absent => Some(None),
        times => p.sector_times("sectorTimesMs", times).map(Some),
    };
    // The ranges above hold these numbers within u32.
    Some(Lap {
        lap_index: lap_index? as u32,
        lap_time_ms: lap_time_ms?,
        is_valid: is_valid?,
        counts_for_session_timing: counts_for_session_timing?,
        quality_combined: quality_combined?,
        quality_coherence: quality_coherence?,
        quality_stability: quality_stability?,
        quality_completeness: quality_completeness?,
        num_penalties: num_penalties? as u32,
        num_pitstops: num_pitstops? as u32,
        in_pits_at_lap_end: in_pits_at_lap_end?,
        sector_times_ms: sector_times_ms?,
    })
}

fn track_point(p: &mut Listed, point: TrackPointDto) -> Option<TrackPoint> {
    let x = p.number("x", point.x, -MAX_COORDINATE, MAX_COORDINATE);
    let y = p.number("y", point.y, -MAX_COORDINATE, MAX_COORDINATE);
    let distance = p.number("distance", point.distance, 0.0, MAX_COORDINATE);
    Some(TrackPoint {
        x: x?,
        y: y?,
        distance: distance?,
    })
}

/// The problems found so far: the first [`MAX_LISTED_PROBLEMS`] listed, the rest counted.
#[derive(Default)]
struct Listed {
    problems: Problems,
    count: usize,
    /// The path of the object being checked (`laps[3].`), before its fields' names.
    prefix: String,
}

impl Listed {
    fn problem(&mut self, field: &str, rule: &str) {
        self.count += 1;
        if self.count <= MAX_LISTED_PROBLEMS {
            self.problems.add(&format!("{}{field}", self.prefix), rule);
        }
    }

    /// Every problem recorded, with a count of those not listed.
    fn finish(mut self) -> Problems {
        if self.count > MAX_LISTED_PROBLEMS {
            let more = format!("and {} more problems", self.count - MAX_LISTED_PROBLEMS);
            self.problems.add("body", &more);
        }
        self.problems
    }

    /// The value of a required field, or its problem: missing, or of a wrong type.
    fn required<T>(&mut self, field: &str, sent: Sent<T>, wrong_type: &str) -> Option<T> {
        match sent {
            Sent::Given(value) => Some(value),
            Sent::Absent => {
                self.problem(field, "is required");
                None
            }
            Sent::Wrong => {
                self.problem(field, wrong_type);
                None
            }
        }
    }

    fn text(&mut self, field: &str, sent: Sent<String>, min: usize, max: usize) -> Option<String> {
        let value = self.required(field, sent, "must be a string")?;
        // The limit counts the text as sent (as the schema's maxLength does); the minimum
        // counts it trimmed, so white space alone is not a value.
        let n = value.chars().count();
        let trimmed = value.trim();
        if (min > 0 && trimmed.is_empty()) || n > max {
            let rule = if min == 0 {
                format!("must be at most {max} characters")
            } else {
                format!("must be {min} to {max} characters")
            };
            self.problem(field, &rule);
            return None;
        }
        if trimmed.chars().any(char::is_control) {
            self.problem(field, "must not contain control characters");
            return None;
        }
        Some(if trimmed.len() == value.len() {
            value
        } else {
            trimmed.to_owned()
        })
    }

    /// A text the public pages show (a game, track or car name): as [`Self::text`], and no
    /// invisible or text-direction characters either, so one track cannot pose as another.
    fn shown_text(
        &mut self,
        field: &str,
        sent: Sent<String>,
        min: usize,
        max: usize,
    ) -> Option<String> {
        let value = self.text(field, sent, min, max)?;
        if value.chars().any(is_invisible_or_bidi) {
            self.problem(field, hidden_characters::RULE);
            return None;
        }
        Some(value)
    }

    fn integer(&mut self, field: &str, sent: Sent<i64>, min: i64, max: i64) -> Option<i64> {
        let value = self.required(field, sent, "must be a whole number")?;
        if !(min..=max).contains(&value) {
            self.problem(field, &format!("must be between {min} and {max}"));
            return None;
        }
        Some(value)
    }

    fn number(&mut self, field: &str, sent: Sent<f64>, min: f64, max: f64) -> Option<f64> {
        let value = self.required(field, sent, "must be a number")?;
        if !(value.is_finite() && (min..=max).contains(&value)) {
            self.problem(field, &format!("must be between {min} and {max}"));
            return None;
        }
        Some(value)
    }

    fn boolean(&mut self, field: &str, sent: Sent<bool>) -> Option<bool> {
        self.required(field, sent, "must be true or false")
    }

    fn timestamp(
        &mut self,
        field: &str,
        sent: Sent<String>,
        now: OffsetDateTime,
    ) -> Option<OffsetDateTime> {
        const RULE: &str = "must be an RFC 3339 date and time";
        let text = self.required(field, sent, RULE)?;
        let Ok(parsed) = OffsetDateTime::parse(&text, &Rfc3339) else {
            self.problem(field, RULE);
            return None;
        };
        let earliest = time::macros::datetime!(2000-01-01 0:00 UTC);
        if parsed < earliest || parsed > now + time::Duration::days(1) {
            self.problem(field, "must be after 2000-01-01 and not in the future");
            return None;
        }
        Some(parsed.to_offset(time::UtcOffset::UTC))
    }

    /// A lap's 1 to [`MAX_SECTORS`] sector times, each 1 ms to [`MAX_LAP_MS`]; a bad one is
    /// named with its index (`sectorTimesMs[2]`).
    fn sector_times(&mut self, field: &str, sent: Sent<Vec<Sent<i64>>>) -> Option<Vec<i64>> {
        let items = self.required(field, sent, "must be a list of whole numbers")?;
        if items.is_empty() || items.len() > MAX_SECTORS {
            self.problem(field, &format!("must hold 1 to {MAX_SECTORS} entries"));
            return None;
        }
        let n = items.len();
        let mut out = Vec::with_capacity(n);
        for (i, item) in items.into_iter().enumerate() {
            let item = match item {
                Sent::Given(v) => Sent::Given(v),
                // A null entry is no whole number either.
                Sent::Absent | Sent::Wrong => Sent::Wrong,
            };
            if let Some(v) = self.integer(&format!("{field}[{i}]"), item, 1, MAX_LAP_MS) {
                out.push(v);
            }
        }
        (out.len() == n).then_some(out)
    }

    /// A list of `min` to `max` objects, each checked by `element` under its own path
    /// (`laps[3].`).
    fn list<T, U>(
        &mut self,
        field: &str,
        sent: Sent<Vec<Sent<T>>>,
        min: usize,
        max: usize,
        mut element: impl FnMut(&mut Self, T) -> Option<U>,
    ) -> Option<Vec<U>> {
        let items = self.required(field, sent, "must be a list")?;
        if items.len() < min || items.len() > max {
            self.problem(field, &format!("must hold {min} to {max} entries"));
            return None;
        }
        let n = items.len();
        let mut out = Vec::with_capacity(n);
        for (i, item) in items.into_iter().enumerate() {
            let Sent::Given(item) = item else {
                self.problem(&format!("{field}[{i}]"), "must be an object");
                continue;
            };
            let outer = self.prefix.len();
            self.prefix.push_str(&format!("{field}[{i}]."));
            let checked = element(self, item);
            self.prefix.truncate(outer);
            out.extend(checked);
        }
        (out.len() == n).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn now() -> OffsetDateTime {
        time::macros::datetime!(2026-11-02 12:00 UTC)
    }

    fn lap(index: u32, time_ms: i64) -> Value {
        json!({"lapIndex": index, "lapTimeMs": time_ms, "isValid": true,
               "countsForSessionTiming": true, "qualityCombined": 0.9, "qualityCoherence": 0.9,
               "qualityStability": 0.9, "qualityCompleteness": 1, "numPenalties": 0,
               "numPitstops": 0, "inPitsAtLapEnd": false})
    }

    fn body() -> Value {
        json!({"gameId": "acc", "trackName": " Monza ", "trackLayout": "", "vehicleName": "M4",
               "recordedAt": "2026-11-01T12:00:00+02:00", "bestLapMs": 101000.0,
               "weatherSummary": "", "sessionPhase": "race", "clientSessionId": "c-1",
               "laps": [lap(0, 101_000), lap(1, 102_000)]})
    }

    fn checked(body: &Value) -> Result<SessionUpload, String> {
        let sent: Sent<SessionUploadDto> = serde_json::from_value(body.clone()).unwrap();
        check(sent, now()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_valid_upload_is_trimmed_and_in_utc() {
        let upload = checked(&body()).unwrap();
        assert_eq!(upload.track_name, "Monza");
        assert_eq!(upload.best_lap_ms, 101_000);
        assert_eq!(
            upload.recorded_at,
            time::macros::datetime!(2026-11-01 10:00 UTC)
        );
        assert_eq!(upload.laps[1].lap_time_ms, 102_000);
        assert_eq!(upload.laps[0].sector_times_ms, None);
        assert!(upload.track_points.is_none());
        let mut empty = body();
        empty["trackPoints"] = json!([]);
        assert!(checked(&empty).unwrap().track_points.is_none());
    }

    #[test]
    fn wrong_types_and_broken_rules_are_listed_together_by_path() {
        let mut bad = body();
        bad["gameId"] = json!(42);
        bad.as_object_mut().unwrap().remove("trackName");
        bad["laps"][0]["isValid"] = json!("yes");
        bad["laps"][0]["lapTimeMs"] = json!(-1);
        bad["laps"][1]["lapIndex"] = json!(0);
        bad["laps"][1]["sectorTimesMs"] = json!([1, null, 5.5, 0]);
        bad["trackPoints"] = json!([{"x": "far", "y": 0, "distance": 0}, 7]);
        let err = checked(&bad).unwrap_err();
        for expected in [
            "gameId: must be a string",
            "trackName: is required",
            "laps[0].lapTimeMs: must be between 1 and 86400000",
            "laps[0].isValid: must be true or false",
            "laps[1].sectorTimesMs[1]: must be a whole number",
            "laps[1].sectorTimesMs[2]: must be a whole number",
            "laps[1].sectorTimesMs[3]: must be between 1 and 86400000",
            "trackPoints[0].x: must be a number",
            "trackPoints[1]: must be an object",
        ] {
            assert!(err.contains(expected), "missing {expected:?} in {err}");
        }
        // Uniqueness is checked only over laps that passed.
        assert!(!err.contains("lapIndex"), "{err}");
        let mut twice = body();
        twice["laps"][1]["lapIndex"] = json!(0);
        let err = checked(&twice).unwrap_err();
        assert_eq!(err, "laps[1].lapIndex: must be unique within the session");
    }

    #[test]
    fn a_body_that_is_no_object_is_named_as_such() {
        for body in [json!([1, 2]), json!(null), json!("upload")] {
            let sent: Sent<SessionUploadDto> = serde_json::from_value(body).unwrap();
            let err = check(sent, now()).unwrap_err().to_string();
            assert_eq!(err, "body: must be a JSON object (SessionUploadDto)");
        }
    }

    #[test]
    fn past_the_listed_problems_the_rest_are_counted() {
        let mut bad = body();
        bad["laps"] = json!((0..40).map(|i| lap(i, 0)).collect::<Vec<_>>());
        let err = checked(&bad).unwrap_err();
        assert_eq!(
            err.matches("lapTimeMs: must be between").count(),
            MAX_LISTED_PROBLEMS
        );
        assert!(err.ends_with("body: and 15 more problems"), "{err}");
    }

    #[test]
    fn the_client_session_id_names_an_upload_before_its_check() {
        let sent: Sent<SessionUploadDto> = serde_json::from_value(body()).unwrap();
        assert_eq!(super::super::client_session_id(&sent), Some("c-1"));
        let mut long = body();
        long["clientSessionId"] = json!("x".repeat(CLIENT_SESSION_ID_CHARS + 1));
        let sent: Sent<SessionUploadDto> = serde_json::from_value(long).unwrap();
        assert_eq!(super::super::client_session_id(&sent), None);
    }
}
