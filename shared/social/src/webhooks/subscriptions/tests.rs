use super::*;

#[test]
fn event_types_are_checked_and_ordered() {
    let raw = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        parse_event_types(&raw(&["board.passed", "session.uploaded", "board.passed"])).unwrap(),
        raw(&["session.uploaded", "board.passed"])
    );
    assert!(matches!(
        parse_event_types(&raw(&["lap.done"])),
        Err(SubscriptionError::UnknownEventType(t)) if t == "lap.done"
    ));
    assert!(matches!(
        parse_event_types(&[]),
        Err(SubscriptionError::NoEventTypes)
    ));
}

#[test]
fn grace_hours_are_bounded() {
    assert_eq!(parse_grace_hours(None).unwrap(), DEFAULT_GRACE_HOURS);
    assert_eq!(parse_grace_hours(Some(&json!(0))).unwrap(), 0);
    for bad in [json!(-1), json!(73), json!("24"), json!(1.5)] {
        assert!(parse_grace_hours(Some(&bad)).is_err(), "{bad}");
    }
}

#[test]
fn the_previous_secret_signs_during_its_grace_only() {
    let stored = StoredSubscription {
        shown: Subscription {
            id: SubscriptionId::new(),
            url: "https://example.com/".into(),
            event_types: vec![],
            description: String::new(),
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_at: String::new(),
            updated_at: String::new(),
            previous_secret_expires_at: None,
        },
        secret: "new".into(),
        previous_secret: Some("old".into()),
        previous_secret_until: Some(100),
    };
    assert_eq!(stored.signing_secrets(99), vec!["new", "old"]);
    assert_eq!(stored.signing_secrets(100), vec!["new"]);
}
