//! Every `panescan` command the documents show (README.md, GUIDE.md,
//! SECURITY.md, CONTRIBUTING.md) exists, with every flag it uses: a
//! renamed flag must not leave them behind. And CI runs exactly the test
//! command the README gives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

/// The documents a user reads commands from, by their name in the root.
const DOCUMENTS: [&str; 4] = ["README.md", "GUIDE.md", "SECURITY.md", "CONTRIBUTING.md"];

fn root_file(name: &str) -> String {
    let path = format!("{}/../{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Command lines inside ```sh blocks and `inline` code that run panescan.
fn panescan_commands(readme: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        let candidates: Vec<&str> = if in_sh {
            vec![line.split('#').next().unwrap_or("")]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for c in candidates {
            let c = c.trim();
            let rest = c
                .strip_prefix("cargo run --release -- ")
                .or_else(|| c.strip_prefix("panescan "));
            if let Some(rest) = rest {
                commands.push(rest.split_whitespace().map(str::to_owned).collect());
            }
        }
    }
    commands
}

#[test]
fn documented_commands_and_flags_exist() {
    let mut commands = Vec::new();
    for name in DOCUMENTS {
        let found = panescan_commands(&root_file(name));
        assert!(
            !found.is_empty() || name == "SECURITY.md",
            "{name}: no commands"
        );
        commands.extend(found.into_iter().map(|words| (name, words)));
    }
    assert!(commands.len() >= 20, "found only {commands:?}");
    for (name, words) in commands {
        let sub = &words[0];
        if sub.starts_with("--") {
            let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
                .arg(sub)
                .output()
                .unwrap();
            assert!(out.status.success(), "{name}: panescan {sub} fails");
            continue;
        }
        let help = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args([sub.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(
            help.status.success(),
            "{name} uses `panescan {sub}`, which does not exist"
        );
        let help = String::from_utf8_lossy(&help.stdout);
        for word in words.iter().skip(1) {
            let flag = word
                .split('=')
                .next()
                .unwrap()
                .trim_matches(|c| c == '[' || c == ']');
            let flag = flag.split('|').next().unwrap();
            let known = if flag.starts_with("--") {
                help.contains(&format!("{flag} "))
                    || help.contains(&format!("{flag}\n"))
                    || help.contains(&format!("{flag}="))
            } else if flag.len() == 2 && flag.starts_with('-') {
                help.contains(&format!("{flag},")) || help.contains(&format!("{flag} "))
            } else {
                true
            };
            assert!(known, "{name}: `panescan {sub}` has no flag {flag}");
        }
    }
}

/// The command of the README's first ```sh block whose comment says it
/// runs the tests.
fn readme_test_command(readme: &str) -> Option<String> {
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if let Some((command, comment)) = line.split_once('#') {
            if in_sh && comment.trim_start().starts_with("run the tests") {
                return Some(command.trim().to_owned());
            }
        }
    }
    None
}

#[test]
fn ci_runs_the_test_command_the_readme_gives() {
    let command = readme_test_command(&root_file("README.md"))
        .expect("the README's sh block has a line commented `# run the tests`");
    assert_eq!(command, "cargo test --workspace");
    let ci = root_file(".ci/run");
    assert!(
        ci.lines().any(|line| line.trim() == command),
        ".ci/run does not run the README's test command `{command}` as a line of its own"
    );
}
