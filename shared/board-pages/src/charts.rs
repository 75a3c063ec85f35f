//! The pictures of the pages, as inline SVG: no script, no style attributes (the page's one
//! style sheet sizes them), and each with its numbers as text for screen readers and axe (a
//! `<title>` and `<desc>`, and a visually hidden table).

use maud::{Markup, html};
use paddock_boards::leaderboards::format_lap_time;
use paddock_boards::leaderboards::lap_history::LapPoint;
use paddock_boards::leaderboards::spread::Bar;

/// The bars a histogram has at most (readable on a phone: at least 8 px a bar).
pub const MAX_BARS: usize = 40;

/// The drawing's size in its own units; it scales to the page's width.
const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 150.0;
/// The plot's area inside the drawing.
const LEFT: f64 = 6.0;
const RIGHT: f64 = 314.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 120.0;

/// A driver whose bar a shared link marks (`?driver=`).
#[derive(Debug, Clone)]
pub struct Marked {
    /// The driver's name as shown.
    pub name: String,
    /// The driver's lap.
    pub lap_ms: i64,
    /// The driver's rank.
    pub rank: u64,
    /// Entries on the board.
    pub total: u64,
}

/// `1:31` for a bar's edge (whole seconds).
fn edge(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    format!("{}:{:02}", s / 60, s % 60)
}

/// A bar's lap times in words.
fn range(bar: &Bar) -> String {
    format!("{} to {}", edge(bar.from_ms), edge(bar.to_ms))
}

/// The histogram of a board's lap times, `marked`'s bar highlighted (in colour and with a
/// marker above it, so colour is not the only sign), with the same numbers as a hidden list.
pub fn spread(id: &str, bars: &[Bar], marked: Option<&Marked>) -> Markup {
    let Some(tallest) = bars.iter().map(|b| b.drivers).max().filter(|t| *t > 0) else {
        return html! {};
    };
    let total: u64 = bars.iter().map(|b| b.drivers).sum();
    let busiest = bars.iter().find(|b| b.drivers == tallest).copied();
    let first = bars.first().copied();
    let last = bars.last().copied();
    let marked_bar = marked.and_then(|m| {
        bars.iter()
            .position(|b| b.from_ms <= m.lap_ms && m.lap_ms < b.to_ms)
    });
    let slot = (RIGHT - LEFT) / bars.len() as f64;
    let gap = if slot >= 4.0 { 1.0 } else { 0.0 };
    let height = |drivers: u64| (BOTTOM - TOP) * drivers as f64 / tallest as f64;
    let title_id = format!("{id}-title");
    let desc_id = format!("{id}-desc");
    let description = format!(
        "{total} driver{} from {} to {}; the most in one bar, {tallest}, at {}.{}",
        if total == 1 { "" } else { "s" },
        first.map(|b| edge(b.from_ms)).unwrap_or_default(),
        last.map(|b| edge(b.to_ms)).unwrap_or_default(),
        busiest.as_ref().map(range).unwrap_or_default(),
        marked
            .map(|m| format!(
                " {} ({}) is marked: rank {} of {}, top {} %.",
                m.name,
                format_lap_time(m.lap_ms),
                m.rank,
                m.total,
                paddock_boards::leaderboards::spread::top_percent(m.rank, m.total)
            ))
            .unwrap_or_default()
    );
    html! {
        figure.chart {
            svg #(id) viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
                aria-labelledby=(format!("{title_id} {desc_id}")) {
                title #(title_id) { "Spread of the board's lap times" }
                desc #(desc_id) { (description) }
                line x1=(LEFT) y1=(BOTTOM + 0.5) x2=(RIGHT) y2=(BOTTOM + 0.5) stroke="#4a4a4a" stroke-width="1" {}
                @for (i, bar) in bars.iter().enumerate() {
                    @let h = height(bar.drivers);
                    @let x = LEFT + slot * i as f64;
                    rect.bar.marked[marked_bar == Some(i)]
                        x=(format!("{x:.2}")) y=(format!("{:.2}", BOTTOM - h))
                        width=(format!("{:.2}", (slot - gap).max(0.5))) height=(format!("{h:.2}"))
                        data-from-ms=(bar.from_ms) data-to-ms=(bar.to_ms) data-drivers=(bar.drivers) {}
                    @if marked_bar == Some(i) {
                        text.marker x=(format!("{:.2}", x + slot / 2.0)) y=(format!("{:.2}", BOTTOM - h - 4.0))
                            text-anchor="middle" { "▼" }
                    }
                }
                @if let (Some(first), Some(last)) = (first, last) {
                    text.axis x=(LEFT) y=(BOTTOM + 14.0) { (edge(first.from_ms)) }
                    text.axis x=(RIGHT) y=(BOTTOM + 14.0) text-anchor="end" { (edge(last.to_ms)) }
                    text.axis x=((LEFT + RIGHT) / 2.0) y=(BOTTOM + 14.0) text-anchor="middle" { "lap time" }
                    text.axis x=(LEFT) y="11" { (tallest) " max" }
                }
            }
            figcaption {
                "Drivers by lap time. "
                @if let Some(m) = marked {
                    "▼ " (m.name) ": " (format_lap_time(m.lap_ms)) ", rank " (m.rank) " of " (m.total)
                    ", top " (paddock_boards::leaderboards::spread::top_percent(m.rank, m.total)) " %."
                }
            }
            ul.visually-hidden aria-label="Drivers by lap time" {
                @for bar in bars {
                    li { (range(bar)) ": " (bar.drivers) " driver" @if bar.drivers != 1 { "s" } }
                }
            }
        }
    }
}

/// The day of an RFC 3339 time (`2026-03-01`).
fn day(rfc3339: &str) -> &str {
    rfc3339.get(..10).unwrap_or(rfc3339)
}

/// A driver's progress on one track: each session's submitted lap as a dot and the best so
/// far as a stepped line, faster higher, sessions placed by their date. A session that set a
/// new best is a filled dot, the others hollow (shape, not colour alone, tells them apart);
/// the same numbers are in a hidden table.
pub fn progress(id: &str, track_title: &str, points: &[LapPoint]) -> Markup {
    if points.len() < 2 {
        return html! {};
    }
    let times: Vec<i64> = points.iter().map(|p| unix(&p.session_at)).collect();
    let (first_t, last_t) = (times[0], times[times.len() - 1]);
    let fastest = points.iter().map(|p| p.lap_time_ms).min().unwrap_or(0);
    let slowest = points.iter().map(|p| p.lap_time_ms).max().unwrap_or(0);
    let x = |t: i64| {
        if last_t > first_t {
            LEFT + 4.0 + (RIGHT - LEFT - 8.0) * (t - first_t) as f64 / (last_t - first_t) as f64
        } else {
            (LEFT + RIGHT) / 2.0
        }
    };
    let y = |ms: i64| {
        if slowest > fastest {
            TOP + 4.0 + (BOTTOM - TOP - 8.0) * (ms - fastest) as f64 / (slowest - fastest) as f64
        } else {
            (TOP + BOTTOM) / 2.0
        }
    };
    // Each session with the best after it and whether it set that best.
    let mut best = i64::MAX;
    let rows: Vec<(&LapPoint, i64, bool)> = points
        .iter()
        .map(|p| {
            let new_best = p.lap_time_ms < best;
            best = best.min(p.lap_time_ms);
            (p, best, new_best)
        })
        .collect();
    let mut line = String::new();
    for (i, (_, best, _)) in rows.iter().enumerate() {
        let (px, py) = (x(times[i]), y(*best));
        if i == 0 {
            line.push_str(&format!("M{px:.2} {py:.2}"));
        } else {
            line.push_str(&format!("H{px:.2}V{py:.2}"));
        }
    }
    let (first, last) = (rows[0].1, rows[rows.len() - 1].1);
    let title_id = format!("{id}-title");
    let desc_id = format!("{id}-desc");
    let description = format!(
        "{} sessions from {} to {}; the best went from {} to {}{}.",
        points.len(),
        day(&points[0].session_at),
        day(&points[points.len() - 1].session_at),
        format_lap_time(first),
        format_lap_time(last),
        if last < first {
            format!(", {:.3} s faster", (first - last) as f64 / 1000.0)
        } else {
            String::new()
        }
    );
    html! {
        figure.chart.progress {
            svg #(id) viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
                aria-labelledby=(format!("{title_id} {desc_id}")) {
                title #(title_id) { "Best lap over time on " (track_title) }
                desc #(desc_id) { (description) }
                line x1=(LEFT) y1=(BOTTOM + 0.5) x2=(RIGHT) y2=(BOTTOM + 0.5) stroke="#4a4a4a" stroke-width="1" {}
                path.best-line d=(line) {}
                @for (i, (p, _, new_best)) in rows.iter().enumerate() {
                    circle.lap.new-best[*new_best] cx=(format!("{:.2}", x(times[i])))
                        cy=(format!("{:.2}", y(p.lap_time_ms))) r="3.5"
                        data-at=(p.session_at) data-lap-ms=(p.lap_time_ms) {}
                }
                text.axis x=(LEFT) y="11" { "↑ faster: " (format_lap_time(fastest)) }
                text.axis x=(LEFT) y=(BOTTOM + 14.0) { (day(&points[0].session_at)) }
                text.axis x=((LEFT + RIGHT) / 2.0) y=(BOTTOM + 14.0) text-anchor="middle" { "↓ slower: " (format_lap_time(slowest)) }
                text.axis x=(RIGHT) y=(BOTTOM + 14.0) text-anchor="end" { (day(&points[points.len() - 1].session_at)) }
            }
            figcaption {
                (track_title) ": best lap by session, faster higher. ● set a new best, ○ did not."
            }
            // A table box keeps its content's width whatever its own: hidden inside a block.
            div.visually-hidden {
                table {
                    caption { "Sessions on " (track_title) }
                    thead { tr { th scope="col" { "Date" } th scope="col" { "Lap" } th scope="col" { "Best so far" } } }
                    tbody {
                        @for (p, best, new_best) in &rows {
                            tr {
                                td { (day(&p.session_at)) }
                                td { (format_lap_time(p.lap_time_ms)) @if *new_best { " (new best)" } }
                                td { (format_lap_time(*best)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Unix seconds of an RFC 3339 time (0 when it does not read, which a stored row never is).
fn unix(rfc3339: &str) -> i64 {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .map_or(0, time::OffsetDateTime::unix_timestamp)
}

/// The track's map as the API draws it (`paddock_driving::tracks::maps::svg`: numbers and the
/// track's id only), named for screen readers and styled by the page's sheet.
pub fn track_map(svg: &str, track_title: &str) -> Markup {
    let named = svg.replacen(
        "<svg ",
        &format!(
            "<svg role=\"img\" aria-label=\"{}\" ",
            maud::html! { "Map of " (track_title) }.into_string()
        ),
        1,
    );
    html! {
        figure.track-map {
            (maud::PreEscaped(named))
            figcaption { "The track's centreline, from drivers' laps." }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(from_s: i64, drivers: u64) -> Bar {
        Bar {
            from_ms: from_s * 1000,
            to_ms: (from_s + 1) * 1000,
            drivers,
        }
    }

    #[test]
    fn a_histogram_names_its_numbers_and_marks_the_driver() {
        let marked = Marked {
            name: "Ana".into(),
            lap_ms: 91_500,
            rank: 3,
            total: 6,
        };
        let html = spread(
            "spread",
            &[bar(90, 2), bar(91, 3), bar(92, 1)],
            Some(&marked),
        )
        .into_string();
        assert_eq!(html.matches("data-drivers=").count(), 3);
        assert!(html.contains(r#"class="bar marked""#), "{html}");
        assert!(html.contains("rank 3 of 6, top 50 %"), "{html}");
        assert!(html.contains("<title id=\"spread-title\">"), "{html}");
        assert!(html.contains("<li>1:31 to 1:32: 3 drivers</li>"), "{html}");
    }

    #[test]
    fn an_empty_board_has_no_histogram() {
        assert_eq!(spread("s", &[], None).into_string(), "");
        assert_eq!(spread("s", &[bar(90, 0)], None).into_string(), "");
    }

    fn point(at: &str, ms: i64) -> LapPoint {
        LapPoint {
            // Each point its own session, recorded at the point's time.
            session_id: {
                let recorded =
                    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                        .unwrap();
                paddock_kernel::ids::SessionId::recorded_at(
                    recorded.unix_timestamp().unsigned_abs(),
                    0,
                )
            },
            session_at: at.to_owned(),
            lap_time_ms: ms,
            vehicle_name: "Car".into(),
        }
    }

    #[test]
    fn progress_marks_new_bests_and_says_its_numbers() {
        let points = [
            point("2026-10-01T18:00:00Z", 92_000),
            point("2026-10-02T18:00:00Z", 91_000),
            point("2026-10-03T18:00:00Z", 91_500),
            point("2026-10-05T18:00:00Z", 90_500),
        ];
        let html = progress("p", "Spa", &points).into_string();
        assert_eq!(html.matches("<circle class=\"lap\"").count(), 1, "{html}");
        assert_eq!(html.matches("<circle class=\"lap new-best\"").count(), 3);
        assert!(html.contains(
            "4 sessions from 2026-10-01 to 2026-10-05; the best went from 1:32.000 to 1:30.500, 1.500 s faster."
        ));
        assert!(html.contains("<tr><td>2026-10-03</td><td>1:31.500</td><td>1:31.000</td></tr>"));
        // Faster is higher: the last, fastest dot is the topmost.
        let cy = |ms: i64| -> f64 {
            let at = html.find(&format!("data-lap-ms=\"{ms}\"")).unwrap();
            let before = &html[..at];
            let cy = before.rsplit("cy=\"").next().unwrap();
            cy.split('"').next().unwrap().parse().unwrap()
        };
        assert!(cy(90_500) < cy(91_000) && cy(91_000) < cy(92_000));
    }

    #[test]
    fn one_session_is_no_progress() {
        let one = [point("2026-10-01T18:00:00Z", 92_000)];
        assert_eq!(progress("p", "Spa", &one).into_string(), "");
        assert_eq!(progress("p", "Spa", &[]).into_string(), "");
    }
}
