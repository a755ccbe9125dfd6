//! What the wait and watch sections both time with: a read-only tool
//! context on a server, a needle written through a FIFO, one capture of a
//! pane, and a median with its spread.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::report::ms;
use crate::config::{ServeConfig, Tier};
use crate::testbed::baseline::median;
use crate::tmux::{CaptureOptions, CaptureRange, CaptureRequest, PaneId, ServerSpec, Tmux};
use crate::tools::context::ToolContext;
use crate::tools::registry::Registry;

/// Median, best and worst of `times`, in milliseconds.
pub(super) fn median_spread(times: &mut [Duration]) -> (f64, f64, f64) {
    let mid = median(times);
    let min = times.iter().min().copied().unwrap_or_default();
    let max = times.iter().max().copied().unwrap_or_default();
    (ms(mid), ms(min), ms(max))
}

/// A read-only tool context on `spec`, on the event stream or polling.
pub(super) fn read_context(spec: &ServerSpec, events: bool) -> ToolContext {
    let config = ServeConfig {
        server: spec.clone(),
        wait_events: events,
        ..ServeConfig::default()
    };
    ToolContext::new(
        Arc::new(config),
        Arc::new(Registry::for_tier(Tier::Readonly)),
    )
}

/// Writes `needle` as a line through the FIFO; returns when it was written.
pub(super) fn write_needle(fifo: &Path, needle: &str) -> Result<Instant, String> {
    let written = Instant::now();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(fifo)
        .map_err(|e| format!("cannot open the FIFO: {e}"))?;
    writeln!(f, "{needle}").map_err(|e| e.to_string())?;
    Ok(written)
}

/// One capture of the pane's screen through the transport.
pub(super) fn one_capture(spec: &ServerSpec, pane: PaneId) -> Result<Duration, String> {
    let tmux = Tmux::shared(spec).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let rx = tmux.capture(
        vec![CaptureRequest {
            pane,
            range: CaptureRange::Visible,
        }],
        CaptureOptions::default(),
        started + Duration::from_secs(10),
        std::sync::Arc::default(),
    );
    match rx.recv_timeout(Duration::from_secs(11)) {
        Ok(reply) => reply.result.map_err(|e| e.to_string())?,
        Err(_) => return Err("the capture did not come back".into()),
    };
    Ok(started.elapsed())
}
