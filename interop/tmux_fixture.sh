#!/usr/bin/env bash
# A private tmux server for one interop client, never the user's:
#   tmux_fixture.sh up NAME     start `tmux -L NAME -f /dev/null` with session
#                               main (120x30): pane %0 a shell, pane %1 and
#                               window 1 (%2, %3) each printing 60,000
#                               numbered lines of history; returns when all
#                               of it is in tmux
#   tmux_fixture.sh freeze NAME stop that tmux server (SIGSTOP): every call
#                               that needs tmux waits, until...
#   tmux_fixture.sh thaw NAME   ...it goes on (SIGCONT)
#   tmux_fixture.sh down NAME   kill that server (thawed first) and remove
#                               its socket
# Fresh servers number their objects from 0, so the clients can name
# $0, @0, %0 without asking.
set -euo pipefail
cmd=${1:-}
name=${2:-}
[ -n "$name" ] || { echo "usage: $0 up|freeze|thaw|down NAME" >&2; exit 2; }
t() { tmux -L "$name" -f /dev/null "$@"; }
LINES_PER_PANE=60000
# A frozen server answers nothing, so its pid is kept aside at `up`.
PIDFILE=${TMPDIR:-/tmp}/$name.interop-tmux-pid
pid() { cat "$PIDFILE" 2>/dev/null || true; }

case "$cmd" in
up)
    fill="seq -f 'interop history line %g' 1 $LINES_PER_PANE; exec cat"
    t start-server \; set -g history-limit 100000 \; \
        new-session -d -s main -x 120 -y 30 \; \
        split-window -h -t main "$fill" \; \
        new-window -t main "$fill" \; \
        split-window -v -t main:1 "$fill"
    t display-message -p '#{pid}' > "$PIDFILE"
    # Ready when every filled pane holds its lines (history + screen).
    for _ in $(seq 1 600); do
        short=$(t list-panes -a -F '#{pane_id} #{e|+:#{history_size},#{pane_height}}' |
            awk -v want="$LINES_PER_PANE" '$1 != "%0" && $2 < want' | wc -l)
        [ "$short" -eq 0 ] && exit 0
        sleep 0.1
    done
    echo "tmux_fixture: panes of $name did not fill" >&2
    exit 1
    ;;
freeze)
    kill -STOP "$(pid)"
    ;;
thaw)
    kill -CONT "$(pid)"
    ;;
down)
    p=$(pid)
    [ -n "$p" ] && kill -CONT "$p" 2>/dev/null
    rm -f "$PIDFILE"
    sock=$(t display-message -p '#{socket_path}' 2>/dev/null || true)
    t kill-server 2>/dev/null || true
    [ -n "$sock" ] && rm -f "$sock"
    exit 0
    ;;
*)
    echo "usage: $0 up|freeze|thaw|down NAME" >&2
    exit 2
    ;;
esac
