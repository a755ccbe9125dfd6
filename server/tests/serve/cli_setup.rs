//! How panescan fits where people install and start it: found tmux when a
//! desktop client starts it with a short PATH, shell completions and the
//! man page that parse, a version that names its commit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::TempDir;
use panescan::testing::private_server::PrivateServer;

fn panescan() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_panescan"));
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    cmd
}

/// A run as a desktop client starts it: only HOME, PATH, SHELL and TERM.
fn desktop(home: &Path, path: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_panescan"));
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm-256color");
    cmd
}

/// The tmux the tests themselves run (first on this process's PATH).
fn real_tmux() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("tmux"))
        .find(|p| p.is_file())
        .expect("tmux on PATH")
}

/// A PATH directory holding `sh` (panescan's connection guard) and no tmux.
fn path_without_tmux(dir: &TempDir) -> PathBuf {
    let bin = dir.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    bin
}

/// A `tmux` in `dir` that notes its arguments in `dir/used` and runs the
/// real one: (the program, the note).
fn noting_tmux(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let note = dir.join("used");
    let program = dir.join("tmux");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
            note.display(),
            real_tmux().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    (program, note)
}

fn ran(note: &Path) -> bool {
    std::fs::read_to_string(note).is_ok_and(|n| n.contains("-V"))
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `panescan search --json` on `tmux`: the pane count it searched.
fn searched_panes(out: &Output) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(out)));
    v["panes_searched"].as_u64().unwrap_or(0)
}

#[test]
fn tmux_off_path_is_found_through_panescan_tmux_and_the_usual_places() {
    let tmux = PrivateServer::start("found", 80, 24).unwrap();
    let dir = TempDir::new("found");
    let bin = path_without_tmux(&dir);
    let search = ["search", "--json", "--socket-name", tmux.socket_name(), "x"];

    let (program, note) = noting_tmux(&dir.0.join("env"));
    let out = desktop(&dir.0, &bin)
        .env("PANESCAN_TMUX", &program)
        .args(search)
        .output()
        .unwrap();
    assert_eq!(searched_panes(&out), 1, "{}", text(&out));
    assert!(ran(&note), "PANESCAN_TMUX was not run");

    let (program, note) = noting_tmux(&dir.0.join("flag"));
    let out = desktop(&dir.0, &bin)
        .arg("--tmux")
        .arg(&program)
        .args(search)
        .output()
        .unwrap();
    assert_eq!(searched_panes(&out), 1, "{}", text(&out));
    assert!(ran(&note), "--tmux was not run");

    // Nothing named, nothing on PATH: a usual place has it (on this
    // machine tmux lives in one of them).
    let usual = panescan::testing::tmux::binary::USUAL_DIRS;
    if usual
        .iter()
        .any(|d| real_tmux().parent() == Some(Path::new(d)))
    {
        let out = desktop(&dir.0, &bin).args(search).output().unwrap();
        assert_eq!(searched_panes(&out), 1, "{}", text(&out));
    }
}

#[test]
fn the_home_profile_comes_before_the_system_places() {
    let tmux = PrivateServer::start("profile", 80, 24).unwrap();
    let dir = TempDir::new("profile");
    let bin = path_without_tmux(&dir);
    let home = dir.0.join("home");
    let (_, note) = noting_tmux(&home.join(".nix-profile/bin"));
    let out = desktop(&home, &bin)
        .args(["search", "--json", "--socket-name", tmux.socket_name(), "x"])
        .output()
        .unwrap();
    assert_eq!(searched_panes(&out), 1, "{}", text(&out));
    assert!(ran(&note), "~/.nix-profile/bin/tmux was not run");
}

#[test]
fn a_named_tmux_that_is_not_there_is_named_in_every_error() {
    let tmux = PrivateServer::start("named", 80, 24).unwrap();
    let missing = "/nonexistent/bin/tmux";
    let out = panescan()
        .env("PANESCAN_TMUX", missing)
        .args(["search", "--socket-name", tmux.socket_name(), "x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        err.contains(missing) && err.contains("install tmux"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");

    // Through MCP, a tool call says the same, and no other tmux runs in
    // the named one's place.
    let mut serve = common::Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name()],
        &[("PANESCAN_TMUX", missing)],
    );
    serve.initialize();
    let msg = serve.call_err("list_sessions", serde_json::json!({}));
    assert!(msg.contains(missing), "{msg}");
}

#[test]
fn completions_parse_in_their_shells() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = panescan().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout).into_owned();
        let marker = match shell {
            "bash" => "complete -F _panescan",
            "zsh" => "#compdef panescan",
            "fish" => "complete -c panescan",
            "elvish" => "edit:completion:arg-completer[panescan]",
            _ => "Register-ArgumentCompleter",
        };
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for sub in ["serve", "search", "bench", "socket-name", "tmux"] {
            assert!(script.contains(sub), "{shell}: {sub} not completed");
        }
        // Parse where the shell exists (bash always: the tests need it).
        let check: &[&str] = match shell {
            "bash" => &["bash", "-n"],
            "zsh" => &["zsh", "-n"],
            "fish" => &["fish", "--no-execute"],
            _ => continue,
        };
        let dir = TempDir::new("completions");
        let file = dir.0.join(format!("panescan.{shell}"));
        std::fs::write(&file, &script).unwrap();
        match Command::new(check[0]).args(&check[1..]).arg(&file).output() {
            Ok(parsed) => assert!(parsed.status.success(), "{shell} -n: {}", text(&parsed)),
            Err(_) if shell != "bash" => eprintln!("{shell} not installed: structure checked only"),
            Err(e) => panic!("bash: {e}"),
        }
    }
}

#[test]
fn the_man_pages_render() {
    for page in [None, Some("serve"), Some("search"), Some("bench")] {
        let out = panescan().arg("man").args(page).output().unwrap();
        assert!(out.status.success(), "{page:?}: {}", text(&out));
        let roff = String::from_utf8_lossy(&out.stdout).into_owned();
        let title = page.map_or("panescan".to_owned(), |p| format!("panescan-{p}"));
        assert!(roff.starts_with(".ie") || roff.starts_with(".TH"), "{roff}");
        assert!(
            roff.contains(&format!(".TH {title} 1")),
            "{page:?}: no .TH {title}"
        );
        for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS"] {
            assert!(roff.contains(section), "{page:?}: no {section}");
        }
        // groff, where installed, must read it without a warning.
        let dir = TempDir::new("man");
        let file = dir.0.join("panescan.1");
        std::fs::write(&file, &roff).unwrap();
        match Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&file)
            .output()
        {
            Ok(g) => assert!(
                g.status.success() && g.stderr.is_empty(),
                "{page:?}: {}",
                text(&g)
            ),
            Err(_) => eprintln!("groff not installed: structure checked only"),
        }
    }
    let out = panescan().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("serve, search"));
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let out = panescan().arg("--version").output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    let head = Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(head) => {
            let want = format!("panescan {version} (commit {})", &head[..12]);
            assert_eq!(line, want);
        }
        None => assert_eq!(line, format!("panescan {version}")),
    }
}
