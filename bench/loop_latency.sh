#!/bin/bash
# loop_latency.sh RINGD [N] [SECONDS] — how long an agent's loop goes deaf while its ring is
# rebuilt. N agents (default 6) on loopback, each at --vnodes 4096 and weight 100 (409,600
# points a member, 2.5 million in all at N = 6), join one cluster. Then one agent's weight
# flips between 100 and 99 once a second for SECONDS (default 30), so the membership keeps
# changing and every agent rebuilds and diffs its ring as often as its pacer lets it: at
# this size a rebuild takes hundreds of ms, and the pacer spaces rebuilds by 2,000 times their CPU time,
# at most 10 s (README, "How it is built"), so a window of 30 s holds a few. Meanwhile
# `redis-cli --latency` sends a PING every 10 ms to another agent's query socket; the socket
# is served by the same loop that answers probes, so a PING's wait is the wait a probe
# would see. Prints redis-cli's min, max and average in ms and its sample count over the
# window, and how many rebuilds that agent logged (with none, the figures say nothing). Run
# by hand (bench/README.md).
set -u
RINGD=$1; N=${2:-6}; SECS=${3:-30}
export RINGD
. "$(dirname "$0")/../tests/proc/lib.sh"
start n0 "$PORT0" --vnodes 4096 --weight 100 || exit 1
for i in $(seq 1 $((N - 1))); do
  start "n$i" $((PORT0 + i)) --vnodes 4096 --weight 100 --join "127.0.0.1:$PORT0" || exit 1
done
all_in_ring() { [ "$(info n1 ring_members)" = "$N" ]; }
wait_for 60 all_in_ring >/dev/null || { echo "the $N agents did not agree within 60 s"; exit 1; }
sleep 2
before=$(grep -c 'msg="ring rebuilt"' "$DIR/n1.log")
( for _ in $(seq "$SECS"); do
    "$RINGD" weight 99 --socket "$DIR/n0.sock" >/dev/null; sleep 0.5
    "$RINGD" weight 100 --socket "$DIR/n0.sock" >/dev/null; sleep 0.5
  done ) &
flipper=$!
latency=$(redis-cli -s "$DIR/n1.sock" --latency --raw -i "$SECS" 2>/dev/null)
wait "$flipper"
after=$(grep -c 'msg="ring rebuilt"' "$DIR/n1.log")
points=$(info n1 ring_points)
echo "agents $N, ring points $points, rebuilds on n1 $((after - before)) in ${SECS} s"
echo "PING to n1 while it rebuilds (min max avg ms, samples): $latency"
[ "$after" -gt "$before" ] || echo "no rebuild on n1 in the window: run it longer"; true
