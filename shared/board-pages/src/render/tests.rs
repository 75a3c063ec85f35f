use super::*;

#[test]
fn gaps_read_as_seconds_then_minutes() {
    assert_eq!(gap(90_000, 90_000), "—");
    assert_eq!(gap(90_417, 90_000), "+0.417");
    assert_eq!(gap(102_003, 90_000), "+12.003");
    assert_eq!(gap(152_003, 90_000), "+1:02.003");
}

#[test]
fn hidden_characters_show() {
    assert_eq!(
        visible("a\u{202E}b\u{200B}c\u{0007}"),
        "a\u{FFFD}b\u{FFFD}c\u{FFFD}"
    );
    assert_eq!(
        visible("Zoë 🏁 \u{2764}\u{FE0F}"),
        "Zoë 🏁 \u{2764}\u{FE0F}"
    );
    // Every character the input rule refuses, including those the first rule missed.
    for c in ['\u{00AD}', '\u{3164}', '\u{2066}', '\u{FFA0}', '\u{061C}'] {
        assert_eq!(
            visible(&format!("Spa{c}")),
            "Spa\u{FFFD}",
            "{:04X}",
            c as u32
        );
    }
}

#[test]
fn stored_track_and_car_names_render_neutralised() {
    let track = Track {
        name: "Spa\u{200B}".to_owned(),
        layout: "\u{202E}PG".to_owned(),
        game_id: "acc\u{2066}".to_owned(),
        ..Track::empty(&paddock_driving::tracks::TrackKey::new("acc", "Spa", "GP"))
    };
    let html = boards(
        None,
        &[TrackBoard {
            track: track.clone(),
            drivers: 1,
        }],
        None,
        None,
    );
    let page = BoardPage {
        track,
        rows: Vec::new(),
        first_ms: None,
        total: 0,
        next_cursor: None,
        vehicles: vec![("Porsche \u{202E}R 3TG".to_owned(), 1)],
        car_name: Some("Porsche \u{202E}R 3TG".to_owned()),
        spread: Default::default(),
        marked: None,
        map_svg: None,
    };
    let board_html = board(None, &page, Some("Porsche \u{202E}R 3TG"), true);
    // The car selector's value goes back as the query, to match the stored name; it is
    // never shown.
    let board_html = board_html.replace("value=\"Porsche \u{202E}R 3TG\"", "");
    for html in [html, board_html] {
        for hidden in ['\u{200B}', '\u{202E}', '\u{2066}'] {
            assert!(!html.contains(hidden), "{:04X} in {html}", hidden as u32);
        }
        assert!(html.contains("Spa\u{FFFD}"), "{html}");
    }
}

#[test]
fn error_pages_name_no_address() {
    let html = problem("No such board", "There is no board at this address.");
    assert!(
        !html.contains("canonical") && !html.contains("og:url"),
        "{html}"
    );
    let head = Head {
        title: "t".into(),
        description: "d".into(),
        path: "/boards".into(),
        public_url: Some("https://paddock.example"),
        image: None,
    };
    let html = layout(&head, html! {});
    assert!(html.contains(r#"<link rel="canonical" href="https://paddock.example/boards">"#));
}

#[test]
fn markup_in_names_is_text() {
    let html = name("<script>alert(1)</script>").into_string();
    assert_eq!(html, "<bdi>&lt;script&gt;alert(1)&lt;/script&gt;</bdi>");
}

#[test]
fn only_https_avatars_are_shown() {
    assert!(
        avatar("A", Some("javascript:alert(1)"))
            .into_string()
            .contains("initial")
    );
    assert!(
        avatar("A", Some("http://x/a.png"))
            .into_string()
            .contains("initial")
    );
    assert!(
        avatar("A", Some("https://x/a.png"))
            .into_string()
            .contains("img")
    );
}

#[test]
fn the_policy_names_the_style_sheets_hash() {
    let digest = Sha256::digest(STYLE.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
    let policy = content_security_policy("https://cdn.discordapp.com");
    assert!(policy.contains(&format!("'sha256-{b64}'")));
    assert!(
        policy.contains("img-src https://cdn.discordapp.com;"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe"));
}
