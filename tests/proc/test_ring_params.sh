#!/bin/bash
# test_ring_params.sh RINGD — ring parameters agreed cluster-wide, with real agents.
#  (a) a1 starts the cluster with --vnodes 64; a2 joins with no --vnodes and adopts 64: INFO
#      says vnodes:64 ring_params:adopted, and both agents report one ring checksum;
#  (b) a3 joins with --vnodes 128: it exits 1 within seconds, with one error line naming
#      both values, and a1 logs the refusal and counts it (INFO syncs_refused_ring);
#  (c) a4 joins with --vnodes 64 (the cluster's, set explicitly): it joins;
#  (d) the cluster never took a3 in: MEMBERS on a1 lists a1, a2, a4;
#  (e) a stranger cluster: b1 starts alone with its default vnodes (512); a1's members never
#      merge with it when b1 is pointed at a1 after both have started (JOIN), and b1 keeps
#      running, its refusal counted.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

P1=$PORT0 P2=$((PORT0 + 1)) P3=$((PORT0 + 2)) P4=$((PORT0 + 3)) PB=$((PORT0 + 4))
FLAGS=(--profile local --log-level info)

start a1 "$P1" "${FLAGS[@]}" --vnodes 64
start a2 "$P2" "${FLAGS[@]}" --join "127.0.0.1:$P1"
wait_ready 10 a2 || true
check "(a) a2 adopted the cluster's vnodes" test "$(info a2 vnodes)" = 64
check "(a) INFO says the parameters were adopted" test "$(info a2 ring_params)" = adopted
check "(a) a1's parameters are its own flag's" test "$(info a1 ring_params)" = set
check "(a) INFO shows the spec and mode" test "$(info a2 ring_spec) $(info a2 ring_mode)" = "1 ringd"
check "(a) a2 logged the adoption with both values" \
  grep -qE 'msg="ring parameters adopted" ours="spec=1 mode=ringd vnodes=512" cluster="spec=1 mode=ringd vnodes=64"' "$DIR/a2.log"
same_ring() { [ "$(info a1 ring_checksum)" = "$(info a2 ring_checksum)" ] && [ "$(info a2 ring_members)" = 2 ]; }
check "(a) a1 and a2 build one ring" wait_for 10 same_ring

# (b) an explicit, different --vnodes: refused, and the joiner stops with exit status 1
"$RINGD" agent --name a3 --bind "127.0.0.1:$P3" --socket "$DIR/a3.sock" "${FLAGS[@]}" \
  --vnodes 128 --join "127.0.0.1:$P1" 2>"$DIR/a3.log" &
A3=$!
PIDS="$PIDS $A3"
rc=0
for _ in $(seq 100); do kill -0 "$A3" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$A3" 2>/dev/null; then
  fail "(b) a3 is still running 10 s after its refused join"
else
  wait "$A3"
  rc=$?
  check "(b) a3 exited with status 1" test "$rc" = 1
fi
errors=$(grep -c 'level=error' "$DIR/a3.log")
check "(b) a3 wrote one error line" test "$errors" = 1
check "(b) the line names both values" \
  grep -qE 'level=error msg="ring parameters differ from the cluster.s: stopping" ours="spec=1 mode=ringd vnodes=128" cluster="spec=1 mode=ringd vnodes=64" from=a1' "$DIR/a3.log"
check "(b) a1 logged the refusal with both values" \
  grep -qE 'msg="sync refused" reason="ring parameters differ".*detail="ours: spec=1 mode=ringd vnodes=64; a3.s: spec=1 mode=ringd vnodes=128"' "$DIR/a1.log"
check "(b) a1 counts it" test "$(info a1 syncs_refused_ring)" -ge 1

# (c) the cluster's value, given explicitly, joins
start a4 "$P4" "${FLAGS[@]}" --vnodes 64 --join "127.0.0.1:$P1"
check "(c) a4 with --vnodes 64 joins" wait_ready 10 a4
check "(c) a4's parameters are its own" test "$(info a4 ring_params)" = set

# (d) a3 never entered the member table
members_are() { [ "$(q a1 MEMBERS | grep -E '^a[0-9]$' | sort | tr '\n' ' ')" = "$1" ]; }
all_three() { [ "$(info a1 ring_members)" = 3 ] && [ "$(info a4 ring_checksum)" = "$(info a1 ring_checksum)" ]; }
check "(d) a1, a2 and a4 agree on one ring" wait_for 10 all_three
check "(d) MEMBERS has no a3" members_are "a1 a2 a4 "

# (e) two clusters that started apart stay apart: b1 (default vnodes) is asked to join a1
start b1 "$PB" "${FLAGS[@]}"
before=$(info a1 syncs_refused_ring)
q b1 JOIN "127.0.0.1:$P1" >"$DIR/b1.join" || true
refused_more() { [ "$(info a1 syncs_refused_ring)" -gt "$before" ] || [ "$(info b1 syncs_refused_ring)" -ge 1 ]; }
check "(e) the exchange between the two clusters is refused" wait_for 10 refused_more
sleep 1
check "(e) b1 is still running" kill -0 "$(pid_of b1)"
check "(e) b1 stays alone" test "$(info b1 ring_members)" = 1
check "(e) a1 never took b1 in" members_are "a1 a2 a4 "

no_sanitizer_reports
finish
