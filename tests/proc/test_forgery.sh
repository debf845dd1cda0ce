#!/bin/bash
# test_forgery.sh RINGD — forged gossip from an address outside the cluster (no keyring)
# against 3 real agents on loopback, driven by forger.py:
#  (d) a 19-byte PING from a stranger draws at most 19 bytes back;
#  (e) a PING_REQ from a stranger draws nothing, neither to it nor to the target it names;
#  (a) eviction: n1 declared left at incarnation 2^64-1 (and dead at its own + 2^33) to
#      every agent: n1 is alive everywhere within 5 s, and still 10 s later;
#  (b) remote stop: a record of n1's name at the forger's address, and an ACK to every
#      probe of it: n1 keeps running under its name and logs the conflict;
#  (c) freeze: 400 forged members of weight 100 push the ring over its point limit; a real
#      new agent (weight 100, joining through all three) then owns keys on every agent
#      within 2 s of starting.
# About 40 s (a minute or two with the sanitizers).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }

names="n0 n1 n2"
start n0 "$PORT0" || exit 1
start n1 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
start n2 $((PORT0 + 2)) --join "127.0.0.1:$PORT0" || exit 1

# status_of VIEWER NAME: NAME's status as VIEWER sees it (MEMBERS: name N addr A status S ...)
status_of() { q "$1" MEMBERS | grep -A4 -x "$2" | sed -n 5p; }
alive_everywhere() { for n in $names; do [ "$(status_of "$n" "$1")" = alive ] || return 1; done; }
three_alive() { for n in $names; do [ "$(info "$n" members_alive)" = 3 ] || return 1; done; }
if t=$(wait_for 20 three_alive); then ok "3 agents see each other after ${t} ms"
else fail "3 agents did not converge within 20 s"; finish; exit 1; fi
check "every agent is ready" wait_ready 10 $names

# ---- (d) a stranger's PING is not amplified
r=$($FORGER ping "$PORT0" n0)
sent=$(echo "$r" | sed -n 's/.*sent=\([0-9]*\).*/\1/p')
got=$(echo "$r" | sed -n 's/.*received=\([0-9]*\).*/\1/p')
small_reply() { [ "$sent" = 19 ] && [ -n "$got" ] && [ "$got" -le "$sent" ]; }
check "a ${sent}-byte PING from a stranger drew ${got} bytes (at most ${sent})" small_reply

# ---- (e) a stranger's PING_REQ is not served
r=$($FORGER pingreq "$PORT0" n9)
check "a PING_REQ from a stranger drew nothing ($r)" \
  [ "$r" = "to_requester=0 to_target=0" ]

# ---- (a) eviction at the end of the incarnation range
inc=$(info n1 incarnation)
for p in "$PORT0" $((PORT0 + 1)) $((PORT0 + 2)); do
  $FORGER record "$p" n1 $((PORT0 + 1)) 18446744073709551615 3 >/dev/null
  $FORGER record "$p" n1 $((PORT0 + 1)) $((inc + 8589934592)) 2 >/dev/null
done
sleep 1
if t=$(wait_for 4 alive_everywhere n1); then
  sleep 10
  check "forged eviction: n1 alive everywhere (after ${t} ms) and still 10 s later" alive_everywhere n1
else
  fail "forged eviction: n1 not alive everywhere within 5 s ($(for n in $names; do printf '%s:%s ' "$n" "$(status_of "$n" n1)"; done))"
fi

# ---- (b) remote stop by a namesake
r=$($FORGER namesake $((PORT0 + 1)) n1 3)
sleep 0.5
check "forged namesake ($r): n1 still runs" kill -0 "$(pid_of n1)"
check "forged namesake: n1 keeps its name" [ "$(info n1 name)" = n1 ]
check "forged namesake: n1 logged the conflict with the other address" \
  grep -q 'msg="name conflict" member=n1 .*claimed_from=127.0.0.1:' "$DIR/n1.log"
check "forged namesake: n1 alive everywhere" alive_everywhere n1

# ---- (c) the ring follows the membership past its point limit (among the agents still
# running, so that this check stands on its own if (b) stopped one)
names=$(for n in $names; do kill -0 "$(pid_of "$n")" 2>/dev/null && echo "$n"; done | tr '\n' ' ')
# Each agent is told directly, and the newcomer joins through all three: 400 forged members
# that look alive dilute gossip (3 random targets of 403), which is not what this checks.
for p in "$PORT0" $((PORT0 + 1)) $((PORT0 + 2)); do
  $FORGER heavy "$p" 400 $((PORT0 + 1000)) >/dev/null
done
many() { for n in $names; do [ "$(info "$n" members_alive)" -ge 400 ] || return 1; done; }
# (a precondition, not a limit: under load some of the 34 datagrams per agent are lost and
# the rest arrive by gossip)
if wait_for 15 many >/dev/null; then ok "400 forged heavy members are alive everywhere"
else fail "the forged members did not spread"; fi
start n3 $((PORT0 + 3)) --join "127.0.0.1:$PORT0" --join "127.0.0.1:$((PORT0 + 1))" \
  --join "127.0.0.1:$((PORT0 + 2))" --weight 100 || exit 1
t0=$(now_ms)
owns_everywhere() {
  for n in $names n3; do
    $FORGER owned "$DIR/$n.sock" n3 20000 | grep -qv 'owned=0$' || return 1
  done
}
# A ring at the point limit (16.7M points) takes 2-3 s of CPU to build in a Release build,
# and with the sanitizers and the Debug invariant checks, four agents sharing two cores
# took 8 to 15 s of CPU per rebuild. Builds run one at a time off the loop, at the lowest
# priority, so a newcomer that comes while one runs waits for it, then for its own: two
# builds, on the CPU that the four loops (and a test run beside this one) leave; 46 s was
# measured so under the sanitizers. The limit is 20 s for the one and 75 s for the other.
# A frozen ring never gets there. (Not `limit`: wait_for sets that.)
own_limit=20000
grep -qa __asan_init "$RINGD" && own_limit=75000
if wait_for 90 owns_everywhere >/dev/null; then
  took=$(($(now_ms) - t0))
  check "a real newcomer owns keys on every agent ${took} ms after it started (limit $own_limit)" \
    [ "$took" -le "$own_limit" ]
else
  fail "a real newcomer owned no keys on some agent 90 s after it started"
fi
check "the scaled ring was logged" grep -q 'msg="ring scaled to the point limit"' "$DIR/n0.log"
for n in $names n3; do
  check "$n still runs" kill -0 "$(pid_of "$n")"
done

finish
