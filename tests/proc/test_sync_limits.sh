#!/bin/bash
# test_sync_limits.sh RINGD — hostile clients of the TCP sync port (agent/sync.h's limits)
# against real agents on loopback:
#   (a) idle connections do not lock a joiner out: 40 from one source, reopened as soon as
#       they are closed, against one seed; 40 from 20 sources (2 each), held, against
#       another; a new agent joins each within JOIN_S. And while 20 sources keep the
#       strangers' slots full, a member's sync is still served;
#   (b) a connection that sends nothing is closed at the header deadline;
#   (c) a length prefix announcing one byte more than the largest legal SYNC is refused at
#       once, and so is an empty frame's;
#   (d) a sender that trickles a legal-size frame is cut at the frame deadline;
#   (e) INFO counts each of these by reason, and the log says why once per reason;
# and a seed's IP (after JOIN) is not held to a stranger's share.
# The attackers connect from 127.0.0.2 and up, the agents (and so the joiners) use
# 127.0.0.1: each is a source of its own. Helper: tests/proc/sync_client.py.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
PY=$(python3 -c 'import sys; print(sys.executable)')
C="$(cd "$(dirname "$0")" && pwd)/sync_client.py"

# The numbers under test (agent/sync.h, proto/wire.h).
HEADER_MS=1000    # RD_SYNC_HEADER_TIMEOUT_MS
FRAME_MS=5000     # RD_SYNC_TIMEOUT_MS
MAX_STRANGERS=24  # RD_SYNC_MAX_STRANGERS
PER_SOURCE=2      # RD_SYNC_MAX_PER_SOURCE
FRAME_MAX=$((77 + 112 + 16384 * 460 + 44)) # RD_WIRE_FRAME_MAX: header + SYNC msg + full table + envelope
# A join normally takes well under a second here; a refused joiner retries on its join
# schedule, about 0.1 s after its first try and then at gaps doubling (0.2, 0.4, 0.8 s ...):
# this leaves it several refusals and retries, but not the 5 s it would take for idle
# connections to time out on their own.
JOIN_S=5
SLACK_MS=700 # scheduling slack on a loaded 2-core host, sanitizer build

kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
between() { [ "$1" -ge "$2" ] 2>/dev/null && [ "$1" -le "$3" ]; }
# lines NAME REASON: how many "sync refused" lines with that reason NAME's log has
lines() { grep -c "msg=\"sync refused\" reason=\"$2\"" "$DIR/$1.log"; }

ulimit -n 4096 2>/dev/null || true

# attack TAG PORT SRCS PER SECONDS [reconnect]: starts sync_client.py's hold in the
# background against PORT and returns once its first round is open (ATTACKER is its PID)
attack() {
  tag=$1; port=$2; shift 2
  rm -f "$DIR/$tag.ready"
  "$PY" "$C" hold "$port" "$1" "$2" "$3" "$DIR/$tag.ready" ${4:-} >"$DIR/$tag.out" &
  ATTACKER=$!
  PIDS="$PIDS $ATTACKER"
  for _ in $(seq 50); do [ -s "$DIR/$tag.ready" ] && break; sleep 0.1; done
  echo "# $tag: $2 connections from each of $1${4:+, reopened when closed}: $(cat "$DIR/$tag.ready" 2>/dev/null)"
}

# attack_end TAG: waits for the attacker to stop by itself and prints its summary
attack_end() {
  wait "$ATTACKER"
  PIDS=$(for p in $PIDS; do [ "$p" = "$ATTACKER" ] || printf " %s" "$p"; done) # gone: never signal its PID again
  echo "# $1: $(cat "$DIR/$1.out")"
}

# two A B: agents A and B both see a ring of two
two() { [ "$(info "$1" members_alive)" = 2 ] && [ "$(info "$2" members_alive)" = 2 ]; }

# join_during SEED SEEDPORT JOINER JOINERPORT DESC: starts JOINER through SEED; ok if both
# see a ring of two within JOIN_S
join_during() {
  t0=$(now_ms)
  start "$3" "$4" --join "127.0.0.1:$2" || exit 1
  if wait_for $JOIN_S two "$1" "$3" >/dev/null; then
    ok "(a) $3 joined $1 after $(($(now_ms) - t0)) ms while $5"
  else
    fail "(a) $3 did not join $1 within $JOIN_S s while $5"
  fi
}

# ---------------------------------------------------------------- (a) one source, reconnecting
start s1 "$PORT0" || exit 1
attack hold1 "$PORT0" 127.0.0.4 40 8 reconnect
join_during s1 "$PORT0" j1 $((PORT0 + 1)) "127.0.0.4 asked for 40 sync connections"
attack_end hold1
src=$(info s1 syncs_refused_source)
check "(e) s1 refused the source's connections past $PER_SOURCE at accept (syncs_refused_source $src)" \
  [ "${src:-0}" -ge $((40 - PER_SOURCE)) ]

# ---------------------------------------------------------------- (a) 20 sources, held
start s2 $((PORT0 + 2)) || exit 1
attack hold2 $((PORT0 + 2)) 127.0.0.10-29 2 4
join_during s2 $((PORT0 + 2)) j2 $((PORT0 + 3)) "20 sources held 40 idle sync connections"
attack_end hold2
full=$(info s2 syncs_refused_full)
hdr2=$(info s2 syncs_timed_out_header)
check "(e) s2 gave strangers $MAX_STRANGERS slots and refused the rest at accept (syncs_refused_full $full)" \
  [ "${full:-0}" -ge $((40 - MAX_STRANGERS)) ]
check "(e) s2 closed the $MAX_STRANGERS idle ones at the header deadline (syncs_timed_out_header $hdr2)" \
  [ "${hdr2:-0}" -ge "$MAX_STRANGERS" ]

# ---------------------------------------------------------------- (a) a member gets through
# s2 now knows j2 (alive at 127.0.0.1). 20 sources keep asking for 40 connections, so the
# strangers' slots stay full; a sync from j2 (a JOIN makes it open one at once) must still
# be served, on the slots kept for members.
attack hold3 $((PORT0 + 2)) 127.0.0.10-29 2 4 reconnect
in0=$(info s2 syncs_in)
full0=$(info s2 syncs_refused_full)
t0=$(now_ms)
q j2 JOIN "127.0.0.1:$((PORT0 + 2))" >/dev/null
synced() { [ "$(info s2 syncs_in)" -gt "$in0" ]; }
if wait_for 2 synced >/dev/null; then
  ok "(a) s2 served a sync from its member j2 after $(($(now_ms) - t0)) ms while strangers asked for 40 slots"
else
  fail "(a) s2 served no sync from its member j2 within 2 s while strangers asked for 40 slots"
fi
# The strangers' slots were full around that sync: s2 goes on refusing them for want of a
# slot. A refusal comes only when a stranger tries again, which can be after the sync was
# served (it took 14 ms; idle slots are freed at the 1 s header deadline), so wait for one.
more_full() { [ "$(info s2 syncs_refused_full)" -gt "${full0:-0}" ]; }
if wait_for 3 more_full >/dev/null; then
  ok "(a) ... and strangers are still refused for want of a slot (syncs_refused_full $full0 -> $(info s2 syncs_refused_full))"
else
  fail "(a) ... but no stranger was refused for want of a slot within 3 s (syncs_refused_full $full0)"
fi
attack_end hold3

# ---------------------------------------------------------------- (b) sends nothing
h0=$(info s1 syncs_timed_out_header)
r=$("$PY" "$C" idle "$PORT0" 127.0.0.5)
ms=$(kv "$r" closed_ms)
check "(b) a connection that sends nothing is closed at the header deadline: after $ms ms (deadline $HEADER_MS)" \
  between "$ms" $((HEADER_MS - 100)) $((HEADER_MS + SLACK_MS))
h1=$(info s1 syncs_timed_out_header)
check "(e) ... counted in syncs_timed_out_header ($h0 -> $h1)" [ "${h1:-0}" -gt "${h0:-0}" ]

# ---------------------------------------------------------------- (c) oversize and empty
o0=$(info s1 syncs_oversize)
r=$("$PY" "$C" prefix "$PORT0" 127.0.0.6 $((FRAME_MAX + 1)))
ms=$(kv "$r" closed_ms)
check "(c) a prefix announcing $((FRAME_MAX + 1)) bytes (the bound + 1) is refused at once: closed after $ms ms" \
  between "$ms" 0 "$SLACK_MS"
r=$("$PY" "$C" prefix "$PORT0" 127.0.0.6 4294967295)
ms=$(kv "$r" closed_ms)
check "(c) a prefix announcing 4294967295 bytes is refused at once: closed after $ms ms" \
  between "$ms" 0 "$SLACK_MS"
o1=$(info s1 syncs_oversize)
check "(e) ... both counted in syncs_oversize ($o0 -> $o1)" [ "${o1:-0}" -eq $((${o0:-0} + 2)) ]
m0=$(info s1 syncs_malformed)
r=$("$PY" "$C" prefix "$PORT0" 127.0.0.6 0)
ms=$(kv "$r" closed_ms)
m1=$(info s1 syncs_malformed)
check "(c) an empty frame is refused at once (after $ms ms) and counted in syncs_malformed ($m0 -> $m1)" \
  sh -c "[ '$ms' -ge 0 ] && [ '$ms' -le $SLACK_MS ] && [ '${m1:-0}' -eq $((${m0:-0} + 1)) ]"

# ---------------------------------------------------------------- (d) trickle
f0=$(info s1 syncs_timed_out_frame)
r=$("$PY" "$C" trickle "$PORT0" 127.0.0.7 100000 100)
ms=$(kv "$r" closed_ms)
check "(d) a frame of 100000 bytes trickled a byte per 100 ms is cut at the frame deadline: after $ms ms, $(kv "$r" body_sent) bytes (deadline $FRAME_MS)" \
  between "$ms" $((FRAME_MS - 100)) $((FRAME_MS + SLACK_MS))
f1=$(info s1 syncs_timed_out_frame)
check "(e) ... counted in syncs_timed_out_frame ($f0 -> $f1)" [ "${f1:-0}" -eq $((${f0:-0} + 1)) ]

# ---------------------------------------------------------------- a seed is a known source
# After JOIN 127.0.0.8:... (nothing listens there), s1 counts 127.0.0.8 as a seed's IP: it
# is not held to a stranger's share, and all 6 of its connections are served.
q s1 JOIN "127.0.0.8:$((PORT0 + 9))" >/dev/null
src0=$(info s1 syncs_refused_source)
attack hold4 "$PORT0" 127.0.0.8 6 1
attack_end hold4
r=$(cat "$DIR/hold4.out")
src1=$(info s1 syncs_refused_source)
seed_served() { [ "$(kv "$r" refused_at_once)" = 0 ] && [ "$src1" = "$src0" ]; }
check "a seed's IP has more than $PER_SOURCE syncs served at once (refused $(kv "$r" refused_at_once) of 6, syncs_refused_source $src0 -> $src1)" \
  seed_served

# ---------------------------------------------------------------- (e) the log, once per reason
for reason in "per-source limit" "header deadline" "oversize frame" "malformed frame" "frame deadline"; do
  n=$(lines s1 "$reason")
  check "(e) s1's log says \"sync refused\" reason=\"$reason\" once ($n lines)" [ "$n" = 1 ]
done
n=$(lines s2 "slots full")
check "(e) s2's log says \"sync refused\" reason=\"slots full\" once ($n lines)" [ "$n" = 1 ]
grep 'msg="sync refused"' "$DIR/s1.log" "$DIR/s2.log" | sed 's/^/# /'

# ---------------------------------------------------------------- afterwards
check "s1 and s2 are still running" kill -0 "$(pid_of s1)" "$(pid_of s2)"
no_sanitizer_reports
exec 2>/dev/null
finish
