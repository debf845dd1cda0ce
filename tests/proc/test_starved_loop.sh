#!/bin/bash
# test_starved_loop.sh RINGD — a loop starved of CPU while it waits in its poll knows how late
# it ran (agent/deafness.h, rd_tick_due). Agent a is pinned to one CPU beside eight busy
# loops, and its loop thread put under SCHED_IDLE for STARVE_S seconds, while b keeps
# probing it. Such a loop, once it runs, reads the datagrams that woke it before its timer
# fires; libuv counts the wait in the poll as idle, so only the tick's own lateness shows it.
# Checked:
#  (a) a logs `loop stalled`, late by a second or more, with that time counted as waiting
#      for a CPU (runnable_ms), not as time on one;
#  (b) once it has its CPU back, a is alive on b's side again.
# About 10 s. Needs taskset and chrt (util-linux).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
for tool in taskset chrt; do command -v $tool >/dev/null || { echo "$tool not found"; exit 1; }; done
STARVE_S=4

names="a b"
start a "$PORT0" || exit 1
start b $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
wait_for 20 agreed 2 >/dev/null || { fail "a and b did not agree within 20 s"; finish; exit; }

# the loop is the process's first thread: its tid is the pid
apid=$(pid_of a)
starve "$apid" "$apid" 8 || { fail "could not pin a or lower its loop thread"; finish; exit; }
sleep "$STARVE_S"
unstarve "$apid" "$apid"

# (a) the stall, as a tells it: the longest it logged
longest() {
  grep 'msg="loop stalled"' "$DIR/a.log" | sed -n 's/.* late_ms=\([0-9]*\) .* runnable_ms=\([0-9]*\) .*/\1 \2/p' |
    sort -n | tail -1
}
logged() { [ -n "$(longest)" ]; }
wait_for 5 logged >/dev/null
read -r late runnable <<<"$(longest)"
echo "# a's longest stall: late_ms=${late:-none} runnable_ms=${runnable:-none}"
check "(a) a logged a stall of a second or more (late_ms=${late:-none})" \
  [ "${late:-0}" -ge 1000 ]
check "(a) ... counted as waiting for a CPU (runnable_ms=${runnable:-none})" \
  [ "${runnable:-0}" -ge 500 ]
alive_on_b() { [ "$(info b members_alive)" = 2 ]; }
check "(b) a is alive on b's side once it has its CPU back" wait_for 20 alive_on_b
no_sanitizer_reports
finish
