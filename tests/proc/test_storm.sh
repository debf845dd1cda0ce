#!/bin/bash
# test_storm.sh RINGD — a storm of wrong suspicions stretches suspicion timeouts (the storm
# score, lib/suspicion.h), and only a storm does. 24 agents; 8 of them are starved of CPU
# by signals (stopgo.py: 5 ms runs, gaps of 1.5 s on average, 3 s at most), so the others
# keep suspecting them and they keep refuting, while the others run on time, with local
# health 0. In 1,000-agent spawns, loops waited 6-16 s for a CPU in such storms, and their
# accusers, confirming each other, declared them dead at the shortest timeout. Checked:
#  (a) a healthy agent's INFO storm score rises to 5 or more (0..8);
#  (b) a healthy agent, n5, stopped for 15 s in the storm (five times the shortest
#      suspicion at N = 24), is suspected but declared dead by nobody (any other death is
#      printed, not judged: a starved agent's fate depends on the host's load);
#  (c) once the starving is over and nothing has been refuted for two windows (20 s),
#      the score is 0 again;
#  (d) then the same 15 s stop is a death, as in a quiet cluster: the storm score is what
#      spared n5, not a slower detector.
# About 70 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
N=24
STOP_S=15

start n0 "$PORT0" || exit 1
for i in $(seq 1 $((N - 1))); do start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" || exit 1; done
all_alive() { [ "$(info n0 members_alive)" = "$N" ]; }
wait_for 30 all_alive >/dev/null || { fail "the $N agents did not agree within 30 s"; finish; exit; }
dead_lines() { cat "$DIR"/*.log | grep -c 'msg="member dead"'; }
n5_lines() { cat "$DIR"/*.log | grep "msg=\"member $1\" member=n5 " | wc -l; }

starved=""
for i in $(seq 16 23); do starved="$starved $(pid_of "n$i")"; done
# shellcheck disable=SC2086 # one PID per word
python3 "$(dirname "$0")/stopgo.py" 1500 3000 45 $starved &
STOPGO=$!
PIDS="$PIDS $STOPGO"

# (a) the storm as a healthy agent sees it
storm_of_n1() { [ "$(info n1 storm)" -ge 5 ] 2>/dev/null; }
check "(a) n1's storm score reaches 5 within 30 s" wait_for 30 storm_of_n1
echo "# n1: storm $(info n1 storm), health $(info n1 health)"

# (b) n5 waits 15 s for a CPU it never gets, as the late loops of a spawn did
vpid=$(pid_of n5)
suspected0=$(n5_lines suspect)
kill -STOP "$vpid"
sleep "$STOP_S"
kill -CONT "$vpid"
wait "$STOPGO"
PIDS=${PIDS% "$STOPGO"}
sleep 3
echo "# storm over: $(dead_lines) member dead lines, $(cat "$DIR"/*.log | grep -c 'msg="member suspect"') member suspect lines"
check "(b) n5 was suspected while stopped ($(( $(n5_lines suspect) - suspected0 )) lines)" \
  [ "$(n5_lines suspect)" -gt "$suspected0" ]
check "(b) ... and declared dead by nobody ($(n5_lines dead) lines)" [ "$(n5_lines dead)" = 0 ]

# (c) quiet again
calm() { [ "$(info n1 storm)" = 0 ] && [ "$(info n1 members_alive)" = "$N" ]; }
check "(c) n1's storm score is 0 within 30 s of the storm's end" wait_for 30 calm

# (d) the same stop in a quiet cluster
kill -STOP "$vpid"
n5_dead() { [ "$(n5_lines dead)" -gt 0 ]; }
wait_for "$STOP_S" n5_dead >/dev/null
kill -CONT "$vpid"
check "(d) in a quiet cluster the same stop is a death ($(n5_lines dead) lines)" n5_dead
no_sanitizer_reports
finish
