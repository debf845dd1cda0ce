#!/bin/bash
# test_hijack.sh RINGD — the ring hijack, driven by forger.py without a keyring: 3 fake
# members of weight 100.0 that really answer at their own addresses (so they stay alive)
# join 3 real agents of weight 1.0 that run --max-weight 1. Uncapped they would own 300/303
# of the keys; capped, each is placed as one honest member, so the fakes own about half.
# Checks: the fakes are alive everywhere (the attack took), every agent counts 3 capped
# members and logged it, the fakes own at most 60% of 20,000 keys on every agent, and every
# real member still owns keys. About 15 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }

names="n0 n1 n2"
start n0 "$PORT0" --max-weight 1 || exit 1
start n1 $((PORT0 + 1)) --max-weight 1 --join "127.0.0.1:$PORT0" || exit 1
start n2 $((PORT0 + 2)) --max-weight 1 --join "127.0.0.1:$PORT0" || exit 1
three_alive() { for n in $names; do [ "$(info "$n" members_alive)" = 3 ] || return 1; done; }
if t=$(wait_for 20 three_alive); then ok "3 agents see each other after ${t} ms"
else fail "3 agents did not converge within 20 s"; finish; exit 1; fi
check "every agent is ready" wait_ready 10 $names

# The fakes announce themselves to every agent and answer pings for 15 s.
FAKE0=$((PORT0 + 20))
$FORGER hijack "$PORT0,$((PORT0 + 1)),$((PORT0 + 2))" 3 "$FAKE0" 15 >"$DIR/hijack.out" &
PIDS="$PIDS $!"
six_alive() { for n in $names; do [ "$(info "$n" members_alive)" = 6 ] || return 1; done; }
if t=$(wait_for 10 six_alive); then ok "the 3 fakes of weight 100 are alive on every agent after ${t} ms"
else fail "the fakes did not get in"; finish; exit 1; fi
sleep 3 # a few probe rounds: the fakes must answer to stay alive
check "the fakes are still alive everywhere 3 s later (they answer probes)" six_alive
capped() { for n in $names; do [ "$(info "$n" members_weight_capped)" = 3 ] || return 1; done; }
capped_soon() { wait_for 5 capped >/dev/null; }
check "every agent places the 3 fakes at --max-weight (members_weight_capped:3)" capped_soon
for n in $names; do
  check "$n logged the capped members" grep -q 'msg="members above --max-weight placed at it"' "$DIR/$n.log"
done
owns() { $FORGER owned "$DIR/$1.sock" "$2" 20000 | grep -qv 'owned=0$'; }
for n in $names; do
  fake=0
  for k in 0 1 2; do
    o=$($FORGER owned "$DIR/$n.sock" "fake-$k" 20000 | sed 's/owned=//')
    fake=$((fake + o))
  done
  echo "# $n: the fakes own $fake of 20000 keys (uncapped: about 19800)"
  check "on $n the fakes own at most 60% of the keys ($fake of 20000)" [ "$fake" -le 12000 ]
  for r in $names; do
    check "on $n, $r still owns keys" owns "$n" "$r"
  done
done
finish
