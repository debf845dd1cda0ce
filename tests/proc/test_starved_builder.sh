#!/bin/bash
# test_starved_builder.sh RINGD — an agent whose ring-builder thread gets almost no CPU, as
# on a host crowded by a join storm (agent/ringjob.h). Three agents at 4,096 vnodes; w is
# pinned to one CPU beside four busy loops, and its builder thread is put under SCHED_IDLE,
# so that a job it is handed waits a long time before the thread takes it. Meanwhile a's
# weight flips every 0.15 s, each flip a new member list for w. Checked:
#  (a) w replaces a list that its thread has not taken yet with the newer one, and says so
#      (`ring rebuilt ... skipped=N`, N > 0);
#  (b) w's loop does not wait for its builder: PING and OWNER are answered within 0.5 s
#      throughout;
#  (c) nothing is lost: once the busy loops stop, w's ring is the others' (same checksum,
#      a's last weight) and every agent names the same owners.
# About 5 s; a minute at most. Needs taskset and chrt (util-linux).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
for tool in taskset chrt; do command -v $tool >/dev/null || { echo "$tool not found"; exit 1; }; done

names="a b w"
start a "$PORT0" --vnodes 4096 || exit 1
start b $((PORT0 + 1)) --join "127.0.0.1:$PORT0" --vnodes 4096 || exit 1
start w $((PORT0 + 2)) --join "127.0.0.1:$PORT0" --vnodes 4096 || exit 1
wait_for 20 agreed 3 >/dev/null || { fail "3 agents did not agree within 20 s"; finish; exit; }

# Starve w's builder: the whole agent on one CPU (the first this test may use) with four
# busy loops, its builder thread (found by name) at SCHED_IDLE.
starve_builder w || { finish; exit; }

# (a) and (b): flip a's weight until w reports a replaced list, at most 120 times
skipped() { grep -E 'msg="ring rebuilt".* skipped=[1-9]' "$DIR/w.log" >/dev/null; }
answers() {
  [ "$(timeout 2 redis-cli -s "$DIR/w.sock" PING 2>/dev/null)" = PONG ] &&
    timeout 2 redis-cli -s "$DIR/w.sock" OWNER k 2>/dev/null | grep -qxE 'a|b|w'
}
weight=1 flips=0 slowest=0 unanswered=0
while [ "$flips" -lt 120 ]; do
  flips=$((flips + 1))
  weight=$((3 - weight))
  q a WEIGHT "$weight" >/dev/null
  t0=$(now_ms)
  answers || unanswered=$((unanswered + 1))
  t=$(($(now_ms) - t0))
  [ "$t" -gt "$slowest" ] && slowest=$t
  skipped && break
  sleep 0.15
done
check "(a) w replaced a list its starved builder had not taken (after $flips flips: $(grep -oE 'skipped=[1-9][0-9]*' "$DIR/w.log" | head -1))" skipped
check "(b) w answered PING and OWNER within 0.5 s while its builder starved (slowest ${slowest} ms, unanswered $unanswered)" \
  [ "$slowest" -le 500 -a "$unanswered" = 0 ]

# (c) the busy loops stop and w gets its CPUs and its builder's policy back; every ring,
# w's included, then holds a's last weight (an older ring, one weight back, could agree too)
unstarve "$wpid" "$builder"
# weight_in NAME: a's weight in NAME's ring, the line after a's name in RING's reply
weight_in() { redis-cli -s "$DIR/$1.sock" RING | tr -d '\r' | awk 'f { print; exit } $0 == "a" { f = 1 }'; }
last_list() {
  for n in $names; do [ "$(weight_in "$n")" = $((weight * 1000)) ] || return 1; done
  agreed 3
}
settled() { wait_for 10 last_list >/dev/null; }
check "(c) every ring, w's too, has a's last weight ($((weight * 1000))) and one checksum within 10 s" \
  settled
same_owners() {
  for k in user:1 user:42 cart:7 x; do
    o=$(q a OWNER "$k")
    for n in $names; do [ "$(q "$n" OWNER "$k")" = "$o" ] || return 1; done
  done
}
check "(c) all agents give the same owners" same_owners
no_sanitizer_reports
finish
