#!/bin/bash
# test_ready.sh RINGD — "ready before answering" and honest join results, on loopback:
#  (a) an agent started with --join to a dead port is not ready: OWNER, OWNERS and MOWNER
#      get -NOTREADY on a connection that stays usable, INFO says ready:0, `ringd ready`
#      prints not-ready and exits 1, and each failed attempt is logged with its reason,
#      rate-limited with the backoff;
#  (b) forged datagrams (a member record, a PING) do not make it ready, nor does a sync
#      that another agent opened towards it;
#  (c) once its seed starts it becomes ready and answers;
#  (d) an agent started with no seed is ready at once;
#  (e) --join-timeout 2 with a dead seed exits 1 with one line saying so;
#  (f) `ringd join` to a dead address exits 1 with the reason, to a live one 0;
#  (g) a sealed agent joining a plain one logs why it cannot join.
# About 30 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }

SEED=$PORT0            # the seed: started only at (c)
DEAD=$((PORT0 + 20))   # nobody ever listens here
ready_of() { "$RINGD" ready --socket "$DIR/$1.sock" 2>/dev/null; }
# placement NAME: the three placement commands and a PING, on one connection
placement() { printf 'OWNER k\nOWNERS k 2\nMOWNER a b\nPING\n' | redis-cli -s "$DIR/$1.sock" 2>&1; }
fails_lines() { grep -c 'msg="join attempt failed"' "$DIR/$1.log"; }

# ---- (a) not ready while the seed is dead
t_start=$(now_ms)
start w $((PORT0 + 1)) --join "127.0.0.1:$SEED" || exit 1
sleep 1.5
out=$(placement w)
check "(a) OWNER, OWNERS, MOWNER get -NOTREADY, PING still answers: $(echo $out)" \
  [ "$(echo "$out" | grep -c '^NOTREADY not joined yet$')" = 3 -a "$(echo "$out" | tail -1)" = PONG ]
check "(a) INFO ready:0 joined:0" [ "$(info w ready) $(info w joined)" = "0 0" ]
word=$(ready_of w); rc=$?
check "(a) ringd ready prints not-ready and exits 1 (got '$word', $rc)" [ "$word $rc" = "not-ready 1" ]

# ---- (b) forged datagrams and a sync opened by someone else do not count
$FORGER record $((PORT0 + 1)) ghost $((PORT0 + 21)) 5 0 >/dev/null
$FORGER ping $((PORT0 + 1)) w >/dev/null
sleep 1
check "(b) forged datagrams reached it ($(info w packets_in) packets in)" [ "$(info w packets_in)" -ge 2 ]
check "(b) ... and it is still not ready: ready:$(info w ready), $(placement w | head -1)" \
  [ "$(info w ready)" = 0 -a "$(placement w | head -1)" = "NOTREADY not joined yet" ]

start w2 $((PORT0 + 3)) --join "127.0.0.1:$DEAD" || exit 1
start b $((PORT0 + 2)) || exit 1                     # (d) no seed: a cluster of its own
word=$(ready_of b); rc=$?
check "(d) an agent with no seed is ready at once: '$word' exit $rc, OWNER k = $(q b OWNER k)" \
  [ "$word $rc $(q b OWNER k)" = "ready 0 b" ]
"$RINGD" join "127.0.0.1:$((PORT0 + 3))" --socket "$DIR/b.sock" >/dev/null 2>&1
rc=$?
check "(f) ringd join to a live agent exits 0 ($rc)" [ "$rc" = 0 ]
check "(b) a sync b opened towards w2 merged there (members_alive $(info w2 members_alive))" \
  [ "$(info w2 members_alive)" = 2 ]
check "(b) ... yet w2 is not ready: ready:$(info w2 ready) joined:$(info w2 joined)" \
  [ "$(info w2 ready) $(info w2 joined)" = "0 0" ]
kill -TERM "$(pid_of w2)"

# ---- (f) ringd join to a dead address
err=$("$RINGD" join "127.0.0.1:$DEAD" --socket "$DIR/b.sock" 2>&1 >/dev/null); rc=$?
refused_with_reason() { [ "$rc" = 1 ] && echo "$err" | grep -q "cannot join 127.0.0.1:$DEAD: connection refused"; }
check "(f) ringd join to a dead address exits 1 with the reason ($rc: $err)" refused_with_reason

# ---- (f) ringd join to an address that accepts and never answers: bounded by the sync
# deadline, while the agent's other clients are served
SILENT=$((PORT0 + 22))
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
c, _ = s.accept(); time.sleep(9)' "$SILENT" &
PIDS="$PIDS $!"
listening() { ss -Hltn "sport = :$SILENT" | grep -q .; } # the interpreter may be slow to start
wait_for 10 listening >/dev/null || fail "the silent listener did not start"
t0=$(now_ms)
"$RINGD" join "127.0.0.1:$SILENT" --socket "$DIR/b.sock" >"$DIR/silent.out" 2>&1 &
joiner=$!
sleep 1
pong=$(q b PING)
wait "$joiner"; rc=$?
took=$(( $(now_ms) - t0 ))
timed_out() {
  [ "$rc" = 1 ] && [ "$took" -ge 4500 ] && [ "$took" -lt 8000 ] &&
    grep -q "cannot join 127.0.0.1:$SILENT: timed out: no answer within 5000 ms" "$DIR/silent.out"
}
check "(f) ringd join to a silent address: exit $rc after $took ms: $(cat "$DIR/silent.out")" timed_out
check "(f) ... meanwhile the agent answered another client ($pong)" [ "$pong" = PONG ]

# ---- (a) the failed attempts were logged with their reason, not once per retry
lines=$(fails_lines w)
check "(a) w logged its failed attempts with the reason ($lines lines)" \
  grep -q 'msg="join attempt failed" seed=127.0.0.1:'"$SEED"' reason="connection refused"' "$DIR/w.log"

# ---- (c) the seed starts: w becomes ready and answers
start s "$SEED" || exit 1
if t=$(wait_for 40 sh -c "[ \"\$(redis-cli -s '$DIR/w.sock' INFO | tr -d '\r' | sed -n 's/^ready://p')\" = 1 ]"); then
  ok "(c) w ready ${t} ms after its seed started"
else
  fail "(c) w not ready within 40 s of its seed starting"
fi
word=$(ready_of w); rc=$?
check "(c) ringd ready prints ready and exits 0 ('$word' $rc)" [ "$word $rc" = "ready 0" ]
out=$(placement w)
check "(c) OWNER, OWNERS, MOWNER answer: $(echo $out)" \
  [ "$(echo "$out" | grep -c NOTREADY)" = 0 -a "$(echo "$out" | head -1 | grep -cxE 'w|s|ghost')" = 1 ]
joined_logged() { [ "$(info w joined)" = 1 ] && grep -q 'msg="joined cluster"' "$DIR/w.log"; }
check "(c) joined:1 and the log says so" joined_logged
elapsed=$(( ($(now_ms) - t_start) / 1000 ))
lines=$(fails_lines w)
check "(a) $lines failure lines over ${elapsed} s: rate-limited (at most 1 + log2 of the seconds, +2)" \
  [ "$lines" -ge 1 -a "$lines" -le $(( $(python3 -c "import math; print(int(math.log2(max($elapsed,1))))") + 3 )) ]

# ---- (e) --join-timeout
t0=$(now_ms)
timeout 20 "$RINGD" agent --name t --bind "127.0.0.1:$((PORT0 + 4))" --socket "$DIR/t.sock" \
  --join "127.0.0.1:$DEAD" --join-timeout 2 2>"$DIR/t.log"
rc=$?
took=$(( $(now_ms) - t0 ))
check "(e) --join-timeout 2 with a dead seed: exit 1 after ${took} ms (2 to 6 s)" \
  [ "$rc" = 1 -a "$took" -ge 2000 -a "$took" -lt 6000 ]
check "(e) ... with one line saying why" \
  grep -q 'level=error msg="no seed answered: giving up" member=t join_timeout_s=2 .*last_error="connection refused"' "$DIR/t.log"

# ---- (g) a sealed agent cannot join a plain one, and says why
(umask 077; "$RINGD" keygen > "$DIR/key")
start k $((PORT0 + 5)) --keyring-file "$DIR/key" --join "127.0.0.1:$SEED" || exit 1
sleep 1.5
refused_state_logged() {
  [ "$(info k ready)" = 0 ] &&
    grep -q 'msg="join attempt failed" .*reason="closed without an answer: it refused our state' "$DIR/k.log"
}
check "(g) the sealed agent logs why its join failed, and is not ready" refused_state_logged

no_sanitizer_reports
finish
