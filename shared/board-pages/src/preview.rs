//! The link previews (`og:image`), rasterised on the server from an SVG drawn here: a board's
//! is a PNG of its three fastest laps and the spread of its lap times; a driver's, of their
//! ranks and laps on their first boards and their progress on the first.
//!
//! The rasteriser is built without text support (no fonts to ship or to find on the host):
//! the lap times are drawn as seven-segment figures, and the names stay in the page's
//! `og:title`, `og:description` and `og:image:alt`.

use std::fmt::Write as _;

use paddock_boards::leaderboards::format_lap_time;
use paddock_boards::leaderboards::spread::Bar;

/// The picture's size: the 1.91:1 card link previews show.
pub const WIDTH: u32 = 1200;
/// See [`WIDTH`].
pub const HEIGHT: u32 = 630;
/// The PNG's bytes at most: a picture over this is not served (the flat drawing stays far
/// below it).
pub const MAX_BYTES: usize = 256 * 1024;

/// Why a preview could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// The drawing did not parse (a bug here).
    #[error("the preview's drawing is not valid SVG: {0}")]
    Drawing(String),
    /// The PNG could not be encoded, or came out larger than [`MAX_BYTES`].
    #[error("the preview's PNG could not be made: {0}")]
    Png(String),
}

/// The segments (a to g) of the figures 0 to 9.
const DIGITS: [&str; 10] = [
    "abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg",
];

/// The path of lap time text `text` (figures, `:` and `.`) at `(x, y)` (top left), figures
/// `h` high; answers the path and the width drawn.
fn figures(text: &str, x: f64, y: f64, h: f64) -> (String, f64) {
    let w = h * 0.5;
    let mid = y + h / 2.0;
    let mut d = String::new();
    let mut at = x;
    for c in text.chars() {
        match c {
            '0'..='9' => {
                let segments = DIGITS[c as usize - '0' as usize];
                for s in segments.chars() {
                    let (x0, y0, x1, y1) = match s {
                        'a' => (at, y, at + w, y),
                        'b' => (at + w, y, at + w, mid),
                        'c' => (at + w, mid, at + w, y + h),
                        'd' => (at, y + h, at + w, y + h),
                        'e' => (at, mid, at, y + h),
                        'f' => (at, y, at, mid),
                        _ => (at, mid, at + w, mid),
                    };
                    let _ = write!(d, "M{x0:.1} {y0:.1}L{x1:.1} {y1:.1}");
                }
                at += w + h * 0.3;
            }
            ':' => {
                for dy in [0.3, 0.75] {
                    let _ = write!(d, "M{:.1} {:.1}l0 0", at + h * 0.05, y + h * dy);
                }
                at += h * 0.3;
            }
            _ => {
                let _ = write!(d, "M{:.1} {:.1}l0 0", at + h * 0.05, y + h);
                at += h * 0.3;
            }
        }
    }
    (d, at - x)
}

/// The drawing of the preview: `top` the three fastest laps (ms), `bars` the spread.
pub fn drawing(top: &[i64], bars: &[Bar]) -> String {
    let mut svg = canvas();
    // The podium: rank badges (one, two, three dots) and each lap time, largest first.
    let podium = ["#b8860b", "#6b7280", "#8b5a2b"];
    for (i, ms) in top.iter().take(3).enumerate() {
        let h = [72.0, 56.0, 56.0][i];
        let y = 60.0 + [0.0, 110.0, 200.0][i];
        let _ = write!(
            svg,
            "<circle cx=\"90\" cy=\"{:.1}\" r=\"{:.1}\" fill=\"{}\"/>",
            y + h / 2.0,
            h * 0.45,
            podium[i]
        );
        for dot in 0..=i {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"#ffffff\"/>",
                90.0 + (dot as f64 - i as f64 / 2.0) * 14.0,
                y + h / 2.0
            );
        }
        let (d, _) = figures(&format_lap_time(*ms), 160.0, y, h);
        svg.push_str(&stroke(&d, "#1a1a1a", h));
    }
    // The spread, along the bottom.
    let tallest = bars.iter().map(|b| b.drivers).max().unwrap_or(0).max(1);
    let (left, right, top_y, bottom) = (60.0, 1140.0, 350.0, 590.0);
    let slot = (right - left) / bars.len().max(1) as f64;
    for (i, bar) in bars.iter().enumerate() {
        let h = (bottom - top_y) * bar.drivers as f64 / tallest as f64;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#5f6b7a\"/>",
            left + slot * i as f64,
            bottom - h,
            (slot - 2.0).max(1.0)
        );
    }
    let _ = write!(
        svg,
        "<rect x=\"{left}\" y=\"{bottom}\" width=\"{}\" height=\"3\" fill=\"#1a1a1a\"/></svg>",
        right - left
    );
    svg
}

/// A header strip, as every preview starts.
fn canvas() -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\"><rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#ffffff\"/>\
         <rect width=\"{WIDTH}\" height=\"14\" fill=\"#0b57d0\"/>"
    )
}

/// A stroke of figures drawn by [`figures`].
fn stroke(d: &str, colour: &str, h: f64) -> String {
    format!(
        "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"{:.1}\" \
         stroke-linecap=\"round\" stroke-linejoin=\"round\"/>",
        h / 8.0
    )
}

/// The drawing of a driver's preview: `boards` the rank and lap of their first boards (three
/// at most drawn), `progress` the laps of their latest sessions on the first board, oldest
/// first (a line of the best so far and a dot per session, faster higher).
pub fn driver_drawing(boards: &[(u64, i64)], progress: &[i64]) -> String {
    let mut svg = canvas();
    for (i, (rank, ms)) in boards.iter().take(3).enumerate() {
        let h = 56.0;
        let y = 50.0 + 95.0 * i as f64;
        // The rank in white on a dark pill, then the lap time.
        let (_, rank_w) = figures(&rank.to_string(), 0.0, 0.0, h * 0.6);
        let pill = rank_w + h * 0.6;
        let (rank_d, _) = figures(&rank.to_string(), 60.0 + h * 0.3, y + h * 0.2, h * 0.6);
        let _ = write!(
            svg,
            "<rect x=\"60\" y=\"{y:.1}\" width=\"{pill:.1}\" height=\"{h:.1}\" rx=\"{:.1}\" fill=\"#1a1a1a\"/>{}",
            h / 2.0,
            stroke(&rank_d, "#ffffff", h * 0.6)
        );
        let (d, _) = figures(&format_lap_time(*ms), 60.0 + pill + 40.0, y, h);
        svg.push_str(&stroke(&d, "#1a1a1a", h));
    }
    let (left, right, top_y, bottom) = (60.0, 1140.0, 360.0, 590.0);
    if progress.len() >= 2 {
        let fastest = progress.iter().copied().min().unwrap_or(0);
        let slowest = progress.iter().copied().max().unwrap_or(0);
        let x = |i: usize| left + (right - left) * i as f64 / (progress.len() - 1) as f64;
        let y = |ms: i64| {
            if slowest > fastest {
                top_y + (bottom - top_y) * (ms - fastest) as f64 / (slowest - fastest) as f64
            } else {
                (top_y + bottom) / 2.0
            }
        };
        let mut best = i64::MAX;
        let mut line = String::new();
        for (i, ms) in progress.iter().enumerate() {
            best = best.min(*ms);
            let _ = if i == 0 {
                write!(line, "M{:.1} {:.1}", x(i), y(best))
            } else {
                write!(line, "H{:.1}V{:.1}", x(i), y(best))
            };
        }
        let _ = write!(
            svg,
            "<path d=\"{line}\" fill=\"none\" stroke=\"#0b57d0\" stroke-width=\"6\" stroke-linejoin=\"round\"/>"
        );
        for (i, ms) in progress.iter().enumerate() {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"9\" fill=\"#ffffff\" stroke=\"#1a1a1a\" stroke-width=\"4\"/>",
                x(i),
                y(*ms)
            );
        }
    }
    let _ = write!(
        svg,
        "<rect x=\"{left}\" y=\"{}\" width=\"{}\" height=\"3\" fill=\"#1a1a1a\"/></svg>",
        bottom + 20.0,
        right - left
    );
    svg
}

/// The board's preview as a PNG.
pub fn png(top: &[i64], bars: &[Bar]) -> Result<Vec<u8>, PreviewError> {
    rasterise(&drawing(top, bars))
}

/// The driver's preview as a PNG (see [`driver_drawing`]).
pub fn driver_png(boards: &[(u64, i64)], progress: &[i64]) -> Result<Vec<u8>, PreviewError> {
    rasterise(&driver_drawing(boards, progress))
}

/// `svg` as a PNG of the preview's size, at most [`MAX_BYTES`].
fn rasterise(svg: &str) -> Result<Vec<u8>, PreviewError> {
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default())
        .map_err(|e| PreviewError::Drawing(e.to_string()))?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(WIDTH, HEIGHT)
        .ok_or_else(|| PreviewError::Png("no room for the picture".into()))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let bytes = pixmap
        .encode_png()
        .map_err(|e| PreviewError::Png(e.to_string()))?;
    if bytes.len() > MAX_BYTES {
        return Err(PreviewError::Png(format!(
            "{} bytes, over the {MAX_BYTES} allowed",
            bytes.len()
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_is_a_small_png_of_the_podium_and_the_spread() {
        let bars: Vec<Bar> = (0..40)
            .map(|i| Bar {
                from_ms: 88_000 + i * 1000,
                to_ms: 89_000 + i * 1000,
                drivers: (20 - (i - 20).abs()).unsigned_abs() * 1000,
            })
            .collect();
        let png = png(&[88_123, 88_456, 89_001], &bars).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.len() < MAX_BYTES, "{}", png.len());
        // Width and height in the IHDR chunk.
        assert_eq!(&png[16..20], &WIDTH.to_be_bytes());
        assert_eq!(&png[20..24], &HEIGHT.to_be_bytes());
        // Each figure's segments: 1:28.123 draws 1, 2, 8, 1, 2, 3 (2 + 5 + 7 + 2 + 5 + 5).
        let (d, _) = figures("1:28.123", 0.0, 0.0, 10.0);
        assert_eq!(d.matches('L').count(), 26);
    }

    #[test]
    fn a_driver_preview_draws_ranks_laps_and_progress() {
        let png = driver_png(
            &[(1, 88_123), (12_345, 101_002)],
            &[92_000, 91_000, 91_500, 90_100],
        )
        .unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.len() < MAX_BYTES, "{}", png.len());
        let svg = driver_drawing(&[(3, 88_123)], &[92_000, 91_000, 91_500]);
        // One dot per session, and the best so far as one stepped line.
        assert_eq!(svg.matches("<circle").count(), 3);
        assert_eq!(svg.matches("stroke=\"#0b57d0\"").count(), 1);
        assert!(driver_png(&[], &[]).unwrap().starts_with(b"\x89PNG"));
    }

    #[test]
    fn an_empty_board_still_draws() {
        assert!(png(&[], &[]).unwrap().starts_with(b"\x89PNG"));
    }

    /// CPU time of this process so far, user and system (Linux: `/proc/self/stat`, in clock
    /// ticks of 10 ms).
    fn cpu_time() -> std::time::Duration {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        std::time::Duration::from_millis(ticks * 10)
    }

    /// What a board preview costs drawn, and answered from the leaderboard cache: CPU per
    /// preview over `n`, printed, not asserted (docs/perf.md). Run in release:
    /// `cargo test --release -p paddock-api --lib -- --ignored --nocapture preview_costs`.
    #[tokio::test]
    #[ignore = "a measurement, run by hand in release"]
    async fn preview_costs_drawn_and_cached() {
        use paddock_boards::leaderboards::board::BoardId;
        use paddock_boards::leaderboards::cache::{BoardCache, PreviewKey, RenderedPage};
        use paddock_kernel::ids::TrackId;
        let bars: Vec<Bar> = (0..40)
            .map(|i| Bar {
                from_ms: 88_000 + i * 1000,
                to_ms: 89_000 + i * 1000,
                drivers: (20 - (i - 20).abs()).unsigned_abs() * 1000,
            })
            .collect();
        let top = [88_123, 88_456, 89_001];
        let draw = || RenderedPage::with_etag(png(&top, &bars).unwrap());
        let n: u32 = 50;
        let cpu = cpu_time();
        for _ in 0..n {
            std::hint::black_box(draw());
        }
        let drawn = (cpu_time() - cpu) / n;
        let cache = BoardCache::new(std::time::Duration::from_secs(60), 64 << 20);
        let key = || {
            PreviewKey::Board(BoardId::track(
                &"7a2c0000-0000-8000-8000-000000000001"
                    .parse::<TrackId>()
                    .unwrap(),
            ))
        };
        cache
            .preview(key(), |_| async { Ok::<_, ()>(draw()) })
            .await
            .unwrap();
        let hits: u32 = 100_000;
        let cpu = cpu_time();
        for _ in 0..hits {
            let hit = cache
                .preview(key(), |_| async { Ok::<_, ()>(draw()) })
                .await
                .unwrap();
            std::hint::black_box(hit);
        }
        let cached = (cpu_time() - cpu) / hits;
        println!(
            "board preview: drawn {drawn:?} CPU each ({n}), from the cache {cached:?} ({hits})"
        );
    }
}
