//! The shell's progress bar: one line on standard error, redrawn from the engine's
//! [`ProgressEvent`]s (already throttled), cleared before anything else is printed.
//!
//! ```text
//! reading manifests [#######·······] 120/218 files 14.20 MiB 850/s ETA 0:02
//! listing files 12345 files 1.20 GiB 5000/s
//! ```
//!
//! The rate (files per second) and the ETA are of the current phase since it started; the ETA is
//! shown when the phase's total is known and some files are done. The line is cut to one less than
//! the terminal's width so that it never wraps: the width of standard error's terminal (asked at
//! each redraw, so a resized window is followed), else `COLUMNS`, else 80.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::progress::{ProgressEvent, ProgressSink};

/// Width of the bar itself, in cells.
const BAR_CELLS: usize = 14;

/// The line drawn for `event`, `elapsed` after its phase started, at most `width` characters.
pub fn render(event: &ProgressEvent, elapsed: Duration, width: usize) -> String {
    let mut parts = vec![event.phase.name().to_string()];
    match (event.total, event.fraction()) {
        (Some(total), fraction) => {
            let fraction = fraction.unwrap_or(1.0).clamp(0.0, 1.0);
            let filled = ((fraction * BAR_CELLS as f64).round() as usize).min(BAR_CELLS);
            parts.push(format!(
                "[{}{}]",
                "#".repeat(filled),
                "·".repeat(BAR_CELLS - filled)
            ));
            parts.push(format!("{}/{total} {}", event.done, event.phase.unit()));
        }
        (None, _) => parts.push(format!("{} {}", event.done, event.phase.unit())),
    }
    let seconds = elapsed.as_secs_f64();
    if let Some(total_bytes) = event.total_bytes {
        // Sized by bytes: the bytes, their rate and the time left from them.
        parts.push(format!(
            "{}/{}",
            human_bytes(event.bytes),
            human_bytes(total_bytes)
        ));
        if seconds >= 0.05 && event.bytes > 0 {
            let rate = event.bytes as f64 / seconds;
            parts.push(format!("{}/s", human_bytes(rate as u64)));
            let left = total_bytes.saturating_sub(event.bytes) as f64 / rate;
            parts.push(format!("ETA {}", clock(left)));
        }
        return parts.join(" ").chars().take(width.max(1)).collect();
    }
    if event.bytes > 0 {
        parts.push(human_bytes(event.bytes));
    }
    if seconds >= 0.05 && event.done > 0 {
        let rate = event.done as f64 / seconds;
        parts.push(format!("{rate:.0}/s"));
        if let Some(total) = event.total {
            let left = total.saturating_sub(event.done) as f64 / rate;
            parts.push(format!("ETA {}", clock(left)));
        }
    }
    let line = parts.join(" ");
    line.chars().take(width.max(1)).collect()
}

/// `1.50 KiB`, `3.00 MiB`, `512 B`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// `m:ss` (or `h:mm:ss`).
fn clock(seconds: f64) -> String {
    let total = if seconds.is_finite() {
        seconds.round().max(0.0) as u64
    } else {
        0
    };
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A progress line on standard error; the engine draws through [`sink`](Self::sink), the shell
/// clears it with [`clear`](Self::clear) before printing.
#[derive(Debug, Default)]
pub struct ProgressBar {
    state: Mutex<BarState>,
}

#[derive(Debug, Default)]
struct BarState {
    /// The phase being drawn and when it started.
    phase: Option<(crate::progress::Phase, Instant)>,
    /// Whether a line is on screen.
    drawn: bool,
}

impl ProgressBar {
    /// A bar with nothing drawn.
    pub fn new() -> Arc<Self> {
        Arc::new(ProgressBar::default())
    }

    /// The sink to hand the session.
    pub fn sink(self: &Arc<Self>) -> ProgressSink {
        let bar = Arc::clone(self);
        Arc::new(move |event: &ProgressEvent| bar.draw(event))
    }

    fn draw(&self, event: &ProgressEvent) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let started = match state.phase {
            Some((phase, started)) if phase == event.phase => started,
            _ => {
                let now = Instant::now();
                state.phase = Some((event.phase, now));
                now
            }
        };
        let line = render(event, started.elapsed(), terminal_width().saturating_sub(1));
        let mut err = std::io::stderr().lock();
        if write!(err, "\r\x1b[2K{line}")
            .and_then(|()| err.flush())
            .is_ok()
        {
            state.drawn = true;
        }
    }

    /// Removes the line, if one is drawn, and forgets the phase.
    pub fn clear(&self) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.phase = None;
        if state.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K").and_then(|()| err.flush());
            state.drawn = false;
        }
    }
}

/// The width to draw in: standard error's terminal (the bar is drawn there), else `COLUMNS`, else 80.
fn terminal_width() -> usize {
    let terminal = terminal_size::terminal_size_of(std::io::stderr()).map(|(width, _)| width.0);
    width_of(terminal, std::env::var("COLUMNS").ok().as_deref())
}

/// [`terminal_width`] from what the terminal answered and the `COLUMNS` text: a terminal that
/// reports 0 columns (some do before their size is set) counts as none; `COLUMNS` must be a
/// number above 10.
fn width_of(terminal: Option<u16>, columns: Option<&str>) -> usize {
    terminal
        .map(usize::from)
        .filter(|w| *w > 0)
        .or_else(|| {
            columns
                .and_then(|c| c.trim().parse().ok())
                .filter(|w| *w > 10)
        })
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_progress_line_shows_counts_rate_and_eta() {
        use crate::progress::{Phase, ProgressEvent};
        use crate::shell::progress_bar::render;
        use std::time::Duration;

        let event = ProgressEvent {
            phase: Phase::ReadingManifests,
            done: 50,
            total: Some(100),
            bytes: 3 << 20,
            total_bytes: None,
            finished: false,
        };
        let line = render(&event, Duration::from_secs(5), 120);
        assert!(line.starts_with("reading manifests ["), "{line}");
        assert!(
            line.contains("50/100 files") && line.contains("3.00 MiB"),
            "{line}"
        );
        assert!(line.contains("10/s") && line.contains("ETA 0:05"), "{line}");
    }

    #[test]
    fn a_session_draws_through_the_bar_sink() -> crate::Result<()> {
        use crate::engine::Engine;
        use crate::shell::progress_bar::ProgressBar;

        let bar = ProgressBar::new();
        let mut session = Engine::builder().build()?.session();
        session.set_progress(Some(bar.sink()));
        bar.clear();
        Ok(())
    }

    use super::*;
    use crate::progress::Phase;

    fn event(done: u64, total: Option<u64>, bytes: u64) -> ProgressEvent {
        ProgressEvent {
            phase: Phase::ListingFiles,
            done,
            total,
            bytes,
            total_bytes: None,
            finished: false,
        }
    }

    #[test]
    fn phases_sized_by_bytes_show_their_units_and_bytes() {
        let event = ProgressEvent {
            phase: Phase::RewritingFileGroups,
            done: 1,
            total: Some(4),
            bytes: 1 << 30,
            total_bytes: Some(4 << 30),
            finished: false,
        };
        assert_eq!(event.fraction(), Some(0.25));
        let line = render(&event, Duration::from_secs(2), 200);
        assert_eq!(
            line,
            format!(
                "rewriting file groups [{}{}] 1/4 groups 1.00 GiB/4.00 GiB 512.00 MiB/s ETA 0:06",
                "#".repeat(4),
                "·".repeat(BAR_CELLS - 4)
            )
        );
    }

    #[test]
    fn unknown_totals_have_no_bar_and_no_eta() {
        let line = render(&event(12345, None, 0), Duration::from_secs(2), 200);
        assert_eq!(line, "listing files 12345 files 6172/s");
    }

    #[test]
    fn a_fresh_phase_shows_no_rate() {
        let line = render(&event(0, Some(10), 0), Duration::ZERO, 200);
        assert_eq!(
            line,
            format!("listing files [{}] 0/10 files", "·".repeat(BAR_CELLS))
        );
    }

    #[test]
    fn a_full_bar_and_the_width_limit() {
        let line = render(&event(10, Some(10), 1536), Duration::from_secs(1), 200);
        assert!(line.contains(&"#".repeat(BAR_CELLS)), "{line}");
        assert!(
            line.contains("1.50 KiB") && line.ends_with("ETA 0:00"),
            "{line}"
        );
        assert_eq!(
            render(&event(10, Some(10), 0), Duration::ZERO, 7),
            "listing"
        );
    }

    #[test]
    fn the_terminal_then_columns_then_80() {
        assert_eq!(width_of(Some(40), Some("200")), 40);
        assert_eq!(width_of(None, Some(" 132 ")), 132);
        assert_eq!(width_of(Some(0), Some("100")), 100);
        assert_eq!(width_of(None, Some("5")), 80);
        assert_eq!(width_of(None, Some("wide")), 80);
        assert_eq!(width_of(None, None), 80);
    }

    #[test]
    fn units_and_clock() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(5 << 30), "5.00 GiB");
        assert_eq!(clock(3725.0), "1:02:05");
        assert_eq!(clock(f64::INFINITY), "0:00");
    }
}
