//! The body of `POST /v1/sessions`: one described type, [`SessionUploadDto`], deserialized as
//! the API documents it and then checked by [`check`] into a [`SessionUpload`].
//!
//! Every field is read as [`Sent`], so a value of a wrong JSON type does not stop the reading:
//! one 400 names every problem of an upload (`laps[3].lapTimeMs: ...`), wrong types and
//! broken rules alike. Field names arrive in camelCase; the HTTP side reads the client's
//! PascalCase names as camelCase on the way in, by the one rule of
//! `paddock_camel_keys` (the body reader's rule).

mod check;
pub mod sent;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

pub use check::check;
pub use sent::Sent;

/// Declares each limit of an upload once, with the described types that state them: utoipa's
/// schema attributes take only literals, so each literal is given here and lands both in a
/// constant (read by [`check`]) and in the schema.
macro_rules! upload_with_limits {
    (
        laps: $laps:tt, track_points: $points:tt, lap_ms: $lap_ms:tt, sectors: $sectors:tt,
        lap_index: $lap_index:tt, lap_events: $events:tt, coordinate: $coordinate:tt,
        game_id_chars: $game_id:tt, name_chars: $name:tt, weather_chars: $weather:tt,
        phase_chars: $phase:tt, client_session_id_chars: $client_id:tt,
        shown_pattern: $shown:tt, shown_or_empty_pattern: $shown_or_empty:tt,
        text_pattern: $text:tt, text_or_empty_pattern: $text_or_empty:tt $(,)?
    ) => {
        /// At most this many laps per upload (a 24-hour race at 1:30 a lap is under 1,000).
        pub const MAX_LAPS: usize = $laps;
        /// At most this many track points per upload.
        pub const MAX_TRACK_POINTS: usize = $points;
        /// Longest accepted lap (and sector): one day, in milliseconds.
        pub const MAX_LAP_MS: i64 = $lap_ms;
        /// At most this many sector times per lap (games split a lap into 3 sectors, some
        /// tracks into a few dozen mini-sectors).
        pub const MAX_SECTORS: usize = $sectors;
        /// Highest lap number.
        pub const MAX_LAP_INDEX: i64 = $lap_index;
        /// At most this many penalties, or pit stops, in one lap.
        pub const MAX_LAP_EVENTS: i64 = $events;
        /// Farthest track point from the origin on either axis, and longest track distance,
        /// in metres.
        pub const MAX_COORDINATE: f64 = $coordinate;
        /// Longest `gameId`, in characters.
        pub const GAME_ID_CHARS: usize = $game_id;
        /// Longest `trackName`, `trackLayout` and `vehicleName`, in characters.
        pub const NAME_CHARS: usize = $name;
        /// Longest `weatherSummary`, in characters.
        pub const WEATHER_CHARS: usize = $weather;
        /// Longest `sessionPhase`, in characters.
        pub const PHASE_CHARS: usize = $phase;
        /// Longest `clientSessionId`, in characters.
        pub const CLIENT_SESSION_ID_CHARS: usize = $client_id;

        // Every field is read as `Sent`, so a wrong type is named by the check, not by serde.
        /// The body of `POST /v1/sessions`, read as this schema describes it; one 400 lists
        /// every problem. Rules a schema cannot state: `laps[].lapIndex` is unique within the
        /// session, and `recordedAt` lies between 2000-01-01 and one day after the server's
        /// clock. Text fields are trimmed and refuse control characters; the names the public
        /// pages show (`gameId`, `trackName`, `trackLayout`, `vehicleName`) refuse invisible
        /// and text-direction characters too.
        #[derive(Debug, Deserialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct SessionUploadDto {
            /// Finds or creates the canonical track (with trackName and trackLayout).
            #[schema(value_type = String, min_length = 1, max_length = $game_id, pattern = $shown)]
            game_id: Sent<String>,
            #[schema(value_type = String, min_length = 1, max_length = $name, pattern = $shown)]
            track_name: Sent<String>,
            /// Empty for tracks without layouts.
            #[schema(value_type = String, max_length = $name, pattern = $shown_or_empty)]
            track_layout: Sent<String>,
            #[schema(value_type = String, min_length = 1, max_length = $name, pattern = $shown)]
            vehicle_name: Sent<String>,
            /// The client's time of the session (RFC 3339).
            #[schema(value_type = String, format = DateTime)]
            recorded_at: Sent<String>,
            #[schema(value_type = Vec<LapSummaryDto>, min_items = 1, max_items = $laps)]
            laps: Sent<Vec<Sent<LapSummaryDto>>>,
            #[schema(value_type = i64, minimum = 1, maximum = $lap_ms)]
            best_lap_ms: Sent<i64>,
            #[schema(value_type = String, max_length = $weather, pattern = $text_or_empty)]
            weather_summary: Sent<String>,
            #[schema(value_type = String, min_length = 1, max_length = $phase, pattern = $text)]
            session_phase: Sent<String>,
            /// The idempotency key of the upload.
            #[schema(value_type = String, min_length = 1, max_length = $client_id, pattern = $text)]
            client_session_id: Sent<String>,
            /// Sampled positions for the track map.
            #[schema(value_type = Option<Vec<TrackPointDto>>, max_items = $points)]
            track_points: Sent<Vec<Sent<TrackPointDto>>>,
        }

        /// The schema of `LapSummaryDto` in an upload.
        #[derive(Debug, Deserialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct LapSummaryDto {
            #[schema(value_type = u32, minimum = 0, maximum = $lap_index)]
            lap_index: Sent<i64>,
            #[schema(value_type = i64, minimum = 1, maximum = $lap_ms)]
            lap_time_ms: Sent<i64>,
            #[schema(value_type = bool)]
            is_valid: Sent<bool>,
            #[schema(value_type = bool)]
            counts_for_session_timing: Sent<bool>,
            #[schema(value_type = f64, minimum = 0.0, maximum = 1.0)]
            quality_combined: Sent<f64>,
            #[schema(value_type = f64, minimum = 0.0, maximum = 1.0)]
            quality_coherence: Sent<f64>,
            #[schema(value_type = f64, minimum = 0.0, maximum = 1.0)]
            quality_stability: Sent<f64>,
            #[schema(value_type = f64, minimum = 0.0, maximum = 1.0)]
            quality_completeness: Sent<f64>,
            #[schema(value_type = u32, minimum = 0, maximum = $events)]
            num_penalties: Sent<i64>,
            #[schema(value_type = u32, minimum = 0, maximum = $events)]
            num_pitstops: Sent<i64>,
            #[schema(value_type = bool)]
            in_pits_at_lap_end: Sent<bool>,
            /// 1 to 32 sector times in ms, checked against the lap time at submission.
            #[schema(value_type = Option<Vec<SectorTimeMs>>, min_items = 1, max_items = $sectors)]
            sector_times_ms: Sent<Vec<Sent<i64>>>,
        }

        /// The schema of `TrackPointDto` in an upload.
        #[derive(Debug, Deserialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct TrackPointDto {
            #[schema(value_type = f64, minimum = -$coordinate, maximum = $coordinate)]
            x: Sent<f64>,
            #[schema(value_type = f64, minimum = -$coordinate, maximum = $coordinate)]
            y: Sent<f64>,
            /// Track distance in metres.
            #[schema(value_type = f64, minimum = 0.0, maximum = $coordinate)]
            distance: Sent<f64>,
        }
    };
}

upload_with_limits!(
    laps: 1_000, track_points: 10_000, lap_ms: 86_400_000, sectors: 32,
    lap_index: 100_000, lap_events: 10_000, coordinate: 1_000_000.0,
    game_id_chars: 64, name_chars: 128, weather_chars: 256,
    phase_chars: 64, client_session_id_chars: 128,
    shown_pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$",
    shown_or_empty_pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb]*$",
    text_pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$",
    text_or_empty_pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
);

/// The objects of an upload read whatever their fields hold (see [`sent`]).
macro_rules! read_as_objects {
    ($($object:ty),*) => {$(
        impl<'de> sent::Kind<'de> for $object {
            fn from_map<A: serde::de::MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
                sent::object(map)
            }
        }
    )*};
}
read_as_objects!(SessionUploadDto, LapSummaryDto, TrackPointDto);

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

/// The upload's `clientSessionId`, when it is text of 1 to 128 characters (trimmed): what
/// names the upload before the rest of the body is checked.
pub fn client_session_id(body: &Sent<SessionUploadDto>) -> Option<&str> {
    let Sent::Given(SessionUploadDto {
        client_session_id: Sent::Given(id),
        ..
    }) = body
    else {
        return None;
    };
    let id = id.trim();
    (1..=CLIENT_SESSION_ID_CHARS)
        .contains(&id.chars().count())
        .then_some(id)
}

/// A JSON number with no fraction, as JSON Schema's `integer` means it (`5` and `5.0`).
pub fn whole_number(value: &serde_json::Value) -> Option<i64> {
    use sent::Kind;
    match value {
        serde_json::Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().and_then(i64::from_u64))
            .or_else(|| n.as_f64().and_then(i64::from_f64)),
        _ => None,
    }
}
