#!/bin/bash
# starve.sh RINGD [N] [MEAN/MAX] [SECONDS] — real agents all starved of CPU at once.
# N agents (default 30, at most 32) on loopback join one cluster; then every one of them is
# SIGSTOPped and let run for 5 ms at a time, with gaps uniform with mean MEAN ms and at most
# MAX ms (default 1500/3000) from a fixed seed, each agent with its own phase, for SECONDS
# (default 120), by tests/proc/stopgo.py: the simulator's starvation on real processes.
# Prints the "member dead" log lines of the starved period (every one is false: nobody
# crashed) and the "member suspect" lines of the whole run. Run by hand (bench/README.md),
# never timed in tests.
set -u
RINGD=$1; N=${2:-30}; GAPS=${3:-1500/3000}; SECS=${4:-120}
MEAN=${GAPS%/*}; MAX=${GAPS#*/}
[ "$N" -ge 2 ] && [ "$N" -le 32 ] || { echo "N must be 2..32"; exit 2; }
export RINGD
. "$(dirname "$0")/../tests/proc/lib.sh"
count() { cat "$DIR"/*.log | grep -c "msg=\"$1\""; }
start n0 "$PORT0" || exit 1
for i in $(seq 1 $((N - 1))); do start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" || exit 1; done
all_alive() { [ "$(info n0 members_alive)" = "$N" ]; }
wait_for 30 all_alive >/dev/null || { echo "the $N agents did not agree within 30 s"; exit 1; }
sleep 3
dead0=$(count "member dead")
python3 "$(dirname "$0")/../tests/proc/stopgo.py" "$MEAN" "$MAX" "$SECS" $PIDS
sleep 2
echo "N=$N gaps $MEAN/$MAX ms for $SECS s: $(( $(count "member dead") - dead0 )) member dead lines," \
  "$(count "member suspect") member suspect lines"
