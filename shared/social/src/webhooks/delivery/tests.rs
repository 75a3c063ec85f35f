use super::*;
use paddock_kernel::events::{AchievementUnlocked, TrackProcessRequested};
use time::OffsetDateTime;

#[test]
fn waits_round_up_to_whole_seconds() {
    assert_eq!(whole_seconds(1), Duration::from_secs(1));
    assert_eq!(whole_seconds(4700), Duration::from_secs(5));
    assert_eq!(whole_seconds(5000), Duration::from_secs(5));
    assert_eq!(whole_seconds(-20), Duration::ZERO);
}

#[test]
fn backoff_spans_about_a_day() {
    let total: u64 = (1..MAX_ATTEMPTS).map(|n| retry_delay(n).as_secs()).sum();
    assert!((20 * 3600..30 * 3600).contains(&total), "{total}");
    assert_eq!(retry_delay(1), Duration::from_secs(5));
    assert_eq!(retry_delay(50), Duration::from_secs(28800));
}

#[test]
fn only_subscribable_kinds_make_messages() {
    let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
    let unlocked = Event::new(
        EventKind::AchievementUnlocked(AchievementUnlocked {
            achievement_id: "first-session".into(),
            title: "T".into(),
            description: "D".into(),
            cause_event_id: Uuid::now_v7(),
        }),
        Some(Uuid::from_u128(1).into()),
        now,
    );
    let message = message_of(&unlocked).unwrap();
    assert_eq!(message.event_type, "achievement.unlocked");
    assert_eq!(
        message.data,
        json!({"achievementId": "first-session", "title": "T", "description": "D",
               "userId": "00000000-0000-0000-0000-000000000001"})
    );
    let body: Value = serde_json::from_str(&body_of(&unlocked, &message)).unwrap();
    assert_eq!(body["timestamp"], "2023-11-14T22:13:20Z");
    let job = Event::new(
        EventKind::TrackProcessRequested(TrackProcessRequested {
            job_id: Uuid::from_u128(2).into(),
            track_id: Uuid::from_u128(3).into(),
        }),
        None,
        now,
    );
    assert_eq!(message_of(&job), None);
}
