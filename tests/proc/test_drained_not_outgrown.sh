#!/bin/bash
# test_drained_not_outgrown.sh RINGD — drained members are no change to a build under way.
# A build is given up when the membership has gained or lost more than a 64th of its list
# (agent/ringjob.h); the list counts the members it was taken from, drained ones included,
# though they are left out of the ring. Agents a and w at 4,096 vnodes, with 40 members at
# weight 0 and 200 at weight 1, all kept alive by the forger; w's builder thread is starved
# (w pinned to one CPU beside four busy loops, the thread under SCHED_IDLE). Once it has
# begun the ring of the 200, two more members join: 242 -> 244 listed, within a 64th.
# Checked:
#  (a) w keeps that build: the first ring it adopts with the 200 says `given_up=0` (counting
#      its 202 ring members against 244 listed, it would have been given up);
#  (b) nothing is lost: once the busy loops stop, w's ring is a's (same checksum).
# About 7 s. Needs taskset and chrt (util-linux).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
for tool in taskset chrt; do command -v $tool >/dev/null || { echo "$tool not found"; exit 1; }; done

names="a w"
start a "$PORT0" --vnodes 4096 || exit 1
start w $((PORT0 + 1)) --join "127.0.0.1:$PORT0" --vnodes 4096 || exit 1
wait_for 20 agreed 2 >/dev/null || { fail "a and w did not agree within 20 s"; finish; exit; }

# members that answer every probe for the test's length: drained ones, then the 200
live() { # COUNT FIRSTPORT PREFIX WEIGHT
  $FORGER hijack "$PORT0,$((PORT0 + 1))" "$1" "$2" 60 "$3" "$4" >/dev/null &
  PIDS="$PIDS $!"
}
alive_at_least() { [ "$(info w members_alive)" -ge "$1" ]; }
live 40 $((PORT0 + 1000)) drained 0
wait_for 10 alive_at_least 42 >/dev/null || { fail "the drained members did not reach w"; finish; exit; }

starve_builder w || { finish; exit; }
builder_ns() { thread_cpu_ns "$wpid" "$builder"; }

live 200 $((PORT0 + 1100)) member 1
wait_for 10 alive_at_least 242 >/dev/null || { fail "the 200 members did not reach w"; finish; exit; }
sleep 0.3 # the rebuild's coalescing (100 ms), then the job is queued
ns0=$(builder_ns)
building() { [ "$(builder_ns)" -gt "$ns0" ]; }
wait_for 20 building >/dev/null || { fail "w's builder never began the ring of the 200"; finish; exit; }
echo "# w's builder began the ring of 202 members, 242 listed"

live 2 $((PORT0 + 1400)) later 1
wait_for 10 alive_at_least 244 >/dev/null || { fail "the 2 later members did not reach w"; finish; exit; }
sleep 0.3 # past the change's rebuild timer, where a build would be given up

unstarve "$wpid" "$builder"
big_ring() { [ "$(info w ring_members)" -ge 204 ]; }
wait_for 20 big_ring >/dev/null
rings=$(rings_given_up w)
echo "# w's rings (members given_up): $(echo "$rings" | tr '\n' ';')"
kept() { [ "$(first_given_up "$rings" 200)" = 0 ]; }
check "(a) w kept the build under way: its first ring of the 200 says given_up=0" kept
settled() { wait_for 20 one_ring w a >/dev/null; }
check "(b) w's ring is a's (one checksum) within 20 s" settled
no_sanitizer_reports
finish
