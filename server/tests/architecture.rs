//! The arrows of ARCHITECTURE.md, checked on the source: the tools, the
//! resources and the prompts never reach up into the protocol front end,
//! and the engine knows nothing of the server.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `(file, line number, line)` of every line under `dir` that names one
/// of `needles` outside a comment.
fn lines_naming(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(dir) {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|needle| code.contains(needle)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn tools_never_import_the_protocol_front_end() {
    let tools = root().join("server/src/tools");
    assert!(
        rust_files(&tools).len() > 5,
        "no tools under {}",
        tools.display()
    );
    let found = lines_naming(
        &tools,
        &[
            "crate::mcp",
            "super::mcp",
            "super::super::mcp",
            "panescan::mcp",
        ],
    );
    assert!(
        found.is_empty(),
        "server/src/tools/ imports from mcp/ (ARCHITECTURE.md: mcp -> tools, never back):\n{}",
        found.join("\n")
    );
}

#[test]
fn resources_and_prompts_never_import_the_protocol_front_end() {
    let resources = root().join("server/src/resources");
    assert!(
        rust_files(&resources).len() >= 3,
        "no resources under {}",
        resources.display()
    );
    let prompts = root().join("server/src/prompts.rs");
    let mut found = lines_naming(&resources, &["crate::mcp", "super::mcp", "panescan::mcp"]);
    let text =
        std::fs::read_to_string(&prompts).unwrap_or_else(|e| panic!("{}: {e}", prompts.display()));
    found.extend(
        text.lines()
            .filter(|l| l.split("//").next().unwrap_or("").contains("crate::mcp"))
            .map(str::to_owned),
    );
    assert!(
        found.is_empty(),
        "resources/ or prompts.rs imports from mcp/ (ARCHITECTURE.md: mcp -> resources, never back):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_engine_knows_nothing_of_the_server() {
    let engine = root().join("engine");
    let found = lines_naming(&engine.join("src"), &["panescan::", "use panescan;"]);
    assert!(
        found.is_empty(),
        "the engine imports the server:\n{}",
        found.join("\n")
    );
    let manifest = std::fs::read_to_string(engine.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("engine/Cargo.toml: {e}"));
    let depends = manifest
        .lines()
        .filter(|l| {
            l.trim_start().starts_with("panescan ") || l.trim_start().starts_with("panescan=")
        })
        .collect::<Vec<_>>();
    assert!(
        depends.is_empty(),
        "engine/Cargo.toml depends on the server: {depends:?}"
    );
}

/// The top-level rooms (`server/src/NAME.rs` or `server/src/NAME/`) each
/// file under `src` names through `crate::ROOM`, outside comments.
fn room_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("server/src");
    let mut rooms = std::collections::BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap_or(&file);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let room = first.trim_end_matches(".rs").to_owned();
        if room == "lib" || room == "main" {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let named: &mut std::collections::BTreeSet<String> = rooms.entry(room.clone()).or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let name: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != room {
                    named.insert(name);
                }
            }
        }
    }
    rooms
}

#[test]
fn tmux_and_cache_import_nothing_above_them() {
    let rooms = room_imports();
    let allowed: [(&str, &[&str]); 3] = [
        ("tmux", &["sync"]),
        ("cache", &["tmux", "sync"]),
        ("sync", &[]),
    ];
    let mut wrong = Vec::new();
    for (room, may) in allowed {
        let named = rooms
            .get(room)
            .unwrap_or_else(|| panic!("no room {room} under server/src"));
        for n in named.iter().filter(|n| !may.contains(&n.as_str())) {
            wrong.push(format!("{room} imports crate::{n}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md: tmux/ imports nothing above it but sync, cache/ only tmux and sync:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_circle_between_top_level_rooms() {
    let rooms = room_imports();
    assert!(rooms.len() > 8, "rooms found: {:?}", rooms.keys());
    // A room reaching itself through the rooms it imports is a circle.
    let mut circles = Vec::new();
    for start in rooms.keys() {
        let mut path = vec![start.clone()];
        let mut seen = std::collections::BTreeSet::new();
        if let Some(circle) = reach_back(&rooms, start, &mut path, &mut seen) {
            circles.push(circle.join(" -> "));
        }
    }
    assert!(
        circles.is_empty(),
        "rooms import each other in a circle (ARCHITECTURE.md: the arrows point one way):\n{}",
        circles.join("\n")
    );
}

/// A path from the last room of `path` back to `start`, if any.
fn reach_back(
    rooms: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    start: &str,
    path: &mut Vec<String>,
    seen: &mut std::collections::BTreeSet<String>,
) -> Option<Vec<String>> {
    let here = path.last().cloned().unwrap_or_default();
    for next in rooms.get(&here).into_iter().flatten() {
        if next == start {
            let mut circle = path.clone();
            circle.push(next.clone());
            return Some(circle);
        }
        if rooms.contains_key(next) && seen.insert(next.clone()) {
            path.push(next.clone());
            if let Some(c) = reach_back(rooms, start, path, seen) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn the_daemon_sits_between_the_command_line_and_the_sessions() {
    let rooms = room_imports();
    let named = rooms
        .get("daemon")
        .unwrap_or_else(|| panic!("no room daemon under server/src"));
    let may = ["mcp", "tools", "config", "tmux", "sync"];
    let mut wrong: Vec<String> = named
        .iter()
        .filter(|n| !may.contains(&n.as_str()))
        .map(|n| format!("daemon imports crate::{n}"))
        .collect();
    for (room, names) in &rooms {
        if room != "cli" && names.contains("daemon") {
            wrong.push(format!("{room} imports crate::daemon"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md: cli -> daemon -> mcp, tools, config, tmux; nothing else names the daemon:\n{}",
        wrong.join("\n")
    );
}
