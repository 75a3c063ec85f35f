//! The body of `POST /v1/sessions`, parsed field by field so that one 400 lists every problem.
//!
//! The body is read as JSON first and then checked by hand rather than by a typed
//! deserializer: a typed deserializer stops at the first wrong type, while the desktop client's
//! developers want every problem of an upload named at once (`laps[3].lapTimeMs: ...`).
//!
//! Field names are looked up in camelCase or PascalCase directly on the parsed object, by the
//! one rule of [`paddock_kernel::field_names`].

use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use hidden_characters::{self, is_invisible_or_bidi};
use paddock_kernel::field_names;
use paddock_kernel::problems::{FieldProblems, Problems};

/// At most this many laps per upload (a 24-hour race at 1:30 a lap is under 1,000).
pub const MAX_LAPS: usize = 1_000;
/// At most this many track points per upload.
pub const MAX_TRACK_POINTS: usize = 10_000;
/// Longest accepted lap: one day, in milliseconds.
pub const MAX_LAP_MS: i64 = 86_400_000;
/// At most this many sector times per lap (games split a lap into 3 sectors, some tracks
/// into a few dozen mini-sectors).
pub const MAX_SECTORS: usize = 32;
/// At most this many problems are listed in one answer (the rest are counted).
const MAX_LISTED_PROBLEMS: usize = 25;

/// One lap summary (`LapSummaryDto`), also as `GET /v1/sessions/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lap {
    /// The lap's number in the session, from 0.
    pub lap_index: u32,
    /// Lap time in milliseconds.
    pub lap_time_ms: i64,
    /// Whether the game counted the lap as valid.
    pub is_valid: bool,
    /// Whether the lap counts for session timing (quality filtering).
    pub counts_for_session_timing: bool,
    /// Overall quality score, 0 to 1 (leaderboard gating).
    pub quality_combined: f64,
    /// Quality component, 0 to 1.
    pub quality_coherence: f64,
    /// Quality component, 0 to 1.
    pub quality_stability: f64,
    /// Quality component, 0 to 1.
    pub quality_completeness: f64,
    /// Penalties during the lap.
    pub num_penalties: u32,
    /// Pit stops during the lap.
    pub num_pitstops: u32,
    /// Whether the car was in the pits when the lap ended.
    pub in_pits_at_lap_end: bool,
    /// The lap's sector times in order, when the client measured them (1 to 32, each 1 ms to
    /// a day). Absent for laps uploaded without them, and then left out of the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sector_times_ms: Option<Vec<i64>>,
}

pub use crate::tracks::centreline::TrackPoint;

/// The schema of `SessionUploadDto` as the API documents it. The body is read field by field
/// by [`parse`] (so one 400 lists every problem); this type only describes it, with the same
/// limits. Rules a schema cannot state: `laps[].lapIndex` is unique within the session, and
/// `recordedAt` lies between 2000-01-01 and one day after the server's clock. Text fields
/// are trimmed and refuse control characters; the names the public pages show (`gameId`,
/// `trackName`, `trackLayout`, `vehicleName`) refuse invisible and text-direction characters
/// too.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct SessionUploadDto {
    /// Finds or creates the canonical track (with trackName and trackLayout).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$"
    )]
    game_id: String,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$"
    )]
    track_name: String,
    /// Empty for tracks without layouts.
    #[schema(
        max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$"
    )]
    track_layout: String,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$"
    )]
    vehicle_name: String,
    /// The client's time of the session (RFC 3339).
    #[schema(format = DateTime)]
    recorded_at: String,
    #[schema(min_items = 1, max_items = 1000)]
    laps: Vec<LapSummaryDto>,
    #[schema(minimum = 1, maximum = 86_400_000)]
    best_lap_ms: i64,
    #[schema(max_length = 256, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    weather_summary: String,
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    session_phase: String,
    /// The idempotency key of the upload.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    client_session_id: String,
    /// Sampled positions for the track map.
    #[schema(max_items = 10_000)]
    track_points: Option<Vec<TrackPointDto>>,
}

/// The schema of `LapSummaryDto` in an upload.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct LapSummaryDto {
    #[schema(minimum = 0, maximum = 100_000)]
    lap_index: u32,
    #[schema(minimum = 1, maximum = 86_400_000)]
    lap_time_ms: i64,
    is_valid: bool,
    counts_for_session_timing: bool,
    #[schema(minimum = 0.0, maximum = 1.0)]
    quality_combined: f64,
    #[schema(minimum = 0.0, maximum = 1.0)]
    quality_coherence: f64,
    #[schema(minimum = 0.0, maximum = 1.0)]
    quality_stability: f64,
    #[schema(minimum = 0.0, maximum = 1.0)]
    quality_completeness: f64,
    #[schema(minimum = 0, maximum = 10_000)]
    num_penalties: u32,
    #[schema(minimum = 0, maximum = 10_000)]
    num_pitstops: u32,
    in_pits_at_lap_end: bool,
    /// 1 to 32 sector times in ms, checked against the lap time at submission.
    #[schema(min_items = 1, max_items = 32)]
    sector_times_ms: Option<Vec<SectorTimeMs>>,
}

/// One sector time in milliseconds, 1 to a day.
pub struct SectorTimeMs;

impl utoipa::PartialSchema for SectorTimeMs {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(MAX_LAP_MS))
            .into()
    }
}

impl ToSchema for SectorTimeMs {}

/// The schema of `TrackPointDto` in an upload.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct TrackPointDto {
    #[schema(minimum = -1_000_000.0, maximum = 1_000_000.0)]
    x: f64,
    #[schema(minimum = -1_000_000.0, maximum = 1_000_000.0)]
    y: f64,
    /// Track distance in metres.
    #[schema(minimum = 0.0, maximum = 1_000_000.0)]
    distance: f64,
}

/// A checked `SessionUploadDto`.
#[derive(Debug, Clone)]
pub struct SessionUpload {
    /// The game, e.g. `acc`.
    pub game_id: String,
    /// The track as the game names it.
    pub track_name: String,
    /// The layout; empty for tracks without layouts.
    pub track_layout: String,
    /// The car the lap was set in.
    pub vehicle_name: String,
    /// The client's time of the session.
    pub recorded_at: OffsetDateTime,
    /// The laps, 1 to 1,000.
    pub laps: Vec<Lap>,
    /// Best lap time, milliseconds.
    pub best_lap_ms: i64,
    /// Weather context for coaching.
    pub weather_summary: String,
    /// Practice, qualifying, race, ...
    pub session_phase: String,
    /// The idempotency key of the upload.
    pub client_session_id: String,
    /// Sampled positions for the track map, if sent.
    pub track_points: Option<Vec<TrackPoint>>,
}

/// The upload's `clientSessionId` as sent (camelCase or PascalCase), when it is text of 1 to
/// 128 characters: what names the upload before the rest of the body is read.
pub fn client_session_id(body: &Value) -> Option<&str> {
    let Value::Object(body) = body else {
        return None;
    };
    let id = Fields::new(body, "")
        .lookup("clientSessionId")?
        .as_str()?
        .trim();
    (1..=128).contains(&id.chars().count()).then_some(id)
}

/// Reads the body (camelCase or PascalCase keys), or answers one 400 naming every problem.
pub fn parse(body: Value, now: OffsetDateTime) -> Result<SessionUpload, FieldProblems> {
    let Value::Object(body) = body else {
        return Err(FieldProblems::one(
            "body",
            "must be a JSON object (SessionUploadDto)",
        ));
    };
    let mut p = Fields::new(&body, "");
    let game_id = p.shown_text("gameId", 1, 64);
    let track_name = p.shown_text("trackName", 1, 128);
    let track_layout = p.shown_text("trackLayout", 0, 128);
    let vehicle_name = p.shown_text("vehicleName", 1, 128);
    let recorded_at = p.timestamp("recordedAt", now);
    let best_lap_ms = p.integer("bestLapMs", 1, MAX_LAP_MS);
    let weather_summary = p.text("weatherSummary", 0, 256);
    let session_phase = p.text("sessionPhase", 1, 64);
    let client_session_id = p.text("clientSessionId", 1, 128);
    let laps = p.list("laps", 1, MAX_LAPS, |p| {
        // Every field is read before any is required, so one lap's problems are all listed.
        let lap_index = p.integer("lapIndex", 0, 100_000);
        let lap_time_ms = p.integer("lapTimeMs", 1, MAX_LAP_MS);
        let is_valid = p.boolean("isValid");
        let counts_for_session_timing = p.boolean("countsForSessionTiming");
        let quality_combined = p.fraction("qualityCombined");
        let quality_coherence = p.fraction("qualityCoherence");
        let quality_stability = p.fraction("qualityStability");
        let quality_completeness = p.fraction("qualityCompleteness");
        let num_penalties = p.integer("numPenalties", 0, 10_000);
        let num_pitstops = p.integer("numPitstops", 0, 10_000);
        let in_pits_at_lap_end = p.boolean("inPitsAtLapEnd");
        let sector_times_ms = if p.given("sectorTimesMs") {
            p.integers("sectorTimesMs", 1, MAX_SECTORS, 1, MAX_LAP_MS)
                .map(Some)
        } else {
            Some(None)
        };
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
    });
    let track_points = if p.given("trackPoints") {
        p.list("trackPoints", 0, MAX_TRACK_POINTS, |p| {
            let x = p.coordinate("x");
            let y = p.coordinate("y");
            let distance = p.number("distance", 0.0, 1_000_000.0);
            Some(TrackPoint {
                x: x?,
                y: y?,
                distance: distance?,
            })
        })
    } else {
        None
    };
    if let Some(laps) = &laps {
        let mut seen = std::collections::HashSet::new();
        for (i, lap) in laps.iter().enumerate() {
            if !seen.insert(lap.lap_index) {
                p.problem(
                    &format!("laps[{i}].lapIndex"),
                    "must be unique within the session",
                );
            }
        }
    }
    // The upload exists only when every field parsed; otherwise every problem is listed.
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

/// A JSON number with no fraction, as JSON Schema's `integer` means it (`5` and `5.0`).
pub fn whole_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        let f = value.as_f64()?;
        // Within ±2^53 a float holds whole numbers exactly.
        (f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0).then_some(f as i64)
    })
}

/// Reads fields of one JSON object, recording a problem per bad field.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    prefix: String,
    problems: Problems,
    count: usize,
}

impl<'a> Fields<'a> {
    fn new(object: &'a Map<String, Value>, prefix: &str) -> Self {
        Self {
            object,
            prefix: prefix.to_owned(),
            problems: Problems::default(),
            count: 0,
        }
    }

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

    /// The value of `field` in either spelling ([`field_names::lookup`]).
    fn lookup(&self, field: &str) -> Option<&'a Value> {
        field_names::lookup(self.object, field)
    }

    /// Whether an optional field is present and not null.
    fn given(&self, field: &str) -> bool {
        !matches!(self.lookup(field), None | Some(Value::Null))
    }

    /// The value of a required field, or a problem when it is missing or null.
    fn required(&mut self, field: &str) -> Option<&'a Value> {
        match self.lookup(field) {
            None | Some(Value::Null) => {
                self.problem(field, "is required");
                None
            }
            Some(v) => Some(v),
        }
    }

    fn text(&mut self, field: &str, min: usize, max: usize) -> Option<String> {
        let Some(value) = self.required(field)?.as_str() else {
            self.problem(field, "must be a string");
            return None;
        };
        // The limit counts the text as sent (as the schema's maxLength does); the minimum
        // counts it trimmed, so white space alone is not a value.
        let n = value.chars().count();
        let value = value.trim();
        if (min > 0 && value.is_empty()) || n > max {
            let rule = if min == 0 {
                format!("must be at most {max} characters")
            } else {
                format!("must be {min} to {max} characters")
            };
            self.problem(field, &rule);
            return None;
        }
        if value.chars().any(char::is_control) {
            self.problem(field, "must not contain control characters");
            return None;
        }
        Some(value.to_owned())
    }

    /// A text the public pages show (a game, track or car name): as [`Self::text`], and no
    /// invisible or text-direction characters either, so one track cannot pose as another.
    fn shown_text(&mut self, field: &str, min: usize, max: usize) -> Option<String> {
        let value = self.text(field, min, max)?;
        if value.chars().any(is_invisible_or_bidi) {
            self.problem(field, hidden_characters::RULE);
            return None;
        }
        Some(value)
    }

    fn integer(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        let value = self.required(field)?;
        match whole_number(value) {
            Some(v) if (min..=max).contains(&v) => Some(v),
            Some(_) => {
                self.problem(field, &format!("must be between {min} and {max}"));
                None
            }
            None => {
                self.problem(field, "must be a whole number");
                None
            }
        }
    }

    /// A list of `min_len` to `max_len` whole numbers, each from `min` to `max`; a bad
    /// entry is named with its index (`sectorTimesMs[2]`).
    fn integers(
        &mut self,
        field: &str,
        min_len: usize,
        max_len: usize,
        min: i64,
        max: i64,
    ) -> Option<Vec<i64>> {
        let Some(items) = self.required(field)?.as_array() else {
            self.problem(field, "must be a list of whole numbers");
            return None;
        };
        if items.len() < min_len || items.len() > max_len {
            self.problem(field, &format!("must hold {min_len} to {max_len} entries"));
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match whole_number(item) {
                Some(v) if (min..=max).contains(&v) => out.push(v),
                Some(_) => self.problem(
                    &format!("{field}[{i}]"),
                    &format!("must be between {min} and {max}"),
                ),
                None => self.problem(&format!("{field}[{i}]"), "must be a whole number"),
            }
        }
        (out.len() == items.len()).then_some(out)
    }

    fn number(&mut self, field: &str, min: f64, max: f64) -> Option<f64> {
        let value = self.required(field)?;
        match value.as_f64() {
            Some(v) if v.is_finite() && (min..=max).contains(&v) => Some(v),
            Some(_) => {
                self.problem(field, &format!("must be between {min} and {max}"));
                None
            }
            None => {
                self.problem(field, "must be a number");
                None
            }
        }
    }

    fn fraction(&mut self, field: &str) -> Option<f64> {
        self.number(field, 0.0, 1.0)
    }

    fn coordinate(&mut self, field: &str) -> Option<f64> {
        self.number(field, -1_000_000.0, 1_000_000.0)
    }

    fn boolean(&mut self, field: &str) -> Option<bool> {
        let value = self.required(field)?;
        let parsed = value.as_bool();
        if parsed.is_none() {
            self.problem(field, "must be true or false");
        }
        parsed
    }

    fn timestamp(&mut self, field: &str, now: OffsetDateTime) -> Option<OffsetDateTime> {
        let value = self.required(field)?;
        let Some(parsed) = value
            .as_str()
            .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
        else {
            self.problem(field, "must be an RFC 3339 date and time");
            return None;
        };
        let earliest = time::macros::datetime!(2000-01-01 0:00 UTC);
        if parsed < earliest || parsed > now + time::Duration::days(1) {
            self.problem(field, "must be after 2000-01-01 and not in the future");
            return None;
        }
        Some(parsed.to_offset(time::UtcOffset::UTC))
    }

    /// A list of objects, each read by `element` with its own field prefix (`laps[3].`).
    fn list<T>(
        &mut self,
        field: &str,
        min: usize,
        max: usize,
        mut element: impl FnMut(&mut Fields<'a>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let Some(items) = self.required(field)?.as_array() else {
            self.problem(field, "must be a list");
            return None;
        };
        if items.len() < min || items.len() > max {
            self.problem(field, &format!("must hold {min} to {max} entries"));
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let path = format!("{}{field}[{i}]", self.prefix);
            let Some(object) = item.as_object() else {
                self.problem(&format!("{field}[{i}]"), "must be an object");
                ok = false;
                continue;
            };
            let mut inner = Fields {
                object,
                prefix: format!("{path}."),
                problems: std::mem::take(&mut self.problems),
                count: self.count,
            };
            let parsed = element(&mut inner);
            self.problems = inner.problems;
            self.count = inner.count;
            match parsed {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}
