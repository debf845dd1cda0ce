#!/bin/bash
# test_faults.sh RINGD — real agents on loopback under process faults:
#  (a) 9 agents; a third of them (3) are SIGSTOPped until every running agent has declared
#      them dead, then SIGCONTed: every agent must see 9 alive and the same ring checksum
#      again within 15 s (they refute their own deaths with a higher incarnation);
#  (b) an agent is SIGKILLed and restarted at once with the same name, address and --join,
#      as a supervisor would: it must be alive everywhere with one ring within 5 s, at its
#      new incarnation everywhere within one anti-entropy period (30 s, plus 10 s of margin),
#      still alive 30 s later, and nobody may log it dead after the restart.
# Times are printed; limits are the ones in the lines above. About 60 s in all (up to 95 s when gossip misses an agent).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

N=9
names=""
start n0 "$PORT0" || exit 1
names="n0"
for i in $(seq 1 $((N - 1))); do
  start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" || exit 1
  names="$names n$i"
done
stopped="n6 n7 n8"
running=$(echo "$names" | tr ' ' '\n' | grep -vxF -e n6 -e n7 -e n8 | tr '\n' ' ')

# agreed ALIVE NAMES...: each named agent sees ALIVE alive, and they share one ring checksum
agreed() {
  want_alive=$1; shift; want=""
  for n in "$@"; do
    [ "$(info "$n" members_alive)" = "$want_alive" ] && [ "$(info "$n" ring_members)" = "$want_alive" ] || return 1
    c=$(info "$n" ring_checksum)
    [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}
if t=$(wait_for 20 agreed "$N" $names); then ok "$N agents agree on one ring after ${t} ms"
else fail "$N agents did not agree within 20 s"; finish; exit 1; fi

# ---- (a) SIGSTOP a third until all the rest declare them dead, then SIGCONT
lines_before() { for n in $names; do echo "$n $(wc -l <"$DIR/$n.log")"; done >"$DIR/$1.lines"; }
# since MARK NAME: NAME's log lines written after MARK was taken
since() { tail -n +$(( $(awk -v n="$2" '$1 == n {print $2}' "$DIR/$1.lines") + 1 )) "$DIR/$2.log"; }
# ts_ms: the ts= of the line on stdin, in ms since the epoch (empty if no line)
ts_ms() { ts=$(sed -n 's/^ts=\([^ ]*\) .*/\1/p'); [ -n "$ts" ] && date -d "$ts" +%s%3N; }
# Timings below come from the agents' own log lines where one marks the moment, so that
# they do not depend on how fast this script can poll; polling only decides when to look.

lines_before stop
t_stop=$(now_ms)
for n in $stopped; do kill -STOP "$(pid_of "$n")"; done
dead3() { for n in $running; do [ "$(info "$n" members_dead)" = 3 ] || return 1; done; }
if wait_for 45 dead3 >/dev/null; then
  # each running agent's own moment: its first "member dead" line with members_dead=3
  t=0
  for n in $running; do
    d=$(since stop "$n" | grep -m1 'msg="member dead".* members_dead=3 ' | ts_ms)
    [ -n "$d" ] && [ $((d - t_stop)) -gt "$t" ] && t=$((d - t_stop))
  done
  ok "SIGSTOPped $stopped declared dead by all 6 running agents ${t} ms after SIGSTOP"
else
  fail "SIGSTOPped agents not declared dead by all running agents within 45 s:" \
    "$(for n in $running; do printf '%s:dead=%s ' "$n" "$(info "$n" members_dead)"; done)"
fi
# nobody that kept running was declared dead meanwhile
wrongly=$(for n in $running; do since stop "$n" | grep 'msg="member dead"' |
  grep -vE 'member=(n6|n7|n8) '; done)
check "no running agent was declared dead while $stopped were stopped" [ -z "$wrongly" ]
[ -n "$wrongly" ] && echo "$wrongly" | sed 's/^/#   /'

lines_before cont
t_cont=$(now_ms)
for n in $stopped; do kill -CONT "$(pid_of "$n")"; done
if tp=$(wait_for 20 agreed "$N" $names); then
  # the moment the last agent got there: its last "member alive" or "ring rebuilt" line
  # since SIGCONT (an agent with neither never left the final state)
  t=0
  for n in $names; do
    d=$(since cont "$n" | grep -E 'msg="(member alive|ring rebuilt)"' | tail -n 1 | ts_ms)
    [ -n "$d" ] && [ $((d - t_cont)) -gt "$t" ] && t=$((d - t_cont))
  done
  check "after SIGCONT all $N agents agree again (9 alive, one ring checksum) ${t} ms after SIGCONT (polled: ${tp} ms; limit 15 s)" [ "$t" -le 15000 ]
else
  fail "after SIGCONT the $N agents did not agree within 15 s:" \
    "$(for n in $names; do printf '%s:alive=%s,sum=%s ' "$n" "$(info "$n" members_alive)" \
      "$(info "$n" ring_checksum)"; done)"
fi
for n in $stopped; do
  r=$(info "$n" refutes)
  echo "# $n: refutes=$r incarnation=$(info "$n" incarnation)"
done
# what the agents logged meanwhile: a resumed agent first reads the news queued for it
# (its co-stopped peers suspect, dead) and then their refutations
count_since() { for n in $2; do since "$1" "$n"; done | grep -c "$3"; }
echo "# after SIGCONT: resumed agents logged $(count_since cont "$stopped" 'msg="member suspect"')" \
  "suspicions and $(count_since cont "$stopped" 'msg="member dead"') deaths; running agents" \
  "$(count_since cont "$running" 'msg="member suspect"') and $(count_since cont "$running" 'msg="member dead"')"

# ---- (b) SIGKILL one agent and restart it at once with the same name, address and --join
# member_field AGENT MEMBER FIELD: FIELD of MEMBER in AGENT's MEMBERS reply
member_field() {
  q "$1" MEMBERS | tr -d '\r' | awk -v m="$2" -v f="$3" '
    prev == "name" { cur = $0 }
    prev == f && cur == m { print; exit }
    { prev = $0 }'
}
victim=n4
others=$(echo "$names" | tr ' ' '\n' | grep -vx "$victim" | tr '\n' ' ')
old_inc=$(info "$victim" incarnation)
lines_before restart # (taken just before the kill: a death in between would count too)
{ kill -KILL "$(pid_of "$victim")"; wait "$(pid_of "$victim")"; } 2>/dev/null
rm -f "$DIR/$victim.sock"
t_restart=$(now_ms)
start "$victim" $((PORT0 + 4)) --join "127.0.0.1:$PORT0" || { fail "restart of $victim"; finish; exit 1; }
new_inc=$(info "$victim" incarnation)
echo "# $victim restarted: incarnation $old_inc -> $new_inc"
# (no agent logs a new incarnation of a member that stays alive: this one is polled, one
# MEMBERS query per agent per poll)
victim_at() { # STATUS_AT_INC: succeeds when every other agent holds the victim like that
  for n in $others; do
    [ "$(q "$n" MEMBERS | tr -d '\r' | awk -v m="$victim" '
      prev == "name" { cur = $0 } prev == "status" && cur == m { st = $0 }
      prev == "incarnation" && cur == m { inc = $0 } { prev = $0 }
      END { print st "@" inc }')" = "$1" ] || return 1
  done
}
alive_any() {
  for n in $others; do [ "$(member_field "$n" "$victim" status)" = alive ] || return 1; done
  agreed "$N" $names
}
views() {
  for n in $others; do printf '%s:%s@%s ' "$n" "$(member_field "$n" "$victim" status)" \
    "$(member_field "$n" "$victim" incarnation)"; done
}
# Placement first: the restarted agent is alive on every agent and owns its keys again at
# once, whichever of its lives an agent holds.
if wait_for 5 alive_any >/dev/null; then
  check "restarted $victim alive at all 8 others and one ring $(( $(now_ms) - t_restart )) ms after the restart (polled; limit 5 s)" true
else
  fail "restarted $victim not alive everywhere within 5 s: $(views)"
fi
# Its new incarnation spreads by gossip, usually within a second. The membership checksum
# covers names and weights, not incarnations, so an agent that gossip missed learns it at
# the latest from the anti-entropy exchange every 30 s (proto/PROTOCOL.md).
if wait_for 40 victim_at "alive@$new_inc" >/dev/null; then
  t=$(( $(now_ms) - t_restart ))
  check "restarted $victim at its new incarnation at all 8 others ${t} ms after the restart (polled; limit: one anti-entropy period + 10 s)" [ "$t" -le 40000 ]
  [ "$t" -gt 5000 ] && echo "# gossip missed an agent: $t ms, through anti-entropy"
else
  fail "restarted $victim not at incarnation $new_inc everywhere within 40 s: $(views)"
fi
sleep 30
still=true
for n in $others; do [ "$(member_field "$n" "$victim" status)" = alive ] || still=false; done
check "30 s later $victim is still alive everywhere" $still
check "30 s later all $N agents still agree" agreed "$N" $names
dead_after=$(for n in $others; do since restart "$n" | grep "msg=\"member dead\" member=$victim "; done)
check "nobody logged $victim dead after its restart" [ -z "$dead_after" ]
[ -n "$dead_after" ] && echo "$dead_after" | sed 's/^/#   /'
echo "# since the kill: $(count_since restart "$others" "msg=\"member suspect\" member=$victim .*incarnation=$old_inc ")" \
  "suspicions of $victim's old life, $(count_since restart "$others" "msg=\"member suspect\" member=$victim .*incarnation=$new_inc ")" \
  "of its new one, $(count_since restart "$names" 'msg="member dead"') deaths logged"
finish
