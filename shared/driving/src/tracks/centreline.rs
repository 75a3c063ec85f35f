//! Builds a track's centreline from sampled positions, and merges it with earlier ones.
//!
//! Samples are ordered by track distance and resampled on a fixed grid (`SPACING_M`): the
//! samples near each grid distance are averaged (several laps of one session, or a noisy
//! lap, smooth out), and short gaps between grid points are filled by linear interpolation.
//! Maps of later sessions are merged point by point, weighted by how many sessions each
//! point has seen, so the map settles as drivers upload more.

use serde::{Deserialize, Serialize};

/// One sampled position (`TrackPointDto`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackPoint {
    /// World-space X, metres.
    pub x: f64,
    /// World-space Y, metres.
    pub y: f64,
    /// Track distance at this sample, metres.
    pub distance: f64,
}

/// Distance between two centreline points, in metres.
pub(crate) const SPACING_M: f64 = 5.0;
/// Gaps of up to this many grid steps without samples are interpolated; longer ones stay open.
const MAX_GAP_STEPS: i64 = 10;
/// A point's weight stops growing here, so a long-lived map still follows corrections.
const MAX_WEIGHT: u32 = 1_000;

/// One centreline point: grid index (distance = index × spacing), position and weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct GridPoint {
    pub index: i64,
    pub x: f64,
    pub y: f64,
    /// Sessions that contributed to this point.
    pub weight: u32,
}

/// Why no centreline could be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum CentrelineError {
    #[error("at least two samples at distinct distances are needed, got {0}")]
    TooFewSamples(usize),
}

/// Resamples `samples` on the grid; every resulting point has weight 1.
pub(crate) fn resample(samples: &[TrackPoint]) -> Result<Vec<GridPoint>, CentrelineError> {
    let mut finite: Vec<&TrackPoint> = samples
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite() && p.distance.is_finite())
        .collect();
    finite.sort_by(|a, b| a.distance.total_cmp(&b.distance));

    // Average the samples nearest to each grid distance.
    let mut buckets: Vec<(i64, f64, f64, u32)> = Vec::new();
    for p in finite {
        let index = (p.distance / SPACING_M).round() as i64;
        match buckets.last_mut() {
            Some((i, sx, sy, n)) if *i == index => {
                *sx += p.x;
                *sy += p.y;
                *n += 1;
            }
            _ => buckets.push((index, p.x, p.y, 1)),
        }
    }
    if buckets.len() < 2 {
        return Err(CentrelineError::TooFewSamples(buckets.len()));
    }
    let centres: Vec<(i64, f64, f64)> = buckets
        .into_iter()
        .map(|(i, sx, sy, n)| (i, sx / f64::from(n), sy / f64::from(n)))
        .collect();

    let mut out = Vec::with_capacity(centres.len());
    for pair in centres.windows(2) {
        let ((i0, x0, y0), (i1, x1, y1)) = (pair[0], pair[1]);
        out.push(GridPoint {
            index: i0,
            x: x0,
            y: y0,
            weight: 1,
        });
        let steps = i1 - i0;
        if steps > 1 && steps <= MAX_GAP_STEPS {
            for k in 1..steps {
                let t = k as f64 / steps as f64;
                out.push(GridPoint {
                    index: i0 + k,
                    x: x0 + (x1 - x0) * t,
                    y: y0 + (y1 - y0) * t,
                    weight: 1,
                });
            }
        }
    }
    let &(i, x, y) = centres.last().expect("two or more centres");
    out.push(GridPoint {
        index: i,
        x,
        y,
        weight: 1,
    });
    Ok(out)
}

/// Merges a new session's points into an existing map (both sorted by index).
pub(crate) fn merge(existing: &[GridPoint], new: &[GridPoint]) -> Vec<GridPoint> {
    let mut out = Vec::with_capacity(existing.len().max(new.len()));
    let (mut a, mut b) = (existing.iter().peekable(), new.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(p), Some(q)) if p.index == q.index => {
                let (wp, wq) = (f64::from(p.weight), f64::from(q.weight));
                out.push(GridPoint {
                    index: p.index,
                    x: (p.x * wp + q.x * wq) / (wp + wq),
                    y: (p.y * wp + q.y * wq) / (wp + wq),
                    weight: (p.weight + q.weight).min(MAX_WEIGHT),
                });
                a.next();
                b.next();
            }
            (Some(p), Some(q)) if p.index < q.index => {
                out.push(**p);
                a.next();
            }
            (Some(_), Some(q)) => {
                out.push(**q);
                b.next();
            }
            (Some(p), None) => {
                out.push(**p);
                a.next();
            }
            (None, Some(q)) => {
                out.push(**q);
                b.next();
            }
            (None, None) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(distance: f64, x: f64, y: f64) -> TrackPoint {
        TrackPoint { x, y, distance }
    }

    #[test]
    fn unordered_samples_are_resampled_on_the_grid() {
        // A straight line along x, sampled every 2 m, given out of order.
        let mut samples: Vec<_> = (0..=50)
            .map(|i| sample(i as f64 * 2.0, i as f64 * 2.0, 7.0))
            .collect();
        samples.reverse();
        let points = resample(&samples).unwrap();
        assert_eq!(points.first().unwrap().index, 0);
        assert_eq!(points.last().unwrap().index, 20);
        assert_eq!(points.len(), 21);
        for p in &points {
            assert!((p.x - p.index as f64 * SPACING_M).abs() < 1.01, "{p:?}");
            assert!((p.y - 7.0).abs() < 1e-9);
        }
    }

    #[test]
    fn short_gaps_are_interpolated_and_long_ones_left_open() {
        let samples = [
            sample(0.0, 0.0, 0.0),
            sample(20.0, 20.0, 0.0),
            sample(500.0, 500.0, 0.0),
        ];
        let points = resample(&samples).unwrap();
        let indices: Vec<i64> = points.iter().map(|p| p.index).collect();
        assert_eq!(indices, vec![0, 1, 2, 3, 4, 100]);
        assert!((points[2].x - 10.0).abs() < 1e-9);
    }

    #[test]
    fn one_distinct_distance_is_not_a_line() {
        let samples = [sample(3.0, 1.0, 1.0), sample(3.1, 1.0, 1.0)];
        assert_eq!(resample(&samples), Err(CentrelineError::TooFewSamples(1)));
        assert_eq!(resample(&[]), Err(CentrelineError::TooFewSamples(0)));
    }

    #[test]
    fn merging_weights_by_sessions_and_keeps_points_seen_once() {
        let old = [
            GridPoint {
                index: 0,
                x: 0.0,
                y: 0.0,
                weight: 3,
            },
            GridPoint {
                index: 1,
                x: 5.0,
                y: 0.0,
                weight: 3,
            },
        ];
        let new = [
            GridPoint {
                index: 1,
                x: 5.0,
                y: 4.0,
                weight: 1,
            },
            GridPoint {
                index: 2,
                x: 10.0,
                y: 0.0,
                weight: 1,
            },
        ];
        let merged = merge(&old, &new);
        assert_eq!(merged.len(), 3);
        assert_eq!(
            merged[1],
            GridPoint {
                index: 1,
                x: 5.0,
                y: 1.0,
                weight: 4
            }
        );
        assert_eq!(merged[2].weight, 1);
    }
}
