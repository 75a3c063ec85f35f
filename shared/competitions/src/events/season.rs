//! A series' season table: points per round by finishing position (the top ten of each
//! finished round, as its standings rank them), totals, and ties broken by better finishes
//! (the most wins, then the most second places, and so on); drivers still level share a rank.

use serde::Serialize;
use utoipa::ToSchema;

use super::reads::visible;
use super::*;
use paddock_boards::leaderboards::board::BoardId;
use paddock_boards::leaderboards::reads as board_reads;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Query, decode};

/// Points by finishing position, first to tenth; no points past tenth.
pub const POINTS: [u32; 10] = [25, 18, 15, 12, 10, 8, 6, 4, 2, 1];

/// A series' season table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeasonTable {
    /// The series (its first round's id).
    #[schema(value_type = String, format = Uuid)]
    pub series_id: EventId,
    /// Rounds in all.
    pub rounds: u32,
    /// The rounds finished, whose points count: each round's id, in order.
    #[schema(value_type = Vec<String>)]
    pub counted: Vec<EventId>,
    /// The drivers who scored, by total (ties broken by better finishes).
    pub entries: Vec<SeasonEntry>,
}

/// A driver's line in a season table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeasonEntry {
    /// 1 is first; drivers level on points and finishes share a rank.
    pub rank: u32,
    /// The driver.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: UserId,
    /// The name of the driver's latest scoring entry.
    pub display_name: String,
    /// Points in all.
    pub points: u32,
    /// The driver's position in each counted round (null where they did not score).
    pub finishes: Vec<Option<u32>>,
}

/// The row of a series' round (`SERIES#<series id>` / `ROUND#<round>`), written with it.
pub(crate) fn round_key(series: &EventId, round: u32) -> Key {
    Key::new(format!("SERIES#{series}"), format!("ROUND#{round:03}"))
}

/// The season table of the series event `id` is a round of, for `viewer`.
pub async fn season(
    ports: &Ports,
    viewer: Option<&UserId>,
    id: &EventId,
) -> Result<SeasonTable, EventError> {
    let event = visible(ports, viewer, id).await?;
    let series = event.series.clone().ok_or(EventError::NotASeries)?;
    let query = Query::partition(TABLE, round_key(&series.series_id, 0).pk).limit(64);
    let rows = ports.items.query(query).await?.items;
    let ids: Vec<EventId> = rows
        .into_iter()
        .filter_map(|row| row.get("eventId")?.as_str()?.parse().ok())
        .collect();
    let keys = ids.iter().map(|id| (TABLE, meta_key(id))).collect();
    let now_ms = ms_of(ports.clock.now());
    let mut finished = Vec::new();
    for item in ports.items.get_many(keys).await?.into_iter().flatten() {
        let round: EventRecord = decode(item, "event")?;
        if round.closed || now_ms >= round.closes_ms {
            finished.push(round);
        }
    }
    finished.sort_by_key(|r| r.series.as_ref().map_or(0, |s| s.round));
    let tops = futures::future::try_join_all(finished.iter().map(|round| {
        let board = BoardId::event(&round.track_id, &round.id);
        async move { board_reads::page(ports, &board, None, POINTS.len()).await }
    }))
    .await?;
    let mut table: Vec<SeasonEntry> = Vec::new();
    for (n, top) in tops.into_iter().enumerate() {
        for ranked in top.rows {
            let Some(points) = usize::try_from(ranked.rank - 1)
                .ok()
                .and_then(|i| POINTS.get(i))
            else {
                continue;
            };
            let at = if let Some(at) = table.iter().position(|e| e.user_id == ranked.row.user_id) {
                at
            } else {
                table.push(SeasonEntry {
                    rank: 0,
                    user_id: ranked.row.user_id.clone(),
                    display_name: String::new(),
                    points: 0,
                    finishes: vec![None; finished.len()],
                });
                table.len() - 1
            };
            let entry = &mut table[at];
            entry.points += points;
            entry.finishes[n] = u32::try_from(ranked.rank).ok();
            entry.display_name = ranked.row.display_name;
        }
    }
    rank(&mut table);
    Ok(SeasonTable {
        series_id: series.series_id,
        rounds: series.rounds,
        counted: finished.into_iter().map(|r| r.id).collect(),
        entries: table,
    })
}

/// How many times a driver finished in each position, first first: the tie-break.
fn countback(entry: &SeasonEntry) -> [u32; POINTS.len()] {
    let mut counts = [0; POINTS.len()];
    for position in entry.finishes.iter().flatten() {
        if let Some(c) = counts.get_mut(*position as usize - 1) {
            *c += 1;
        }
    }
    counts
}

/// Orders `table` by points, then countback (then user id, for a stable order among drivers
/// still level), and ranks it: drivers level on both share a rank.
fn rank(table: &mut [SeasonEntry]) {
    table.sort_by(|a, b| {
        (b.points, countback(b))
            .cmp(&(a.points, countback(a)))
            .then_with(|| a.user_id.cmp(&b.user_id))
    });
    for i in 0..table.len() {
        let level = i > 0
            && (table[i].points, countback(&table[i]))
                == (table[i - 1].points, countback(&table[i - 1]));
        table[i].rank = if level {
            table[i - 1].rank
        } else {
            i as u32 + 1
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(user: u128, points: u32, finishes: &[Option<u32>]) -> SeasonEntry {
        SeasonEntry {
            rank: 0,
            user_id: UserId::from(uuid::Uuid::from_u128(user)),
            display_name: String::new(),
            points,
            finishes: finishes.to_vec(),
        }
    }

    #[test]
    fn ties_are_broken_by_better_finishes_and_else_shared() {
        let mut table = vec![
            entry(1, 43, &[Some(2), Some(1), None]),
            entry(2, 43, &[Some(1), Some(2), None]),
            entry(3, 43, &[Some(3), Some(3), Some(5)]),
            entry(4, 50, &[Some(1), Some(1), None]),
        ];
        rank(&mut table);
        let ranks: Vec<(u128, u32)> = table
            .iter()
            .map(|e| (e.user_id.as_uuid().as_u128(), e.rank))
            .collect();
        assert_eq!(ranks, [(4, 1), (1, 2), (2, 2), (3, 4)]);
    }
}
