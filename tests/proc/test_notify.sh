#!/bin/bash
# test_notify.sh RINGD — the service manager's notification protocol (what a Type=notify
# systemd unit waits for), with a datagram socket standing in for systemd's, on loopback:
#  (a) an agent started with --join to a seed that is not up yet says STATUS=joining and
#      sends no READY=1 while it cannot join (it is not ready: `ringd ready` exits 1);
#  (b) an agent with no seed sends READY=1 at once (here on an abstract socket name);
#  (c) once that seed is up, the joining agent sends READY=1, exactly once, after the seed
#      started, with a STATUS saying it joined;
#  (d) at leave (SIGTERM) it sends STOPPING=1 after READY=1, and nothing after, and exits 0;
#  (e) an event handler it starts does not inherit NOTIFY_SOCKET;
#  (f) a NOTIFY_SOCKET nobody listens on, or that is no Unix socket address, is logged and
#      the agent runs and is ready all the same.
# About 10 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
LISTENER="python3 $(dirname "$0")/notify_listener.py"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }

# listen NAME ADDR: a listener for agent NAME's notifications, into $DIR/NAME.notify
listen() {
  $LISTENER "$2" "$DIR/$1.notify" 60 &
  PIDS="$PIDS $!"
  for _ in $(seq 100); do grep -q '^listening$' "$DIR/$1.notify" 2>/dev/null && return 0; sleep 0.05; done
  echo "listener for $1 did not start"; return 1
}
# says NAME REGEX: the ms time of the first notification of NAME matching REGEX (empty if none)
says() { grep -E "^[0-9]+ .*$2" "$DIR/$1.notify" | head -1 | cut -d' ' -f1; }
count() { grep -cE "^[0-9]+ .*$2" "$DIR/$1.notify"; }

SEED=$PORT0

# ---- (a) joining a seed that is not up: no READY=1
listen j "$DIR/j-notify.sock" || exit 1
NOTIFY_SOCKET="$DIR/j-notify.sock" start j $((PORT0 + 1)) --join "127.0.0.1:$SEED" \
  --on-event "member-join=env > $DIR/hook-env.txt" || exit 1
sleep 2
check "(a) STATUS=joining through 1 seeds: $(grep -m1 STATUS "$DIR/j.notify")" \
  [ -n "$(says j 'STATUS=joining through 1 seeds')" ]
check "(a) a failed attempt is in STATUS: $(grep -m1 'attempts failed' "$DIR/j.notify")" \
  [ -n "$(says j 'STATUS=joining: [0-9]+ attempts failed, the last: ')" ]
check "(a) no READY=1 while the seed is down ($(count j READY=1) sent)" [ "$(count j READY=1)" = 0 ]
"$RINGD" ready --socket "$DIR/j.sock" >/dev/null 2>&1
check "(a) ... and the agent is indeed not ready" [ $? = 1 ]

# ---- (b) the seed starts a cluster: READY=1 at once, on an abstract name
ABSTRACT="@ringd-test-notify-$$"
listen s "$ABSTRACT" || exit 1
t_seed=$(now_ms)
NOTIFY_SOCKET="$ABSTRACT" start s "$SEED" || exit 1
wait_for 5 sh -c "grep -q READY=1 '$DIR/s.notify'" >/dev/null
check "(b) an agent with no seed: $(grep READY "$DIR/s.notify")" \
  grep -q '^[0-9]* READY=1|STATUS=started a cluster: 1 members alive$' "$DIR/s.notify"

# ---- (c) the joining agent becomes ready: READY=1 once, after the seed started
wait_for 30 sh -c "grep -q READY=1 '$DIR/j.notify'" >/dev/null
t_ready=$(says j READY=1)
after() { [ -n "$1" ] && [ "$1" -ge "$2" ]; }
check "(c) READY=1 arrived, after the seed started (${t_ready:-never} >= $t_seed)" \
  after "$t_ready" "$t_seed"
check "(c) with STATUS=joined: $(grep READY "$DIR/j.notify")" \
  grep -q '^[0-9]* READY=1|STATUS=joined: [12] members alive$' "$DIR/j.notify"
"$RINGD" ready --socket "$DIR/j.sock" >/dev/null 2>&1
check "(c) ... and the agent is ready" [ $? = 0 ]
sleep 1
check "(c) READY=1 sent exactly once ($(count j READY=1))" [ "$(count j READY=1)" = 1 ]

# ---- (e) the handler of j's member-join did not inherit NOTIFY_SOCKET
wait_for 5 test -s "$DIR/hook-env.txt" >/dev/null
check "(e) an event handler ran ($(wc -l <"$DIR/hook-env.txt" 2>/dev/null) env lines) without NOTIFY_SOCKET" \
  sh -c "test -s '$DIR/hook-env.txt' && ! grep -q NOTIFY_SOCKET '$DIR/hook-env.txt'"

# ---- (d) leave: STOPPING=1 after READY=1, exit 0
kill -TERM "$(pid_of j)"
wait "$(pid_of j)"
rc=$?
sleep 0.5
t_stop=$(says j STOPPING=1)
check "(d) STOPPING=1 at leave: $(grep STOPPING "$DIR/j.notify")" \
  grep -q '^[0-9]* STOPPING=1|STATUS=leaving the cluster$' "$DIR/j.notify"
last_is_stopping() { tail -1 "$DIR/j.notify" | grep -q STOPPING=1; }
check "(d) ... after READY=1 (${t_stop:-never} >= $t_ready), and the last notification" \
  eval 'after "$t_stop" "$t_ready" && last_is_stopping'
check "(d) the agent exited 0 after the leave ($rc)" [ "$rc" = 0 ]

# ---- (f) nobody listening, or not a Unix address: logged, and the agent runs
NOTIFY_SOCKET="$DIR/nobody.sock" start n1 $((PORT0 + 2)) || exit 1
NOTIFY_SOCKET="tcp:127.0.0.1:1" start n2 $((PORT0 + 3)) || exit 1
check "(f) NOTIFY_SOCKET nobody listens on: logged ($(grep -c 'service manager not told' "$DIR/n1.log") lines), ready" \
  sh -c "grep -q 'msg=\"service manager not told\".*READY=1' '$DIR/n1.log' && '$RINGD' ready --socket '$DIR/n1.sock' >/dev/null"
check "(f) NOTIFY_SOCKET not a Unix address: logged once, ready" \
  sh -c "[ \$(grep -c 'service manager not told' '$DIR/n2.log') = 1 ] && grep -q 'not a Unix socket path' '$DIR/n2.log' && '$RINGD' ready --socket '$DIR/n2.sock' >/dev/null"

for n in s n1 n2; do kill -TERM "$(pid_of "$n")"; done
for n in s n1 n2; do wait "$(pid_of "$n")"; done
no_sanitizer_reports
finish
