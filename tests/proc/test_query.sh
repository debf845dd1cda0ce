#!/usr/bin/env bash
# test_query.sh — the query socket and the client subcommands, against real agents.
#
#   tests/proc/test_query.sh path/to/ringd [path/to/rd_pipeline_check]
#
# Starts agents on loopback with their sockets in a fresh temporary directory, drives them
# with redis-cli, raw bytes (python3) and the ringd CLI, and checks DESIGN.md §1 and §5:
# the RESP commands, errors that keep the connection usable, protocol errors that close
# it, pipelining, the output limit, the socket file's life (mode, stale replacement, a
# live agent not replaced, a user's file not deleted), events through `ringd watch`
# (SUBSCRIBE), JOIN and LEAVE.
# Needs redis-cli and python3. Prints "N passed, N failed"; exits 1 on any failure.
set -u

RINGD=${1:?usage: test_query.sh path/to/ringd}
RINGD=$(cd "$(dirname "$RINGD")" && pwd)/$(basename "$RINGD")
PIPELINE=${2:-${RD_PIPELINE_CHECK:-}} # optional: tests/proc/pipeline.c, the hiredis check
command -v redis-cli >/dev/null || { echo "redis-cli not found"; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
# The interpreter itself, not a version manager's shim: it is started ~30 times.
PY=$(python3 -c 'import sys; print(sys.executable)')

dir=$(mktemp -d "${TMPDIR:-/tmp}/ringd-query.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
not_ok() { failed=$((failed + 1)); echo "FAIL $1"; shift; for l in "$@"; do echo "     $l"; done; }
# expect NAME GOT WANT
expect() { if [[ "$2" == "$3" ]]; then ok "$1"; else not_ok "$1" "got:  $(printf %q "$2")" "want: $(printf %q "$3")"; fi; }
# expect_match NAME GOT REGEX
expect_match() { if [[ "$2" =~ $3 ]]; then ok "$1"; else not_ok "$1" "got:  $(printf %q "$2")" "want: /$3/"; fi; }

# A loopback port free for both TCP and UDP.
free_port() {
    "$PY" - <<'EOF'
import socket
for _ in range(100):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        t.close(); continue
    u.close(); t.close()
    print(port)
    break
EOF
}

# raw.py SOCK MODE: sends stdin's bytes on one connection and prints what came back with
# every CRLF shown as '|', then " <EOF>" if the agent closed the connection, " <OPEN>" if
# it was still open after the wait. MODE: half = shut our sending side after the bytes
# (the agent answers, then closes); keep = keep it open and wait up to 2 s for a close;
# flood = write requests without reading: the agent stops reading us (our writes block).
cat >"$dir/raw.py" <<'EOF'
import socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
if mode == "flood":
    # 2000 keys per MOWNER: ~10 KiB of reply per ~20 KiB request, never read.
    req = b"*2001\r\n$6\r\nMOWNER\r\n" + b"".join(b"$6\r\nk%05d\r\n" % i for i in range(2000))
    s.settimeout(10)
    sent = 0
    try:
        while sent < 64 << 20:
            s.sendall(req)
            sent += len(req)
        print("never cut off")
    except (BrokenPipeError, ConnectionResetError):
        print("cut off")
    except socket.timeout:
        print("timeout")
    sys.exit(0)
s.sendall(sys.stdin.buffer.read())
if mode == "half":
    s.shutdown(socket.SHUT_WR)
s.settimeout(2 if mode == "keep" else 5)
data, state = b"", "<OPEN>"
try:
    while True:
        d = s.recv(65536)
        if not d:
            state = "<EOF>"
            break
        data += d
except socket.timeout:
    pass
print(data.decode("latin-1").replace("\r\n", "|") + " " + state)
EOF
raw() { "$PY" "$dir/raw.py" "$@"; }

# start_agent NAME PORT SOCKET [more flags]: starts an agent in the background, its log in
# $dir/NAME.log; sets $agent_pid. Does not wait.
start_agent() {
    local name=$1 port=$2 sock=$3
    shift 3
    "$RINGD" agent --name "$name" --bind "127.0.0.1:$port" --socket "$sock" --log-level info \
        "$@" 2>>"$dir/$name.log" &
    agent_pid=$!
    pids+=("$agent_pid")
}

# wait_socket SOCKET: until the agent there answers PING (5 s at most).
wait_socket() {
    for _ in $(seq 100); do
        [[ -S "$1" ]] && [[ "$(redis-cli -s "$1" PING 2>/dev/null)" == PONG ]] && return 0
        sleep 0.05
    done
    return 1
}

# wait_exit PID: waits up to 5 s for PID (a child of this shell) to exit and sets $status
# to its exit status, or to "running". Not in $(...): a subshell cannot wait for it.
wait_exit() {
    status=running
    for _ in $(seq 100); do
        if ! kill -0 "$1" 2>/dev/null; then
            wait "$1"
            status=$?
            return
        fi
        sleep 0.05
    done
}

# wait_grep FILE REGEX: until FILE has a line matching REGEX (5 s at most).
wait_grep() {
    for _ in $(seq 100); do
        grep -Eq "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

p1=$(free_port)
s1=$dir/run/a1.sock # run/ does not exist yet: the agent creates it
start_agent a1 "$p1" "$s1"
a1=$agent_pid
if ! wait_socket "$s1"; then
    not_ok "agent a1 starts and answers on its socket" "$(cat "$dir/a1.log")"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok "agent a1 starts and answers on its socket"
cli() { redis-cli -s "$s1" "$@" 2>&1; }

# ---------------------------------------------------------------- the socket file
expect "socket file mode is 0660" "$(stat -c %a "$s1")" 660
expect "missing socket directory is created 0750" "$(stat -c %a "$dir/run")" 750

# ---------------------------------------------------------------- commands
expect "PING answers PONG" "$(cli PING)" PONG
expect "PING msg echoes msg" "$(cli PING hello)" hello
expect "OWNER on a ring of one is that member" "$(cli OWNER k)" a1
expect "OWNERS k 3 on a ring of one has one element" "$(cli OWNERS k 3)" a1
expect "MOWNER answers one name per key" "$(cli MOWNER a b c | tr '\n' ' ')" "a1 a1 a1 "
expect "commands are case-insensitive" "$(cli oWnEr k)" a1
members=$(cli MEMBERS | tr '\n' ' ')
expect_match "MEMBERS lists a1, alive, with its fields" "$members" \
    "^name a1 addr 127\.0\.0\.1:$p1 status alive incarnation [0-9]+ weight 1\.000 zone  tags  $"
info=$(cli INFO)
missing=""
for f in name members_alive members_suspect members_dead members_left ring_version \
    ring_checksum ring_points vnodes uptime_s connections watchers; do
    grep -q "^$f:" <<<"$info" || missing+=" $f"
done
expect "INFO has every field of DESIGN §5" "$missing" ""
expect "INFO name and members_alive" "$(grep -E '^(name|members_alive):' <<<"$info" | tr -d '\r' | tr '\n' ' ')" \
    "name:a1 members_alive:1 "
expect "INFO is in Redis's sections" "$(grep '^#' <<<"$info" | tr -d '\r' | tr '\n' ' ')" \
    "# Server # Clients # Membership # Ring # Gossip # Stats "
expect "INFO server: its header, then version, pid, uptime, config file, profile" \
    "$(cli INFO server | tr -d '\r' | cut -d: -f1 | tr '\n' ' ')" "# Server version pid uptime_s config_file profile "
expect "INFO of no such section is empty, as Redis" "$(cli INFO nosuch | tr -d '\r')" ""

# ---------------------------------------------------------------- errors keep the connection
expect "unknown command is an error naming it" "$(printf 'FROB x\r\nPING\r\n' | raw "$s1" half)" \
    "-ERR unknown command 'FROB'|+PONG| <EOF>"
expect "wrong arity is an error and the connection answers PING after" \
    "$(printf 'OWNER\r\nPING\r\n' | raw "$s1" half)" \
    "-ERR wrong number of arguments for 'owner'|+PONG| <EOF>"
expect "OWNERS with a bad count is an error; n = 0 is an empty array" \
    "$(printf 'OWNERS k 0\r\nOWNERS k x\r\nOWNERS k -1\r\nOWNERS k 2\r\n' | raw "$s1" half)" \
    "*0|-ERR n must be an integer from 0 to 1000000|-ERR n must be an integer from 0 to 1000000|*1|\$2|a1| <EOF>"
expect_match "JOIN of a bad address is an error" "$(printf 'JOIN nope:notaport\r\nPING\r\n' | raw "$s1" half)" \
    "^-ERR cannot join nope:notaport: [^|]+\\|\\+PONG\\| <EOF>$"
expect "a blank line and an empty array are skipped" "$(printf '\r\n*0\r\nPING\r\n' | raw "$s1" half)" \
    "+PONG| <EOF>"

# ---------------------------------------------------------------- protocol errors close
expect "a negative bulk length gets a protocol error and the connection closes" \
    "$(printf '*1\r\n$-5\r\n' | raw "$s1" keep)" "-ERR Protocol error: negative length| <EOF>"
expect "requests before a protocol error are answered first" \
    "$(printf 'PING\r\n*2\r\n$4\r\nPING\r\nxx\r\n' | raw "$s1" keep)" \
    "+PONG|-ERR Protocol error: expected '\$'| <EOF>"
expect "an argument over the limit gets a protocol error at once" \
    "$(printf '*2\r\n$5\r\nOWNER\r\n$999999999\r\n' | raw "$s1" keep)" \
    "-ERR Protocol error: argument too large| <EOF>"

# ---------------------------------------------------------------- pipelining
answers=$(for i in $(seq 1000); do echo "OWNER k$i"; done | redis-cli -s "$s1")
expect "1000 pipelined OWNER get 1000 answers, all a1" \
    "$(wc -l <<<"$answers") $(sort -u <<<"$answers")" "1000 a1"
req=$(printf 'MOWNER'; for i in $(seq 500); do printf ' k%d' "$i"; done)
expect_match "a MOWNER of 500 keys in one inline request" "$(printf '%s\r\n' "$req" | raw "$s1" half)" \
    '^\*500\|(\$2\|a1\|){500} <EOF>$'
# A request split over many writes is reassembled.
expect "a request trickled byte by byte is answered" "$("$PY" - "$s1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for b in b"*2\r\n$5\r\nOWNER\r\n$1\r\nk\r\n":
    s.send(bytes([b])); time.sleep(0.002)
s.settimeout(3); print(s.recv(100))
EOF
)" "b'\$2\\r\\na1\\r\\n'"

# ---------------------------------------------------------------- clients that misbehave
"$PY" - "$s1" <<'EOF'
import socket, sys
path = sys.argv[1]
# a half-sent request, then gone
s = socket.socket(socket.AF_UNIX); s.connect(path); s.sendall(b"*2\r\n$5\r\nOWN"); s.close()
# many requests, gone before reading any answer
s = socket.socket(socket.AF_UNIX); s.connect(path); s.sendall(b"MEMBERS\r\n" * 5000); s.close()
# many connections at once, all dropped
cs = []
for _ in range(200):
    c = socket.socket(socket.AF_UNIX); c.connect(path); c.sendall(b"INFO\r\n"); cs.append(c)
for c in cs: c.close()
EOF
expect "the agent survives clients that vanish mid-request and mid-reply" "$(cli PING)" PONG
expect "a client that never reads is paused: the agent stops reading it" "$(raw "$s1" flood)" "timeout"
expect_match "the paused client was not cut off" "$(cli INFO)" "connections_cut_off:0"
expect "the agent answers others meanwhile and after" "$(cli PING)" PONG

# ---------------------------------------------------------------- the CLI
R() { "$RINGD" "$@" --socket "$s1"; }
out=$(R members)
expect_match "ringd members prints a table sorted by name" "$out" \
    "^NAME +ADDRESS +STATUS +INCARNATION +WEIGHT +TAGS"$'\n'"a1 +127\.0\.0\.1:$p1 +alive +[0-9]+ +1\.000$"
json=$(R members --json)
if "$PY" -m json.tool <<<"$json" >/dev/null 2>&1; then ok "ringd members --json is valid JSON"; else not_ok "ringd members --json is valid JSON" "$json"; fi
expect "ringd members --json has name and status" \
    "$("$PY" -c 'import json,sys; m=json.load(sys.stdin); print(m[0]["name"], m[0]["status"], m[0]["weight"])' <<<"$json")" \
    "a1 alive 1.0"
expect "ringd owner k" "$(R owner k)" a1
expect "ringd owner k -n 2 on a ring of one" "$(R owner k -n 2)" a1
expect "ringd owner k --json" "$(R owner k --json)" '{"key":"k","owners":["a1"]}'
expect_match "ringd info prints the INFO text" "$(R info)" $'(^|\n)name:a1\n'
expect "ringd with RINGD_SOCKET" "$(RINGD_SOCKET=$s1 "$RINGD" owner k)" a1
expect "--socket before the command" "$("$RINGD" --socket "$s1" owner k)" a1
out=$("$RINGD" --socket "$dir/nonexistent" info 2>&1)
expect "ringd info on a missing socket: exit 1" "$?" 1
expect "ringd info on a missing socket: one line" \
    "$out" "ringd: cannot connect to $dir/nonexistent: No such file or directory (is the agent running?)"
out=$(R members --bogus 2>&1)
expect "a bad flag exits 2" "$?" 2
expect "a bad flag prints one line" "$(wc -l <<<"$out")" 1
R owner k -n zero >/dev/null 2>&1
expect "owner -n with a bad count exits 2" "$?" 2
R join --json 127.0.0.1:1 >/dev/null 2>&1
expect "--json on a command that prints no data (join) exits 2" "$?" 2
out=$(R join nope:notaport 2>&1)
expect_match "ringd join with a bad address: exit 1 and the agent's error" "$? $out" \
    "^1 ringd: ERR cannot join nope:notaport: [a-z]"
expect_match "ringd owner --help" "$(R owner --help)" "^usage: ringd owner KEY"

# ---------------------------------------------------------------- one socket, one agent
p2=$(free_port)
start_agent a1bis "$p2" "$s1"
wait_exit "$agent_pid"
expect "a second agent on a live socket exits non-zero" "$status" 1
expect_match "... saying another agent is running" "$(cat "$dir/a1bis.log")" \
    "another agent is running on $s1"
expect "... and the first agent still answers" "$(cli PING)" PONG
echo "keep me" >"$dir/notasocket"
start_agent a1ter "$p2" "$dir/notasocket"
wait_exit "$agent_pid"
expect "an agent refuses a path that is not a socket" "$status" 1
expect_match "... saying why" "$(cat "$dir/a1ter.log")" "notasocket exists and is not a socket"
expect "... and leaves the file alone" "$(cat "$dir/notasocket")" "keep me"

# ---------------------------------------------------------------- watch, join, leave
"$RINGD" watch --socket "$s1" >"$dir/watch.txt" 2>&1 &
watch_pid=$!
pids+=("$watch_pid")
"$RINGD" watch --json --socket "$s1" >"$dir/watch.json" 2>&1 &
watchj_pid=$!
pids+=("$watchj_pid")
for _ in $(seq 100); do
    [[ "$(cli INFO | tr -d '\r' | grep '^watchers:')" == watchers:2 ]] && break
    sleep 0.05
done
expect "INFO counts the watchers" "$(cli INFO | tr -d '\r' | grep '^watchers:')" watchers:2
expect "a subscriber answers PING, as Redis" "$(printf 'SUBSCRIBE members\r\nPING\r\n' | raw "$s1" half)" \
    "*3|\$9|subscribe|\$7|members|:1|*2|\$4|pong|\$0|| <EOF>"
expect "WATCH is refused, pointing at SUBSCRIBE" "$(printf 'WATCH\r\n' | raw "$s1" half)" \
    "-ERR WATCH is not supported: an owner has no version to watch; SUBSCRIBE members ring for events| <EOF>"
s2=$dir/a2.sock
start_agent a2 "$p2" "$s2"
a2=$agent_pid
wait_socket "$s2" || not_ok "agent a2 starts" "$(cat "$dir/a2.log")"
expect "ringd join through a1" "$("$RINGD" join "127.0.0.1:$p1" --socket "$s2")" OK
if wait_grep "$dir/watch.txt" "state version=1 checksum=[0-9a-f]{16} points=[0-9]+ members=1$"; then
    ok "watch starts with the state it joined in"
else not_ok "watch starts with the state it joined in" "$(cat "$dir/watch.txt")"; fi
expect_match "... its members, one line each" "$(sed -n 2p "$dir/watch.txt")" \
    " member a1 alive addr=127\.0\.0\.1:$p1 incarnation=[0-9]+$"
if wait_grep "$dir/watch.txt" "member a2 alive addr=127\.0\.0\.1:$p2 incarnation=[0-9]+$"; then
    ok "watch shows the new member"
else not_ok "watch shows the new member" "$(cat "$dir/watch.txt")"; fi
if wait_grep "$dir/watch.txt" "ring version=2 checksum=[0-9a-f]{16} points=[0-9]+ moved=0\.[0-9]{4} a1->a2:0\.[0-9]{4}$"; then
    ok "watch shows the ring change and what moved"
else not_ok "watch shows the ring change and what moved" "$(cat "$dir/watch.txt")"; fi
expect "both agents see two members" "$(R owner k -n 5 | sort | tr '\n' ' ')" "a1 a2 "
if [[ -n "$PIPELINE" ]]; then
    for s in "$s1" "$s2"; do
        out=$("$PIPELINE" "$s" 10000 2>&1)
        expect_match "hiredis: 10000 pipelined requests agree with the in-process ring ($(basename "$s"))" \
            "$out" "^pipeline: 10000 requests, 0 mismatches, ring of 2 members"
    done
fi
expect "leave prints OK" "$("$RINGD" leave --socket "$s2")" OK
wait_exit "$a2"
expect "the agent that left exits 0" "$status" 0
expect_match "its log says member left" "$(cat "$dir/a2.log")" 'msg="member left" member=a2'
[[ -e "$s2" ]] && not_ok "its socket file is removed" || ok "its socket file is removed"
if wait_grep "$dir/watch.txt" "member a2 left"; then ok "watch shows the leave"; else not_ok "watch shows the leave" "$(cat "$dir/watch.txt")"; fi
wait_grep "$dir/watch.json" '"type":"ring","version":3' >/dev/null
bad=$("$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e["type"] in ("state", "member", "ring") and "ts" in e, line
print("ok")' "$dir/watch.json" 2>&1)
expect "watch --json prints one JSON object per line" "$bad" ok
expect "... the state it joined in first, then member and ring events" \
    "$("$PY" -c 'import json,sys; print(" ".join(json.loads(l)["type"] for l in open(sys.argv[1])))' "$dir/watch.json")" \
    "state member ring member ring"

# ---------------------------------------------------------------- crash and restart
kill -KILL "$a1"
wait "$a1" 2>/dev/null
expect "after SIGKILL the socket file stays behind" "$([[ -S "$s1" ]] && echo stale)" stale
wait_exit "$watch_pid"
expect "watchers end, exit status 1, when the agent goes away" "$status" 1
expect "... saying so on their last line" "$(tail -1 "$dir/watch.txt")" \
    "ringd: the agent closed the connection (it stopped or left)"
start_agent a1 "$p1" "$s1"
a1=$agent_pid
if wait_socket "$s1"; then ok "a new agent replaces the stale socket"; else not_ok "a new agent replaces the stale socket" "$(tail -5 "$dir/a1.log")"; fi
expect_match "... and says so in its log" "$(cat "$dir/a1.log")" 'msg="stale query socket replaced"'
expect "... and answers" "$(R owner k)" a1
expect "leave on a lone agent prints OK" "$(R leave)" OK
wait_exit "$a1"
expect "... and the agent exits 0" "$status" 0
expect_match "... logging member left" "$(tail -5 "$dir/a1.log")" 'msg="member left" member=a1'
[[ -e "$s1" ]] && not_ok "... and its socket file is removed" || ok "... and its socket file is removed"

# ---------------------------------------------------------------- sanitizers
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir"/*.log >/dev/null; then
    not_ok "no sanitizer reports in the agents' logs" "$(grep -E -A5 "Sanitizer|runtime error:" "$dir"/*.log | head -40)"
else
    ok "no sanitizer reports in the agents' logs"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
