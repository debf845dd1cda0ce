#!/bin/bash
# test_outgrown_build.sh RINGD — a build that the membership outgrows while it runs is given
# up for the newer list (agent/agent.c, give_up_outgrown). Agents a and w at 4,096 vnodes;
# w's builder thread is starved (w pinned to one CPU beside four busy loops, the thread under
# SCHED_IDLE). 30 forged members join; once w's builder has begun their ring, 400 more join,
# and the membership has outgrown the build; then 10 more, three times (each past a 64th of
# the list), while the build given up has yet to see that it was. Checked:
#  (a) w gives that build up, once: it adopts no ring of the 30 early members alone, and the
#      ring it adopts next holds the late ones too and says so (`ring rebuilt ... given_up=1`:
#      the changes that came while the build was stopping gave up nothing more);
#  (b) w's loop does not wait for its builder meanwhile: PING is answered within 0.5 s;
#  (c) nothing is lost: once the busy loops stop, w's ring is a's (same checksum).
# Nobody answers for the forged members, so the agents' probes find a few of them dead as the
# test goes on: the counts below leave room for that. About 10 s. Needs taskset and chrt
# (util-linux).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
for tool in taskset chrt; do command -v $tool >/dev/null || { echo "$tool not found"; exit 1; }; done

names="a w"
start a "$PORT0" --vnodes 4096 || exit 1
start w $((PORT0 + 1)) --join "127.0.0.1:$PORT0" --vnodes 4096 || exit 1
wait_for 20 agreed 2 >/dev/null || { fail "a and w did not agree within 20 s"; finish; exit; }

# Starve w's builder, as test_starved_builder.sh does.
starve_builder w || { finish; exit; }

builder_ns() { thread_cpu_ns "$wpid" "$builder"; }
answers() { [ "$(timeout 2 redis-cli -s "$DIR/w.sock" PING 2>/dev/null)" = PONG ]; }
slowest=0 unanswered=0
ping_w() {
  local t0 t
  t0=$(now_ms)
  answers || unanswered=$((unanswered + 1))
  t=$(($(now_ms) - t0))
  [ "$t" -gt "$slowest" ] && slowest=$t
}

# 30 members join; their build begins once the builder has run since the list was queued
for p in "$PORT0" $((PORT0 + 1)); do $FORGER crowd "$p" 30 $((PORT0 + 1000)) early >/dev/null; done
has_early() { [ "$(info w members_alive)" -ge 32 ]; }
wait_for 10 has_early >/dev/null || { fail "the 30 early members did not reach w"; finish; exit; }
sleep 0.3 # the rebuild's coalescing (100 ms), then the job is queued
ns0=$(builder_ns)
building() { ping_w; [ "$(builder_ns)" -gt "$ns0" ]; }
wait_for 20 building >/dev/null || { fail "w's builder never began the early members' ring"; finish; exit; }
echo "# w's builder began the 32-member ring"

# 400 more join while that build runs
for p in "$PORT0" $((PORT0 + 1)); do $FORGER crowd "$p" 400 $((PORT0 + 1100)) late >/dev/null; done
has_late() { ping_w; [ "$(info w members_alive)" -ge 300 ]; }
wait_for 10 has_late >/dev/null || { fail "the 400 late members did not reach w"; finish; exit; }
# (to both agents: among hundreds of forged members, gossip would hardly pick the other)
for k in 1 2 3; do
  for p in "$PORT0" $((PORT0 + 1)); do
    $FORGER crowd "$p" 10 $((PORT0 + 1500 + 10 * k)) "later$k" >/dev/null
  done
  for _ in 1 2 3; do ping_w; sleep 0.1; done
done
check "(b) w answered PING within 0.5 s while its builder starved (slowest ${slowest} ms, unanswered $unanswered)" \
  [ "$slowest" -le 500 -a "$unanswered" = 0 ]

# (a) and (c): the busy loops stop and the builder gets its CPU back
unstarve "$wpid" "$builder"
big_ring() { [ "$(info w ring_members)" -ge 300 ]; }
wait_for 20 big_ring >/dev/null
rings=$(rings_given_up w)
echo "# w's rings (members given_up): $(echo "$rings" | tr '\n' ';')"
no_early_ring() { echo "$rings" | awk '$1 > 2 && $1 < 300 { bad = 1 } END { exit bad }'; }
check "(a) w adopted no ring of the early members alone" no_early_ring
given_up_once() { [ "$(first_given_up "$rings" 300)" = 1 ]; }
check "(a) w's first ring of the late members counts the one build given up" given_up_once
settled() { wait_for 20 one_ring w a >/dev/null; }
check "(c) w's ring is a's (one checksum) within 20 s" settled
no_sanitizer_reports
finish
