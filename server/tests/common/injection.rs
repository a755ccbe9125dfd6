//! Injection test material: marker files an injected command would leave,
//! payloads that would run a command if they reached a tmux command line,
//! a format or a shell, and a server seeded with hostile option and title
//! values. Used by every `harden_injection*` test file.

use panescan::testing::private_server::PrivateServer;

use super::{Serve, TempDir};

/// A temp dir where injected commands would leave markers.
pub struct Markers {
    pub dir: TempDir,
}

impl Markers {
    pub fn new(label: &str) -> Markers {
        Markers {
            dir: TempDir::new(label),
        }
    }

    /// A shell command that leaves marker `name`.
    pub fn touch(&self, name: &str) -> String {
        format!("touch {}/{name}", self.dir.0.display())
    }

    pub fn found(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Waits for tmux's `#()` jobs (they run in the background: until one
    /// started now has run), then requires no marker.
    pub fn assert_none(&self, tmux: &PrivateServer, what: &str) {
        super::tmux_jobs_settled(tmux, &self.dir.0);
        let found = self.found();
        assert!(found.is_empty(), "{what}: injected commands ran: {found:?}");
    }
}

/// Payloads that would each run `cmd` if they reached a tmux command line,
/// a tmux format or a shell unescaped.
pub fn payloads(cmd: &str) -> Vec<String> {
    vec![
        format!("x;run-shell \"{cmd}\""),
        format!("x ; run-shell '{cmd}'"),
        format!("x\nrun-shell \"{cmd}\""),
        format!("x\rrun-shell \"{cmd}\""),
        format!("#({cmd})"),
        format!("##({cmd})"),
        format!("#{{E:@evil}}#({cmd})"),
        format!("\";run-shell \"{cmd}\";\""),
        format!("';run-shell '{cmd}';'"),
        format!("\\\";run-shell \\\"{cmd}\\\";\\\""),
        format!("$({cmd})"),
        format!("`{cmd}`"),
        format!("-F#({cmd})"),
        format!("-t#({cmd})"),
        format!("{{run-shell \"{cmd}\"}}"),
        format!("%if #({cmd})\n%endif"),
        format!("main:0.0;run-shell \"{cmd}\""),
        format!("=main:;run-shell \"{cmd}\""),
        format!("\\\n run-shell \"{cmd}\""),
        format!("\u{0};run-shell \"{cmd}\""),
    ]
}

/// A private server where an option and a pane title hold `#()` (what a
/// user config or a hostile program in a pane can do).
pub fn hostile_server(label: &str, m: &Markers) -> (PrivateServer, Serve) {
    let (tmux, s) = Serve::with_tmux(label);
    tmux.run_ok([
        "set-option",
        "-g",
        "@evil",
        &format!("#({})", m.touch("via-option")),
    ])
    .unwrap();
    tmux.run_ok([
        "select-pane",
        "-t",
        "main:0.0",
        "-T",
        // select-pane -T expands formats: `##` stores a literal `#`.
        &format!("##({})", m.touch("via-title")),
    ])
    .unwrap();
    (tmux, s)
}

/// The server and its session survived (no kill-server, kill-session...).
pub fn assert_whole(tmux: &PrivateServer) {
    let sessions = tmux
        .run_ok(["list-sessions", "-F", "#{session_name}"])
        .unwrap();
    assert_eq!(sessions.trim(), "main", "sessions now: {sessions}");
    let clients = tmux
        .run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap();
    assert!(clients.lines().count() <= 1, "clients: {clients}");
}
