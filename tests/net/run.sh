#!/bin/bash
# run.sh RINGD — multi-host tests: 12 agents, each on its own network host (a network
# namespace with its own address on a bridge), with real packet loss and partitions made
# by nftables, crashes and restarts (lib.sh also has link cuts and freezes). Needs root
# and dnsmasq; exits 77 (skipped) without them.
#
#   1. 12 hosts converge; 20,000 keys asked on every host get identical owners
#   2. 3 hosts SIGKILLed at once and restarted: all alive everywhere within 10 s
#   3. 10% loss on every host for 3 minutes: nobody declared dead, rings identical
#   4. a 6/6 partition for 60 s: each side converges on its half; after the heal all 12
#      agree within 10 s and no key is owned by a member that is gone
#   5. one host cut off one way (sends, hears nothing): no flapping once the cut has lasted
#      60 s (the last 20 s are still), and alive everywhere within 15 s of the heal
#   6. the gossip key is rotated at run time (install, use, remove on every agent) while
#      one host is down: no false death, no envelope drop, owners unchanged; the host
#      comes back with the old key and stays out, counted; with the new key in its file
#      and SIGHUP it rejoins
#   7. every host SIGKILLed and started again one at a time without --join: each rejoins
#      through its --state-dir snapshot, all 12 agree within 10 s each time, no death
#   8. 100 SIGHUPs to an agent serving MOWNER batches: 100 reloads, no suspicion, no leave,
#      no ring change
#   9. seeds by DNS, from dnsmasq in the switch namespace: hosts that left come back with
#      no snapshot and a name as their only seed: srv:NAME (h1, h3, h4), and a name that
#      points where no agent runs and is then moved to the seeds (h9): it joins at its
#      next retry
#
# All gossip is sealed with a key made for the run (--keyring-file, --cluster net).
# Prints a report table and `N passed, N failed` last; exits non-zero on any failure.
# Knobs (environment): LOSS_S (180), PART_S (60), CUT_S (60), KEYS (20000),
# LOG_LEVEL (info), NICE (-5, the agents' nice value), KEEP=1 keeps the logs, TIMEOUT (720)
# bounds the whole run.
set -u
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: sudo $0 path/to/ringd" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ]; then echo "# skipped: needs root (network namespaces, nftables)"; exit 77; fi
for tool in ip nft redis-cli timeout /usr/sbin/dnsmasq; do
  command -v "$tool" >/dev/null || { echo "# skipped: $tool is missing"; exit 77; }
done
RINGD=$1
. "$(dirname "$0")/lib.sh"
watchdog "${TIMEOUT:-720}"

N=12
ALL=$(seq -s ' ' 1 $N)
SIDE_A="1 2 3 4 5 6"
SIDE_B="7 8 9 10 11 12"
CRASHED="1 6 11"            # h1 is a seed: the others rejoin through it while it restarts
CUT=12                      # the host cut off one way
LOSS_S=${LOSS_S:-180}
PART_S=${PART_S:-60}
CUT_S=${CUT_S:-60}
STILL_S=20                  # the last STILL_S seconds of the cut must be still
SRV_HOSTS="1 3 4"           # rejoin with srv:NAME as their only seed
MOVE=9                      # rejoins through a name that first points at NOWHERE
NOWHERE=$NET.200            # no host has this address

# A chroot or a container without its own mount namespace cannot make network namespaces:
# that is where the suite is, not what it tests, so it is skipped (ctest: 77) and says so.
# `ip netns add` makes /run/netns a mount point the first time; a skip leaves none behind.
netns_was_mounted=0
mountpoint -q /run/netns 2>/dev/null && netns_was_mounted=1
skip() {
  ip netns del "${P}probe" 2>/dev/null
  if [ "$netns_was_mounted" = 0 ] && mountpoint -q /run/netns 2>/dev/null &&
     [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null
  fi
  echo "SKIPPED: this environment cannot $1 network namespaces (ip netns $2 failed)"
  exit 77
}
ip netns add "${P}probe" 2>/dev/null || skip create add
ip netns exec "${P}probe" true 2>/dev/null || skip enter exec
ip netns del "${P}probe"
if ! net_up $N; then fail "could not create the $N hosts"; finish; exit 1; fi
log "$N hosts on $NET.0/24 (namespaces $P*), logs in $DIR; load average $(load) ($(nproc) cores)"
keyset
keys_up || { fail "could not make the gossip key"; finish; exit 1; }

# false_deaths COND: `member dead` lines since the mark whose (L = logger host number,
# M = dead member number) satisfy COND — the deaths the scenario did not cause on purpose
false_deaths() { deaths | tr -d h | awk "{ L = \$1; M = \$2 } $1 { n++ } END { print n + 0 }"; }

# settle NAME: before a scenario, the whole cluster agrees (bounded)
settle() {
  if ! wait_agreed 30 "$ALL" $N >/dev/null; then
    fail "$1: the cluster did not settle on $N alive and one checksum before the scenario"
    for i in $ALL; do echo "#   h$i: $(view "$i")"; done
    return 1
  fi
}

quiet() { "$@" >/dev/null; }
# result: PASS if no check failed since the scenario began (F0 = failures at its start)
result() { [ "$FAILED" -eq "$F0" ] && echo PASS || echo FAIL; }

# ------------------------------------------------------------------ 1. converge
log "scenario 1: $N hosts converge"
F0=$FAILED
mark
t0=$(now_ms)
for i in $ALL; do start "$i"; done
wait_sockets $ALL || { fail "agents did not start"; finish; exit 1; }
if t=$(wait_agreed 20 "$ALL" $N); then
  took=$(( $(now_ms) - t0 ))
  ok "$N hosts agree on $N alive and one checksum, $(secs $took) s after start"
  agree1="$(secs $took) s"
else
  fail "$N hosts did not agree within 20 s of start${t:+ (only after $(secs "$t") s)}"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
  agree1="> 20 s"
fi
if msg=$(owners_all "$ALL" base); then
  ok "$KEYS keys asked on every host (MOWNER, 1000 keys per command) get identical owners"
  log "owners per member: $(sort "$DIR/owners.base.1" | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')"
else
  fail "owners differ across hosts: $msg"
fi
check "every member owns part of the key set" [ "$(sort -u "$DIR/owners.base.1" | wc -l)" -eq $N ]
fd=$(false_deaths 1)
check "no member declared dead while converging ($fd)" [ "$fd" -eq 0 ]
report "$N hosts converge, $KEYS keys agree" "$(result)" "$agree1" "$fd" "-"

# ------------------------------------------------------------------ 2. crash and restart
log "scenario 2: SIGKILL h${CRASHED// /, h} at once, restart them 3 s later"
SURVIVORS=$(for i in $ALL; do case " $CRASHED " in *" $i "*) ;; *) printf '%s ' "$i";; esac; done)
F0=$FAILED; agree="-"
settle "crash/restart"
mark
crash $CRASHED
sleep 3
log "suspects seen by the others just before the restart: $(for i in $SURVIVORS; do set -- $(view "$i"); printf '%s ' "${2:-?}"; done)"
t0=$(now_ms)
for i in $CRASHED; do start "$i"; done
wait_sockets $CRASHED || fail "the restarted agents did not open their sockets"
t=$(wait_agreed 10 "$ALL" $N)
took=$(( $(now_ms) - t0 ))   # from the restart, not from the first poll
if [ -n "$t" ] && [ "$took" -le 10000 ]; then
  ok "restarted hosts alive everywhere, one checksum, $(secs $took) s after the restart"
  agree="$(secs $took) s"
else
  fail "restarted hosts not alive everywhere within 10 s of the restart${t:+ (only after $(secs "$took") s)}"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
  agree="> 10 s"
fi
# a suspicion of the previous life must not catch up with the new one
for i in $ALL; do eval "MARKR_$i=$(stat -c %s "$(logf "$i")")"; done
sleep 5
late=$(for i in $ALL; do
  tail -c +$(( $(eval "echo \$MARKR_$i") + 1 )) "$(logf "$i")" | grep -c 'msg="member dead"'; done |
  awk '{ s += $1 } END { print s + 0 }')
check "no member declared dead in the 5 s after the agreement ($late)" [ "$late" -eq 0 ]
WANT=$N
check "still $N alive everywhere 5 s later" quiet wait_for 5 agreed "$ALL"
deadlist=$(deaths | awk '{ print $2 }' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
[ -n "$deadlist" ] && log "member dead lines (member:count): $deadlist"
fd=$(false_deaths "!(M == 1 || M == 6 || M == 11)")
check "no member other than the crashed ones declared dead ($fd)" [ "$fd" -eq 0 ]
owners_all "$ALL" crash >/dev/null && mv=$(moved "$DIR/owners.base.1" "$DIR/owners.crash.1") || mv=?
check "owners identical everywhere and unchanged after the restart (moved $mv)" [ "$mv" = 0.000 ]
log "ring churn on the survivors, from the logs (mean per host of the sum of moved=): $(churn $SURVIVORS)"
report "crash + restart 3 hosts" "$(result)" "$agree" "$fd" "- → $mv; log Σ $(churn $SURVIVORS)"

# ------------------------------------------------------------------ 3. loss
log "scenario 3: 10% loss on every host (all packets in) for $LOSS_S s"
F0=$FAILED
settle "loss"
mark
for i in $ALL; do loss_host "$i" 10 || fail "nft: loss rule on h$i"; done
t0=$(now_ms)
max_suspect=0; min_alive=$N; samples=0
while [ $(( $(now_ms) - t0 )) -lt $(( LOSS_S * 1000 )) ]; do
  while read -r _ a sus _; do
    [ "${sus:-0}" -gt "$max_suspect" ] 2>/dev/null && max_suspect=$sus
    [ "${a:-$N}" -lt "$min_alive" ] 2>/dev/null && min_alive=$a
  done < <(views "$ALL")
  samples=$((samples + 1))
  left=$(( LOSS_S * 1000 - ($(now_ms) - t0) ))
  [ "$left" -gt 2000 ] && left=2000
  [ "$left" -gt 0 ] && sleep "$(secs "$left")"
done
log "under loss: $samples samples of all hosts, most suspects seen by one host: $max_suspect, fewest alive: $min_alive"
fd=$(false_deaths 1)
check "10% loss for $LOSS_S s: zero members declared dead ($fd)" [ "$fd" -eq 0 ]
[ "$fd" -eq 0 ] || { deaths | sed 's/^/#   dead: /' | head -20; }
WANT=$N
# (a state, not a timing: 30 s leave room for slow polls and a suspicion in flight)
if t=$(wait_for 30 same_ring "$ALL"); then
  ok "at the end of the loss, all rings identical ($N members, one checksum)"
else
  fail "at the end of the loss, rings differ"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
if msg=$(owners_all "$ALL" loss); then
  mv=$(moved "$DIR/owners.base.1" "$DIR/owners.loss.1")
  ok "owners identical on every host at the end of the loss (moved vs before: $mv)"
else
  fail "owners differ at the end of the loss: $msg"; mv=?
fi
heal
if t=$(wait_agreed 10 "$ALL" $N); then agree="$(secs "$t") s after the loss ends"
else fail "no agreement within 10 s after the loss ended${t:+ (only after $(secs "$t") s)}"; agree="> 10 s"; fi
report "10% loss on every host, ${LOSS_S} s" "$(result)" "$agree" "$fd" "$mv → -; log Σ $(churn)"

# ------------------------------------------------------------------ 4. partition 6/6
log "scenario 4: partition {h${SIDE_A// /,h}} / {h${SIDE_B// /,h}} for $PART_S s"
F0=$FAILED
settle "partition"
mark
partition "$SIDE_A" "$SIDE_B" || fail "nft: partition rules"
t0=$(now_ms)
both_halves() { agreed "$SIDE_A" && agreed "$SIDE_B"; }
WANT=6
if t=$(wait_for $((PART_S - 2)) both_halves); then
  ok "each side converges on its own half (6 alive, one checksum per side) after $(secs "$t") s"
  split="$(secs "$t") s"
else
  fail "the sides did not each converge on 6 alive within $((PART_S - 2)) s${t:+ (only after $(secs "$t") s)}"; split="> $PART_S s"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
msgA=$(owners_all "$SIDE_A" partA) && msgB=$(owners_all "$SIDE_B" partB)
check "owners identical within each side ${msgA:-}${msgB:-}" [ -z "${msgA:-}${msgB:-}" ]
check "each side owns every key itself" \
  sh -c "! grep -qv '^h[1-6]\$' '$DIR/owners.partA.1' && ! grep -qvx 'h[7-9]\|h1[0-2]' '$DIR/owners.partB.7'"
mv_during=$(moved "$DIR/owners.base.1" "$DIR/owners.partA.1")
log "keys moved on side A: $mv_during, on side B: $(moved "$DIR/owners.base.1" "$DIR/owners.partB.7")"
left=$(( (PART_S * 1000 - ($(now_ms) - t0)) / 1000 ))
[ "$left" -gt 0 ] && sleep "$left"
# (a query may take seconds on a loaded machine: allow the views 5 s to come in)
if wait_for 5 both_halves >/dev/null; then ok "after $PART_S s each side still agrees on its half"
else
  fail "after $PART_S s the sides no longer agree on their halves"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
heal
t0=$(now_ms)
if t=$(wait_agreed 10 "$ALL" $N); then
  ok "after the heal all $N agree on one checksum after $(secs "$t") s"
  agree="$(secs "$t") s after heal (split: $split)"
else
  fail "after the heal, no agreement of all $N within 10 s${t:+ (only after $(secs "$t") s)}"; agree="> 10 s (split: $split)"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
if msg=$(owners_all "$ALL" healed); then
  ok "after the heal, owners identical on every host"
else fail "after the heal, owners differ: $msg"; fi
gone=$(sort -u "$DIR/owners.healed.1" | while read -r o; do
  for i in $ALL; do [ "$(status_of "$i" "$o")" = alive ] || { echo "$o(on h$i)"; break; }; done
done)
fd=$(false_deaths "(L <= 6) == (M <= 6)")
check "no key owned by a member that is not alive everywhere ${gone}" [ -z "$gone" ]
mv=$(moved "$DIR/owners.base.1" "$DIR/owners.healed.1")
check "after the heal, every key is back with its owner from before ($mv moved)" [ "$mv" = 0.000 ]
check "no member declared dead by its own side ($fd)" [ "$fd" -eq 0 ]
report "partition 6/6, ${PART_S} s, heal" "$(result)" "$agree" "$fd" "$mv_during → $mv; log Σ $(churn)"

# ------------------------------------------------------------------ 5. one-way cut
OTHERS=$(echo "$ALL" | tr ' ' '\n' | grep -vx $CUT | tr '\n' ' ')
log "scenario 5: h$CUT sends but hears nothing for $CUT_S s"
F0=$FAILED
settle "one-way cut"
mark
deaf $CUT || fail "nft: one-way cut rule"
t0=$(now_ms)
left=$(( t0 + (CUT_S - STILL_S) * 1000 - $(now_ms) ))
[ "$left" -gt 0 ] && sleep "$(secs "$left")"
# The last STILL_S seconds: where each log stands at their start, and (taken on time by a
# helper, however slow the queries below are on a loaded machine) at their end.
for i in $ALL; do eval "MARKW_$i=$(stat -c %s "$(logf "$i")")"; done
( sleep "$STILL_S"; for i in $ALL; do echo "MARKE_$i=$(stat -c %s "$(logf "$i")")"; done >"$DIR/cut.end" ) &
ENDER=$!
PIDS="$PIDS $ENDER"
# window I: what host I logged in those STILL_S seconds
window() {
  w1=$(eval "echo \$MARKW_$1"); w2=$(eval "echo \$MARKE_$1")
  tail -c +$(( w1 + 1 )) "$(logf "$1")" | head -c $(( w2 - w1 ))
}
# meanwhile, sample the others' counts and their view of h$CUT
: >"$DIR/cut.samples"
while :; do
  for i in $OTHERS; do
    [ $(( $(now_ms) - t0 )) -ge $(( CUT_S * 1000 )) ] && break 2
    set -- $(view "$i")
    echo "h$i ${1:-?} ${2:-?} ${3:-?} ${4:-?} $(status_of "$i" h$CUT)" >>"$DIR/cut.samples"
  done
  sleep 1
done
wait "$ENDER"
forget "$ENDER"
. "$DIR/cut.end"
changes=$(sort -u "$DIR/cut.samples" | awk '{ print $1 }' | uniq -d | tr '\n' ' ')
events=$(for i in $OTHERS; do window "$i" | grep -c 'msg="member '; done | awk '{ s += $1 } END { print s + 0 }')
view_of_cut=$(awk '{ print $6 }' "$DIR/cut.samples" | sort | uniq -c | awk '{ printf "%s on %s samples ", $2, $1 }')
log "others' view of h$CUT in the last $STILL_S s: $view_of_cut; h$CUT sees: $(view $CUT)"
check "after $CUT_S s of one-way cut, the others' counts did not change in the last $STILL_S s ${changes:+(changed: $changes)}" [ -z "$changes" ]
check "no membership change logged by the others in the last $STILL_S s of the cut ($events)" [ "$events" -eq 0 ]
if [ "$events" -gt 0 ]; then
  echo "#   changes the others logged in the last $STILL_S s (first seen, member, change, accuser, hosts):"
  for i in $OTHERS; do window "$i" | grep 'msg="member '; done | awk '{
      ts = substr($1, 15, 12); ev = ""; m = ""; acc = "-"
      if (match($0, /msg="member [a-z]+"/)) ev = substr($0, RSTART + 12, RLENGTH - 13)
      if (match($0, / member=[^ ]+/)) m = substr($0, RSTART + 8, RLENGTH - 8)
      if (match($0, /accuser=[^ ]+/)) acc = substr($0, RSTART + 8, RLENGTH - 8)
      k = m " " ev " accuser=" acc; n[k]++; if (!(k in t) || ts < t[k]) t[k] = ts }
    END { for (k in t) print t[k], k, n[k] }' | sort | sed 's/^/#     /'
fi
o1=$(echo $OTHERS | cut -d' ' -f1)
owners "$o1" "$DIR/owners.cutting.$o1"
mv_during=$(moved "$DIR/owners.base.1" "$DIR/owners.cutting.$o1")
fd=$(false_deaths "M != $CUT && L != $CUT")
cutdead=$(deaths | awk -v m=h$CUT '$2 == m' | wc -l)
log "during the cut: h$CUT declared dead $cutdead times by the others; others declared dead by the others: $fd"
heal
if t=$(wait_agreed 15 "$ALL" $N); then
  ok "after the cut ends, h$CUT alive everywhere (one checksum) after $(secs "$t") s"
  agree="$(secs "$t") s after heal"
else
  fail "after the cut ends, h$CUT not alive everywhere within 15 s${t:+ (only after $(secs "$t") s)}"; agree="> 15 s"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
if msg=$(owners_all "$ALL" cut); then
  mv=$(moved "$DIR/owners.base.1" "$DIR/owners.cut.1")
  check "after the cut, owners identical everywhere and as before ($mv moved)" [ "$mv" = 0.000 ]
else fail "after the cut, owners differ: $msg"; mv=?; fi
report "one-way cut of 1 host, ${CUT_S} s, heal" "$(result)" "$agree" "$fd" "$mv_during → $mv; log Σ $(churn $OTHERS)"

# ------------------------------------------------------------------ 6. key rotation
DOWN=7                      # not a seed: it rejoins through h1 and h2
log "scenario 6: rotate the gossip key on the other $((N - 1)) hosts while h$DOWN is down"
UP=$(for i in $ALL; do [ "$i" = "$DOWN" ] || printf '%s ' "$i"; done)
F0=$FAILED; agree="-"
settle "key rotation"
# keys_run I ARGS...: `ringd keys ARGS` against host I's agent; the key itself on stdin
keys_run() { i=$1; shift; "$RINGD" keys "$@" --socket "$(sock "$i")"; }
nokey() { # envelope drops for "no key matched" on the listed hosts, datagrams and frames
  for i in $1; do echo "$(info "$i" packets_dropped_nokey) $(info "$i" syncs_dropped_nokey)"; done |
    awk '{ s += $1 + $2 } END { print s + 0 }'
}
crash "$DOWN"
WANT=$((N - 1))
if ! quiet wait_for 30 same_ring "$UP"; then fail "the others did not drop h$DOWN from the ring"; fi
owners "1" "$DIR/owners.rot0.1"
mark
drops0=$(nokey "$UP")
old_fp=$(info 1 keyring_primary)
new_key=$("$RINGD" keygen)
t0=$(now_ms)
round() { # round NAME ARGS...: one keys command on every running host, then they must agree
  r=$1; shift; bad=""
  for i in $UP; do keys_run "$i" "$@" <<<"$new_key" >"$DIR/keys.$r.$i" 2>&1 || bad="$bad h$i"; done
  check "keys $r on every running host${bad:+ (failed:$bad)}" [ -z "$bad" ]
  WANT=$((N - 1))
  check "after keys $r the $((N - 1)) running hosts agree" quiet wait_for 10 same_ring "$UP"
}
round install install -
new_fp=$(cat "$DIR/keys.install.1")
round use use "$new_fp"
round remove remove "$old_fp"
took=$(( $(now_ms) - t0 ))
log "rotated from $old_fp to $new_fp on $((N - 1)) hosts in $(secs $took) s"
# every running agent: primary, key count, and its file's mode and key lines
state=$(for i in $UP; do
  echo "$(info "$i" keyring_primary)/$(info "$i" keyring_keys)/$(stat -c %a "$(keysf "$i")")/$(grep -cv '^#' "$(keysf "$i")")"
done | sort -u)
check "every running agent seals with the new key alone, and its file holds it alone, mode 0600 ($state)" \
  [ "$state" = "$new_fp/1/600/1" ]
fd=$(false_deaths "M != $DOWN")
check "no false death during the rotation ($fd)" [ "$fd" -eq 0 ]
drops=$(( $(nokey "$UP") - drops0 ))
check "no packet or frame dropped for want of a key during the rotation ($drops)" [ "$drops" -eq 0 ]
owners "1" "$DIR/owners.rot1.1"
mv=$(moved "$DIR/owners.rot0.1" "$DIR/owners.rot1.1")
check "owners unchanged by the rotation ($mv moved)" [ "$mv" = 0.000 ]
# h$DOWN comes back from its file, which still holds the old key alone
drops0=$(nokey "$UP")
start "$DOWN"
wait_sockets "$DOWN" || fail "h$DOWN did not start"
sleep 8
out_alone=$(info "$DOWN" members_alive)
drops=$(( $(nokey "$UP") - drops0 ))
log "h$DOWN back with the old key: it sees $out_alone alive; the others dropped $drops of its packets and frames as no key matched"
WANT=$((N - 1))
stays_out() { [ "$out_alone" = 1 ] && [ "$drops" -gt 0 ] && same_ring "$UP"; }
check "h$DOWN with the old key stays out: alone, and the others count its traffic as no key matched" \
  quiet stays_out
# what the returning host needs: the new key in its file (copied from a running host), then
# SIGHUP (or a restart)
(umask 077; cp "$(keysf 1)" "$(keysf "$DOWN")")
t0=$(now_ms)
kill -HUP "$(pid_of "$DOWN")"
if t=$(wait_agreed 40 "$ALL" $N); then
  took=$(( $(now_ms) - t0 ))
  ok "with the new key in its file and SIGHUP, h$DOWN alive everywhere after $(secs $took) s (the next join retry)"
  agree="$(secs $took) s after SIGHUP"
else
  fail "h$DOWN not back within 40 s of SIGHUP"; agree="> 40 s"
  for i in $ALL; do echo "#   h$i: $(view "$i")"; done
fi
check "h$DOWN logged the reload" grep -q 'msg="keyring reloaded"' "$(logf "$DOWN")"
check "h$DOWN still runs" alive_proc "$DOWN"
fd=$(false_deaths "M != $DOWN")
report "key rotation, 1 host down, back by SIGHUP" "$(result)" "$agree" "$fd" "$mv"

# ------------------------------------------------------------------ 7. rolling restart
log "scenario 7: every host SIGKILLed and started again, one at a time, without --join"
F0=$FAILED; agree="-"
settle "rolling restart"
mark
owners "1" "$DIR/owners.roll0.1"
worst=0; slow=""
for i in $ALL; do
  crash "$i"
  start "$i" nojoin
  wait_sockets "$i" || fail "h$i did not restart"
  t0=$(now_ms)
  if t=$(wait_agreed 10 "$ALL" $N); then
    took=$(( $(now_ms) - t0 ))
    [ "$took" -gt "$worst" ] && worst=$took
  else
    slow="$slow h$i"
    for j in $ALL; do echo "#   h$j: $(view "$j")"; done
  fi
  since_mark "$i" | grep -q 'msg="rejoining through the snapshot"' || slow="$slow h$i(no-snapshot)"
done
check "each host, restarted without --join, rejoined through its snapshot and all $N agreed within 10 s (slowest $(secs $worst) s)${slow:+; failed:$slow}" [ -z "$slow" ]
agree="slowest $(secs $worst) s"
fd=$(false_deaths 1)
check "no member declared dead during the rolling restart ($fd)" [ "$fd" -eq 0 ]
owners "1" "$DIR/owners.roll1.1"
mv=$(moved "$DIR/owners.roll0.1" "$DIR/owners.roll1.1")
check "owners as before the rolling restart ($mv moved)" [ "$mv" = 0.000 ]
report "rolling restart of all $N, snapshots, no --join" "$(result)" "$agree" "$fd" "$mv"

# ------------------------------------------------------------------ 8. SIGHUP storm
HUP=5
log "scenario 8: 100 SIGHUPs to h$HUP while it answers 20,000-key MOWNER batches"
F0=$FAILED
settle "SIGHUP storm"
mark
ring0=$(info "$HUP" ring_checksum); versions0=$(for i in $ALL; do info "$i" ring_version; done | tr '\n' ' ')
( while :; do owners "$HUP" "$DIR/owners.hup.load"; done ) &
LOADER=$!
PIDS="$PIDS $LOADER"
for _ in $(seq 100); do kill -HUP "$(pid_of "$HUP")"; sleep 0.05; done
sleep 3 # let the last reloads and a few probe rounds pass
kill "$LOADER" 2>/dev/null; wait "$LOADER" 2>/dev/null; forget "$LOADER"
reloads=$(since_mark "$HUP" | grep -c 'msg="reloaded"')
hup_ok() { [ "$reloads" -eq 100 ] && alive_proc "$HUP"; }
check "h$HUP still runs and logged 100 reloads ($reloads)" hup_ok
about=$(for i in $ALL; do since_mark "$i" | grep -E "msg=\"member (suspect|dead|left)\" member=h$HUP "; done | wc -l)
check "nobody suspected h$HUP, declared it dead or saw it leave ($about lines)" [ "$about" -eq 0 ]
versions1=$(for i in $ALL; do info "$i" ring_version; done | tr '\n' ' ')
same_rings() { [ "$versions0" = "$versions1" ] && [ "$(info "$HUP" ring_checksum)" = "$ring0" ]; }
check "no ring changed: ring versions and h$HUP's ring checksum as before" same_rings
WANT=$N
check "all $N still agree" quiet agreed "$ALL"
report "100 SIGHUPs to a loaded agent" "$(result)" "-" "$(false_deaths 1)" "-"

# ------------------------------------------------------------------ 9. seeds by DNS
# Each host here leaves (SIGTERM) and comes back with an empty state directory and a name as
# its only seed: nobody probes or reconnects to a member that left, and there is no snapshot,
# so the name server is its only way back in.
log "scenario 9: seeds by DNS (dnsmasq on $DNS_ADDR): h${SRV_HOSTS// /, h} rejoin through srv:$DNS_SRV, h$MOVE through a name that moves"
F0=$FAILED; agree="-"
settle "DNS seeds"
dns_hosts "$(addr 1) h1" "$(addr 2) h2" "$NOWHERE seeds"
dns_up || fail "could not start dnsmasq on $DNS_ADDR"
mark
owners "1" "$DIR/owners.dns0.1"
DNSF="--dns-server $DNS_ADDR:53"
others_of() { for j in $ALL; do [ "$j" = "$1" ] || printf '%s ' "$j"; done; }
# leave_clean I: host I leaves, the others agree on N-1 alive, and its snapshot is gone
leave_clean() {
  stop "$1" || { fail "h$1 did not exit within 10 s of SIGTERM"; return 1; }
  wait_agreed 10 "$(others_of "$1")" $((N - 1)) >/dev/null ||
    fail "the others did not agree on h$1 having left within 10 s"
  rm -rf "$DIR/h$1/state"
}
# resolved I TEXT ADDR...: host I logged TEXT resolving to every ADDR (at PORT)
resolved() {
  line=$(since_mark "$1" | grep "msg=\"seed resolved\" seed=$2 " | tail -1)
  for a in "${@:3}"; do case "$line" in *"$a:$PORT"*) ;; *) return 1 ;; esac; done
  [ -n "$line" ]
}
worst=0; slow=""
for i in $SRV_HOSTS; do
  leave_clean "$i"
  t0=$(now_ms)
  start "$i" $DNSF --join "srv:$DNS_SRV"
  wait_sockets "$i" || fail "h$i did not restart"
  if wait_agreed 10 "$ALL" $N >/dev/null; then
    took=$(( $(now_ms) - t0 ))
    [ "$took" -gt "$worst" ] && worst=$took
  else
    slow="$slow h$i"
    for j in $ALL; do echo "#   h$j: $(view "$j")"; done
  fi
  resolved "$i" "srv:$DNS_SRV" "$(addr 1)" "$(addr 2)" || slow="$slow h$i(no-SRV-answer)"
done
check "h${SRV_HOSTS// /, h}, back with no snapshot and srv:$DNS_SRV as the only seed, found both seeds in its SRV records, and all $N agreed within 10 s of each start (slowest $(secs $worst) s)${slow:+; failed:$slow}" [ -z "$slow" ]
agree="SRV: slowest $(secs $worst) s"

# The moving name: seeds.$DNS_ZONE first points at $NOWHERE, where no agent runs; h$MOVE's
# joins fail and it keeps asking, at every retry (1 s after the start, then gaps doubling to
# 30 s: at 1, 3, 7, 15, 31 s...). Then the name is moved to the two seeds.
leave_clean "$MOVE"
t0=$(now_ms)
start "$MOVE" $DNSF --join "seeds.$DNS_ZONE:$PORT"
wait_sockets "$MOVE" || fail "h$MOVE did not restart"
retrying() {
  since_mark "$MOVE" | grep -q "msg=\"join attempt failed\" seed=$NOWHERE:$PORT " &&
    [ "$(dns_queries seeds "$MOVE")" -ge 2 ] && [ "$(info "$MOVE" ready)" = 0 ] &&
    [ "$(info "$MOVE" members_alive)" = 1 ]
}
if wait_for 10 retrying >/dev/null; then
  ok "h$MOVE, seeded by a name pointing at $NOWHERE, fails to join, stays alone and not ready, and asks the name again ($(dns_queries seeds "$MOVE") A queries in $(secs $(( $(now_ms) - t0 ))) s)"
else
  fail "h$MOVE did not show a failing, retrying join to $NOWHERE within 10 s (queries: $(dns_queries seeds "$MOVE"), ready: $(info "$MOVE" ready), alive: $(info "$MOVE" members_alive))"
fi
check "h$MOVE logged seeds.$DNS_ZONE resolving to $NOWHERE" resolved "$MOVE" "seeds.$DNS_ZONE:$PORT" "$NOWHERE"
el=$(( $(now_ms) - t0 ))
dns_hosts "$(addr 1) h1" "$(addr 2) h2" "$(addr 1) seeds" "$(addr 2) seeds"
t1=$(now_ms)
# The bound: the first retry of the schedule that comes more than 0.5 s after the change (one
# closer may already have asked), plus 5 s to resolve, join and spread the news to all N.
next=$(awk -v e=$(( el + 500 )) 'BEGIN { t = 0; g = 1000
  while (t <= e) { t += g; g = g * 2 < 30000 ? g * 2 : 30000 } print t }')
bound=$(( (next - el + 5000 + 999) / 1000 ))
if wait_agreed "$bound" "$ALL" $N >/dev/null; then
  took=$(( $(now_ms) - t1 ))
  ok "the name moved to the seeds $(secs $el) s after h$MOVE started: h$MOVE joined and all $N agree $(secs $took) s later (bound $bound s: its next retry, at $(secs "$next") s, + 5 s)"
  agree="$agree; moved name: $(secs $took) s"
else
  fail "the name moved $(secs $el) s after h$MOVE started, yet all $N did not agree within $bound s (queries: $(dns_queries seeds "$MOVE"))"
  for j in $ALL; do echo "#   h$j: $(view "$j")"; done
  agree="$agree; moved name: > $bound s"
fi
check "h$MOVE logged seeds.$DNS_ZONE resolving to both seeds" resolved "$MOVE" "seeds.$DNS_ZONE:$PORT" "$(addr 1)" "$(addr 2)"
fd=$(false_deaths 1)
check "no member declared dead while hosts came and went by DNS ($fd)" [ "$fd" -eq 0 ]
owners_all "$ALL" dns >/dev/null && mv=$(moved "$DIR/owners.dns0.1" "$DIR/owners.dns.1") || mv="?"
check "owners identical everywhere and as before ($mv moved)" [ "$mv" = 0.000 ]
report "seeds by DNS: SRV, a name that moves" "$(result)" "$agree" "$fd" "$mv"

log "done in $(secs $(( $(now_ms) - T0 ))) s"
finish
