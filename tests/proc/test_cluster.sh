#!/bin/bash
# test_cluster.sh RINGD — real agents on loopback: 20 agents converge on one ring, a
# SIGKILLed agent is declared dead by all, a SIGTERMed one is seen as left and exits 0,
# and garbage sent to the gossip port changes nothing.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

N=${N:-20}
names=""
start n0 "$PORT0" || exit 1
names="n0"
for i in $(seq 1 $((N - 1))); do
  start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" || exit 1
  names="$names n$i"
done

# every agent sees N alive and the same ring checksum
agreed() {
  want=""
  for n in $names; do
    [ "$(info "$n" members_alive)" = "$1" ] || return 1
    c=$(info "$n" ring_checksum)
    [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}
if t=$(wait_for 10 agreed "$N"); then ok "$N agents agree on one ring checksum after ${t} ms"
else fail "$N agents did not agree within 10 s"; fi

# every agent places keys alike
same_owners() {
  for k in user:1 user:42 cart:7 x; do
    o=$(q n0 OWNER "$k")
    for n in $names; do [ "$(q "$n" OWNER "$k")" = "$o" ] || return 1; done
  done
}
check "all agents give the same owners" same_owners

# garbage to the UDP port: counted, dropped, nothing changes
before=$(info n1 packets_malformed)
python3 - "$((PORT0 + 1))" <<'PY'
import os, random, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rnd = random.Random(7)
for i in range(200):
    n = rnd.randrange(0, 1500)
    data = bytes(rnd.randrange(256) for _ in range(n))
    if i % 3 == 0:
        data = b"RD\x01\x00" + data   # a valid header, garbage body
    s.sendto(data, ("127.0.0.1", int(sys.argv[1])))
PY
sleep 0.5
after=$(info n1 packets_malformed)
check "garbage datagrams are counted as malformed ($before -> $after)" [ "$after" -gt "$before" ]
check "garbage changes nothing: n1 still sees $N alive" [ "$(info n1 members_alive)" = "$N" ]
check "n1 is still alive (process)" kill -0 "$(pid_of n1)"

# SIGKILL one: every other agent declares it dead
kill -KILL "$(pid_of n5)"
survivors=$(echo "$names" | tr ' ' '\n' | grep -vx n5 | tr '\n' ' ')
all_dead() { for n in $survivors; do [ "$(info "$n" members_dead)" = 1 ] || return 1; done; }
if t=$(wait_for 20 all_dead); then ok "SIGKILLed agent declared dead by all after ${t} ms"
else fail "SIGKILLed agent not declared dead by all within 20 s"; fi

# SIGTERM one: seen as left (not dead) by all, and it exits 0
pid7=$(pid_of n7)
kill -TERM "$pid7"
rest=$(echo "$survivors" | tr ' ' '\n' | grep -vx n7 | tr '\n' ' ')
all_left() { for n in $rest; do [ "$(info "$n" members_left)" = 1 ] || return 1; done; }
if t=$(wait_for 5 all_left); then ok "SIGTERMed agent seen as left by all after ${t} ms"
else fail "SIGTERMed agent not seen as left within 5 s"; fi
wait "$pid7"; rc=$?
check "SIGTERMed agent exited 0 (got $rc)" [ "$rc" = 0 ]
check "log says 'member left' for n7, not dead" \
  sh -c "grep -q 'msg=\"member left\" member=n7' '$DIR/n0.log' && ! grep -q 'msg=\"member dead\" member=n7' '$DIR/n0.log'"
check "log says 'member dead' for n5" grep -q 'msg="member dead" member=n5' "$DIR/n0.log"
check "log has ring rebuilds with moved fraction" grep -q 'msg="ring rebuilt".*moved=' "$DIR/n0.log"
finish
