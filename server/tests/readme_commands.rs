//! Every `panescan` command the README shows exists, with every flag it
//! uses: a renamed flag must not leave the README behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
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
fn readme_commands_and_flags_exist() {
    let readme = readme();
    let commands = panescan_commands(&readme);
    assert!(commands.len() >= 8, "found only {commands:?}");
    for words in commands {
        let sub = &words[0];
        if sub.starts_with("--") {
            let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
                .arg(sub)
                .output()
                .unwrap();
            assert!(out.status.success(), "panescan {sub} fails");
            continue;
        }
        let help = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args([sub.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(
            help.status.success(),
            "README uses `panescan {sub}`, which does not exist"
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
            assert!(known, "README: `panescan {sub}` has no flag {flag}");
        }
    }
}
