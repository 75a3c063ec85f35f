//! The HTML of the public events' pages: `/events` and `/events/{eventId}`. Every time on them
//! is written by the server at the time of the answer (the time left included): no script.

use maud::{Markup, html};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{Head, layout, ranked_table, top_three, visible, with_query};
use crate::charts::{self, MAX_BARS};
use crate::event_reads::EventPage;
use paddock_competitions::events::{Event, EventState};
use paddock_kernel::ids::EventId;
use paddock_kernel::ports::clock::unix_ms;

/// The path of an event's page.
pub fn event_path(id: &EventId) -> String {
    format!("/events/{id}")
}

/// Milliseconds since the epoch of an RFC 3339 time (the events' own times; 0 if unreadable).
fn ms(rfc3339: &str) -> i64 {
    OffsetDateTime::parse(rfc3339, &Rfc3339).map_or(0, unix_ms)
}

/// A time as the pages write it: `2026-11-30 18:00 UTC`.
fn utc(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(day), Some(minute)) => format!("{day} {minute} UTC"),
        _ => rfc3339.to_owned(),
    }
}

/// A span of time to the minute (a part of one counts whole, as a countdown shows it),
/// largest units first: `2 days 4 h`, `3 h 12 min`, `12 min`.
pub fn span(ms: i64) -> String {
    let minutes = (ms.max(0) + 59_999) / 60_000;
    let (days, hours, minutes) = (minutes / 1440, minutes / 60 % 24, minutes % 60);
    match (days, hours) {
        (0, 0) if minutes == 0 => "no time".to_owned(),
        (0, 0) => format!("{minutes} min"),
        (0, _) => format!("{hours} h {minutes} min"),
        (1, _) => format!("1 day {hours} h"),
        _ => format!("{days} days {hours} h"),
    }
}

/// Where an event's window stands at `now_ms`, in words: `Closes in 2 days 4 h`.
pub fn time_left(event: &Event, now_ms: i64) -> String {
    match event.state {
        EventState::Upcoming => format!("Opens in {}", span(ms(&event.opens_at) - now_ms)),
        EventState::Open => format!("Closes in {}", span(ms(&event.closes_at) - now_ms)),
        EventState::Finished => format!("Finished {}", utc(&event.closes_at)),
    }
}

/// The car laps must be driven in, or that any car counts.
fn car(event: &Event) -> String {
    event
        .car
        .as_deref()
        .map_or_else(|| "Any car".to_owned(), visible)
}

/// A table of events, each with its track, car, window and time left.
fn listing(caption: &str, events: &[&Event], now_ms: i64) -> Markup {
    html! {
        div.scroll {
            table {
                caption { (caption) }
                thead { tr {
                    th scope="col" { "Event" } th scope="col" { "Track" } th scope="col" { "Car" }
                    th scope="col" { "Window" } th scope="col" { "When" }
                } }
                tbody {
                    @for e in events {
                        tr {
                            td { a href=(event_path(&e.id)) { (visible(&e.name)) } }
                            td { (visible(&e.track_name)) }
                            td { (car(e)) }
                            td {
                                time datetime=(e.opens_at) { (utc(&e.opens_at)) } " – "
                                time datetime=(e.closes_at) { (utc(&e.closes_at)) }
                            }
                            td { (time_left(e, now_ms)) }
                        }
                    }
                }
            }
        }
    }
}

/// `/events`: the public events open now, coming up and recently finished.
pub fn events(public_url: Option<&str>, events: &[Event], now_ms: i64) -> String {
    let head = Head {
        title: "Events · Paddock".to_owned(),
        description: "Time-boxed hotlap challenges open to every Paddock driver.".to_owned(),
        path: "/events".to_owned(),
        public_url,
        image: None,
    };
    let of = |state: EventState| {
        events
            .iter()
            .filter(|e| e.state == state)
            .collect::<Vec<_>>()
    };
    let (open, upcoming, finished) = (
        of(EventState::Open),
        of(EventState::Upcoming),
        of(EventState::Finished),
    );
    let body = html! {
        h1 { "Events" }
        p.meta { "One track, a window of time: every lap submitted to the boards inside it counts, with nothing to enter. Times are in UTC." }
        @if events.is_empty() {
            p { "No public events yet." }
        }
        @if !open.is_empty() { h2 { "Open now" } (listing("Events open now, closing first first", &open, now_ms)) }
        @if !upcoming.is_empty() { h2 { "Coming up" } (listing("Events not open yet", &upcoming, now_ms)) }
        @if !finished.is_empty() { h2 { "Recently finished" } (listing("Finished events, latest first", &finished, now_ms)) }
    };
    layout(&head, body)
}

/// `/events/{eventId}`: a public event and one page of its standings.
pub fn event(public_url: Option<&str>, page: &EventPage, now_ms: i64, first_page: bool) -> String {
    let e = &page.event;
    let title = visible(&e.name);
    let path = event_path(&e.id);
    let when = time_left(e, now_ms);
    let top = top_three(&page.rows);
    let track = visible(&e.track_name);
    let description = if top.is_empty() {
        format!("{track} · {} · {when} · no laps yet.", car(e))
    } else {
        format!("{track} · {when} · {}", top.join(" · "))
    };
    let head = Head {
        title: format!("{title} · Paddock event"),
        description,
        path: path.clone(),
        public_url,
        image: (!page.rows.is_empty()).then(|| {
            (
                format!("{path}/preview.png"),
                format!(
                    "The three fastest laps of the event and the spread of {} entrants' lap times",
                    page.total
                ),
            )
        }),
    };
    let status = match e.state {
        EventState::Upcoming => "Not open yet",
        EventState::Open => "Open",
        EventState::Finished => "Final standings",
    };
    let body = html! {
        h1 { (title) }
        p.meta {
            (track) " · " (car(e))
            @if let Some(series) = &e.series { " · round " (series.round) " of " (series.rounds) }
        }
        p { strong { (status) } " · " (when) }
        p.meta {
            "Window: " time datetime=(e.opens_at) { (utc(&e.opens_at)) } " – "
            time datetime=(e.closes_at) { (utc(&e.closes_at)) }
            " · laps of quality " (format!("{:.2}", e.min_quality)) " or better · "
            (page.total) " entrant" @if page.total != 1 { "s" }
        }
        (charts::spread("spread", &page.spread.bars(MAX_BARS), None))
        @if page.rows.is_empty() {
            p { "No laps in this event yet." }
        } @else {
            (ranked_table(
                &page.rows,
                page.first_ms,
                ["Best lap of each entrant, fastest first", "Position", "Set"],
                utc,
            ))
        }
        nav.pages aria-label="Pages" {
            a href="/events" { "All events" }
            @if !first_page { a href=(path) { "First page" } }
            @if let Some(next) = &page.next_cursor {
                a href=(with_query(&path, &[("cursor", next)])) rel="next" { "Next page" }
            }
        }
    };
    layout(&head, body)
}
