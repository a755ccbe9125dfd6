//! The soak's client: one round of every kind of call, each answer checked
//! against tmux (a direct capture) and against what the churn did.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::churn::{is_stable, State, World};
use crate::common::Serve;
use serde_json::{json, Value};

/// How long any answer may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// Slots whose screens are subscribed (stable, in three sessions).
const WATCHED: [usize; 3] = [0, 52, 104];

/// What the soak saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub rounds: u32,
    pub calls: u32,
    tools: BTreeMap<String, u32>,
    pub updates: u32,
    pub list_changed: u32,
    /// Outcomes on churned panes other than a plain answer, by kind.
    churn_outcomes: BTreeMap<String, u32>,
    pub slowest: (Duration, String),
    pub worst_ping: Duration,
    /// Waits (watch_panes too) that timed out though their pane kept
    /// printing.
    pub missed: Vec<String>,
}

impl Tally {
    pub fn by_tool(&self) -> String {
        let parts: Vec<String> = self.tools.iter().map(|(t, n)| format!("{t} {n}")).collect();
        parts.join(", ")
    }

    pub fn churn_outcomes(&self) -> String {
        let parts: Vec<String> = self
            .churn_outcomes
            .iter()
            .map(|(t, n)| format!("{t}: {n}"))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join("; ")
        }
    }
}

/// A line a pane prints: `tick S G N`, `fill S G N` or `banner-RUN-S-G`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Tick { slot: usize, gen: u32, n: u64 },
    Fill { slot: usize, gen: u32 },
    Banner { slot: usize, gen: u32 },
}

impl Line {
    fn parse(run: &str, text: &str) -> Option<Line> {
        if let Some(rest) = text.strip_prefix(&format!("banner-{run}-")) {
            let (slot, gen) = rest.split_once('-')?;
            return Some(Line::Banner {
                slot: slot.parse().ok()?,
                gen: gen.parse().ok()?,
            });
        }
        let words: Vec<&str> = text.split(' ').collect();
        let [kind, slot, gen, n] = words[..] else {
            return None;
        };
        let (slot, gen, n) = (slot.parse().ok()?, gen.parse().ok()?, n.parse().ok()?);
        match kind {
            "tick" => Some(Line::Tick { slot, gen, n }),
            "fill" => Some(Line::Fill { slot, gen }),
            _ => None,
        }
    }

    fn slot_gen(self) -> (usize, u32) {
        match self {
            Line::Tick { slot, gen, .. }
            | Line::Fill { slot, gen }
            | Line::Banner { slot, gen } => (slot, gen),
        }
    }
}

pub struct Client<'a> {
    world: &'a World,
    s: &'a mut Serve,
    tally: Tally,
    shell: String,
}

impl<'a> Client<'a> {
    pub fn new(world: &'a World, s: &'a mut Serve) -> Client<'a> {
        let shell = world
            .tmux
            .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
            .unwrap()
            .trim()
            .to_owned();
        Client {
            world,
            s,
            tally: Tally::default(),
            shell,
        }
    }

    fn pane(&self, slot: usize) -> String {
        self.world.lock().slots[slot].pane.clone()
    }

    fn watched_uri(&self, k: usize) -> String {
        format!(
            "tmux://pane/{}/screen",
            self.pane(WATCHED[k % WATCHED.len()])
                .trim_start_matches('%')
        )
    }

    /// Subscribes to three stable screens and the session list.
    pub fn subscribe(&mut self) {
        let mut uris: Vec<String> = (0..WATCHED.len()).map(|k| self.watched_uri(k)).collect();
        uris.push("tmux://sessions".into());
        for uri in uris {
            let r = self.s.request("resources/subscribe", json!({ "uri": uri }));
            assert!(r.get("error").is_none(), "subscribe {uri}: {r}");
        }
    }

    pub fn finish(self) -> Tally {
        self.tally
    }

    /// One round: two waits run while everything else is asked and checked.
    pub fn round(&mut self) {
        let k = self.tally.rounds as usize;
        let stable: Vec<usize> = (0..self.world.lock().slots.len())
            .filter(|s| is_stable(*s))
            .collect();
        let pick = |i: usize| stable[(k * 7 + i * 13) % stable.len()];
        let wait = self.start_wait("wait_for_text", pick(0));
        let watch = self.start_wait("watch_panes", pick(1));
        self.ping();
        self.search_banners(k);
        self.search_screens();
        self.capture_stable(pick(2));
        self.capture_churned(k);
        self.run_command(k);
        self.read_resource(k);
        self.finish_wait(wait);
        self.finish_wait(watch);
        self.take_notifications();
        self.assert_one_client();
        self.tally.rounds += 1;
    }

    fn count(&mut self, tool: &str, took: Duration) {
        self.tally.calls += 1;
        *self.tally.tools.entry(tool.to_owned()).or_default() += 1;
        if took > self.tally.slowest.0 {
            self.tally.slowest = (took, tool.to_owned());
        }
    }

    /// The answer to a request, waited for as long as a loaded machine
    /// may need (the harness's own limit is 15 s).
    fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.s.fresh_id();
        self.s
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.s.response(&id, ANSWER_WITHIN)
    }

    /// A tool call's `result` (a protocol error fails the soak).
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let started = Instant::now();
        let r = self.ask("tools/call", json!({"name": tool, "arguments": args}));
        self.count(tool, started.elapsed());
        assert!(
            r.get("error").is_none(),
            "{tool} {args}: protocol error {r}"
        );
        r["result"].clone()
    }

    fn call_ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone());
        assert_eq!(r["isError"], false, "{tool} {args}: {r}");
        r["structuredContent"].clone()
    }

    fn ping(&mut self) {
        let started = Instant::now();
        let r = self.ask("ping", json!({}));
        assert_eq!(r["result"], json!({}), "{r}");
        self.tally.worst_ping = self.tally.worst_ping.max(started.elapsed());
    }

    fn outcome(&mut self, what: String) {
        *self.tally.churn_outcomes.entry(what).or_default() += 1;
    }

    /// The slot a pane id was given to; every pane panescan names must be one.
    fn slot_of(&self, st: &State, pane: &Value) -> usize {
        let pane = pane.as_str().unwrap_or_default();
        *st.pane_slot
            .get(pane)
            .unwrap_or_else(|| panic!("panescan named a pane the soak never made: {pane}"))
    }

    /// A line panescan says `slot` printed: of that slot, of a generation
    /// it has had.
    fn check_line(&self, st: &State, slot: usize, text: &str, what: &str) -> Line {
        let line = Line::parse(&self.world.run, text)
            .unwrap_or_else(|| panic!("{what}: a line no pane printed: {text:?}"));
        let (s, g) = line.slot_gen();
        assert_eq!(s, slot, "{what}: {text:?} attributed to slot {slot}'s pane");
        assert!(
            g <= st.slots[slot].gen,
            "{what}: {text:?} from a generation slot {slot} never had"
        );
        line
    }

    /// Every banner in every history: each hit in its own pane, every
    /// stable pane found, one hit's line number where tmux has it.
    fn search_banners(&mut self, k: usize) {
        let started = Instant::now();
        let sc = self.call_ok(
            "search_panes",
            json!({"pattern": format!("banner-{}-", self.world.run), "match_case": true,
                   "scrollback_lines": 100_000, "limit": 250, "max_matches_per_pane": 3,
                   "max_matches": 1000}),
        );
        let st = self.world.snapshot();
        assert_eq!(sc["truncated"], false, "{}", head(&sc));
        assert_eq!(sc["matches_truncated"], false, "{}", head(&sc));
        let mut found = Vec::new();
        for m in sc["matches"].as_array().unwrap() {
            let slot = self.slot_of(&st, &m["pane_id"]);
            for l in m["lines"].as_array().unwrap() {
                let text = l["text"].as_str().unwrap();
                self.check_line(&st, slot, text, "search_panes (history)");
                if is_stable(slot) {
                    found.push((slot, m["pane_id"].clone(), l["line"].as_i64().unwrap()));
                }
            }
        }
        self.churn_failures(&st, &sc, "search_panes");
        let missing: Vec<usize> = (0..st.slots.len())
            .filter(|s| is_stable(*s) && !found.iter().any(|f| f.0 == *s))
            .collect();
        assert!(
            missing.is_empty(),
            "stable slots without a banner hit: {missing:?}"
        );
        let (slot, pane, line) = found[k % found.len()].clone();
        self.assert_line_at(slot, pane.as_str().unwrap(), line, started.elapsed());
    }

    /// The line numbered `line` a while ago shows the banner: at that
    /// number or above it by at most the ticks printed since.
    fn assert_line_at(&self, slot: usize, pane: &str, line: i64, since: Duration) {
        let slack = 5 + 2 * since.as_secs() as i64;
        let text = self
            .world
            .tmux
            .run_ok([
                "capture-pane",
                "-p",
                "-J",
                "-S",
                &(line - slack).to_string(),
                "-E",
                &line.to_string(),
                "-t",
                pane,
            ])
            .unwrap();
        let banner = self.world.banner(slot, 0);
        assert!(
            text.lines().any(|l| l.trim_end() == banner),
            "{banner} is not at line {line} of {pane} (or {slack} above):\n{text}"
        );
    }

    /// Failed panes: only churned ones, for a reason that says the pane went.
    fn churn_failures(&mut self, st: &State, sc: &Value, tool: &str) {
        for f in sc["failures"].as_array().into_iter().flatten() {
            let slot = self.slot_of(st, &f["pane_id"]);
            let error = f["error"].as_str().unwrap_or_default();
            assert!(!is_stable(slot), "{tool}: a stable pane failed: {f}");
            self.outcome(format!("{tool} failures row \"{}\"", shape(error)));
        }
    }

    /// The screen of every pane: the tick lines each shows are its own.
    fn search_screens(&mut self) {
        let sc = self.call_ok(
            "search_panes",
            json!({"patterns": ["^tick [0-9]+ [0-9]+ [0-9]+$"], "regex": true, "match_case": true,
                   "limit": 250, "max_matches_per_pane": 2}),
        );
        let st = self.world.snapshot();
        assert_eq!(sc["matches_truncated"], false, "{}", head(&sc));
        let mut stable = 0;
        for m in sc["matches"].as_array().unwrap() {
            let slot = self.slot_of(&st, &m["pane_id"]);
            stable += usize::from(is_stable(slot));
            for l in m["lines"].as_array().unwrap() {
                let line = self.check_line(&st, slot, l["text"].as_str().unwrap(), "screens");
                assert!(matches!(line, Line::Tick { .. }), "{line:?}");
            }
        }
        self.churn_failures(&st, &sc, "search_panes");
        let want = (0..st.slots.len()).filter(|s| is_stable(*s)).count();
        assert_eq!(stable, want, "stable panes with ticks on screen");
    }

    /// A stable pane's last 40 history lines and screen: a block of what
    /// tmux shows after, the ticks in order.
    fn capture_stable(&mut self, slot: usize) {
        let pane = self.pane(slot);
        let sc = self.call_ok(
            "capture_pane",
            json!({"pane_id": pane, "start": -40, "join_wrapped": true}),
        );
        let direct = self
            .world
            .tmux
            .run_ok(["capture-pane", "-p", "-J", "-S", "-300", "-t", &pane])
            .unwrap();
        let got = trimmed_lines(sc["text"].as_str().unwrap());
        let all = trimmed_lines(&direct);
        assert!(
            got.len() > 20 && all.windows(got.len()).any(|w| w == got.as_slice()),
            "capture_pane of {pane} is not a block of tmux's own capture:\n{}\n---\n{direct}",
            got.join("\n")
        );
        self.assert_ticks_in_order(slot, &got, "capture_pane");
    }

    fn assert_ticks_in_order(&self, slot: usize, lines: &[String], what: &str) {
        let st = self.world.snapshot();
        let mut last = None;
        for text in lines {
            if let Line::Tick { n, .. } = self.check_line(&st, slot, text, what) {
                if let Some(prev) = last {
                    assert_eq!(n, prev + 1, "{what}: ticks out of order in {lines:?}");
                }
                last = Some(n);
            }
        }
    }

    /// A churned pane: its own lines, or "not found" if it went.
    fn capture_churned(&mut self, k: usize) {
        let slots = self.world.lock().slots.len();
        let slot = (1..slots)
            .map(|i| (k * 31 + i) % slots)
            .find(|s| !is_stable(*s))
            .unwrap();
        let pane = self.pane(slot);
        let r = self.call("capture_pane", json!({"pane_id": pane, "start": -30}));
        let st = self.world.snapshot();
        if r["isError"] == true {
            let text = r["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("not found"), "capture_pane {pane}: {text}");
            self.outcome(format!("capture_pane error \"{}\"", shape(text)));
            return;
        }
        let text = r["structuredContent"]["text"].as_str().unwrap();
        // A new or cleared pane may show blank rows above its lines.
        for text in trimmed_lines(text).iter().filter(|l| !l.is_empty()) {
            self.check_line(&st, slot, text, "capture_pane (churned)");
        }
    }

    fn run_command(&mut self, k: usize) {
        let sc = self.call_ok(
            "run_command",
            json!({"pane_id": self.shell, "command": format!("echo soak-run-{k}-$(({k}*7))"),
                   "timeout_ms": 30_000}),
        );
        assert_eq!(sc["exit_status"], 0, "{sc}");
        assert_eq!(sc["output"], format!("soak-run-{k}-{}\n", k * 7), "{sc}");
    }

    /// A subscribed screen read: its own ticks, in order.
    fn read_resource(&mut self, k: usize) {
        let uri = self.watched_uri(k);
        let started = Instant::now();
        let r = self.ask("resources/read", json!({ "uri": uri }));
        self.count("resources/read", started.elapsed());
        let text = r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("resources/read {uri}: {r}"));
        let lines = trimmed_lines(text);
        assert!(lines.len() > 10, "{uri}: {text:?}");
        self.assert_ticks_in_order(WATCHED[k % WATCHED.len()], &lines, "resources/read");
    }

    /// The last tick a stable pane shows now.
    fn last_tick(&self, slot: usize) -> u64 {
        let text = self
            .world
            .tmux
            .run_ok(["capture-pane", "-p", "-t", &self.pane(slot)])
            .unwrap();
        text.lines()
            .filter_map(|l| match Line::parse(&self.world.run, l.trim_end()) {
                Some(Line::Tick { n, .. }) => Some(n),
                _ => None,
            })
            .next_back()
            .unwrap_or(0)
    }

    /// Starts a wait for the next tick of a stable pane.
    fn start_wait(&mut self, tool: &'static str, slot: usize) -> Wait {
        let before = self.last_tick(slot);
        let pattern = format!("^tick {slot} 0 [0-9]+$");
        let mut args = json!({"patterns": [pattern], "regex": true, "match_case": true,
                              "timeout_ms": 30_000});
        if tool == "wait_for_text" {
            args["pane_id"] = json!(self.pane(slot));
        }
        let id = self.s.fresh_id();
        self.s
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
        Wait {
            tool,
            slot,
            id,
            before,
            started: Instant::now(),
        }
    }

    /// The wait found a tick printed after it started, in its own pane.
    fn finish_wait(&mut self, w: Wait) {
        let r = self.s.response(&w.id, ANSWER_WITHIN);
        self.count(w.tool, w.started.elapsed());
        assert!(r.get("error").is_none(), "{}: {r}", w.tool);
        let sc = &r["result"]["structuredContent"];
        assert_eq!(r["result"]["isError"], false, "{}: {r}", w.tool);
        if sc["timed_out"] == true {
            // Counted, and failed at the end once the figures are out.
            let pane = self.pane(w.slot);
            let now = self.last_tick(w.slot);
            self.tally.missed.push(format!(
                "{} on {pane} (slot {}): ticks {}..{now} printed, none seen in {:?}",
                w.tool,
                w.slot,
                w.before + 1,
                w.started.elapsed()
            ));
            return;
        }
        let (pane, text) = if w.tool == "wait_for_text" {
            assert_eq!(sc["found"], true, "{sc}");
            (
                sc["pane_id"].clone(),
                sc["text"].as_str().unwrap().to_owned(),
            )
        } else {
            let hit = &sc["hits"][0];
            (
                hit["pane_id"].clone(),
                hit["text"].as_str().unwrap().to_owned(),
            )
        };
        assert_eq!(pane, json!(self.pane(w.slot)), "{}: {sc}", w.tool);
        let st = self.world.snapshot();
        let Line::Tick { n, .. } = self.check_line(&st, w.slot, &text, w.tool) else {
            panic!("{}: {text}", w.tool);
        };
        let after = self.last_tick(w.slot);
        assert!(
            n > w.before && n <= after,
            "{}: tick {n}, printed before the call ({}) or not yet ({after})",
            w.tool,
            w.before
        );
    }

    /// Notifications that came meanwhile: updates of the subscribed screens.
    fn take_notifications(&mut self) {
        for m in self.s.take_pending() {
            match m["method"].as_str() {
                Some("notifications/resources/updated") => self.tally.updates += 1,
                Some("notifications/resources/list_changed") => self.tally.list_changed += 1,
                Some(_) => {}
                None => panic!("an answer nobody waited for: {m}"),
            }
        }
    }

    /// panescan's control client at most, however many waits ran.
    fn assert_one_client(&self) {
        let clients = self
            .world
            .tmux
            .run_ok(["list-clients", "-F", "#{client_pid}"])
            .unwrap();
        assert!(clients.lines().count() <= 1, "clients: {clients}");
    }
}

/// A call in flight.
struct Wait {
    tool: &'static str,
    slot: usize,
    id: Value,
    before: u64,
    started: Instant,
}

/// Lines without trailing spaces, trailing empty lines dropped.
fn trimmed_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// An error text with pane ids and numbers as `#`, to count kinds.
fn shape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out.chars().take(120).collect()
}

fn head(v: &Value) -> String {
    v.to_string().chars().take(2000).collect()
}
