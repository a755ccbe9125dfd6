#!/usr/bin/env bash
# Runs the shared interop clients against `panescan serve` on a private tmux
# server: the raw wire probe (both eras) and the official Python SDK check
# (auto negotiation, which lands on 2026-07-28, and the legacy handshake),
# calling every read tool.
# usage: server/tests/interop.sh     needs: ../shared/interop/setup.sh run once
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
PY=${INTEROP_DIR:-/tmp/mcp-interop}/venv/bin/python
cargo build -q -p panescan || exit 1
BIN=$ROOT/target/debug/panescan
SOCK=panescan-interop-$$
CONF=$(mktemp)
tmux -L "$SOCK" -f "$CONF" new-session -d -s main -x 120 -y 30
tmux -L "$SOCK" split-window -h -t main
trap 'tmux -L "$SOCK" kill-server; rm -f "$CONF"' EXIT
rc=0
echo "== wire_probe.py --modern"
python3 "$SHARED/interop/wire_probe.py" --modern --tool list_panes --args '{}' \
    -- "$BIN" serve --socket-name "$SOCK" | tail -1 || rc=1
for mode in auto legacy; do
  # One progress check per run: search_panes in one era, wait_for_text in the other.
  if [ "$mode" = auto ]; then
    PROGRESS_TOOL=(search_panes '{"pattern":"x","scrollback_lines":1000}')
  else
    PROGRESS_TOOL=(wait_for_text '{"pane_id":"%0","pattern":"never-appears","timeout_ms":1500}')
  fi
  echo "== mcp_client_check.py --mode $mode"
  "$PY" "$SHARED/interop/mcp_client_check.py" --mode "$mode" \
    --call search_panes '{"pattern":"main","scrollback_lines":100,"context_lines":1}' \
    --call search_panes '{"patterns":["a","b"],"regex":true,"max_scan_lines":5}' \
    --call list_sessions '{}' \
    --call list_windows '{"session":"main"}' \
    --call list_panes '{"filters":{"pane_index__gte":0}}' \
    --call get_server_info '{}' \
    --call get_session_info '{"session_id":"$0"}' \
    --call get_window_info '{"window_id":"@0"}' \
    --call get_pane_info '{"pane_id":"%0"}' \
    --call find_pane_by_position '{"window_id":"@0","position":"bottom-right"}' \
    --call capture_pane '{"pane_id":"%0","start":-10}' \
    --call capture_since '{"pane_id":"%0"}' \
    --call snapshot_pane '{"pane_id":"%0"}' \
    --call get_tmux_variables '{"names":["pane_id","session_name"],"target":"%0"}' \
    --call show_option '{"name":"history-limit"}' \
    --call show_environment '{}' \
    --call show_hooks '{}' \
    --call display_message '{"format":"#{session_name}:#{window_index}","target":"%0"}' \
    --call wait_for_text '{"pane_id":"%0","pattern":"never-appears","timeout_ms":300}' \
    --call call_read_tools_batch '{"operations":[{"tool":"list_sessions"},{"tool":"get_pane_info","arguments":{"pane_id":"%0"}}],"on_error":"continue"}' \
    --progress "${PROGRESS_TOOL[@]}" \
    --expect-error get_pane_info '{"pane_id":"%99"}' \
    --expect-error search_panes '{"pattern":"a{5000}","regex":true}' \
    -- "$BIN" serve --socket-name "$SOCK" > "$CONF.json"
  r=$?
  python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print('ok' if d['ok'] else 'FAILED', d['sdk'], 'protocol', d['protocol_version'], d['n_checks'], 'checks,', len(d['calls']), 'tools called, connect', d['connect_ms'], 'ms')
for f in d['failures']: print('  FAIL', f)" "$CONF.json"
  rm -f "$CONF.json"
  [ $r -ne 0 ] && rc=1
done
exit $rc
