#!/bin/bash
# test_ring_client.sh RINGD — the client library (client/) against real agents. Three agents
# converge; a program linked with libringd_client (ring_client_check.c) opens a client on
# agent a1 and compares its in-process owner() with a1's MOWNER on 12,000 keys. Then a fourth
# agent joins, and later a2 leaves: each time the client's checksum must equal a1's INFO
# ring_checksum within 3 s of the change, and owner() must agree with MOWNER again. Last, a1
# itself restarts: the client reconnects on its own and agrees with the new a1.
# Needs RD_RING_CLIENT_CHECK (set by ctest) naming the ring_client_check binary.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
CHECK=${RD_RING_CLIENT_CHECK:?path to the ring_client_check binary}
KEYS=12000

start a1 "$PORT0" || exit 1
start a2 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
start a3 $((PORT0 + 2)) --join "127.0.0.1:$PORT0" || exit 1
names="a1 a2 a3"
if t=$(wait_for 15 agreed 3); then ok "3 agents converge after ${t} ms"; else fail "3 agents did not converge"; fi
check "every agent is ready" wait_ready 10 $names
check "RING's checksum is INFO's" \
  test "$(q a1 RING | sed -n 5p)" = "$(info a1 ring_checksum)"

# The checker reads commands from a FIFO and writes one line per command to out.txt.
mkfifo "$DIR/cmd"
"$CHECK" "$DIR/a1.sock" "$KEYS" <"$DIR/cmd" >"$DIR/out.txt" 2>"$DIR/check.err" &
CHECKER=$!
PIDS="$PIDS $CHECKER"
exec 3>"$DIR/cmd"
LINES=0
# ask CMD: sends CMD and waits up to 30 s for its line, left in $r (not in a subshell: LINES
# counts the lines answered so far)
ask() {
  echo "$1" >&3
  LINES=$((LINES + 1))
  for _ in $(seq 300); do
    [ "$(wc -l <"$DIR/out.txt")" -ge "$LINES" ] && { r=$(sed -n "${LINES}p" "$DIR/out.txt"); return 0; }
    sleep 0.1
  done
  r="no answer to $1"; cat "$DIR/check.err"
}
# followed LINE: the client caught up with INFO within 3 s
followed() { case $1 in "followed ms="*) [ "$(echo "$1" | sed 's/followed ms=\([0-9]*\).*/\1/')" -le 3000 ] ;; *) false ;; esac; }

ask compare; echo "# $r"
check "owner() agrees with MOWNER on $KEYS keys" test "${r%% *}" = agree

old=$(info a1 ring_checksum)
start a4 $((PORT0 + 3)) --join "127.0.0.1:$PORT0" || exit 1
names="$names a4"
ask "follow $old"; echo "# a4 joined: $r"
check "the client follows a4's join within 3 s" followed "$r"
wait_for 15 agreed 4 >/dev/null || fail "4 agents did not converge"
ask compare; echo "# $r"
check "after the join owner() agrees with MOWNER on $KEYS keys" test "${r%% *}" = agree

old=$(info a1 ring_checksum)
kill -TERM "$(pid_of a2)" # a2 leaves gracefully
names="a1 a3 a4"
ask "follow $old"; echo "# a2 left: $r"
check "the client follows a2's leave within 3 s" followed "$r"
wait_for 15 agreed 3 >/dev/null || fail "3 agents did not converge after the leave"
ask compare; echo "# $r"
check "after the leave owner() agrees with MOWNER on $KEYS keys" test "${r%% *}" = agree

# a1 restarts: the client keeps its ring meanwhile, then reconnects to the new a1.
kill -TERM "$(pid_of a1)"
for _ in $(seq 100); do kill -0 "$(pid_of a1)" 2>/dev/null || break; sleep 0.05; done
start a1 "$PORT0" --join "127.0.0.1:$((PORT0 + 2))" || exit 1
check "the restarted a1 is ready" wait_ready 15 a1
wait_for 15 agreed 3 >/dev/null || fail "3 agents did not converge after a1's restart"
ask compare; echo "# a1 restarted: $r"
check "after a1's restart owner() agrees with MOWNER on $KEYS keys" test "${r%% *}" = agree
ask stats; echo "# $r"
check "the client reconnected once, subscribed, and refused no RING reply" \
  sh -c "echo '$r' | grep -q 'failures=0 reconnects=1 connected=1'"

# quit, not the FIFO's end: the agents started since inherited its write end
echo quit >&3
exec 3>&-
rc=
for _ in $(seq 100); do kill -0 "$CHECKER" 2>/dev/null || { wait "$CHECKER"; rc=$?; break; }; sleep 0.1; done
check "the checker exits cleanly (sanitizers included)" test "$rc" = 0
[ -s "$DIR/check.err" ] && cat "$DIR/check.err"

# A ketama cluster: the client builds libmemcached's continuum from RING (identities from the
# ketama tags, whole weights) and must agree with the agent's MOWNER as well.
start k1 $((PORT0 + 5)) --ring ketama --tag ketama=10.0.0.1:11211 || exit 1
start k2 $((PORT0 + 6)) --join "127.0.0.1:$((PORT0 + 5))" --weight 3 --tag ketama=10.0.0.2:11211 || exit 1
start k3 $((PORT0 + 7)) --join "127.0.0.1:$((PORT0 + 5))" || exit 1
names="k1 k2 k3"
if wait_for 15 agreed 3 >/dev/null; then ok "3 ketama agents converge"; else fail "3 ketama agents did not converge"; fi
check "the ketama agents are ready" wait_ready 10 $names
check "k3 adopted ketama" test "$(info k3 ring_mode)" = ketama
r=$(printf 'compare\nquit\n' | "$CHECK" "$DIR/k3.sock" "$KEYS" 2>>"$DIR/check.err" | head -1)
echo "# ketama: $r"
check "in ketama mode owner() agrees with MOWNER on $KEYS keys" test "${r%% *}" = agree
no_sanitizer_reports
finish
