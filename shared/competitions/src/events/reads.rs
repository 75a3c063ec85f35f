//! Reading events: one event, a league's and the public ones, and an event's standings, each
//! for those who may see it (a league's events for its members only).

use super::*;
use crate::leagues;
use paddock_boards::leaderboards::board::BoardId;
use paddock_boards::leaderboards::reads::{self as board_reads, Slice, Standing};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Query, decode};

/// Event `id`, as stored, when `viewer` may see it (anyone a public one; a league's members
/// theirs).
pub(crate) async fn visible(
    ports: &Ports,
    viewer: Option<&UserId>,
    id: &EventId,
) -> Result<EventRecord, EventError> {
    let found = ports.items.get(super::TABLE, &meta_key(id)).await?;
    let record: EventRecord = decode(found.ok_or(EventError::NotFound)?, "event")?;
    if let Some(league) = &record.league_id {
        let viewer = viewer.ok_or(EventError::NotFound)?;
        let member = leagues::member_key(league, viewer);
        if ports.items.get(leagues::TABLE, &member).await?.is_none() {
            return Err(EventError::NotFound);
        }
    }
    Ok(record)
}

/// Event `id`, as `viewer` (signed in or not) sees it.
pub async fn get(
    ports: &Ports,
    viewer: Option<&UserId>,
    id: &EventId,
) -> Result<Event, EventError> {
    let record = visible(ports, viewer, id).await?;
    Ok(record.shown(ms_of(ports.clock.now())))
}

/// The events of `host` for `viewer` (a league's to its members), those not yet finished
/// first in the order they close, then at most `finished` of the latest finished, latest
/// first.
pub async fn list(
    ports: &Ports,
    viewer: Option<&UserId>,
    host: &Host,
    finished: usize,
) -> Result<Vec<Event>, EventError> {
    let partition = match host {
        Host::League(league) => {
            let viewer = viewer.ok_or(EventError::NotFound)?;
            leagues::visible(ports, viewer, league).await?;
            league_partition(league)
        }
        Host::Public => PUBLIC_PARTITION.to_owned(),
    };
    let now_ms = ms_of(ports.clock.now());
    let now_key = format!("{LISTED_PREFIX}{now_ms:013}");
    let live = Query::partition(super::TABLE, partition.clone())
        .between(now_key.clone(), format!("{LISTED_PREFIX}~"))
        .limit(MAX_LIVE);
    let done = Query::partition(super::TABLE, partition)
        .between(LISTED_PREFIX.to_owned(), now_key)
        .descending()
        .limit(finished.max(1));
    let (live, done) = futures::try_join!(ports.items.query(live), ports.items.query(done))?;
    let done = done.items.into_iter().take(finished);
    live.items
        .into_iter()
        .chain(done)
        .map(|item| Ok(decode::<EventRecord>(item, "event")?.shown(now_ms)))
        .collect()
}

/// One page of event `id`'s standings for `viewer`: fastest first, from the entry after the
/// cursor `after`.
pub async fn standings(
    ports: &Ports,
    viewer: Option<&UserId>,
    id: &EventId,
    after: Option<&str>,
    limit: usize,
) -> Result<(Event, Slice), EventError> {
    let record = visible(ports, viewer, id).await?;
    let board = BoardId::event(&record.track_id, id);
    let page = board_reads::page(ports, &board, after, limit).await?;
    Ok((record.shown(ms_of(ports.clock.now())), page))
}

/// The page of event `id`'s standings around `viewer`'s own entry (`None` when they have
/// none), and their standing in it.
pub async fn around_me(
    ports: &Ports,
    viewer: &UserId,
    id: &EventId,
    limit: usize,
) -> Result<(Event, Option<(Slice, Standing)>), EventError> {
    let record = visible(ports, Some(viewer), id).await?;
    let board = BoardId::event(&record.track_id, id);
    let (around, standing) = futures::try_join!(
        board_reads::around(ports, &board, viewer, limit),
        board_reads::standing(ports, &board, viewer)
    )?;
    Ok((record.shown(ms_of(ports.clock.now())), around.zip(standing)))
}
