//! The spread of a board's lap times, read from its count items alone (see `rank_counts`):
//! the hundred-second items give the drivers per second of lap time, the root the drivers per
//! hundred seconds. A board of a million drivers answers from the same few items as one of a
//! thousand: one item per hundred seconds the field spans.

use std::collections::BTreeMap;

use serde_json::Value;

use super::board::BoardId;
use super::rank_counts::{COUNT_PREFIX, hundred_seconds_sk, root_sk};
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Item, Key, Query, SK, StoreError};
use paddock_kernel::tables::Table;

/// The hundred-second items read at most; a field spread wider than this many hundred-second
/// spans is drawn from the root's hundred-second counts instead.
pub const MAX_SPANS: usize = 20;
/// The bar widths a spread is drawn with, in seconds: the narrowest that keeps the bars at
/// most the number asked for.
const WIDTHS_S: [i64; 12] = [1, 2, 5, 10, 15, 20, 30, 60, 100, 200, 500, 1000];

/// Drivers per unit of lap time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spread {
    /// Drivers by the start of their unit (ms), fastest first.
    counts: BTreeMap<i64, u64>,
    /// The unit of `counts`, in seconds (1, or 100 for a field read from the root alone).
    unit_s: i64,
}

/// One bar of a histogram: the drivers with a lap in `[from_ms, to_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    /// Inclusive start of the bar's lap times.
    pub from_ms: i64,
    /// Exclusive end.
    pub to_ms: i64,
    /// Drivers in it.
    pub drivers: u64,
}

fn positive_attrs(item: &Item, prefix: char) -> impl Iterator<Item = (i64, u64)> + '_ {
    item.iter().filter_map(move |(name, v)| {
        let n: i64 = name.strip_prefix(prefix)?.parse().ok()?;
        let count = v.as_i64().filter(|c| *c > 0)?;
        Some((n, count.unsigned_abs()))
    })
}

impl Spread {
    /// Reads the spread of `board`: one query for its hundred-second items (at most
    /// [`MAX_SPANS`]), and only when the field spans more, the root item.
    pub async fn read(ports: &Ports, board: &BoardId) -> Result<Self, StoreError> {
        let hundreds = format!("{COUNT_PREFIX}H#");
        debug_assert!(hundred_seconds_sk(0).starts_with(&hundreds));
        let page = ports
            .items
            .query(
                Query::partition(Table::Leaderboards, board.partition())
                    .begins_with(hundreds.clone())
                    .limit(MAX_SPANS),
            )
            .await?;
        if page.next_cursor.is_none() {
            let mut counts = BTreeMap::new();
            for item in &page.items {
                let Some(block) = item
                    .get(SK)
                    .and_then(Value::as_str)
                    .and_then(|sk| sk.strip_prefix(&hundreds))
                    .and_then(|n| n.parse::<i64>().ok())
                else {
                    continue;
                };
                for (second, count) in positive_attrs(item, 'b') {
                    counts.insert((block * 100 + second) * 1000, count);
                }
            }
            return Ok(Self { counts, unit_s: 1 });
        }
        let root = ports
            .items
            .get(Table::Leaderboards, &Key::new(board.partition(), root_sk()))
            .await?;
        let counts = root
            .as_ref()
            .map(|root| {
                positive_attrs(root, 'b')
                    .map(|(block, count)| (block * 100_000, count))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            counts,
            unit_s: 100,
        })
    }

    /// A spread of the given lap times (for tests and for boards held in memory).
    pub fn of_laps(laps: impl IntoIterator<Item = i64>) -> Self {
        let mut counts = BTreeMap::new();
        for ms in laps {
            *counts.entry(ms.max(0) / 1000 * 1000).or_insert(0) += 1;
        }
        Self { counts, unit_s: 1 }
    }

    /// Drivers in the spread.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The histogram in at most `max_bars` bars of equal width (whole seconds from the list
    /// of widths), from the fastest driver's bar to the slowest's; empty bars between are kept
    /// so the picture's widths are true.
    pub fn bars(&self, max_bars: usize) -> Vec<Bar> {
        let (Some((&first, _)), Some((&last, _))) =
            (self.counts.first_key_value(), self.counts.last_key_value())
        else {
            return Vec::new();
        };
        let max_bars = i64::try_from(max_bars.max(1)).unwrap_or(i64::MAX);
        let unit_ms = self.unit_s * 1000;
        let width_ms = WIDTHS_S
            .iter()
            .map(|w| w * 1000)
            .filter(|w| w % unit_ms == 0)
            .find(|w| last / w - first / w < max_bars)
            .unwrap_or_else(|| ((last - first) / max_bars / unit_ms + 1) * unit_ms);
        let start = first / width_ms;
        let end = last / width_ms;
        let mut bars: Vec<Bar> = (start..=end)
            .map(|i| Bar {
                from_ms: i * width_ms,
                to_ms: (i + 1) * width_ms,
                drivers: 0,
            })
            .collect();
        for (&ms, &count) in &self.counts {
            let i = usize::try_from(ms / width_ms - start).unwrap_or(0);
            if let Some(bar) = bars.get_mut(i) {
                bar.drivers += count;
            }
        }
        bars
    }
}

/// The share of the board at or behind rank `rank` of `total`, as the whole percent a driver
/// reads as "top N %" (1 to 100).
pub fn top_percent(rank: u64, total: u64) -> u64 {
    if total == 0 {
        return 100;
    }
    (rank.min(total) * 100).div_ceil(total).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_by_the_second_when_the_field_is_narrow() {
        let spread = Spread::of_laps([90_100, 90_900, 91_000, 93_999]);
        assert_eq!(
            spread.bars(40),
            vec![
                Bar {
                    from_ms: 90_000,
                    to_ms: 91_000,
                    drivers: 2
                },
                Bar {
                    from_ms: 91_000,
                    to_ms: 92_000,
                    drivers: 1
                },
                Bar {
                    from_ms: 92_000,
                    to_ms: 93_000,
                    drivers: 0
                },
                Bar {
                    from_ms: 93_000,
                    to_ms: 94_000,
                    drivers: 1
                },
            ]
        );
        assert_eq!(spread.total(), 4);
    }

    #[test]
    fn a_wide_field_is_drawn_in_coarser_bars() {
        let spread = Spread::of_laps([60_000, 61_500, 150_000, 299_999]);
        let bars = spread.bars(40);
        assert!(bars.len() <= 40, "{}", bars.len());
        assert_eq!(bars[0].to_ms - bars[0].from_ms, 10_000);
        assert_eq!(bars.iter().map(|b| b.drivers).sum::<u64>(), 4);
        assert_eq!(bars[0].drivers, 2);
    }

    #[test]
    fn a_field_from_the_root_is_drawn_in_hundred_seconds() {
        let spread = Spread {
            counts: [(0, 3), (100_000, 5), (2_500_000, 1)].into_iter().collect(),
            unit_s: 100,
        };
        let bars = spread.bars(40);
        assert!(bars.len() <= 40);
        assert!(bars.iter().all(|b| (b.to_ms - b.from_ms) % 100_000 == 0));
        assert_eq!(bars.iter().map(|b| b.drivers).sum::<u64>(), 9);
    }

    #[test]
    fn the_top_percent_rounds_up_and_starts_at_one() {
        assert_eq!(top_percent(1, 1_000_000), 1);
        assert_eq!(top_percent(1, 3), 34);
        assert_eq!(top_percent(3, 3), 100);
        assert_eq!(top_percent(0, 0), 100);
    }
}
