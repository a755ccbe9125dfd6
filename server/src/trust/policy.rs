//! The policy file: `deny`, `ask` and `allow` rules read from TOML, and
//! the decision for one call (pure: no tmux, no I/O; fuzzed through
//! [`Policy::parse`] and [`Policy::judge`]).
//!
//! What must hold: deny beats ask beats allow, whatever the order of the
//! rules in the file; a call no rule names gets the policy's `default`
//! (`tier`: the tier decides, as without a policy). A `command` rule sees
//! every form of the text that would reach the shell (`candidates`):
//! each line, each command of a line split at `;`, `&&`, `|`, `$(`..., with
//! whitespace collapsed and quotes and backslashes removed, matched
//! case-insensitively. A deny or ask rule applies when any form matches;
//! an allow rule only when every command of every line matches (an allowed
//! `cargo build` followed by `; rm -rf ~` is not allowed). Every glob and
//! regex is bounded: the file's size, the rule count, each pattern's
//! length, and the engine's own grammar limits.

use globset::{Glob, GlobSet, GlobSetBuilder};
use panescan_engine::{Matcher, PatternOptions};
use serde::Deserialize;

use crate::config::Tier;

/// The largest policy file read, in bytes: a policy is written by a
/// person; a bigger file is a mistake or an attack on the parser.
pub const MAX_POLICY_BYTES: usize = 64 * 1024;
/// Rules in all three lists together.
pub const MAX_RULES: usize = 256;
/// Globs in one rule's `tools`, `sessions` or `cwd`.
const MAX_GLOBS: usize = 64;
/// The longest glob, in bytes.
const MAX_GLOB_BYTES: usize = 256;

/// What a rule, or the policy's default, says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Run it (ranks lowest).
    Allow,
    /// Run it only when a person approves.
    Ask,
    /// Refuse it (ranks highest).
    Deny,
}

impl Kind {
    /// As the audit log and messages write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Ask => "ask",
            Kind::Deny => "deny",
        }
    }
}

/// What a call no rule names gets (top-level `default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Fallback {
    /// The tier decides, as without a policy.
    #[default]
    Tier,
    /// Mutating and destructive calls are asked; reads run.
    Ask,
    /// Mutating and destructive calls are refused; reads run.
    Deny,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default: Fallback,
    #[serde(default)]
    deny: Vec<RuleText>,
    #[serde(default)]
    ask: Vec<RuleText>,
    #[serde(default)]
    allow: Vec<RuleText>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    tools: Vec<String>,
    #[serde(default)]
    sessions: Option<Vec<String>>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    cwd: Option<Vec<String>>,
}

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    kind: Kind,
    /// `deny[0]`, `allow[2]`: how messages and the audit log name it.
    name: String,
    tools: GlobSet,
    sessions: Option<GlobSet>,
    command: Option<Matcher>,
    cwd: Option<GlobSet>,
}

/// A loaded policy.
#[derive(Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    fallback: Fallback,
}

/// What the gate knows of one call.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    /// The tool's name.
    pub tool: String,
    /// The tool's tier.
    pub tier: Tier,
    /// The sessions the target is in (every placement of its window;
    /// empty: none known or none targeted).
    pub sessions: Vec<String>,
    /// The target pane's current path.
    pub cwd: Option<String>,
    /// The lines that would reach a shell, each as one candidate group
    /// (`None`: the call types nothing).
    pub lines: Option<Vec<String>>,
    /// The pane's input line as its screen shows it, with what this call
    /// types before its first submit: deny and ask rules see it too (a
    /// pane may already hold half a line); it starts with the prompt, so
    /// each part after a prompt's end (`$ `, `# `, `% `, `> `) is tried
    /// as well.
    pub seen: Vec<String>,
    /// The text could not be told (edited with cursor keys, unread): a
    /// command rule that could apply decides as if it matched for deny and
    /// ask, and never for allow.
    pub text_unknown: bool,
}

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `None`: no rule named it and the default is the tier.
    pub kind: Option<Kind>,
    /// The rule that decided (`None`: the default).
    pub rule: Option<String>,
}

impl Policy {
    /// Reads a policy from TOML text; the error says where and why.
    pub fn parse(text: &str) -> Result<Policy, String> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(format!(
                "the policy is {} bytes, over the limit of {MAX_POLICY_BYTES}",
                text.len()
            ));
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let count = file.deny.len() + file.ask.len() + file.allow.len();
        if count > MAX_RULES {
            return Err(format!(
                "the policy has {count} rules, over the limit of {MAX_RULES}"
            ));
        }
        let mut rules = Vec::with_capacity(count);
        for (kind, list) in [
            (Kind::Deny, &file.deny),
            (Kind::Ask, &file.ask),
            (Kind::Allow, &file.allow),
        ] {
            for (i, text) in list.iter().enumerate() {
                let name = format!("{}[{i}]", kind.as_str());
                rules.push(compile(kind, name, text)?);
            }
        }
        Ok(Policy {
            rules,
            fallback: file.default,
        })
    }

    /// How many rules it holds.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Whether any rule could name `tool`, and whether one that does
    /// needs the target's sessions or cwd, or the typed text: what the gate
    /// must find out before [`Policy::judge`].
    pub fn needs(&self, tool: &str) -> Needs {
        let mut needs = Needs::default();
        for r in self.rules.iter().filter(|r| r.tools.is_match(tool)) {
            needs.named = true;
            needs.place |= r.sessions.is_some() || r.cwd.is_some();
            needs.text |= r.command.is_some();
            needs.without_text |= r.command.is_none();
        }
        needs
    }

    /// The decision for `facts`: the strongest kind among the rules that
    /// apply, else the default.
    pub fn judge(&self, facts: &Facts) -> Decision {
        let cands = facts
            .lines
            .as_deref()
            .map(|lines| candidates(lines, &facts.seen));
        let mut best: Option<&Rule> = None;
        for rule in &self.rules {
            if best.is_some_and(|b| b.kind >= rule.kind) {
                continue;
            }
            if rule.applies(facts, cands.as_ref()) {
                best = Some(rule);
            }
        }
        if let Some(rule) = best {
            return Decision {
                kind: Some(rule.kind),
                rule: Some(rule.name.clone()),
            };
        }
        let kind = match (self.fallback, facts.tier) {
            (_, Tier::Readonly) | (Fallback::Tier, _) => None,
            (Fallback::Ask, _) => Some(Kind::Ask),
            (Fallback::Deny, _) => Some(Kind::Deny),
        };
        Decision { kind, rule: None }
    }
}

/// What [`Policy::needs`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Some rule names the tool.
    pub named: bool,
    /// A rule naming it has `sessions` or `cwd`.
    pub place: bool,
    /// A rule naming it has `command`.
    pub text: bool,
    /// A rule naming it has no `command` (the only kind that can apply to
    /// a tool that types nothing).
    pub without_text: bool,
}

impl Rule {
    fn applies(&self, facts: &Facts, cands: Option<&Candidates>) -> bool {
        if !self.tools.is_match(&facts.tool) {
            return false;
        }
        // Deny and ask take any session of the target; allow needs all.
        let strict = self.kind == Kind::Allow;
        if let Some(globs) = &self.sessions {
            let hits = facts.sessions.iter().filter(|s| globs.is_match(s)).count();
            let ok = if strict {
                hits > 0 && hits == facts.sessions.len()
            } else {
                hits > 0
            };
            if !ok {
                return false;
            }
        }
        if let Some(globs) = &self.cwd {
            if !facts.cwd.as_deref().is_some_and(|c| globs.is_match(c)) {
                return false;
            }
        }
        let Some(matcher) = &self.command else {
            return true;
        };
        if facts.text_unknown {
            return !strict;
        }
        let Some(cands) = cands else {
            return false;
        };
        let hit = |text: &str| matcher.matching_pattern(text.as_bytes()).is_some();
        if strict {
            !cands.commands.is_empty() && cands.commands.iter().all(|c| hit(c))
        } else {
            cands.any.iter().any(|c| hit(c))
        }
    }
}

fn compile(kind: Kind, name: String, text: &RuleText) -> Result<Rule, String> {
    let tools = globs(&name, "tools", &text.tools)?;
    if text.tools.is_empty() {
        return Err(format!("{name}: tools is empty; name a tool or \"*\""));
    }
    let sessions = text
        .sessions
        .as_ref()
        .map(|s| globs(&name, "sessions", s))
        .transpose()?;
    let cwd = text
        .cwd
        .as_ref()
        .map(|s| globs(&name, "cwd", s))
        .transpose()?;
    let command = match &text.command {
        Some(re) => Some(
            Matcher::new(
                &[re],
                PatternOptions {
                    regex: true,
                    match_case: false,
                },
            )
            .map_err(|e| format!("{name}: command: {e}"))?,
        ),
        None => None,
    };
    Ok(Rule {
        kind,
        name,
        tools,
        sessions,
        command,
        cwd,
    })
}

fn globs(rule: &str, field: &str, list: &[String]) -> Result<GlobSet, String> {
    if list.len() > MAX_GLOBS {
        return Err(format!(
            "{rule}: {field} has {} globs, over the limit of {MAX_GLOBS}",
            list.len()
        ));
    }
    let mut set = GlobSetBuilder::new();
    for g in list {
        if g.len() > MAX_GLOB_BYTES {
            return Err(format!(
                "{rule}: {field}: a glob of {} bytes, over the limit of {MAX_GLOB_BYTES}",
                g.len()
            ));
        }
        set.add(Glob::new(g).map_err(|e| format!("{rule}: {field}: {e}"))?);
    }
    set.build().map_err(|e| format!("{rule}: {field}: {e}"))
}

/// Every form of some lines a command rule is tried on.
#[derive(Debug, Default)]
struct Candidates {
    /// Deny and ask: any of these matching is enough.
    any: Vec<String>,
    /// Allow: each of these must match.
    commands: Vec<String>,
}

/// The forms of `lines` (each a line that reaches the shell): lines with
/// a trailing `\` joined to the next, whitespace collapsed, then the line
/// itself, each command in it, and both again without quotes and
/// backslashes (`r''m`, `"rm"` and `\rm` run rm).
fn candidates(lines: &[String], seen: &[String]) -> Candidates {
    let mut out = Candidates::default();
    for line in seen {
        let mut forms = vec![line.clone()];
        for marker in ["$ ", "# ", "% ", "> "] {
            forms.extend(
                line.match_indices(marker)
                    .map(|(i, _)| line[i + 2..].to_owned()),
            );
        }
        for form in forms {
            for form in [collapse(&form), collapse(&unquote(&form))] {
                out.any.extend(split_commands(&form));
                out.any.push(form);
            }
        }
    }
    let mut logical = Vec::new();
    let mut joined = String::new();
    for line in lines.iter().flat_map(|l| l.split(['\n', '\r'])) {
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            continue;
        }
        joined.push_str(line);
        logical.push(std::mem::take(&mut joined));
    }
    if !joined.is_empty() {
        logical.push(joined);
    }
    for line in logical {
        for form in [collapse(&line), collapse(&unquote(&line))] {
            let commands: Vec<String> = split_commands(&form);
            out.any.push(form.clone());
            out.any.extend(commands.iter().cloned());
            out.commands.extend(commands);
        }
    }
    out.commands.dedup();
    out
}

/// Runs of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text without the quotes and backslashes a shell removes.
fn unquote(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// The commands of one line: split where a shell starts another command
/// (`;`, `&`, `|`, `(`, `)`, `` ` ``, `{`, `}`, and `$(`), each trimmed,
/// empty ones dropped.
fn split_commands(line: &str) -> Vec<String> {
    line.split([';', '&', '|', '(', ')', '`', '{', '}'])
        .map(|c| c.trim().trim_end_matches('$').trim())
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE: &str = r#"
[[deny]]
tools = ["run_command", "send_keys", "paste_text"]
command = "rm\\s+-[a-z]*r[a-z]*f"

[[ask]]
tools = ["run_command"]
command = "^git push"

[[allow]]
tools = ["run_command"]
command = "^cargo "
sessions = ["agent-*"]
"#;

    fn facts(tool: &str, session: &str, line: &str) -> Facts {
        Facts {
            tool: tool.into(),
            tier: Tier::Mutating,
            sessions: vec![session.into()],
            cwd: Some("/home/u/src".into()),
            lines: Some(vec![line.into()]),
            seen: Vec::new(),
            text_unknown: false,
        }
    }

    fn kind(p: &Policy, f: &Facts) -> Option<Kind> {
        p.judge(f).kind
    }

    #[test]
    fn deny_beats_ask_beats_allow() {
        let p = Policy::parse(ISSUE).unwrap();
        let f = facts("run_command", "agent-1", "cargo build && rm -rf /");
        assert_eq!(p.judge(&f).rule.as_deref(), Some("deny[0]"));
        let f = facts("run_command", "agent-1", "git push origin");
        assert_eq!(kind(&p, &f), Some(Kind::Ask));
        let f = facts("run_command", "agent-1", "cargo build");
        assert_eq!(p.judge(&f).rule.as_deref(), Some("allow[0]"));
        let f = facts("run_command", "work", "cargo build");
        assert_eq!(kind(&p, &f), None, "outside agent-*: the tier decides");
    }

    #[test]
    fn deny_sees_the_forms_a_shell_runs() {
        let p = Policy::parse(ISSUE).unwrap();
        for line in [
            "rm -rf /tmp/x",
            "RM   -RF /",
            "rm\t-Rvf ~",
            "echo hi; rm -rf /",
            "r''m -rf /",
            "\"rm\" -rf /",
            "\\rm -rf /",
            "x=$(rm -rf /)",
        ] {
            let f = facts("send_keys", "work", line);
            assert_eq!(kind(&p, &f), Some(Kind::Deny), "{line:?}");
        }
        let f = Facts {
            lines: Some(vec!["rm -r\\".into(), "f /".into()]),
            ..facts("paste_text", "work", "")
        };
        assert_eq!(kind(&p, &f), Some(Kind::Deny), "a continued line");
        assert_eq!(kind(&p, &facts("send_keys", "work", "ls -rf")), None);
    }

    #[test]
    fn allow_needs_every_command_to_match() {
        let p = Policy::parse(ISSUE).unwrap();
        for line in ["cargo build; curl x | sh", "cargo t `id`", "cargo b & sh"] {
            let f = facts("run_command", "agent-1", line);
            assert_eq!(kind(&p, &f), None, "{line:?}");
        }
        let f = Facts {
            sessions: vec!["agent-1".into(), "work".into()],
            ..facts("run_command", "agent-1", "cargo build")
        };
        assert_eq!(kind(&p, &f), None, "a window linked into another session");
    }

    #[test]
    fn the_screen_line_is_seen_by_deny() {
        let p = Policy::parse(ISSUE).unwrap();
        let f = Facts {
            seen: vec!["user@host:~$ rm -rf /".into()],
            ..facts("send_keys", "agent-1", "f /")
        };
        assert_eq!(kind(&p, &f), Some(Kind::Deny));
        let p = Policy::parse("[[deny]]\ntools=[\"*\"]\ncommand=\"^sudo \"\n").unwrap();
        let f = Facts {
            seen: vec!["~/src % sudo reboot".into()],
            ..facts("send_keys", "agent-1", "reboot")
        };
        assert_eq!(kind(&p, &f), Some(Kind::Deny), "after the prompt");
    }

    #[test]
    fn unknown_text_is_denied_never_allowed() {
        let p = Policy::parse(ISSUE).unwrap();
        let f = Facts {
            text_unknown: true,
            ..facts("run_command", "agent-1", "cargo build")
        };
        assert_eq!(kind(&p, &f), Some(Kind::Deny));
    }

    #[test]
    fn default_deny_spares_reads() {
        let p = Policy::parse("default = \"deny\"\n[[allow]]\ntools=[\"rename_*\"]\n").unwrap();
        let mut f = facts("kill_pane", "a", "");
        f.lines = None;
        f.tier = Tier::Destructive;
        assert_eq!(p.judge(&f).kind, Some(Kind::Deny));
        f.tool = "rename_window".into();
        assert_eq!(p.judge(&f).kind, Some(Kind::Allow));
        f.tool = "capture_pane".into();
        f.tier = Tier::Readonly;
        assert_eq!(p.judge(&f).kind, None);
    }

    #[test]
    fn broken_files_say_why() {
        for (text, says) in [
            (
                "[[deny]]\ntools=[\"x\"]\ncommand=\"(\"\n",
                "deny[0]: command",
            ),
            ("[[allow]]\ntools=[\"[\"]\n", "allow[0]: tools"),
            ("[[ask]]\ntools=[]\n", "tools is empty"),
            ("[[deny]]\ntool=[\"x\"]\n", "unknown field"),
            ("default = \"maybe\"\n", "default"),
            (
                "[[deny]]\ntools=[\"x\"]\ncommand=\"a{5000}\"\n",
                "deny[0]: command",
            ),
        ] {
            let e = Policy::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        let big = format!("# {}\n", "x".repeat(MAX_POLICY_BYTES));
        assert!(Policy::parse(&big).unwrap_err().contains("limit"));
    }
}
