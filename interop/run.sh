#!/usr/bin/env bash
# Runs panescan against real MCP clients, each on a private tmux server of
# its own (tmux_fixture.sh), in both protocol eras:
#   - the official Python SDK (client.py): initialize handshake and
#     server/discover (2026-07-28)
#   - the official TypeScript SDK (client.mjs): 1.x with the handshake, as
#     desktop clients ship it; 2.x with server/discover
#   - the MCP Inspector CLI: `tools/list --strict` (schema portability: no
#     error, no warning) at every tier, and a search through its tools/call
#   - the model providers' schema converters (convert.py): openai-agents'
#     strict conversion, pydantic-ai's OpenAI and Google transformers,
#     google-genai's Schema, over every tier, and read tools called with
#     null for every argument left out
#   - a policy's `ask` answered through the Python SDK's elicitation
#     callback (elicit.py) and the TypeScript SDK 1.x's and 2.x's request
#     handler (elicit.mjs), both eras: approve runs once, decline refuses
#   - both SDKs again over Streamable HTTP (serve --http, a bearer token),
#     elicitation included
#   - the MCP conformance suite (conformance.sh), both eras, against
#     serve --http directly
# Installs the clients first (setup.sh; nothing to do when they are there).
#
# usage: interop/run.sh [--bin PANESCAN] [--dir DIR] [--path PATH]
#   --bin  the panescan to test (default: target/debug/panescan, built
#          with `cargo build -p panescan` when absent)
#   --dir  where setup.sh installs the clients (default: target/interop)
#   --path how serve serves: in-process (serve --no-daemon), daemon
#          (through a daemon in the run's own runtime directory, stopped
#          at the end), or both (default), each client running on each
# Exit 0 when every client passed; the last line counts them.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=
DIR=$ROOT/target/interop
PATHS="in-process daemon"
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --path) case "$2" in both) ;; in-process|daemon) PATHS=$2 ;; *) echo "--path: in-process, daemon or both" >&2; exit 2 ;; esac; shift 2 ;;
    *) echo "usage: $0 [--bin PANESCAN] [--dir DIR] [--path in-process|daemon|both]" >&2; exit 2 ;;
    esac
done
if [ -z "$BIN" ]; then
    BIN=$ROOT/target/debug/panescan
    [ -x "$BIN" ] || (cd "$ROOT" && cargo build -q -p panescan) || exit 1
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
"$HERE/setup.sh" "$DIR" || exit 1
# Every tmux server of this run, and every socket list_servers looks at,
# lives in a directory of the run's own, never the user's.
TMUX_TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/panescan-interop.XXXXXX") || exit 1
export TMUX_TMPDIR
# The daemon path's runtime directory: the run's own, its daemon stopped
# whichever way the run ends.
RT=$TMUX_TMPDIR/panescan-rt
stop_daemon() { "$BIN" stop --runtime-dir "$RT" >/dev/null 2>&1 || true; }
trap 'stop_daemon; rm -rf "$TMUX_TMPDIR"' EXIT
DIR=$(cd "$DIR" && pwd)
[ -d "$DIR/node" ] && PATH=$DIR/node/node_modules/.bin:$PATH
export PATH
INSPECTOR=$DIR/npm/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js

passed=0
failed=0
result() { # NAME STATUS
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1"; fi
}

echo "== $("$BIN" --version 2>/dev/null | head -1), tmux $(tmux -V | cut -d' ' -f2), node $(node --version)"
# Each client runs on each path: a wrapper adds the path's flag to serve.
clients() {
    for era in "legacy 2025-11-25" "auto 2026-07-28"; do
        set -- $era
        "$DIR/venv/bin/python" "$HERE/client.py" --mode "$1" --expect-protocol "$2" --bin "$SERVE"
        result "$SERVE_PATH: python --mode $1" $?
    done
    for run in "1 legacy 2025-11-25" "2 auto 2026-07-28"; do
        set -- $run
        node "$HERE/client.mjs" --sdk "$1" --mode "$2" --expect-protocol "$3" --bin "$SERVE" --npm "$DIR/npm"
        result "$SERVE_PATH: node sdk $1 --mode $2" $?
    done
    for mode in legacy auto; do
        "$DIR/venv/bin/python" "$HERE/elicit.py" --bin "$SERVE" --mode "$mode"
        result "$SERVE_PATH: python --mode $mode elicitation (policy ask)" $?
    done
    node "$HERE/elicit.mjs" --bin "$SERVE" --npm "$DIR/npm" --sdk 1
    result "$SERVE_PATH: node sdk 1 elicitation (policy ask)" $?
    for mode in legacy auto; do
        node "$HERE/elicit.mjs" --bin "$SERVE" --npm "$DIR/npm" --sdk 2 --mode "$mode"
        result "$SERVE_PATH: node sdk 2 --mode $mode elicitation (policy ask)" $?
    done
    # The same clients over Streamable HTTP (serve --http, a bearer token).
    for era in "legacy 2025-11-25" "auto 2026-07-28"; do
        set -- $era
        "$DIR/venv/bin/python" "$HERE/client.py" --mode "$1" --expect-protocol "$2" --bin "$SERVE" --http
        result "$SERVE_PATH: python --mode $1 --http" $?
    done
    for run in "1 legacy 2025-11-25" "2 auto 2026-07-28"; do
        set -- $run
        node "$HERE/client.mjs" --sdk "$1" --mode "$2" --expect-protocol "$3" --bin "$SERVE" --npm "$DIR/npm" --http
        result "$SERVE_PATH: node sdk $1 --mode $2 --http" $?
    done
    for mode in legacy auto; do
        "$DIR/venv/bin/python" "$HERE/elicit.py" --bin "$SERVE" --mode "$mode" --http
        result "$SERVE_PATH: python --mode $mode --http elicitation (policy ask)" $?
    done
    for run in "1 legacy" "2 legacy" "2 auto"; do
        set -- $run
        node "$HERE/elicit.mjs" --bin "$SERVE" --npm "$DIR/npm" --sdk "$1" --mode "$2" --http
        result "$SERVE_PATH: node sdk $1 --mode $2 --http elicitation (policy ask)" $?
    done

    # Inspector --strict prints every schema-portability finding on stderr and
    # exits 6 on an error-severity one; warnings must be absent too.
    for tier in readonly mutating destructive; do
        err=$(node "$INSPECTOR" --cli --method tools/list --strict -- "$SERVE" serve --tier "$tier" --socket-name panescan-interop-unused 2>&1 >/dev/null)
        rc=$?
        findings=$(printf '%s\n' "$err" | grep -cE '^(Warning|Error)' || true)
        echo "inspector --strict tools/list --tier $tier: exit $rc, $findings findings"
        [ -n "$err" ] && printf '%s\n' "$err" | head -40
        [ "$rc" -eq 0 ] && [ "$findings" -eq 0 ] && [ -z "$err" ]
        result "$SERVE_PATH: inspector --strict --tier $tier" $?
    done

    SOCK=panescan-interop-inspector-$SERVE_PATH-$$
    trap 'stop_daemon; "$HERE/tmux_fixture.sh" down "$SOCK"; rm -rf "$TMUX_TMPDIR"' EXIT
    trap 'exit 1' INT TERM HUP
    if "$HERE/tmux_fixture.sh" up "$SOCK"; then
        out=$(node "$INSPECTOR" --cli -e "TMUX_TMPDIR=$TMUX_TMPDIR" --method tools/call --tool-name search_panes \
            --tool-arg pattern='interop history line 4242' scrollback_lines=100000 \
            -- "$SERVE" serve --socket-name "$SOCK")
        printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
hits = [l["text"] for m in d["structuredContent"]["matches"] for l in m["lines"]]
ok = not d.get("isError") and "interop history line 4242" in hits
print("inspector tools/call search_panes:", "ok," if ok else "FAILED,", len(hits), "lines")
sys.exit(0 if ok else 1)'
        result "$SERVE_PATH: inspector tools/call search_panes" $?
        "$HERE/tmux_fixture.sh" down "$SOCK"
    else
        result "$SERVE_PATH: inspector fixture" 1
    fi

    # The model providers' converters over every tier's tools/list, and read
    # tools called the way a strict model calls them (convert.py).
    CONV=panescan-interop-convert-$SERVE_PATH-$$
    trap 'stop_daemon; "$HERE/tmux_fixture.sh" down "$SOCK"; "$HERE/tmux_fixture.sh" down "$CONV"; rm -rf "$TMUX_TMPDIR"' EXIT
    if "$HERE/tmux_fixture.sh" up "$CONV"; then
        "$DIR/venv/bin/python" "$HERE/convert.py" --bin "$SERVE" --calls "$CONV"
        result "$SERVE_PATH: converters (convert.py)" $?
        # The conformance suite, both eras, against serve --http directly.
        "$HERE/conformance.sh" "$SERVE" "$CONV" "$DIR/npm"
        result "$SERVE_PATH: conformance suite" $?
        "$HERE/tmux_fixture.sh" down "$CONV"
    else
        result "$SERVE_PATH: converters fixture" 1
    fi
}
for SERVE_PATH in $PATHS; do
    SERVE=$TMUX_TMPDIR/panescan-$SERVE_PATH
    # The daemon path's serves all see the run's TMUX_TMPDIR (clients
    # pass few variables): a daemon serves only sessions of its own.
    case $SERVE_PATH in
    in-process) env= extra="--no-daemon" ;;
    daemon) env="TMUX_TMPDIR=$TMUX_TMPDIR" extra="--runtime-dir $RT" ;;
    esac
    printf '#!/bin/sh\n%s\nif [ "$1" = serve ]; then exec "%s" "$@" %s; fi\nexec "%s" "$@"\n' "${env:+export $env}" "$BIN" "$extra" "$BIN" >"$SERVE"
    chmod +x "$SERVE"
    echo "== serve $SERVE_PATH"
    clients
    if [ "$SERVE_PATH" = daemon ]; then
        # The clients' sessions went through the daemon, not in-process
        # beside it (serve falls back, saying so only on stderr).
        served=$("$BIN" status --runtime-dir "$RT" 2>/dev/null |
            sed -n 's/.*"sessions_served": *\([0-9]*\).*/\1/p')
        echo "daemon: ${served:-0} sessions served"
        [ "${served:-0}" -ge 4 ]
        result "daemon: the clients' sessions were served by the daemon" $?
    fi
done
stop_daemon

echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
