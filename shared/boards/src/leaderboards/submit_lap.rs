//! `POST /v1/leaderboards/submit` as one call: a parsed lap of one of the driver's sessions,
//! checked (the client's quality, the stored lap, its plausibility) and put on the boards.

use serde_json::Value;

use super::extra_boards::ExtraBoard;
use super::plausibility::{self, Implausible};
use super::submission_reads::read_boards;
use super::submit::{self, Driver, MIN_QUALITY, Submission, SubmitError, SubmitOutcome};
use paddock_driving::sessions::records::{self, StoredSession};
use paddock_driving::sessions::upload::{MAX_LAP_MS, whole_number};
use paddock_driving::tracks::maps::{self, MapReadError};
use paddock_identity::identity::authentication::{AuthenticationError, Caller, Unconfirmed};
use paddock_identity::identity::users::StoredProfile;
use paddock_kernel::ids::{SessionId, UserId};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::clock::unix_ms;
use paddock_kernel::ports::items::StoreError;
use paddock_kernel::problems::{FieldProblems, Problems};
use paddock_kernel::rate_limits::RateLimited;

/// A lap time: a whole number of milliseconds from 1 to a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LapTime(i64);

impl LapTime {
    /// The lap time `value` holds (`5` and `5.0` alike).
    pub fn parse(value: &Value) -> Result<Self, String> {
        whole_number(value)
            .filter(|ms| (1..=MAX_LAP_MS).contains(ms))
            .map(Self)
            .ok_or_else(|| format!("must be a whole number of milliseconds from 1 to {MAX_LAP_MS}"))
    }

    /// In milliseconds.
    pub fn ms(self) -> i64 {
        self.0
    }
}

/// The client's quality score of a lap, from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityScore(f64);

impl QualityScore {
    /// The score `value` holds.
    pub fn parse(value: &Value) -> Result<Self, String> {
        value
            .as_f64()
            .filter(|q| (0.0..=1.0).contains(q))
            .map(Self)
            .ok_or_else(|| "must be a number from 0 to 1".to_owned())
    }

    /// Whether a lap of this score may be ranked at all.
    pub fn ranks(self) -> bool {
        self.0 >= MIN_QUALITY
    }

    /// The score.
    pub fn value(self) -> f64 {
        self.0
    }
}

/// A lap that passed every check of the boards, as the other boards it may count for see it.
#[derive(Debug, Clone, Copy)]
pub struct CheckedLap<'a> {
    /// Who drove it.
    pub user_id: &'a UserId,
    /// The session it was driven in.
    pub session: &'a StoredSession,
    /// Its time.
    pub lap_time_ms: i64,
    /// Its quality: the lower of the client's score and the stored lap's.
    pub quality: f64,
}

/// Where a submission finds the boards its lap also counts for (a competition's open
/// events): what they depend on is read with the submission's first reads, before the
/// session's track is known ([`OtherBoards::known`]), and the boards are picked from it once
/// the lap is checked ([`OtherBoards::find`]), so that the driver's entries on them are read
/// beside those on the session's own boards, in the same step.
pub trait OtherBoards: Sync {
    /// What is read for the driver.
    type Known: Send;
    /// Reads what `user_id`'s laps may count for.
    fn known(
        &self,
        ports: &Ports,
        user_id: &UserId,
    ) -> impl Future<Output = Result<Self::Known, StoreError>> + Send;
    /// The boards `lap` also goes on, of those `known`, at `now_ms`.
    fn find(&self, known: &Self::Known, lap: CheckedLap<'_>, now_ms: i64) -> Vec<ExtraBoard>;
}

/// The session's boards alone.
impl OtherBoards for () {
    type Known = ();

    async fn known(&self, _: &Ports, _: &UserId) -> Result<(), StoreError> {
        Ok(())
    }

    fn find(&self, _: &(), _: CheckedLap<'_>, _: i64) -> Vec<ExtraBoard> {
        Vec::new()
    }
}

/// A session id as a request names it: a UUID.
fn session_id(raw: &str) -> Result<SessionId, String> {
    let id = raw.trim();
    id.parse()
        .map_err(|_| "must be a session id (UUID)".to_owned())
}

/// A lap to submit, parsed from the request.
#[derive(Debug, Clone)]
pub struct SubmitLap {
    /// One of the driver's sessions.
    pub session_id: SessionId,
    /// The time of one of its laps.
    pub lap_time: LapTime,
    /// The client's quality score of that lap.
    pub quality: QualityScore,
}

impl SubmitLap {
    /// Parses the request's fields (absent or null ones are `None`), listing every problem.
    pub fn parse(
        session: Option<&str>,
        lap_time_ms: Option<&Value>,
        quality_score: Option<&Value>,
    ) -> Result<Self, FieldProblems> {
        fn given(v: Option<&Value>) -> Option<&Value> {
            v.filter(|v| !v.is_null())
        }
        let mut p = Problems::default();
        let session_id = p.required(
            "sessionId",
            session.filter(|s| !s.trim().is_empty()),
            session_id,
        );
        let lap_time = p.required("lapTimeMs", given(lap_time_ms), LapTime::parse);
        let quality = p.required("qualityScore", given(quality_score), QualityScore::parse);
        let lap = session_id
            .zip(lap_time)
            .zip(quality)
            .map(|((session_id, lap_time), quality)| Self {
                session_id,
                lap_time,
                quality,
            });
        p.into_result(lap)
    }
}

/// Why a lap was not submitted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitLapError {
    /// The driver has no such session.
    #[error("session not found")]
    SessionNotFound,
    /// The client's quality score is below the least a ranked lap needs.
    #[error("qualityScore: must be at least {MIN_QUALITY} to rank")]
    LowQuality,
    /// The session has no valid lap of that time and quality (the reason names the field).
    #[error("{0}")]
    NoSuchLap(String),
    /// The lap cannot have been driven.
    #[error(transparent)]
    Implausible(Implausible),
    /// The driver's account is gone (a token may outlive it briefly).
    #[error("account no longer exists")]
    AccountGone,
    /// The lap would open a board past the driver's day.
    #[error(transparent)]
    NewBoards(RateLimited),
    /// Other submissions kept replacing the same entry.
    #[error("too many concurrent submissions for this entry, please retry")]
    Contended,
    /// The track's map could not be read.
    #[error(transparent)]
    Map(#[from] MapReadError),
    /// The item store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The caller is not admitted (a revoked sign-in, say).
    #[error(transparent)]
    Caller(#[from] AuthenticationError),
}

impl From<SubmitError> for SubmitLapError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::Contended => Self::Contended,
            SubmitError::NewBoards(limited) => Self::NewBoards(limited),
            SubmitError::Store(e) => Self::Store(e),
        }
    }
}

/// What a submission reads first, all at once: the session, the driver's profile and what
/// the other boards depend on.
#[derive(Debug)]
struct FirstReads<K> {
    session: Option<StoredSession>,
    profile: Option<StoredProfile>,
    other: K,
}

/// Reads what a submission of `lap` by `user_id` starts from (nothing is written).
async fn read_first<O: OtherBoards>(
    ports: &Ports,
    user_id: &UserId,
    lap: &SubmitLap,
    other: &O,
) -> Result<FirstReads<O::Known>, StoreError> {
    let (session, profile, other) = futures::try_join!(
        records::get(ports, user_id, &lap.session_id),
        paddock_identity::identity::users::get_stored(ports, user_id),
        other.known(ports, user_id)
    )?;
    Ok(FirstReads {
        session,
        profile,
        other,
    })
}

/// Submits `lap` for `caller`: the session must be the caller's, the score high enough, the
/// lap stored, valid and plausible; then it goes on the session's boards (a day opens at
/// most `new_boards_per_day` new ones) and on those `other` finds for it.
///
/// The session and the profile are read beside the confirmation of a sign-in, so the request
/// waits on one round trip for both; nothing is written before the caller is confirmed, and a
/// caller who is not is refused whatever the reads found.
pub async fn submit_lap(
    ports: &Ports,
    caller: Unconfirmed,
    lap: SubmitLap,
    new_boards_per_day: u32,
    other: &impl OtherBoards,
) -> Result<(Caller, SubmitOutcome), SubmitLapError> {
    let user_id = caller.user_id().clone();
    let (confirmed, first) = caller
        .confirmed_beside(ports, read_first(ports, &user_id, &lap, other))
        .await;
    let caller = confirmed?;
    let outcome = submit_read(
        ports,
        &caller.user_id,
        lap,
        new_boards_per_day,
        first?,
        other,
    )
    .await?;
    Ok((caller, outcome))
}

/// [`submit_lap`] from what [`read_first`] read for it. Then the track's map and the
/// driver's entries on the boards and on the other boards the lap counts for are read at
/// once, and the lap written: three steps in all for a new best.
async fn submit_read<O: OtherBoards>(
    ports: &Ports,
    user_id: &UserId,
    lap: SubmitLap,
    new_boards_per_day: u32,
    first: FirstReads<O::Known>,
    other: &O,
) -> Result<SubmitOutcome, SubmitLapError> {
    let rejected = || {
        paddock_platform::metrics::global()
            .leaderboard_submissions
            .with_label_values(&["rejected"])
            .inc();
    };
    let session = first.session.ok_or(SubmitLapError::SessionNotFound)?;
    if !lap.quality.ranks() {
        rejected();
        return Err(SubmitLapError::LowQuality);
    }
    let stored = submit::check_lap(&session, lap.lap_time.ms()).map_err(|reason| {
        rejected();
        SubmitLapError::NoSuchLap(reason)
    })?;
    let checked = CheckedLap {
        user_id,
        session: &session,
        lap_time_ms: lap.lap_time.ms(),
        quality: lap.quality.value().min(stored.quality_combined),
    };
    let extra = other.find(&first.other, checked, unix_ms(ports.clock.now()));
    let (map_length_m, boards) = futures::join!(
        maps::length_m(ports, &session.summary.track_id),
        read_boards(ports, user_id, &session, lap.lap_time.ms(), extra.clone())
    );
    let map_length_m = map_length_m?;
    // A read that lost a race with other submissions is made again by the submission.
    let boards = match boards {
        Ok(boards) => Some(boards),
        Err(StoreError::Conflict) => None,
        Err(e) => return Err(e.into()),
    };
    if let Err(implausible) = plausibility::check(stored, map_length_m) {
        rejected();
        paddock_platform::metrics::global()
            .implausible_laps
            .with_label_values(&[implausible.reason()])
            .inc();
        return Err(SubmitLapError::Implausible(implausible));
    }
    // The name and avatar as the profile holds them now (a token may predate a rename).
    let profile = first
        .profile
        .filter(|p| p.deleted_at.is_none())
        .ok_or(SubmitLapError::AccountGone)?;
    let driver = Driver {
        user_id: user_id.clone(),
        display_name: profile.user.display_name,
        avatar_url: profile.user.avatar_url,
        profile_version: profile.version,
    };
    let submission = Submission {
        driver: &driver,
        session: &session,
        lap_time_ms: lap.lap_time.ms(),
        new_boards_per_day,
    };
    Ok(submit::submit_read(ports, &submission, boards, extra).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_parses_or_lists_every_problem() {
        let id = "3f2b8c1e-7d4a-4e6b-9c0d-5a1e2f3b4c5d";
        let lap = SubmitLap::parse(Some(id), Some(&json!(90_000.0)), Some(&json!(0.9))).unwrap();
        assert_eq!(lap.lap_time.ms(), 90_000);
        assert!(lap.quality.ranks());
        let all = SubmitLap::parse(None, Some(&json!(0)), Some(&json!(null))).unwrap_err();
        let all = all.to_string();
        assert!(all.contains("sessionId: is required"), "{all}");
        assert!(all.contains("lapTimeMs: must be a whole number"), "{all}");
        assert!(all.contains("qualityScore: is required"), "{all}");
        let bad = SubmitLap::parse(Some("x"), Some(&json!(1.5)), Some(&json!(2))).unwrap_err();
        let bad = bad.to_string();
        assert!(
            bad.contains("sessionId: must be a session id (UUID)"),
            "{bad}"
        );
        assert!(
            bad.contains("lapTimeMs:") && bad.contains("qualityScore:"),
            "{bad}"
        );
        assert!(!QualityScore::parse(&json!(0.79)).unwrap().ranks());
    }
}
