#!/bin/bash
# test_socket_trust.sh RINGD — who may do what through the query socket, and that no client
# can stall or starve the agent. Real agents on loopback; clients run as other users with
# setpriv (util-linux), so this test needs root, as the CI has.
#   (a) nobody may PING, OWNER and INFO, but JOIN and LEAVE (and `ringd join`) get -NOPERM
#       and the connection keeps answering;
#   (b) with --admin-group nogroup: nobody (gid nogroup) and daemon with nogroup as a
#       supplementary group may JOIN; daemon alone may not; root may;
#   (c) the socket has exactly --socket-mode right after start, and a socket directory that
#       others can write to (no sticky bit) is refused with one line and exit 1;
#   (d) JOIN resolves without blocking: the reason of a failed resolution comes back, and
#       while a JOIN waits ~3 s on a name server that never answers (a black hole on
#       127.0.0.77:53, seen by the agent alone through a private mount namespace), PINGs on
#       another connection are answered at once and the JOIN's pipelined PING follows its
#       -ERR;
#   (e) under `ulimit -n 256`, 400 idle clients: the refusals are logged once, an existing
#       connection keeps answering, a peer neither suspects the agent nor fails to join
#       through it, and new clients are accepted once the idle ones have gone.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (clients run as other users)"; exit 1; }
for c in setpriv unshare python3 redis-cli; do
    command -v "$c" >/dev/null || { echo "$c not found"; exit 1; }
done
REAL_RINGD=$RINGD
chmod 755 "$DIR" # other users must reach the sockets (0666) inside

as() { user=$1 group=$2; shift 2; setpriv --reuid="$user" --regid="$group" --clear-groups "$@"; }
# Lines to one connection: redis-cli reads commands from stdin when it is not a terminal.
# (It follows each error with an empty line, dropped here.)
session() {
    sock=$1; shift
    printf '%s\n' "$@" | "${RUN[@]}" redis-cli -s "$sock" 2>&1 | grep -v '^$' | tr '\n' '|'
}
expect() {
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}
expect_match() {
    if [[ "$2" =~ $3 ]]; then ok "$1"; else fail "$1: got '$2', want /$3/"; fi
}

NOPERM="NOPERM this command needs root or the agent's user"

# start_at NAME PORT SOCKET [flags...]: start, for a socket outside $DIR.
start_at() {
    name=$1 port=$2 sock=$3; shift 3
    "$RINGD" agent --name "$name" --bind "127.0.0.1:$port" --socket "$sock" "$@" 2>>"$DIR/$name.log" &
    PIDS="$PIDS $!"
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.05; done
    return 1
}

# ---------------------------------------------------------------- (a) readers and -NOPERM
start a1 "$PORT0" --socket-mode 0666 || exit 1
S1=$DIR/a1.sock
out=$(as nobody nogroup "$REAL_RINGD" join "127.0.0.1:$((PORT0 + 20))" --socket "$S1" 2>&1)
expect "(a) \`ringd join\` as nobody: exit 1 with the agent's refusal" "$? $out" "1 ringd: $NOPERM"
RUN=(as nobody nogroup)
out=$(session "$S1" PING "OWNER k" "JOIN 127.0.0.1:$((PORT0 + 20))" LEAVE "PING still")
expect "(a) nobody: PING and OWNER answered, JOIN and LEAVE refused, the connection answers on" \
    "$out" "PONG|a1|$NOPERM|$NOPERM|still|"
info=$(as nobody nogroup redis-cli -s "$S1" INFO | tr -d '\r')
expect "(a) nobody may read INFO" "$(sed -n 's/^name://p' <<<"$info")" a1
sleep 0.3
expect "(a) the agent is still running and did not try the seed" \
    "$(kill -0 "$(pid_of a1)" 2>&1 && grep -c 'msg=joining' "$DIR/a1.log")" 0
RUN=()
# (nobody listens there: the JOIN is carried out, and its answer says why it failed)
expect "(a) root may JOIN" "$(session "$S1" "JOIN 127.0.0.1:$((PORT0 + 20))")" \
    "ERR cannot join 127.0.0.1:$((PORT0 + 20)): connection refused|"

# ---------------------------------------------------------------- (b) --admin-group
start a2 $((PORT0 + 1)) --socket-mode 0666 --admin-group nogroup || fail "(b) the agent starts with --admin-group"
S2=$DIR/a2.sock
GROUP_NOPERM="NOPERM this command needs root, the agent's user or group nogroup"
RUN=(as nobody nogroup)
expect "(b) nobody, whose gid is the admin group, may JOIN" "$(session "$S2" "JOIN 127.0.0.1:$PORT0")" "OK|"
RUN=(as daemon daemon)
expect "(b) daemon, not in the group, may not JOIN" "$(session "$S2" "JOIN 127.0.0.1:$PORT0" PING)" \
    "$GROUP_NOPERM|PONG|"
RUN=(setpriv --reuid=daemon --regid=daemon --groups=nogroup)
expect "(b) daemon with nogroup as a supplementary group may JOIN" \
    "$(session "$S2" "JOIN 127.0.0.1:$PORT0")" "OK|"
RUN=()
expect "(b) root may JOIN" "$(session "$S2" "JOIN 127.0.0.1:$PORT0")" "OK|"

# ---------------------------------------------------------------- (c) socket mode and directory
start a3 $((PORT0 + 2)) --socket-mode 0640 || exit 1
start c1 $((PORT0 + 8)) --socket-mode 0666 || exit 1
expect "(c) the socket's mode is exactly --socket-mode 0666" "$(stat -c %a "$DIR/c1.sock")" 666
expect "(c) ... and 0640 for another agent" "$(stat -c %a "$DIR/a3.sock")" 640
mkdir -m 0777 "$DIR/ww" && chmod 0777 "$DIR/ww"
timeout 5 "$RINGD" agent --name ww --bind "127.0.0.1:$((PORT0 + 3))" --socket "$DIR/ww/ww.sock" \
    >"$DIR/ww.out" 2>"$DIR/ww.log"
rc=$?
expect "(c) a world-writable socket directory without the sticky bit: exit 1" "$rc" 1
expect_match "(c) ... with one line saying why" "$(wc -l <"$DIR/ww.log") $(cat "$DIR/ww.log")" \
    "^1 .*socket directory $DIR/ww is writable by others \(mode 0777, no sticky bit\)"
chmod 1777 "$DIR/ww"
start_at ww $((PORT0 + 3)) "$DIR/ww/ww.sock"
expect "(c) ... and the same directory with the sticky bit is fine" "$(stat -c %a "$DIR/ww/ww.sock" 2>&1)" 660

# ---------------------------------------------------------------- (d) JOIN does not block
RUN=()
expect_match "(d) JOIN of a name that does not resolve: -ERR with the resolver's reason" \
    "$(session "$DIR/a3.sock" "JOIN no-such-host.invalid:7946" PING)" \
    "^ERR cannot join no-such-host.invalid:7946: cannot resolve no-such-host.invalid: [A-Za-z].*\|PONG\|$"

# The agent alone sees a resolv.conf whose name server drops every query. That takes a
# private mount namespace, which a chroot (a fresh-machine check) cannot make: say so.
if ! unshare --mount --propagation private true 2>/dev/null; then
echo "# (d) slow name server skipped: no private mount namespace here (a chroot?)"
else
cat >"$DIR/resolv.conf" <<'EOF'
nameserver 127.0.0.77
options timeout:3 attempts:1
EOF
cat >"$DIR/ringd-slowdns" <<EOF
#!/bin/sh
exec unshare --mount --propagation private sh -c 'mount --bind "\$0" /etc/resolv.conf && exec "\$@"' \
    "$DIR/resolv.conf" "$REAL_RINGD" "\$@"
EOF
chmod +x "$DIR/ringd-slowdns"
python3 - "$DIR/blackhole.ready" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.77", 53))
open(sys.argv[1], "w").close()
s.settimeout(1)
end = time.time() + 60
while time.time() < end:  # swallow queries; stop by itself
    try:
        s.recv(4096)
    except socket.timeout:
        pass
PY
BLACKHOLE=$!
for _ in $(seq 50); do [ -e "$DIR/blackhole.ready" ] && break; sleep 0.1; done
RINGD=$DIR/ringd-slowdns
start d1 $((PORT0 + 4)) || exit 1
RINGD=$REAL_RINGD
r=$(python3 - "$DIR/d1.sock" <<'PY'
import socket, sys, time
def conn():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(sys.argv[1])
    return c
joiner, pinger = conn(), conn()
t0 = time.time()
joiner.sendall(b"JOIN slow-name.ringd-test:7946\r\nPING after\r\n")
joiner.setblocking(False)
got, worst, pings = b"", 0.0, 0
while time.time() - t0 < 10 and not got.endswith(b"after\r\n"):
    p = time.time()
    pinger.sendall(b"PING\r\n")
    pinger.settimeout(5)
    if pinger.recv(64) != b"+PONG\r\n":
        break
    worst, pings = max(worst, time.time() - p), pings + 1
    try:
        got += joiner.recv(4096)
    except BlockingIOError:
        pass
    time.sleep(0.05)
join_s = time.time() - t0
print("join_ms=%d pings=%d worst_ping_ms=%d reply=%s" % (join_s * 1000, pings, worst * 1000,
      got.decode(errors="replace").replace("\r\n", "|")))
PY
)
kill "$BLACKHOLE" 2>/dev/null
kv() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1"; }
echo "# $r"
check "(d) the JOIN waited on the silent name server ($(kv "$r" join_ms) ms)" \
    [ "$(kv "$r" join_ms)" -ge 1500 ]
prompt() { [ "$(kv "$r" pings)" -ge 10 ] && [ "$(kv "$r" worst_ping_ms)" -lt 500 ]; }
check "(d) meanwhile another connection got $(kv "$r" pings) PONGs, the slowest in $(kv "$r" worst_ping_ms) ms" \
    prompt
expect_match "(d) the JOIN's -ERR names the reason, then its pipelined PING follows" \
    "$(sed -n 's/.* reply=//p' <<<"$r")" "^-ERR cannot join slow-name.ringd-test:7946: cannot resolve slow-name.ringd-test: [^|]+\|\\\$5\|after\|$"
fi

# ---------------------------------------------------------------- (e) out of descriptors
cat >"$DIR/ringd-256" <<EOF
#!/bin/sh
ulimit -n 256 && exec "$REAL_RINGD" "\$@"
EOF
chmod +x "$DIR/ringd-256"
RINGD=$DIR/ringd-256
start e1 $((PORT0 + 5)) || exit 1
RINGD=$REAL_RINGD
start e2 $((PORT0 + 6)) --join "127.0.0.1:$((PORT0 + 5))" || exit 1
two() { [ "$(info e1 members_alive)" = 2 ] && [ "$(info e2 members_alive)" = 2 ]; }
check "(e) e1 (256 descriptors) and e2 form a ring" wait_for 10 two
E1=$DIR/e1.sock
expect "(e) e1's connection cap leaves 64 descriptors: connections_max" "$(info e1 connections_max)" 192
coproc KEEPER { redis-cli -s "$E1"; } # one connection held open throughout
keeper_pid=$KEEPER_PID # bash unsets KEEPER_PID once the coprocess is reaped
echo PING >&"${KEEPER[1]}"
read -r -t 5 line <&"${KEEPER[0]}"
expect "(e) the kept connection answers before" "$line" PONG
python3 - "$E1" 400 "$DIR/idle.out" "$DIR/idle.release" <<'PY' &
import os, socket, sys, time
path, n, out, release = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
open(release, "w").close()
conns, failed = [], 0
for _ in range(n):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect(path)
        conns.append(c)
    except OSError:
        failed += 1
        c.close()
time.sleep(1)
closed = 0
for c in conns:
    c.setblocking(False)
    try:
        if c.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
with open(out + ".tmp", "w") as f:
    f.write("connected=%d failed=%d closed_by_agent=%d\n" % (len(conns), failed, closed))
os.rename(out + ".tmp", out)
end = time.time() + 60
while os.path.exists(release) and time.time() < end:
    time.sleep(0.1)
for c in conns:
    c.close()
PY
IDLE=$!
for _ in $(seq 100); do [ -e "$DIR/idle.out" ] && break; sleep 0.1; done
echo "# idle clients: $(cat "$DIR/idle.out" 2>/dev/null)"
flood_start=$(now_ms)
echo PING >&"${KEEPER[1]}"
line=""
read -r -t 2 line <&"${KEEPER[0]}"
expect "(e) during the flood the kept connection answers PING" "$line" PONG
start e3 $((PORT0 + 7)) --join "127.0.0.1:$((PORT0 + 5))" || exit 1
three() { [ "$(info e3 members_alive)" = 3 ]; }
check "(e) during the flood a new peer joins through e1 (sync over TCP)" wait_for 10 three
sleep 3 # several probe rounds with e1's descriptors exhausted
check "(e) e2 never suspected e1" [ "$(grep -c 'msg="member suspect" member=e1' "$DIR/e2.log")" = 0 ]
refusals=$(grep -cE 'msg="query (connection refused|accept failed)"' "$DIR/e1.log")
check "(e) the refusals were logged once ($refusals line: $(grep -m1 -E 'msg="query (connection refused|accept failed)"' "$DIR/e1.log" | cut -c1-160))" \
    [ "$refusals" = 1 ]
rm -f "$DIR/idle.release"
wait "$IDLE"
back() { [ "$(q e1 PING)" = PONG ] && [ "$(info e1 connections)" -le 2 ]; }
check "(e) once the idle clients are gone, new clients are served again" wait_for 5 back
echo QUIT >&"${KEEPER[1]}"
wait "$keeper_pid" 2>/dev/null

finish
