#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against panescan's own Streamable HTTP endpoint
# (`serve --http`, path /mcp), every applicable server scenario of both
# protocol eras, wire-schema validity of every message included. The suite
# sends no Authorization header, so the endpoint runs with --no-auth on
# loopback (what --no-auth is for). Expected failures:
# conformance-baseline.yml (each says why).
# usage: interop/conformance.sh PANESCAN TMUX_SOCKET_NAME NPM_DIR [PORT]
# Prints one line per scenario; exit 0 when none failed unexpectedly.
set -u
BIN=$1; SOCK=$2; NPM=$3; PORT=${4:-18931}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/panescan-conformance.XXXXXX") || exit 1
"$BIN" serve --socket-name "$SOCK" --http "127.0.0.1:$PORT" --no-auth 2>"$OUT/serve.log" &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$OUT"' EXIT
for _ in $(seq 50); do
    grep -q "MCP over HTTP at" "$OUT/serve.log" 2>/dev/null && break
    sleep 0.2
done
rc=0
run() { # SPEC_VERSION SCENARIO
    "$NPM/node_modules/.bin/conformance" server --url "http://127.0.0.1:$PORT/mcp" \
        --spec-version "$1" --scenario "$2" --expected-failures "$HERE/conformance-baseline.yml" \
        -o "$OUT/$1" >"$OUT/$1-$2.log" 2>&1
    local r=$?
    [ $r -ne 0 ] && rc=1
    local log
    log=$(sed 's/\x1b\[[0-9;]*m//g' "$OUT/$1-$2.log")
    printf 'conformance %-10s %-44s %s exit=%s\n' "$1" "$2" "$(printf '%s\n' "$log" | grep -E '^Passed:' | tail -1)" "$r"
    if [ $r -ne 0 ]; then
        printf '%s\n' "$log" | grep -E -A3 '^(Unexpected failures|=== Failed Checks)' | cut -c1-600 | head -20
    fi
}
for s in server-initialize server-session-lifecycle ping tools-list resources-list server-sse-multiple-streams \
    dns-rebinding-protection; do
    run 2025-11-25 "$s"
done
for s in server-stateless tools-list caching server-sse-multiple-streams input-required-result-unsupported-methods \
    dns-rebinding-protection http-header-validation sep-2164-resource-not-found; do
    run 2026-07-28 "$s"
done
exit $rc
