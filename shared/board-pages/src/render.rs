//! The HTML of the pages (maud: every interpolated value is escaped).
//!
//! No script at all: the car selector and the search are plain `GET` forms, so every page
//! works without JavaScript. The one style sheet is inline and allowed by its hash in the
//! Content-Security-Policy, so the policy needs no `'unsafe-inline'`.

use base64::Engine;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

use super::charts::{self, MAX_BARS, Marked};
use super::reads::{BoardPage, DriverPage, Ranked, TrackBoard};
use hidden_characters::is_invisible_or_bidi;
use paddock_boards::leaderboards::format_lap_time;
use paddock_driving::tracks::Track;
use paddock_kernel::ids::{TrackId, UserId};

/// The pages' style sheet (small, phone first: the board table scrolls sideways on narrow
/// screens rather than squeezing the names).
const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.45}\
header,main,footer{max-width:60rem;margin:0 auto;padding:0 1rem}\
header{padding-top:1rem}header a{color:#1a1a1a;font-weight:700;text-decoration:none}\
h1{font-size:1.5rem;margin:.75rem 0 .25rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}\
a{color:#0b57d0}a:focus,button:focus,select:focus,input:focus{outline:3px solid #f2a900;outline-offset:2px}\
.meta{color:#4a4a4a;margin:0 0 1rem}\
.scroll{overflow-x:auto}\
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}\
caption{text-align:left;color:#4a4a4a;padding:.25rem 0}\
th,td{padding:.4rem .5rem;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap}\
th{background:#f3f3f3}td.num,th.num{text-align:right}\
.avatar{width:24px;height:24px;border-radius:50%;vertical-align:middle;margin-right:.4rem;object-fit:cover}\
.initial{display:inline-block;width:24px;height:24px;border-radius:50%;background:#5a5a5a;color:#fff;text-align:center;line-height:24px;font-size:.8rem;margin-right:.4rem;vertical-align:middle}\
form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:0 0 1rem}\
select,input,button{font:inherit;padding:.35rem .5rem;border:1px solid #767676;border-radius:4px;background:#fff;color:#1a1a1a}\
button{background:#0b57d0;color:#fff;border-color:#0b57d0;cursor:pointer}\
nav.pages{display:flex;gap:1rem;margin:1rem 0}\
footer{color:#4a4a4a;font-size:.85rem;padding:2rem 1rem}\
figure.chart{margin:0 0 1rem;max-width:36rem}figure.chart svg{display:block;width:100%;height:auto}\
figcaption{color:#4a4a4a;font-size:.9rem}\
.bar{fill:#5f6b7a}.bar.marked{fill:#0b57d0}.marker{fill:#0b57d0;font-size:12px}\
.axis{fill:#4a4a4a;font-size:10px}.progress-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:0 1.5rem}.best-line{fill:none;stroke:#0b57d0;stroke-width:2px}.lap{fill:#fff;stroke:#1a1a1a;stroke-width:1.5px}.lap.new-best{fill:#0b57d0;stroke:#0b57d0}figure.track-map{margin:0 0 1rem;max-width:16rem}.track-map svg{display:block;width:100%;height:auto}.track-map path{stroke:#1a1a1a;stroke-width:3px;vector-effect:non-scaling-stroke}\
.visually-hidden{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}\
";

/// `'sha256-…'` of [`STYLE`], as the Content-Security-Policy names it.
static STYLE_SOURCE: LazyLock<String> = LazyLock::new(|| {
    let digest = Sha256::digest(STYLE.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
});

/// The pages' Content-Security-Policy: nothing runs, nothing is framed, forms post only
/// here, images only from `img_sources` (the allowed avatar hosts, see
/// [`super::avatars::image_sources`]), styles only the inline sheet above.
pub fn content_security_policy(img_sources: &str) -> String {
    format!(
        "default-src 'none'; style-src {}; img-src {img_sources}; form-action 'self'; \
         base-uri 'none'; frame-ancestors 'none'",
        *STYLE_SOURCE
    )
}

/// What a page says about itself to browsers and to link previews.
pub struct Head<'a> {
    /// The `<title>` and `og:title`.
    pub title: String,
    /// The `og:description`.
    pub description: String,
    /// The page's path (made absolute with the public URL for `og:url`).
    pub path: String,
    /// `Auth__PublicUrl`, when configured.
    pub public_url: Option<&'a str>,
    /// The path of the page's link preview picture (`og:image`), with its description.
    pub image: Option<(String, String)>,
}

/// Control characters and the characters that reorder or hide text (bidi controls,
/// zero-width characters: the rule input refuses, [`is_invisible_or_bidi`]) shown as U+FFFD,
/// so a name a record kept from before the rule cannot disguise itself or the text around
/// it, and two names that differ only by such a character do not look the same.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || is_invisible_or_bidi(c) {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// A driver's name, isolated from the text around it.
fn name(display_name: &str) -> Markup {
    let shown = visible(display_name);
    html! { bdi { (shown) } }
}

/// The avatar (https only, as the profile requires), or the name's first letter.
fn avatar(display_name: &str, avatar_url: Option<&str>) -> Markup {
    if let Some(url) = avatar_url.filter(|u| u.starts_with("https://")) {
        return html! {
            img.avatar src=(url) alt="" width="24" height="24" loading="lazy" referrerpolicy="no-referrer";
        };
    }
    let initial = visible(display_name)
        .chars()
        .next()
        .map(|c| c.to_uppercase().collect::<String>())
        .unwrap_or_default();
    html! { span.initial aria-hidden="true" { (initial) } }
}

/// `Track name (layout) · GAME`.
fn track_title(track: &Track) -> String {
    let layout = if track.layout.is_empty() {
        String::new()
    } else {
        format!(" ({})", track.layout)
    };
    visible(&format!(
        "{}{} · {}",
        track.name,
        layout,
        track.game_id.to_uppercase()
    ))
}

/// The gap to the fastest lap: `+0.417`, `+1:02.003`; empty for the fastest itself.
pub fn gap(lap_ms: i64, first_ms: i64) -> String {
    let gap = lap_ms - first_ms;
    if gap <= 0 {
        return "—".to_owned();
    }
    if gap < 60_000 {
        format!("+{}.{:03}", gap / 1000, gap % 1000)
    } else {
        format!("+{}", format_lap_time(gap))
    }
}

/// The date part of an RFC 3339 time.
fn date(rfc3339: &str) -> &str {
    rfc3339.get(..10).unwrap_or(rfc3339)
}

/// A path with its query (values form-encoded).
fn with_query(path: &str, pairs: &[(&str, &str)]) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs.iter().filter(|(_, v)| !v.is_empty()))
        .finish();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

/// The path of a board page.
pub fn board_path(track_id: &TrackId) -> String {
    format!("/boards/{track_id}")
}

/// The path of a driver's page.
pub fn driver_path(user_id: &UserId) -> String {
    format!("/drivers/{user_id}")
}

/// A page with an address of its own: `og:url` and the canonical link name it.
fn layout(head: &Head<'_>, body: Markup) -> String {
    let url = head.public_url.map(|base| format!("{base}{}", head.path));
    document(head, url.as_deref(), body)
}

/// The HTML document: `url` is the page's absolute address, given to link previews and
/// search engines as its own (`og:url`, canonical), or `None` for an error page, which names
/// no address: a 404's address would be whatever the request asked for.
fn document(head: &Head<'_>, url: Option<&str>, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (head.title) }
                meta name="description" content=(head.description);
                meta property="og:type" content="website";
                meta property="og:site_name" content="Paddock";
                meta property="og:title" content=(head.title);
                meta property="og:description" content=(head.description);
                @if let Some(url) = url {
                    meta property="og:url" content=(url);
                    link rel="canonical" href=(url);
                }
                @match (head.public_url, &head.image) {
                    (Some(base), Some((path, alt))) => {
                        meta property="og:image" content=(format!("{base}{path}"));
                        meta property="og:image:type" content="image/png";
                        meta property="og:image:width" content=(super::preview::WIDTH);
                        meta property="og:image:height" content=(super::preview::HEIGHT);
                        meta property="og:image:alt" content=(alt);
                        meta name="twitter:card" content="summary_large_image";
                    }
                    _ => { meta name="twitter:card" content="summary"; }
                }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header { a href="/boards" { "Paddock leaderboards" } }
                main { (body) }
                footer { "Lap times from the Paddock desktop telemetry analyser." }
            }
        }
    }
    .into_string()
}

/// `/boards`: the tracks with boards.
pub fn boards(
    public_url: Option<&str>,
    tracks: &[TrackBoard],
    search: Option<&str>,
    next: Option<&str>,
) -> String {
    let head = Head {
        title: "Leaderboards · Paddock".to_owned(),
        description: "Best laps of Paddock drivers, track by track.".to_owned(),
        path: "/boards".to_owned(),
        public_url,
        image: None,
    };
    let body = html! {
        h1 { "Leaderboards" }
        form method="get" action="/boards" role="search" {
            label for="q" { "Track" }
            input #q type="search" name="q" value=(search.unwrap_or_default()) maxlength="100";
            button type="submit" { "Search" }
        }
        @if tracks.is_empty() {
            p { "No boards here." }
        } @else {
            div.scroll {
                table {
                    caption { "Tracks with laps on the board" }
                    thead { tr {
                        th scope="col" { "Track" } th scope="col" { "Layout" }
                        th scope="col" { "Game" } th.num scope="col" { "Drivers" }
                    } }
                    tbody {
                        @for t in tracks {
                            tr {
                                td { a href=(board_path(&t.track.id)) { (visible(&t.track.name)) } }
                                td { (visible(&t.track.layout)) }
                                td { (visible(&t.track.game_id.to_uppercase())) }
                                td.num { (t.drivers) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next {
            nav.pages aria-label="Pages" {
                a href="/boards" { "First page" }
                a href=(with_query("/boards", &[("q", search.unwrap_or_default()), ("cursor", next)])) rel="next" { "Next page" }
            }
        }
    };
    layout(&head, body)
}

/// `/boards/{trackId}`: one page of a board.
pub fn board(
    public_url: Option<&str>,
    page: &BoardPage,
    car: Option<&str>,
    first_page: bool,
) -> String {
    let title = track_title(&page.track);
    // The car as stored, never the query's text.
    let car_shown = page.car_name.as_deref().map(visible);
    let car = page.car_name.as_deref().or(car);
    let unlisted = car.filter(|c| {
        !page
            .vehicles
            .iter()
            .any(|(v, _)| v.to_lowercase() == c.to_lowercase())
    });
    let top = top_three(&page.rows);
    let scope = match &car_shown {
        Some(car) => format!(" in the {car}"),
        None => String::new(),
    };
    let description = if top.is_empty() {
        format!("No laps yet{scope}.")
    } else {
        format!(
            "{} · {} driver{}{scope}",
            top.join(" · "),
            page.total,
            if page.total == 1 { "" } else { "s" }
        )
    };
    let path = board_path(&page.track.id);
    let head = Head {
        title: match &car_shown {
            Some(car) => format!("{title} · {car} · Paddock leaderboard"),
            None => format!("{title} · Paddock leaderboard"),
        },
        description,
        path: with_query(&path, &[("car", car.unwrap_or_default())]),
        public_url,
        image: (!page.rows.is_empty()).then(|| {
            (
                with_query(
                    &format!("{path}/preview.png"),
                    &[("car", car.unwrap_or_default())],
                ),
                format!(
                    "The three fastest laps and the spread of {} drivers' lap times",
                    page.total
                ),
            )
        }),
    };
    let marked = page.marked.as_ref().map(|m| Marked {
        name: visible(&m.row.display_name),
        lap_ms: m.row.lap_time_ms,
        rank: m.rank,
        total: page.total.max(m.rank),
    });
    let body = html! {
        h1 { (title) }
        p.meta {
            (page.total) " driver" @if page.total != 1 { "s" }
            @if let Some(car) = &car_shown { " in the " (car) }
        }
        (charts::spread("spread", &page.spread.bars(MAX_BARS), marked.as_ref()))
        @if let Some(svg) = &page.map_svg {
            (charts::track_map(svg, &title))
        }
        form method="get" action=(path) {
            label for="car" { "Car" }
            select #car name="car" {
                option value="" selected[car.is_none()] { "All cars" }
                @if let Some(c) = unlisted {
                    option value=(c) selected { (visible(c)) }
                }
                @for (vehicle, count) in &page.vehicles {
                    option value=(vehicle) selected[car.is_some_and(|c| c.to_lowercase() == vehicle.to_lowercase())] {
                        (visible(vehicle)) " (" (count) ")"
                    }
                }
            }
            button type="submit" { "Show" }
        }
        @if page.rows.is_empty() {
            p { "No laps on this board yet." }
        } @else {
            (ranked_table(
                &page.rows,
                page.first_ms,
                ["Best lap of each driver, fastest first", "Rank", "Date"],
                |at| date(at).to_owned(),
            ))
        }
        @if !first_page || page.next_cursor.is_some() {
            nav.pages aria-label="Pages" {
                @if !first_page {
                    a href=(with_query(&path, &[("car", car.unwrap_or_default())])) { "First page" }
                }
                @if let Some(next) = &page.next_cursor {
                    a href=(with_query(&path, &[("car", car.unwrap_or_default()), ("cursor", next)])) rel="next" { "Next page" }
                }
            }
        }
    };
    layout(&head, body)
}

/// The first three of `rows` as a link preview's description names them: `1. Ana 1:30.000`.
fn top_three(rows: &[Ranked]) -> Vec<String> {
    let shown = |r: &Ranked| {
        let (name, lap) = (
            visible(&r.row.display_name),
            format_lap_time(r.row.lap_time_ms),
        );
        format!("{}. {name} {lap}", r.rank)
    };
    rows.iter().take(3).map(shown).collect()
}

/// The table of a page of ranked rows (a board's, an event's standings): the place, the
/// driver with their avatar and page, the lap, the gap to `first_ms`, the car and when it was
/// set, written by `when`. `words` are the caption and the first and last columns' headings.
fn ranked_table(
    rows: &[Ranked],
    first_ms: Option<i64>,
    words: [&str; 3],
    when: impl Fn(&str) -> String,
) -> Markup {
    let [caption, place, set] = words;
    html! {
        div.scroll {
            table {
                caption { (caption) }
                thead { tr {
                    th.num scope="col" { (place) } th scope="col" { "Driver" }
                    th.num scope="col" { "Lap" } th.num scope="col" { "Gap" }
                    th scope="col" { "Car" } th scope="col" { (set) }
                } }
                tbody {
                    @for r in rows {
                        tr {
                            td.num { (r.rank) }
                            td {
                                (avatar(&r.row.display_name, r.row.avatar_url.as_deref()))
                                a href=(driver_path(&r.row.user_id)) { (name(&r.row.display_name)) }
                            }
                            td.num { (format_lap_time(r.row.lap_time_ms)) }
                            td.num { (first_ms.map(|f| gap(r.row.lap_time_ms, f)).unwrap_or_default()) }
                            td { (visible(&r.row.vehicle_name)) }
                            td { time datetime=(r.row.submitted_at) { (when(&r.row.submitted_at)) } }
                        }
                    }
                }
            }
        }
    }
}

/// `/drivers/{userId}`: a driver's bests.
pub fn driver(public_url: Option<&str>, page: &DriverPage, first_page: bool) -> String {
    let (user, bests) = (&page.user, &page.bests);
    let shown = visible(&user.display_name);
    let description = match bests.first() {
        Some(_) => format!("{shown}'s best laps on the Paddock leaderboards."),
        None => format!("{shown} has no laps on the boards yet."),
    };
    let path = driver_path(&user.id);
    let head = Head {
        title: format!("{shown} · Paddock driver"),
        description,
        path: path.clone(),
        public_url,
        image: (!bests.is_empty()).then(|| {
            (
                format!("{path}/preview.png"),
                format!("{shown}'s rank and lap on their first boards, and their progress"),
            )
        }),
    };
    let body = html! {
        h1 { (avatar(&user.display_name, user.avatar_url.as_deref())) (name(&user.display_name)) }
        @if bests.is_empty() && first_page {
            p { "No laps on the boards yet." }
        } @else {
            div.scroll {
                table {
                    caption { "Best lap on each track" }
                    thead { tr {
                        th scope="col" { "Track" } th.num scope="col" { "Rank" }
                        th.num scope="col" { "Lap" } th scope="col" { "Car" } th scope="col" { "Date" }
                    } }
                    tbody {
                        @for b in bests {
                            tr {
                                td { a href=(board_path(&b.track.id)) { (track_title(&b.track)) } }
                                td.num { (b.rank) " of " (b.total) }
                                td.num { (format_lap_time(b.row.lap_time_ms)) }
                                td { (visible(&b.row.vehicle_name)) }
                                td { time datetime=(b.row.submitted_at) { (date(&b.row.submitted_at)) } }
                            }
                        }
                    }
                }
            }
        }
        @if bests.iter().any(|b| b.progress.len() >= 2) {
            h2 { "Progress" }
            div.progress-grid {
                @for (i, b) in bests.iter().enumerate() {
                    (charts::progress(&format!("progress-{i}"), &track_title(&b.track), &b.progress))
                }
            }
        }
        @if !first_page || page.next_cursor.is_some() {
            nav.pages aria-label="Pages" {
                @if !first_page {
                    a href=(path) { "First page" }
                }
                @if let Some(next) = &page.next_cursor {
                    a href=(with_query(&path, &[("cursor", next)])) rel="next" { "Next page" }
                }
            }
        }
    };
    layout(&head, body)
}

/// An error page (400, 404): what went wrong, and the way back. It names no address of its
/// own (no canonical link, no `og:url`).
pub fn problem(title: &str, message: &str) -> String {
    let head = Head {
        title: format!("{title} · Paddock"),
        description: message.to_owned(),
        path: String::new(),
        public_url: None,
        image: None,
    };
    let body = html! {
        h1 { (title) }
        p { (message) }
        p { a href="/boards" { "All leaderboards" } }
    };
    document(&head, None, body)
}

pub mod events;

#[cfg(test)]
mod tests;
