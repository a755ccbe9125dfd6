//! `panescan bench` big-answer cases: what a search of thousands of
//! matching lines costs after the search is done, and a repeated big
//! search beside the cold one.
//!
//! - **answer**: from the end of the search to the first byte of its
//!   answer written to a pipe — encoding, fitting under the response
//!   ceiling, building the line — beside the same result put through the
//!   registry's generic encoder (encode the whole result, cut, encode it
//!   again: how search answers were made before), in the same run. Once
//!   for an answer under the 1,000,000-byte ceiling, once for one cut to
//!   it.
//! - **repeated**: the whole call (search, answer, first byte) cold (no
//!   pane cache) and warm (the cache primed, nothing printed since).
//!
//! The searches run in-process through the registry, as `serve` runs them;
//! the cases are interleaved run by run so load drifting on a shared
//! machine moves them alike.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use crate::cache::{PaneCache, DEFAULT_MAX_BYTES};
use crate::config::{Ceilings, Tier};
use crate::mcp::protocol::Era;
use crate::mcp::response::Responses;
use crate::testbed::baseline::median;
use crate::testbed::fixture::Fixture;
use crate::tools::context::ToolContext;
use crate::tools::registry::{self, Registry, Tool, ToolOutput};
use crate::tools::search::{SearchPanes, SearchPanesArgs, SearchPanesResult};

/// The big-answer section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct BigBench {
    /// Lines shown in the answer under the ceiling.
    pub lines: usize,
    /// Its bytes.
    pub answer_bytes: usize,
    /// Search end to first byte, median.
    pub answer_ms: f64,
    /// The same with the generic encoder.
    pub generic_answer_ms: f64,
    /// Lines shown in the answer cut to the ceiling.
    pub cut_lines: usize,
    /// Its bytes.
    pub cut_answer_bytes: usize,
    /// Search end to first byte, median.
    pub cut_answer_ms: f64,
    /// The same with the generic encoder.
    pub generic_cut_answer_ms: f64,
    /// Both encoders wrote the same bytes on every run.
    pub identical: bool,
    /// The whole big call, no pane cache, median.
    pub cold_ms: f64,
    /// The same call repeated, the cache warm, median.
    pub warm_ms: f64,
    /// `warm_ms` over `cold_ms`.
    pub ratio_warm: f64,
}

/// Matching lines per pane of the big answer: with 200 panes, ~6,000
/// lines, ~820 KB; the cut one asks for as many as every pane has.
const PER_PANE: u64 = 30;
const PER_PANE_CUT: u64 = 10_000;

/// Every line with "src" in it (a path in a compiler message, a
/// traceback, a log), `per_pane` per pane of every pane, all history.
fn big(panes: usize, lines: usize, per_pane: u64) -> Value {
    json!({
        "pattern": "src",
        "limit": panes,
        "scrollback_lines": lines as u64 + 1_000,
        "max_matches": 10_000,
        "max_matches_per_pane": per_pane,
    })
}

fn context(socket_name: &str, cache: Option<Arc<PaneCache>>, room: usize) -> ToolContext {
    let mut ctx = ToolContext::read_only(
        crate::tmux::ServerSpec::named(socket_name),
        Ceilings::default(),
    )
    .with_pane_cache(cache);
    ctx.response_room = room;
    ctx
}

/// Where answers go: a socket drained by a thread, as a client drains
/// `serve`'s stdout.
struct Sink {
    pipe: UnixStream,
}

impl Sink {
    fn new() -> Result<Sink, String> {
        let (pipe, mut reader) = UnixStream::pair().map_err(|e| format!("socket pair: {e}"))?;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
        });
        Ok(Sink { pipe })
    }

    /// Writes `line`; returns once its first bytes are in the pipe (the
    /// rest follows, untimed).
    fn first_byte(&mut self, line: &str, start: Instant) -> Result<Duration, String> {
        let bytes = line.as_bytes();
        let first = self.pipe.write(bytes).map_err(|e| format!("write: {e}"))?;
        let at = start.elapsed();
        self.pipe
            .write_all(&bytes[first..])
            .and_then(|()| self.pipe.write_all(b"\n"))
            .map_err(|e| format!("write: {e}"))?;
        Ok(at)
    }
}

/// One answer: encoded (by the tool's own encoder or the generic one)
/// and written; the time from `start` to its first byte, and the line.
fn answer(
    result: SearchPanesResult,
    generic: bool,
    responses: &Responses,
    sink: &mut Sink,
) -> Result<(Duration, String), String> {
    let start = Instant::now();
    let (id, era) = (json!(1), Era::Handshake);
    let room = responses.room_for_result(&id, &era);
    let ceiling = Ceilings::default().response_bytes;
    let out: Result<ToolOutput, String> = if generic {
        registry::encode_within::<SearchPanes>(result, room).map_err(|size| format!("{size}"))
    } else {
        registry::encode::<SearchPanes>(result, room, ceiling).map_err(|e| e.message)
    };
    let line = responses.tool_result(&id, &era, &out?);
    Ok((sink.first_byte(&line, start)?, line))
}

/// The lines shown in an answer line.
fn lines_in(line: &str) -> usize {
    let parsed: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    parsed["result"]["structuredContent"]["matches"]
        .as_array()
        .map_or(0, |panes| {
            panes
                .iter()
                .filter_map(|p| p["lines"].as_array())
                .map(Vec::len)
                .sum()
        })
}

/// Medians of one answer case: (lines, bytes, tool's, generic's, identical).
struct Answers {
    lines: usize,
    bytes: usize,
    own: Vec<Duration>,
    generic: Vec<Duration>,
    identical: bool,
}

impl Answers {
    fn new() -> Answers {
        Answers {
            lines: 0,
            bytes: 0,
            own: Vec::new(),
            generic: Vec::new(),
            identical: true,
        }
    }

    /// One run: the same result through both encoders.
    fn run(
        &mut self,
        ctx: &ToolContext,
        args: &Value,
        responses: &Responses,
        sink: &mut Sink,
    ) -> Result<(), String> {
        let args: SearchPanesArgs =
            serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
        let result = SearchPanes::run(ctx, args).map_err(|e| e.message)?;
        let (generic, old) = answer(result.clone(), true, responses, sink)?;
        let (own, new) = answer(result, false, responses, sink)?;
        self.identical &= old == new;
        self.lines = lines_in(&new);
        self.bytes = new.len();
        self.own.push(own);
        self.generic.push(generic);
        Ok(())
    }
}

/// The whole call through the registry, as `serve` makes it: the time to
/// its answer's first byte.
fn call(
    registry: &Registry,
    ctx: &ToolContext,
    args: &Value,
    responses: &Responses,
    sink: &mut Sink,
) -> Result<Duration, String> {
    let start = Instant::now();
    let out = registry
        .call(ctx, SearchPanes::NAME, args.clone())
        .ok_or("search_panes is not registered")?
        .map_err(|e| e.message)?;
    let line = responses.tool_result(&json!(1), &Era::Handshake, &out);
    sink.first_byte(&line, start)
}

/// Runs the big-answer cases, `runs` times each, on `fixture`.
pub fn run(fixture: &Fixture, runs: usize) -> Result<BigBench, String> {
    let socket = fixture.server.socket_name();
    let lines = fixture.shape.lines;
    let responses = Responses::new(Ceilings::default().response_bytes);
    let room = responses.room_for_result(&json!(1), &Era::Handshake);
    let registry = Registry::for_tier(Tier::Readonly);
    let cold_ctx = context(socket, None, room);
    let warm_ctx = context(
        socket,
        Some(Arc::new(PaneCache::new(DEFAULT_MAX_BYTES))),
        room,
    );
    let mut sink = Sink::new()?;
    let panes = fixture.shape.panes;
    let (whole, cut) = (big(panes, lines, PER_PANE), big(panes, lines, PER_PANE_CUT));
    // Prime the cache.
    call(&registry, &warm_ctx, &whole, &responses, &mut sink)?;

    let (mut answers, mut cut_answers) = (Answers::new(), Answers::new());
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        answers.run(&cold_ctx, &whole, &responses, &mut sink)?;
        cut_answers.run(&cold_ctx, &cut, &responses, &mut sink)?;
        cold.push(call(&registry, &cold_ctx, &whole, &responses, &mut sink)?);
        warm.push(call(&registry, &warm_ctx, &whole, &responses, &mut sink)?);
    }
    let (cold, warm) = (median(&mut cold), median(&mut warm));
    Ok(BigBench {
        lines: answers.lines,
        answer_bytes: answers.bytes,
        answer_ms: ms(median(&mut answers.own)),
        generic_answer_ms: ms(median(&mut answers.generic)),
        cut_lines: cut_answers.lines,
        cut_answer_bytes: cut_answers.bytes,
        cut_answer_ms: ms(median(&mut cut_answers.own)),
        generic_cut_answer_ms: ms(median(&mut cut_answers.generic)),
        identical: answers.identical && cut_answers.identical,
        cold_ms: ms(cold),
        warm_ms: ms(warm),
        ratio_warm: if cold.is_zero() {
            0.0
        } else {
            (warm.as_secs_f64() / cold.as_secs_f64() * 1e3).round() / 1e3
        },
    })
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

/// The table lines of the big-answer section.
pub fn print(b: &BigBench) {
    println!();
    println!("big answers (in-process, median; search end to first byte written):");
    println!(
        "  {:>5} lines, {:>7} bytes          {:>7.2} ms  (encode whole, cut, encode again: {:.2} ms)",
        b.lines, b.answer_bytes, b.answer_ms, b.generic_answer_ms
    );
    println!(
        "  {:>5} lines, cut to {:>7} bytes   {:>7.2} ms  (encode whole, cut, encode again: {:.2} ms)",
        b.cut_lines, b.cut_answer_bytes, b.cut_answer_ms, b.generic_cut_answer_ms
    );
    println!(
        "  the big search repeated, cache warm {:>7.1} ms  {:.3}x cold ({:.1} ms); both encoders wrote the same bytes: {}",
        b.warm_ms, b.ratio_warm, b.cold_ms, b.identical
    );
}

/// The big-answer section as Markdown.
pub fn markdown(b: &BigBench) -> String {
    format!(
        "| big answer, in-process | lines | bytes | search end to first byte | the generic encoder, same run |\n\
         |---|---|---|---|---|\n\
         | under the ceiling | {} | {} | {:.2} ms | {:.2} ms |\n\
         | cut to the ceiling | {} | {} | {:.2} ms | {:.2} ms |\n\n\
         | the big search, whole call | median | x cold |\n|---|---|---|\n\
         | cold (no cache) | {:.1} ms | 1 |\n\
         | repeated, cache warm | {:.1} ms | {:.3} |\n\n\
         Both encoders wrote the same bytes on every run: {}.\n",
        b.lines,
        b.answer_bytes,
        b.answer_ms,
        b.generic_answer_ms,
        b.cut_lines,
        b.cut_answer_bytes,
        b.cut_answer_ms,
        b.generic_cut_answer_ms,
        b.cold_ms,
        b.warm_ms,
        b.ratio_warm,
        b.identical
    )
}
