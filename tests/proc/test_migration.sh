#!/bin/bash
# test_migration.sh RINGD — turning encryption on in a running cluster, with no downtime:
# four agents start in the clear on loopback, then three rolling restarts (SIGTERM, wait for
# the exit, start again with the same name and port, --join a running one):
#   step 1  --keyring-file K --gossip-verify-incoming off --gossip-verify-outgoing off
#   step 2  --keyring-file K --gossip-verify-incoming off   (sends sealed)
#   step 3  --keyring-file K                                (both on: sealed only)
# After every restart all four agree (members alive, members and ring checksums) with no
# envelope drop anywhere, and no agent ever logs a member dead (a restart is a leave, logged
# "member left"). Mid-migration an agent in the step-1 state takes plain packets from the
# agents not yet restarted and sealed ones from the first agent of step 2. INFO shows the
# two settings; the plain-accepted counters grow while anyone sends in the clear and stop
# once step 2 is complete. After step 3, a forged plain datagram is dropped and counted,
# and a fresh agent in the clear cannot join. About 60 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

umask 077
"$RINGD" keygen >"$DIR/keys" || { echo "keygen failed"; exit 1; }
K=$DIR/keys
FORGER="$(dirname "$0")/forger.py"
N=4
names="m1 m2 m3 m4"
port_of() { echo $((PORT0 + ${1#m} - 1)); }

# agreed: all four see four alive and share one members checksum and one ring checksum
agreed() {
  wm=""; wr=""
  for n in $names; do
    [ "$(info "$n" members_alive)" = "$N" ] || return 1
    m=$(info "$n" members_checksum); r=$(info "$n" ring_checksum)
    [ -z "$wm" ] && { wm=$m; wr=$r; }
    [ "$m" = "$wm" ] && [ "$r" = "$wr" ] || return 1
  done
}
# sum FIELD...: the sum of the fields over the four agents
sum() {
  t=0
  for n in $names; do for f in "$@"; do t=$((t + $(info "$n" "$f"))); done; done
  echo "$t"
}
DROPS="packets_dropped_nokey packets_dropped_plain packets_dropped_sealed syncs_dropped_nokey
syncs_dropped_plain syncs_dropped_sealed"
PLAIN_IN="packets_accepted_plain syncs_accepted_plain"
# agree_now WHAT: the four agree within 20 s, nothing dropped by the envelope rule
agree_now() {
  if t=$(wait_for 20 agreed); then ok "$1: all $N agree after ${t} ms"
  else fail "$1: the $N agents did not agree within 20 s"; return 1; fi
  # shellcheck disable=SC2086
  d=$(sum $DROPS)
  check "$1: no envelope drop at any agent ($d)" [ "$d" -eq 0 ]
}
no_death() {
  dead=$(grep -h 'msg="member dead"' "$DIR"/*.log)
  check "$1: no agent has logged a member dead${dead:+: $dead}" [ -z "$dead" ]
}
# restart NAME FLAGS...: SIGTERM, wait for the exit, start again joining another agent
restart() {
  n=$1; shift
  pid=$(pid_of "$n"); old=$(info "$n" incarnation)
  kill -TERM "$pid"; wait "$pid"; rc=$?
  [ "$rc" -eq 0 ] || fail "$n exited $rc on SIGTERM"
  seed=m1; [ "$n" = m1 ] && seed=m2
  start "$n" "$(port_of "$n")" --join "127.0.0.1:$(port_of "$seed")" "$@" || return 1
  wait_for 5 newer "$n" "$old" >/dev/null || fail "$n: no new life after restart"
}
newer() { i=$(info "$1" incarnation); [ -n "$i" ] && [ "$i" -gt "$2" ]; }
settings() { echo "$(info "$1" gossip_verify_incoming)/$(info "$1" gossip_verify_outgoing)"; }

# ---- refused at start: the switches without a keyring, or clear out while strict in
refused() { # refused DESC WANT ARGS...: exit 2 and one line naming WANT
  desc=$1; want=$2; shift 2
  out=$(timeout 10 "$RINGD" agent --name refused --bind "127.0.0.1:$((PORT0 + 9))" \
    --socket "$DIR/refused.sock" "$@" 2>&1); rc=$?
  lines=$(printf '%s\n' "$out" | wc -l)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$out" == *"$want"* ]]; then ok "$desc: exit 2, one line"
  else fail "$desc: rc=$rc lines=$lines out=$out"; fi
}
refused "--gossip-verify-incoming without a keyring" "without --keyring-file" \
  --gossip-verify-incoming off
refused "--gossip-verify-outgoing off with verify-incoming on" "needs --gossip-verify-incoming off" \
  --keyring-file "$K" --gossip-verify-outgoing off
refused "a value other than on or off" "'yes' is not on or off" \
  --keyring-file "$K" --gossip-verify-incoming yes

# ---- four agents in the clear
start m1 "$(port_of m1)" || exit 1
for n in m2 m3 m4; do start "$n" "$(port_of "$n")" --join "127.0.0.1:$(port_of m1)" || exit 1; done
agree_now "in the clear" || { finish; exit 1; }
check "an agent without a keyring shows both settings off ($(settings m1))" [ "$(settings m1)" = off/off ]

# ---- step 1: keyed, but plain in and plain out
STEP1="--keyring-file $K --gossip-verify-incoming off --gossip-verify-outgoing off"
for n in $names; do
  # shellcheck disable=SC2086
  restart "$n" $STEP1 || { finish; exit 1; }
  agree_now "step 1, $n restarted" || { finish; exit 1; }
done
check "step 1: m3 shows verify off/off ($(settings m3))" [ "$(settings m3)" = off/off ]
check "step 1: each start warns that plain gossip is accepted" \
  grep -q 'level=warn msg="gossip in the clear accepted" sends=plain' "$DIR/m1.log"
p0=$(sum $PLAIN_IN); sleep 2; p1=$(sum $PLAIN_IN)
check "step 1 done: everyone still sends in the clear, and the plain-accepted counters grow ($p0 -> $p1)" \
  [ "$p1" -gt "$p0" ]
no_death "step 1"

# ---- step 2: sealed out, plain still in
STEP2="--keyring-file $K --gossip-verify-incoming off"
# shellcheck disable=SC2086
restart m1 $STEP2 || { finish; exit 1; }
agree_now "step 2, m1 restarted" || { finish; exit 1; }
# mid-migration: m2 is in the step-1 state; m1 seals, m3 and m4 do not. What m2 decoded is
# packets_in: of it, packets_accepted_plain came in the clear and the rest was opened.
opened() { echo $(( $(info m2 packets_in) - $(info m2 packets_accepted_plain) )); }
a0=$(info m2 packets_accepted_plain); o0=$(opened)
plain_grew() { [ "$(info m2 packets_accepted_plain)" -gt "$a0" ]; }
opened_grew() { [ "$(opened)" -gt "$o0" ]; }
if wait_for 10 plain_grew >/dev/null; then ok "mid-migration: m2 (step 1) takes plain packets from m3 and m4 ($a0 -> $(info m2 packets_accepted_plain))"
else fail "mid-migration: m2 (step 1) took no plain packet in 10 s"; fi
if wait_for 10 opened_grew >/dev/null; then ok "mid-migration: m2 (step 1) opens sealed packets from m1 ($o0 -> $(opened))"
else fail "mid-migration: m2 (step 1) opened no sealed packet in 10 s"; fi
check "mid-migration: m1 seals (verify $(settings m1)), m2 does not ($(settings m2))" \
  [ "$(settings m1)/$(settings m2)" = off/on/off/off ]
for n in m2 m3 m4; do
  # shellcheck disable=SC2086
  restart "$n" $STEP2 || { finish; exit 1; }
  agree_now "step 2, $n restarted" || { finish; exit 1; }
done
check "step 2: each start warns that plain gossip is accepted, saying it seals" \
  grep -q 'level=warn msg="gossip in the clear accepted" sends=sealed' "$DIR/m4.log"
sleep 1 # let any datagram sent before the last restart land
p0=$(sum $PLAIN_IN); sleep 4; p1=$(sum $PLAIN_IN)
check "step 2 done: nobody sends in the clear any more, the plain-accepted counters stand still ($p0 -> $p1)" \
  [ "$p1" -eq "$p0" ]
no_death "step 2"

# ---- step 3: sealed only
for n in $names; do
  restart "$n" --keyring-file "$K" || { finish; exit 1; }
  agree_now "step 3, $n restarted" || { finish; exit 1; }
done
for n in $names; do
  check "step 3: $n shows verify on/on ($(settings "$n"))" [ "$(settings "$n")" = on/on ]
  w=$(grep -c 'msg="gossip in the clear accepted"' "$DIR/$n.log")
  check "step 3: $n warned at its two starts with plain accepted, not at the third ($w)" [ "$w" -eq 2 ]
done
no_death "step 3"

# a forged plain datagram: dropped and counted, its member never known
d0=$(info m1 packets_dropped_plain)
python3 "$FORGER" record "$(port_of m1)" ghost $((PORT0 + 8)) 1 0 >/dev/null
grew() { [ "$(info m1 packets_dropped_plain)" -gt "$d0" ]; }
if wait_for 5 grew >/dev/null; then ok "a forged plain datagram is dropped and counted ($d0 -> $(info m1 packets_dropped_plain))"
else fail "a forged plain datagram was not counted as dropped"; fi
check "the forged member is unknown" bash -c "! redis-cli -s '$DIR/m1.sock' MEMBERS | grep -qx ghost"

# a fresh agent in the clear cannot join
d0=$(sum packets_dropped_plain syncs_dropped_plain)
start outsider $((PORT0 + 5)) --join "127.0.0.1:$(port_of m1)" || exit 1
grew_all() { [ "$(sum packets_dropped_plain syncs_dropped_plain)" -gt "$d0" ]; }
if wait_for 10 grew_all >/dev/null; then ok "the plain agent's datagrams and frames are dropped and counted ($d0 -> $(sum packets_dropped_plain syncs_dropped_plain))"
else fail "the plain agent's packets were not counted as dropped"; fi
sleep 3
check "the plain agent stays alone ($(info outsider members_alive) alive)" [ "$(info outsider members_alive)" = 1 ]
known=$(for n in $names; do q "$n" MEMBERS | grep -x outsider; done)
check "no member knows the plain agent" [ -z "$known" ]
check "the sealed cluster still agrees" agreed
pid=$(pid_of outsider); kill -TERM "$pid"; wait "$pid"
no_death "at the end"
no_sanitizer_reports

finish
