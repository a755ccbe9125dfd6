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
        // `testing` is no room: it names what code outside the crate may
        // reach, in every room.
        if room == "lib" || room == "main" || room == OUTSIDE_WINDOW {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let named: &mut std::collections::BTreeSet<String> = rooms.entry(room.clone()).or_default();
        // A room's unit tests may start a private tmux server (the
        // testbed): test material, not an import of the room. Every other
        // room counts wherever it is named.
        let outside_tests = code_outside_tests(&text);
        for (code, in_full) in [(text.as_str(), true), (outside_tests.as_str(), false)] {
            for line in code.lines() {
                let code = line.split("//").next().unwrap_or("");
                for (at, _) in code.match_indices("crate::") {
                    let name: String = code[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if in_full == (name == TEST_MATERIAL) {
                        continue;
                    }
                    if !name.is_empty() && name != room {
                        named.insert(name);
                    }
                }
            }
        }
    }
    rooms
}

/// The room of test material (`server/src/testbed/`), which unit tests of
/// any room may use.
const TEST_MATERIAL: &str = "testbed";

/// What the tests, benches, example and fuzz targets reach inside the
/// crate through (`server/src/testing.rs`).
const OUTSIDE_WINDOW: &str = "testing";

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
    let may = ["mcp", "tools", "config", "tmux", "sync", "trust", "journal"];
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
        "ARCHITECTURE.md: cli -> daemon -> mcp, tools, config, tmux, trust, journal; nothing else names the daemon:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_journal_reads_through_the_cache_and_only_the_daemon_and_cli_start_it() {
    // Its writer is the daemon's (and the tests'): no tool starts one.
    let writers = lines_naming(&root().join("server/src"), &["journal::writer"])
        .into_iter()
        .filter(|l| {
            !l.contains("src/cli/")
                && !l.contains("src/daemon/")
                && !l.contains("src/journal/")
                && !l.contains("src/testing.rs")
        })
        .collect::<Vec<_>>();
    assert!(
        writers.is_empty(),
        "only cli and daemon start the journal's writer:\n{}",
        writers.join("\n")
    );
    let rooms = room_imports();
    let named = rooms
        .get("journal")
        .unwrap_or_else(|| panic!("no room journal under server/src"));
    let may = ["cache", "tmux", "sync"];
    let mut wrong: Vec<String> = named
        .iter()
        .filter(|n| !may.contains(&n.as_str()))
        .map(|n| format!("journal imports crate::{n}"))
        .collect();
    for (room, names) in &rooms {
        if !["cli", "daemon", "tools", "resources"].contains(&room.as_str())
            && names.contains("journal")
        {
            wrong.push(format!("{room} imports crate::journal"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md: cli, daemon, tools, resources -> journal -> cache, tmux; nothing else names the journal:\n{}",
        wrong.join("\n")
    );
}

/// The module path of each `.rs` file under `server/src/tmux`
/// (`tmux/capture/mod.rs` is `tmux::capture`), with its code: comments
/// and `#[cfg(test)] mod` blocks left out (a test module may reach
/// across; what serves may not).
fn tmux_files() -> std::collections::BTreeMap<Vec<String>, String> {
    let src = root().join("server/src");
    let mut files = std::collections::BTreeMap::new();
    for file in rust_files(&src.join("tmux")) {
        let rel = file.strip_prefix(&src).unwrap_or(&file);
        let mut module: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        files.insert(module, code_outside_tests(&text));
    }
    files
}

/// `text` without comments and without `#[cfg(test)]` modules.
fn code_outside_tests(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        let opens_test_module = trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod ") && next.ends_with('{'));
        if opens_test_module {
            // Skip to the brace that closes it.
            let mut depth = 0i64;
            for inner in lines.by_ref() {
                let inner = inner.split("//").next().unwrap_or("");
                depth += inner.matches('{').count() as i64 - inner.matches('}').count() as i64;
                if depth <= 0 && inner.contains('}') {
                    break;
                }
            }
            continue;
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    code
}

/// Every path `code` names from `crate::`, `super::` or `self::`, a use
/// tree's groups expanded: `use super::{a, b::{c, d}}` names `super::a`,
/// `super::b::c` and `super::b::d`.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate", "super", "self"] {
        for (at, _) in code.match_indices(start) {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = &code[at + start.len()..];
            let word_start = !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
            if word_start && after.trim_start().starts_with("::") {
                let mut i = at;
                use_tree(bytes, &mut i, Vec::new(), &mut out);
            }
        }
    }
    out
}

/// Reads one use tree (or path) at `bytes[*i..]` after `prefix`.
fn use_tree(bytes: &[u8], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let skip_space = |i: &mut usize| {
        while bytes.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    skip_space(i);
    if bytes.get(*i) == Some(&b'{') {
        *i += 1;
        loop {
            skip_space(i);
            match bytes.get(*i) {
                None => return,
                Some(b'}') => {
                    *i += 1;
                    return;
                }
                Some(b',') => *i += 1,
                Some(_) => {
                    let before = *i;
                    use_tree(bytes, i, prefix.clone(), out);
                    if *i == before {
                        *i += 1;
                    }
                }
            }
        }
    }
    let ident_start = *i;
    while bytes
        .get(*i)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'*')
    {
        *i += 1;
    }
    let mut path = prefix;
    if *i > ident_start {
        path.push(String::from_utf8_lossy(&bytes[ident_start..*i]).into_owned());
    }
    let mut j = *i;
    while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
        j += 1;
    }
    if *i > ident_start && bytes.get(j..j + 2) == Some(b"::") {
        *i = j + 2;
        use_tree(bytes, i, path, out);
    } else if !path.is_empty() {
        out.push(path);
    }
}

/// The file module `path` (named in file module `from`) lands in, if it
/// is one of `modules`: the longest such prefix of what it names.
fn landing(
    from: &[String],
    path: &[String],
    modules: &std::collections::BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base = from.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            base = from.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let rest: Vec<&String> = rest.iter().filter(|s| *s != "self").collect();
    (0..=rest.len()).rev().find_map(|k| {
        let mut m = base.clone();
        m.extend(rest[..k].iter().map(|s| (*s).clone()));
        modules.contains(&m).then_some(m)
    })
}

/// Which files under `tmux/` each names: a file naming one of its own
/// parents is left out (a child always uses its parent's items; the
/// parent declares it).
fn tmux_file_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let files = tmux_files();
    let modules: std::collections::BTreeSet<Vec<String>> = files.keys().cloned().collect();
    let mut imports = std::collections::BTreeMap::new();
    for (module, code) in &files {
        let named: std::collections::BTreeSet<String> = paths_named(code)
            .iter()
            .filter_map(|p| landing(module, p, &modules))
            .filter(|m| m != module && !module.starts_with(m))
            .map(|m| m.join("::"))
            .collect();
        imports.insert(module.join("::"), named);
    }
    imports
}

#[test]
fn use_trees_are_read_through_their_groups() {
    let code = "use super::{a, b::{c, d as e}, self};\nfn f() { crate::tmux::x::y(); }";
    let named: Vec<String> = paths_named(code).iter().map(|p| p.join("::")).collect();
    for path in [
        "super::a",
        "super::b::c",
        "super::b::d",
        "super::self",
        "crate::tmux::x::y",
    ] {
        assert!(named.contains(&path.to_owned()), "{path} in {named:?}");
    }
    let code =
        code_outside_tests("use a;\n#[cfg(test)]\nmod tests {\n    use super::b;\n}\nuse c;\n");
    assert!(code.contains("use a;") && code.contains("use c;"), "{code}");
    assert!(!code.contains("use super::b"), "{code}");
}

#[test]
fn no_circle_between_files_inside_tmux() {
    let imports = tmux_file_imports();
    assert!(imports.len() > 30, "files found: {:?}", imports.keys());
    // Not vacuous: a sweep does reach tmux through the connection.
    assert!(
        imports["tmux::capture::batch"].contains("tmux::connection"),
        "{:?}",
        imports["tmux::capture::batch"]
    );
    let reach = |from: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for next in imports.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let mut circles = std::collections::BTreeSet::new();
    for module in imports.keys() {
        let from_here = reach(module);
        if from_here.contains(module) {
            let circle: Vec<String> = from_here
                .iter()
                .filter(|other| reach(other).contains(module))
                .cloned()
                .collect();
            circles.insert(circle.join(", "));
        }
    }
    assert!(
        circles.is_empty(),
        "files under tmux/ import each other in a circle (ARCHITECTURE.md: a feature's \
         per-server state is its own module's, held beside the connection, which names no \
         feature):\n{}",
        circles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The HTTP endpoint speaks HTTP only: it names the protocol's constants
/// (`mcp`), the tiers (`config`) and the locks (`sync`), never a tool, tmux,
/// the cache or the daemon; its sessions come from whoever starts it
/// (`cli`), and only `cli` names it.
#[test]
fn the_http_endpoint_adapts_http_to_sessions_it_is_handed() {
    let rooms = room_imports();
    let named = rooms
        .get("http")
        .unwrap_or_else(|| panic!("no room http under server/src"));
    let may = ["mcp", "config", "sync"];
    let mut wrong: Vec<String> = named
        .iter()
        .filter(|n| !may.contains(&n.as_str()))
        .map(|n| format!("http imports crate::{n}"))
        .collect();
    for (room, names) in &rooms {
        if room != "cli" && names.contains("http") {
            wrong.push(format!("{room} imports crate::http"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md: cli -> http -> mcp (constants), config; only cli names http:\n{}",
        wrong.join("\n")
    );
}

/// What the crate shows outside: the command line's `main` and, hidden,
/// `testing` (what the tests, benches, example and fuzz targets may
/// reach). Every room is private to the crate, so the compiler reports
/// what nothing uses: `lib.rs` declares no other `pub mod` or `pub use`,
/// and no module below it is `pub` but the testbed's, which `testing`
/// hands out whole (ARCHITECTURE.md, "Where a new test ... goes").
#[test]
fn the_crate_is_private_but_for_main_and_testing() {
    const PUBLIC: [&str; 2] = ["pub use cli::main;", "pub mod testing;"];
    let src = root().join("server/src");
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let lib = read(&src.join("lib.rs"));
    let mut wrong: Vec<String> = code_outside_tests(&lib)
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("pub ") && !PUBLIC.contains(l))
        .map(|l| format!("server/src/lib.rs: {l}"))
        .collect();
    assert!(
        lib.contains("#[doc(hidden)]\npub mod testing;"),
        "lib.rs declares `#[doc(hidden)] pub mod testing;`"
    );
    let open = [
        src.join("lib.rs"),
        src.join("testing.rs"),
        src.join("testbed/mod.rs"),
    ];
    let files = rust_files(&src);
    assert!(
        files.len() > 100,
        "files under {}: {}",
        src.display(),
        files.len()
    );
    for file in files.iter().filter(|f| !open.contains(f)) {
        for line in code_outside_tests(&read(file)).lines() {
            if line.trim_start().starts_with("pub mod ") {
                let rel = file
                    .strip_prefix(&src)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                wrong.push(format!("server/src/{rel}: {}", line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a module made public (make it `pub(crate) mod`; code outside the crate reaches an \
         item through server/src/testing.rs's list):\n{}",
        wrong.join("\n")
    );
}
