"""search_panes over Streamable HTTP beside stdio, same run, calls
interleaved: both `serve --no-daemon` (so only the transport differs) on
the tmux server SOCKET (interop/tmux_fixture.sh up SOCKET), the HTTP client
with TCP_NODELAY as HTTP client libraries set it.
usage: python3 interop/http_vs_stdio.py PANESCAN SOCKET N
"""
import http.client, json, subprocess, sys, time, statistics, os
BIN, SOCK, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = {"pattern": "interop history line 4242", "scrollback_lines": 100000}
def call(i): return {"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"search_panes","arguments":args}}
init = {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}
env = dict(os.environ, PANESCAN_NO_DAEMON="1")
st = subprocess.Popen([BIN,"serve","-L",SOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
def stdio(msg):
    st.stdin.write(json.dumps(msg)+"\n"); st.stdin.flush()
    while True:
        m = json.loads(st.stdout.readline())
        if m.get("id") == msg["id"]: return m
stdio(init)
hp = subprocess.Popen([BIN,"serve","-L",SOCK,"--http","127.0.0.1:0","--no-auth"], stderr=subprocess.PIPE, env=env, text=True)
for line in hp.stderr:
    if "MCP over HTTP at" in line:
        host = line.split("http://")[1].split("/mcp")[0]; break
h, p = host.split(":")
conn = http.client.HTTPConnection(h, int(p)); conn.connect()
import socket; conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sid = None
def post(msg):
    global sid
    hd = {"content-type":"application/json","accept":"application/json, text/event-stream"}
    if sid: hd["mcp-session-id"] = sid
    conn.request("POST","/mcp",json.dumps(msg),hd)
    r = conn.getresponse(); body = r.read()
    sid = sid or r.getheader("mcp-session-id")
    return json.loads(body)
post(init)
for i in range(3): stdio(call(100+i)); post(call(200+i))
ts, th = [], []
for i in range(N):
    t = time.perf_counter(); r = stdio(call(1000+i)); ts.append(time.perf_counter()-t)
    assert "4242" in json.dumps(r)
    t = time.perf_counter(); r = post(call(2000+i)); th.append(time.perf_counter()-t)
    assert "4242" in json.dumps(r)
ms, mh = statistics.median(ts)*1000, statistics.median(th)*1000
print(f"search_panes median over {N} interleaved calls: stdio {ms:.2f} ms, http {mh:.2f} ms, ratio {mh/ms:.3f}")
st.terminate(); hp.terminate()
