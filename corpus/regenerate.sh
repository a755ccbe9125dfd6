#!/usr/bin/env bash
# Regenerates corpus/: real terminal output recorded from real programs on
# this machine (build errors, a failing test run, a Python traceback, top/ps,
# git log, TUI screens captured with escape sequences, wide and combining
# Unicode rendered by tmux). Used by benches and tests; keep it small.
#
# Any tmux started here is a private server (-L with a unique name, no user
# config) and is killed on exit; the default tmux server is never touched.
set -euo pipefail

out="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
sock="panescan-corpus-$$"
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
export LANG=C.UTF-8 LC_ALL=C.UTF-8

# 1. A cargo build with errors (plain, and with colour escapes).
mkdir -p "$work/broken/src"
cat > "$work/broken/Cargo.toml" <<'TOML'
[package]
name = "broken"
version = "0.1.0"
edition = "2021"
TOML
cat > "$work/broken/src/main.rs" <<'RS'
use std::collections::HashMap;
struct Config { name: String, retries: u32 }
fn parse(input: &str) -> Result<Config, String> {
    let mut parts = input.split(':');
    let name = parts.next().ok_or("missing name")?;
    let retries: u32 = parts.next().unwrap_or("3").parse();
    Config { name, retries }
}
fn main() {
    let cache: HashMap<String, u32> = HashMap::new();
    let cfg = parse("svc:5");
    println!("{}", cfg.name);
    cache.insert("a".to_string(), 1);
    undefined_function(42);
}
RS
(cd "$work/broken" && cargo build --offline --color=never 2>&1 || true) > "$out/cargo-build-errors.txt"
(cd "$work/broken" && cargo build --offline --color=always 2>&1 || true) > "$out/cargo-build-errors.ansi"

# 2. A failing test run.
mkdir -p "$work/failing/src"
cat > "$work/failing/Cargo.toml" <<'TOML'
[package]
name = "failing"
version = "0.1.0"
edition = "2021"
TOML
cat > "$work/failing/src/lib.rs" <<'RS'
pub fn add(a: i32, b: i32) -> i32 { a + b }
pub fn parse_port(s: &str) -> u16 { s.parse().unwrap() }
#[cfg(test)]
mod tests {
    use super::*;
    #[test] fn adds() { assert_eq!(add(2, 2), 4); }
    #[test] fn adds_negative() { assert_eq!(add(-2, -3), -6, "sum of negatives"); }
    #[test] fn parses_port() { assert_eq!(parse_port("8080"), 8080); }
    #[test] fn rejects_bad_port() { assert_eq!(parse_port("http"), 0); }
    #[test] fn vec_equality() { assert_eq!(vec![1, 2, 3], vec![1, 2, 4]); }
}
RS
(cd "$work/failing" && RUST_BACKTRACE=0 cargo test --offline --color=never 2>&1 || true) > "$out/cargo-test-failures.txt"

# 3. A Python traceback (nested calls, a chained exception).
python3 - > "$out/python-traceback.txt" 2>&1 <<'PY' || true
import json
def load(path):
    with open(path) as f:
        return json.load(f)
def settings():
    try:
        return load("/nonexistent/settings.json")
    except FileNotFoundError as e:
        raise RuntimeError("could not read settings") from e
def main():
    print("starting worker pool (4 workers)")
    for i in range(3):
        print(f"worker {i}: ready")
    cfg = settings()
main()
PY

# 4. Process listings.
top -b -n 1 -w 200 > "$out/top-batch.txt" 2>&1 || true
# Command names only (no arguments): process arguments are not ours to record.
ps -eo pid,ppid,user,pcpu,pmem,vsz,rss,stat,start,time,comm > "$out/ps.txt" 2>&1 || true

# 5. git log of this repository (or of whatever repository holds the script).
(cd "$out" && git log --stat -n 40 --no-color 2>/dev/null || echo "no git history") > "$out/git-log.txt"

# 6. TUI screens captured from a private tmux server, with escape sequences.
tmux -L "$sock" -f /dev/null new-session -d -s corpus -x 160 -y 48 "top -d 0.5"
sleep 2
tmux -L "$sock" capture-pane -e -p -t corpus:0.0 > "$out/tmux-top-escapes.ansi"
seq 1 400 | sed 's/^/log line /' > "$work/long.txt"
cat "$out/python-traceback.txt" >> "$work/long.txt"
# Run less from inside the corpus folder so its status line shows a relative
# name, not the path of whoever regenerated the corpus.
tmux -L "$sock" new-window -t corpus -d -c "$out" "less -R cargo-build-errors.ansi"
sleep 1
tmux -L "$sock" capture-pane -e -p -t corpus:1.0 > "$out/tmux-less-escapes.ansi"

# 7. Wide (CJK, emoji) and combining Unicode, rendered by tmux.
cat > "$work/unicode.txt" <<'TXT'
日本語のテキスト: ビルドに失敗しました (build failed)
中文: 错误：无法打开文件 "配置.toml"
한국어: 오류가 발생했습니다
Emoji: ✅ passed 🚀 deployed ❌ failed 🔥 hot path 👩‍💻 dev
Combining: e\u0301 (é decomposed) n\u0303 (ñ) a\u0308 (ä) Å vs A\u030a
Zalgo-ish: Z\u0351\u0357a\u0308\u0301l\u0301g\u0323o
Greek: αβγδε ΑΒΓΔΕ, Cyrillic: ошибка ОШИБКА, Kelvin: 300 K
Full-width: ＦＵＬＬ　ＷＩＤＴＨ　ｅｒｒｏｒ
Box drawing: ┌──────┬──────┐ │ name │ size │ └──────┴──────┘
Right-to-left: שגיאה خطأ
TXT
printf '%b' "$(cat "$work/unicode.txt")" > "$work/unicode-rendered.txt"
tmux -L "$sock" new-window -t corpus -d "cat '$work/unicode-rendered.txt'; sleep 5"
sleep 1
tmux -L "$sock" capture-pane -p -t corpus:2.0 > "$out/tmux-unicode.txt"
tmux -L "$sock" capture-pane -e -p -t corpus:2.0 > "$out/tmux-unicode.ansi"

tmux -L "$sock" kill-server 2>/dev/null || true
ls -l "$out"
du -sh "$out"
