//! bash, zsh and fish started in a pane with prompt `$ ` and an rc text
//! (GUIDE.md's OSC 133 snippets, or a test's own), for the tests of
//! run_command and the command ledger.

use std::path::Path;

/// A shell the tests start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sh {
    Bash,
    Zsh,
    Fish,
}

/// GUIDE.md's OSC 133 snippet for `shell` (the fenced block whose first
/// line is `# bash (~/.bashrc)`, ...).
pub fn guide_snippet(shell: Sh) -> String {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../GUIDE.md"))
        .expect("GUIDE.md");
    let head = match shell {
        Sh::Bash => "```sh\n# bash (",
        Sh::Zsh => "```sh\n# zsh (",
        Sh::Fish => "```fish\n# fish (",
    };
    let from = guide
        .find(head)
        .unwrap_or_else(|| panic!("no {shell:?} snippet in GUIDE.md"));
    let body = &guide[from..];
    let body = &body[body.find('\n').expect("a line") + 1..];
    body[..body.find("```").expect("a closing fence")].to_owned()
}

/// The command line that starts `shell` with prompt `$ `, its rc file
/// written in `dir` with `rc` after the prompt is set.
pub fn shell_command(dir: &Path, shell: Sh, rc: &str) -> String {
    let d = dir.display();
    let write = |name: &str, text: String| std::fs::write(dir.join(name), text).expect("rc file");
    match shell {
        Sh::Bash => {
            write("bashrc", format!("PS1='$ '\n{rc}"));
            format!("bash --rcfile {d}/bashrc --noprofile")
        }
        Sh::Zsh => {
            write(".zshrc", format!("PS1='$ '\n{rc}"));
            format!("env ZDOTDIR={d} zsh -d")
        }
        Sh::Fish => {
            let prompt = "function fish_prompt; printf '$ '; end\n\
                          set -g fish_greeting ''\n\
                          set -g fish_autosuggestion_enabled 0\n";
            write("config.fish", format!("{prompt}{rc}"));
            format!(
                "env HOME={d} XDG_CONFIG_HOME={d}/config XDG_DATA_HOME={d}/data fish -N -C 'source {d}/config.fish'"
            )
        }
    }
}
