//! Progress bars for people (on stderr, hidden when not wanted).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::testbed::fixture::{Fixture, FixtureShape};

/// A bar of `total` steps with a message, or a hidden one.
pub fn steps(total: u64, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Builds a fixture from the embedded corpus, with a bar while panes fill.
pub fn fill_fixture(label: &str, shape: FixtureShape, show: bool) -> Result<Fixture, String> {
    let bar = steps(shape.panes as u64, show);
    bar.set_message(format!(
        "filling {} panes with {} lines each",
        shape.panes, shape.lines
    ));
    let timeout = Duration::from_secs(60 + (shape.panes * shape.lines / 10_000) as u64);
    let fixture = Fixture::build(
        label,
        shape,
        &crate::testbed::corpus::sources(),
        timeout,
        &mut |done, _| bar.set_position(done as u64),
    )
    .map_err(|e| format!("cannot build the private tmux server: {e}"))?;
    bar.finish_and_clear();
    Ok(fixture)
}
