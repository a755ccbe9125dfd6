//! One tool call through the gate: its facts found, the scope and the
//! policy consulted, a person asked when the decision is `ask`, then (in
//! [`Trust::finish`]) its audit line written and what it typed kept as
//! the pane's pending line.
//!
//! What must hold: a call runs only when [`Trust::admit`] returns no
//! refusal; an `ask` runs only on an explicit approval of that one call
//! (decline, cancel, timeout, a client that cannot ask: refused); every
//! mutating or destructive call, and every denied or asked one, gets one
//! audit line; a broken audit log refuses the calls it would record.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::facts::{self, Place};
use super::policy::{Decision, Facts, Kind};
use super::typed::{self, Line};
use super::{audit, Trust};
use crate::config::Tier;
use crate::tools::context::{ToolContext, ToolError};

/// Tools that touch no pane or session: `--scope-sessions` lets them be.
const UNSCOPED: &[&str] = &["wait_for_channel", "signal_channel", "wait_for_command"];

/// What the person is asked.
#[derive(Debug, Clone)]
pub struct Question {
    /// The sentence shown: tool, pane, session, cwd and the exact text.
    pub message: String,
    /// The call: an approval holds for this tool and these arguments only.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Accepted with approve = true.
    Approved,
    /// Declined, or accepted without approve = true.
    Declined,
    /// Cancelled by the person or the client.
    Cancelled,
    /// No answer in time.
    TimedOut,
    /// Could not be asked; why.
    Unavailable(String),
    /// Not asked yet: answer the call with this result, which asks the
    /// client to ask and call again (2026-07-28 input requests).
    InputRequired(Value),
}

impl Approval {
    fn as_str(&self) -> &'static str {
        match self {
            Approval::Approved => "approved",
            Approval::Declined => "declined",
            Approval::Cancelled => "cancelled",
            Approval::TimedOut => "timed_out",
            Approval::Unavailable(_) => "unavailable",
            Approval::InputRequired(_) => "input_required",
        }
    }
}

/// The client side of a session, as the gate needs it (mcp implements it).
pub trait Asker {
    /// The client's name and version from `initialize` (empty if unknown).
    fn client(&self) -> (String, String);
    /// Asks a person through the client, waiting at most `timeout`.
    fn ask(&self, question: &Question, timeout: std::time::Duration) -> Approval;
}

/// A call that went through [`Trust::admit`].
#[derive(Debug)]
pub struct Admitted {
    /// `Some`: the call must not run; answer with this.
    pub refusal: Option<ToolError>,
    /// `Some`: the call must not run yet; answer with this result (an
    /// input request).
    pub answer: Option<Value>,
    /// The audit record so far (`None`: not audited).
    record: Option<Map<String, Value>>,
    /// Where the call's typing leaves the pane's line.
    pending: Option<(String, Line)>,
    started: Instant,
}

impl Admitted {
    fn pass() -> Admitted {
        Admitted {
            refusal: None,
            answer: None,
            record: None,
            pending: None,
            started: Instant::now(),
        }
    }
}

/// What the gate found for one call.
struct Found {
    place: Place,
    facts: Facts,
    text: Option<String>,
    pending: Option<(String, Line)>,
}

impl Trust {
    /// Decides whether `tool` (of `tier`) may run with `args`, asking
    /// through `asker` when the policy says ask.
    pub fn admit(
        &self,
        ctx: &ToolContext,
        tool: &str,
        tier: Tier,
        args: &Value,
        asker: &dyn Asker,
    ) -> Admitted {
        if !self.is_active() {
            return Admitted::pass();
        }
        let policy = self.current_policy();
        let needs = policy.as_ref().map(|p| p.needs(tool)).unwrap_or_default();
        // A read tool types nothing: only a rule without `command` can
        // name it, and a read tool no such rule names costs nothing here.
        let gated = tier > Tier::Readonly || needs.without_text;
        if !gated {
            return Admitted::pass();
        }
        let found = self.find(ctx, tool, tier, args);
        let mut decision = match &policy {
            Some(p) => p.judge(&found.facts),
            None => Decision {
                kind: None,
                rule: None,
            },
        };
        if let Some(why) = self.out_of_scope(tool, tier, args, &found.place) {
            decision = Decision {
                kind: Some(Kind::Deny),
                rule: Some("scope".into()),
            };
            return self.refuse(tool, tier, asker, found, decision, None, why);
        }
        if self.confirm_destructive
            && tier == Tier::Destructive
            && decision.kind != Some(Kind::Deny)
        {
            decision.kind = Some(Kind::Ask);
            decision
                .rule
                .get_or_insert_with(|| "confirm-destructive".into());
        }
        match decision.kind {
            Some(Kind::Deny) => {
                let why = format!(
                    "refused by the operator's policy ({}): {tool} {}",
                    rule_name(&decision),
                    describe(&found)
                );
                self.refuse(tool, tier, asker, found, decision, None, why)
            }
            Some(Kind::Ask) => self.ask(tool, tier, args, asker, found, decision),
            _ => self.admitted(tool, tier, asker, found, &decision, None),
        }
    }

    /// Writes the call's audit line and keeps its typing; `outcome` is
    /// `None` for success, else the error kind.
    pub fn finish(&self, admitted: Admitted, outcome: Option<&ToolError>) {
        if admitted.refusal.is_none() && admitted.answer.is_none() && outcome.is_none() {
            if let Some((key, line)) = admitted.pending {
                crate::sync::lock(&self.pending).set(&key, line);
            }
        }
        let (Some(audit), Some(mut record)) = (&self.audit, admitted.record) else {
            return;
        };
        let outcome = match outcome.or(admitted.refusal.as_ref()) {
            None if admitted.answer.is_some() => json!("input_required"),
            None => json!("ok"),
            Some(e) => serde_json::to_value(e.kind).unwrap_or(json!("error")),
        };
        record.insert("outcome".into(), outcome);
        let ms = u64::try_from(admitted.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        record.insert("duration_ms".into(), json!(ms));
        let _ = audit.write(&Value::Object(record));
    }

    /// The facts of one call: where it lands, what it types.
    fn find(&self, ctx: &ToolContext, tool: &str, tier: Tier, args: &Value) -> Found {
        // Unreachable server: the tool fails the same way; judged without a place.
        let place = facts::place(ctx, args).unwrap_or_default();
        let mut facts = Facts {
            tool: tool.to_owned(),
            tier,
            sessions: place.sessions.clone(),
            cwd: place.cwd.clone(),
            ..Facts::default()
        };
        if tool == "create_session" {
            facts.sessions = new_session_name(args).into_iter().collect();
        }
        let Some(strokes) = facts::strokes(tool, args) else {
            return Found {
                place,
                facts,
                text: None,
                pending: None,
            };
        };
        let into_line = facts::types_into_line(tool);
        let key = place.pane_key().filter(|_| into_line);
        let before = key
            .as_deref()
            .map(|k| crate::sync::lock(&self.pending).get(k))
            .unwrap_or_default();
        let typed = typed::apply(&before, &strokes);
        let mut lines: Vec<String> = typed.submitted.iter().map(|l| l.text.clone()).collect();
        if lines.is_empty() && !typed.pending.text.is_empty() {
            // Nothing entered yet: judged as what an Enter would run.
            lines.push(typed.pending.text.clone());
        }
        let screen = into_line
            .then(|| facts::screen_line(ctx, args, &place))
            .flatten();
        let model_unknown = typed.submitted.iter().any(|l| l.unknown) || before.unknown;
        facts.text_unknown = typed.unknown_before_submit || (model_unknown && screen.is_none());
        if let Some(screen) = screen {
            let head = typed::apply(&Line::default(), &strokes);
            let first = head.submitted.first().unwrap_or(&head.pending);
            facts.seen.push(format!("{screen}{}", first.text));
        }
        let text = Some(lines.join("\n"));
        facts.lines = (!lines.is_empty()).then_some(lines);
        Found {
            place,
            facts,
            text,
            pending: key.map(|k| (k, typed.pending)),
        }
    }

    /// Why `--scope-sessions` refuses the call (`None`: it may run).
    fn out_of_scope(&self, tool: &str, tier: Tier, args: &Value, place: &Place) -> Option<String> {
        let (globs, text) = self.scope.as_ref()?;
        if tier == Tier::Readonly || UNSCOPED.contains(&tool) {
            return None;
        }
        let scope = text.join(", ");
        let mut names = place.sessions.clone();
        if tool == "create_session" || tool == "rename_session" {
            match new_session_name(args) {
                Some(n) => names.push(n),
                None => {
                    return Some(format!(
                        "refused: {tool} needs a name matching --scope-sessions ({scope})"
                    ))
                }
            }
        }
        if names.is_empty() {
            return Some(format!(
                "refused: {tool} here touches no session within --scope-sessions ({scope}); this server acts only on panes of those sessions"
            ));
        }
        let outside: Vec<&String> = names.iter().filter(|n| !globs.is_match(n)).collect();
        (!outside.is_empty()).then(|| {
            format!(
                "refused: {tool} would touch session {} outside --scope-sessions ({scope})",
                outside
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn ask(
        &self,
        tool: &str,
        tier: Tier,
        args: &Value,
        asker: &dyn Asker,
        found: Found,
        d: Decision,
    ) -> Admitted {
        let question = Question {
            message: format!(
                "Allow {tool} {}? The operator's policy ({}) asks a person to approve this one call.",
                describe(&found),
                rule_name(&d)
            ),
            tool: tool.to_owned(),
            args: args.clone(),
        };
        let approval = asker.ask(&question, self.ask_timeout);
        if approval == Approval::Approved {
            return self.admitted(tool, tier, asker, found, &d, Some(approval));
        }
        if let Approval::InputRequired(result) = &approval {
            let result = result.clone();
            let mut a = self.admitted(tool, tier, asker, found, &d, Some(approval));
            a.answer = Some(result);
            a.pending = None;
            return a;
        }
        let why = match &approval {
            Approval::Unavailable(why) => format!(
                "refused: the operator's policy ({}) needs a person to approve {tool} {}, and {why}",
                rule_name(&d),
                describe(&found)
            ),
            other => format!(
                "refused: a person was asked to approve {tool} ({}) and the answer was {}; do not retry it without asking the user",
                rule_name(&d),
                other.as_str()
            ),
        };
        self.refuse(tool, tier, asker, found, d, Some(approval), why)
    }

    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &self,
        tool: &str,
        tier: Tier,
        asker: &dyn Asker,
        found: Found,
        d: Decision,
        approval: Option<Approval>,
        why: String,
    ) -> Admitted {
        let mut a = self.admitted(tool, tier, asker, found, &d, approval);
        a.refusal = Some(ToolError::refused(why));
        a.pending = None;
        a
    }

    fn admitted(
        &self,
        tool: &str,
        tier: Tier,
        asker: &dyn Asker,
        found: Found,
        d: &Decision,
        approval: Option<Approval>,
    ) -> Admitted {
        let mut a = Admitted::pass();
        if let Some(audit) = &self.audit {
            if audit.is_broken() {
                a.refusal = Some(ToolError::refused(format!(
                    "refused: the audit log {} cannot be written, and no call it records runs unrecorded",
                    audit.path().display()
                )));
            }
            let audited = tier > Tier::Readonly || matches!(d.kind, Some(Kind::Deny | Kind::Ask));
            if audited {
                a.record = Some(record(audit, tool, asker, &found, d, approval.as_ref()));
            }
        }
        a.pending = found.pending;
        a
    }
}

/// The audit record of a call, but for its outcome and duration.
fn record(
    audit: &audit::AuditLog,
    tool: &str,
    asker: &dyn Asker,
    found: &Found,
    d: &Decision,
    approval: Option<&Approval>,
) -> Map<String, Value> {
    let ms = audit::now_ms();
    let (name, version) = asker.client();
    let p = &found.place;
    let mut r = Map::new();
    r.insert("time".into(), json!(audit::rfc3339(ms)));
    r.insert("ts_ms".into(), json!(ms));
    r.insert("client".into(), json!({"name": name, "version": version}));
    r.insert("tool".into(), json!(tool));
    r.insert(
        "targets".into(),
        json!({"pane_id": p.pane, "window_id": p.window, "session": p.session,
               "sessions": found.facts.sessions, "cwd": p.cwd}),
    );
    if let Some(text) = &found.text {
        let (key, value) = audit.text_field(text);
        r.insert(key.into(), value);
    }
    let kind = d.kind.map_or("tier", Kind::as_str);
    r.insert("decision".into(), json!(kind));
    r.insert("rule".into(), json!(d.rule));
    r.insert("approval".into(), json!(approval.map(Approval::as_str)));
    r
}

/// The name `create_session` or `rename_session` gives.
fn new_session_name(args: &Value) -> Option<String> {
    args.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

fn rule_name(d: &Decision) -> String {
    match &d.rule {
        Some(r) => format!("rule {r}"),
        None => "its default".into(),
    }
}

/// The call for a person: pane, session, cwd and the exact text.
fn describe(found: &Found) -> String {
    let p = &found.place;
    let mut parts = Vec::new();
    if let Some(pane) = &p.pane {
        parts.push(format!("in pane {pane}"));
    }
    if !found.facts.sessions.is_empty() {
        parts.push(format!("of session {}", found.facts.sessions.join(", ")));
    }
    if let Some(cwd) = &p.cwd {
        parts.push(format!("(cwd {cwd})"));
    }
    if let Some(text) = &found.text {
        parts.push(format!("typing {text:?}"));
    }
    if found.facts.text_unknown {
        parts.push("(the line was edited with keys whose effect cannot be read: send Enter in a call of its own)".into());
    }
    parts.join(" ")
}
