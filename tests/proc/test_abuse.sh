#!/bin/bash
# test_abuse.sh RINGD — abusive query clients against a real agent (in a ring of two). While
# each abuse runs, a checker on its own connection PINGs the agent every 100 ms and samples
# its VmRSS; every PING must come back +PONG within 1 s, the abusers must be refused and cut
# off as the limits say (agent/query.h, proto/resp.h), and memory must stay bounded:
#   1,000 connections at once; a 600 MB bulk declared then streamed; a request over 1 MiB
#   made of legal arguments; a watcher that never reads while members flap; clients that
#   vanish mid-request and mid-reply; 1 MB of random bytes. No sanitizer report at the end.
# Helpers: tests/proc/abuse_client.py (python3, stdlib only).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
# The interpreter itself, not a version manager's shim: it is started a dozen times.
PY=$(python3 -c 'import sys; print(sys.executable)')
A="$(cd "$(dirname "$0")" && pwd)/abuse_client.py"

# RSS headroom over the phase's starting RSS. The agent holds at most a 16 KiB read buffer
# per connection, 1 MiB (+ one read) of request, 8 MiB of unread replies per client and
# 1 MiB of events per watcher, so no phase below needs more than a few MiB of live memory.
# ASan adds its own overhead: redzones, and a quarantine that keeps freed chunks resident, so
# RSS on the sanitizer build only ratchets up. 20 MiB covers that noise with room to spare,
# and is far below what buffering the abusers' input would cost (a 600 MB bulk, 64 MiB of it
# actually streamed, or the whole 1 MiB+ request several times over).
RSS_SLACK_KB=$((20 * 1024))

# 1,000 client sockets here and 1,000 descriptors in the agent (which inherits this limit).
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
NOFILE=$(ulimit -n)

start n1 "$PORT0" || exit 1
start n2 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
SOCK=$DIR/n1.sock
PID1=$(pid_of n1)
FAKE_PORT=$((PORT0 + 9)) # the forged members' address: nothing listens there

two() { [ "$(info n1 members_alive)" = 2 ] && [ "$(info n2 members_alive)" = 2 ]; }
if t=$(wait_for 10 two); then ok "n1 and n2 form a ring of two after ${t} ms"
else fail "n1 and n2 did not see each other within 10 s"; fi

# verdict RC DESC: ok or fail by RC, the status ($?) of the test just before it
verdict() { if [ "$1" = 0 ]; then ok "$2"; else fail "$2"; fi; }
# kv LINE KEY: the value of KEY=VALUE in a helper's output line
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$PID1/status"; }

# phase_start NAME: records the starting RSS and starts the PING checker
phase_start() {
  PHASE=$1
  BASE_RSS=$(rss)
  rm -f "$DIR/checker.out"
  "$PY" "$A" checker "$SOCK" "$PID1" "$DIR/checker.out" &
  CHECKER=$!
  PIDS="$PIDS $CHECKER" # killed by lib.sh's cleanup if we die before phase_end
  sleep 0.3
}

# phase_end: stops the checker; asserts the agent answered every PING within 1 s
phase_end() {
  sleep 0.3
  kill -TERM "$CHECKER" 2>/dev/null
  wait "$CHECKER" 2>/dev/null
  PIDS=$(for p in $PIDS; do [ "$p" = "$CHECKER" ] || printf " %s" "$p"; done) # gone: never signal its PID again
  c=$(cat "$DIR/checker.out" 2>/dev/null)
  end_rss=$(rss)
  peak=$(kv "$c" max_rss_kb)
  [ -n "$peak" ] && [ "${end_rss:-0}" -gt "$peak" ] && peak=$end_rss
  PEAK_RSS=${peak:-0}
  echo "# $PHASE: checker $c; RSS ${BASE_RSS} kB -> peak ${PEAK_RSS} kB"
  pings=$(kv "$c" pings); late=$(kv "$c" late); errs=$(kv "$c" errors); worst=$(kv "$c" worst_ms)
  [ "${pings:-0}" -ge 3 ] && [ "${late:-1}" = 0 ] && [ "${errs:-1}" = 0 ]; verdict $? "$PHASE: agent answered all ${pings:-0} PINGs with +PONG within 1 s (worst ${worst:-?} ms, late ${late:-?}, errors ${errs:-?})"
}

# rss_bounded: the phase's peak RSS stayed within RSS_SLACK_KB of its start
rss_bounded() {
  [ "$PEAK_RSS" -gt 0 ] && [ "$PEAK_RSS" -le $((BASE_RSS + RSS_SLACK_KB)) ]; verdict $? "$PHASE: agent RSS bounded: peak ${PEAK_RSS} kB <= start ${BASE_RSS} kB + ${RSS_SLACK_KB} kB"
}

echo "# agent n1 pid $PID1, baseline VmRSS $(rss) kB, ulimit -n $NOFILE"

# ---------------------------------------------------------------- 600 MB bulk, streamed
phase_start "600 MB bulk"
r=$("$PY" "$A" bigbulk "$SOCK" 600000000)
phase_end
echo "# $r"
sent=$(kv "$r" sent)
check "600 MB bulk: refused with -ERR Protocol error ($(kv "$r" reply))" \
  sh -c "echo '$(kv "$r" reply)' | grep -q '^-ERR_Protocol_error'"
[ "$(kv "$r" end)" != open ] && [ "$(kv "$r" ms)" -lt 2000 ]; verdict $? "600 MB bulk: connection closed by the agent ($(kv "$r" end)) after ${sent} bytes of body, within $(kv "$r" ms) ms"
check "600 MB bulk: cut off before 1 MiB of body was sent (sent $sent)" [ "${sent:-99999999}" -le 1048576 ]
rss_bounded

# ---------------------------------------------------------------- request over 1 MiB
# 4,000 arguments of 300 bytes: every argument and the count are legal, the total is not.
phase_start "1.2 MB request"
r=$("$PY" "$A" bigreq "$SOCK" 4000 300)
phase_end
echo "# $r"
check "request of $(kv "$r" request) bytes in 4000 legal args: -ERR Protocol error ($(kv "$r" reply))" \
  sh -c "echo '$(kv "$r" reply)' | grep -q '^-ERR_Protocol_error'"
check "request over 1 MiB: connection closed ($(kv "$r" end)), $(kv "$r" sent) bytes sent" \
  [ "$(kv "$r" end)" != open ]
rss_bounded

# ---------------------------------------------------------------- 1,000 connections at once
phase_start "1000 connections"
if [ "$NOFILE" -ge 1100 ]; then
  r=$("$PY" "$A" conns "$SOCK" 1000)
  echo "# $r"
else
  r=""
  echo "# ulimit -n is $NOFILE (hard limit $(ulimit -Hn)): cannot open 1000 connections"
fi
phase_end
check "1000 connections at once: all answered PONG ($(kv "$r" answered) of 1000, open ${r:+$(kv "$r" open_ms)} ms, answers $(kv "$r" answer_ms) ms)" \
  [ "$(kv "$r" answered)" = 1000 ]
check "INFO counted them while open (connections $(kv "$r" connections_while_open))" \
  [ "$(kv "$r" connections_while_open)" -ge 1000 ] 2>/dev/null
# the checker has gone: only the INFO that asks is left
few() { [ "$(info n1 connections)" -le 1 ]; }
if t=$(wait_for 5 few); then ok "INFO connections back to $(info n1 connections) (the asker) after ${t} ms"
else fail "INFO connections still $(info n1 connections) 5 s after 1000 clients closed"; fi
echo "# 1000 connections: RSS ${BASE_RSS} kB -> ${PEAK_RSS} kB"

# ---------------------------------------------------------------- clients that vanish
phase_start "vanishing clients"
r1=$("$PY" "$A" midreq "$SOCK" 200)
r2=$("$PY" "$A" midreply "$SOCK" 50 100)
phase_end
echo "# $r1; $r2"
check "200 clients gone mid-request, 50 gone mid-reply (100 MEMBERS each): agent alive" kill -0 "$PID1"
check "... and answers PING" [ "$(q n1 PING)" = PONG ]
if t=$(wait_for 5 few); then ok "... and their connections are all closed (connections $(info n1 connections))"
else fail "connections still $(info n1 connections) 5 s after the vanishing clients"; fi

# ---------------------------------------------------------------- 1 MB of random bytes
phase_start "1 MB garbage"
r=$("$PY" "$A" garbage "$SOCK" 1000000 7)
phase_end
echo "# $r"
[ "$(kv "$r" replies)" -ge 1 ] && [ "$(kv "$r" non_error_lines)" = 0 ] && [ "$(kv "$r" first)" = "-ERR_" ]; verdict $? "garbage: answered -ERR ($(kv "$r" replies) error replies, $(kv "$r" non_error_lines) other lines)"
[ "$(kv "$r" protocol_error)" != none ] && [ "$(kv "$r" end)" != open ]; verdict $? "garbage: ends with a protocol error ($(kv "$r" protocol_error)) and the connection closed ($(kv "$r" end) after $(kv "$r" sent) bytes)"

# ---------------------------------------------------------------- a watcher that never reads
# Forged gossip flaps 15 fake members (suspect/alive) until the watcher's backlog passes
# RD_QUERY_MAX_WATCH_BACKLOG (1 MiB) and the agent cuts it off; see abuse_client.py. Last,
# because the fakes stay in the member table afterwards (as left, tombstones for an hour):
# every phase before this one sees the plain ring of two.
phase_start "non-reading watcher"
r=$("$PY" "$A" watchflood "$SOCK" "$PORT0" "$FAKE_PORT" "$PID1")
phase_end
echo "# $r"
[ "$(kv "$r" max_rss_kb)" -gt "$PEAK_RSS" ] 2>/dev/null && PEAK_RSS=$(kv "$r" max_rss_kb)
check "watcher: connections_cut_off rose ($(kv "$r" cut_off_before) -> $(kv "$r" cut_off_after)) after $(kv "$r" records) member records in $(kv "$r" ms) ms" \
  [ "$(kv "$r" cut_off_after)" -gt "$(kv "$r" cut_off_before)" ]
check "watcher: its connection was closed ($(kv "$r" watcher), $(kv "$r" watcher_got) bytes were left for it)" \
  [ "$(kv "$r" watcher)" != open ]
check "watcher: the log says why" grep -q 'msg="query client cut off" reason="watch backlog"' "$DIR/n1.log"
rss_bounded

# ---------------------------------------------------------------- afterwards
check "n1 is still running" kill -0 "$PID1"
check "n1 still answers OWNER" [ -n "$(q n1 OWNER k)" ]
# n2 heard of the fake members through n1, and hears of their retirement the same way:
# give that news the time gossip needs
if t=$(wait_for 5 two); then ok "n1 and n2 still see each other, and only each other (after ${t} ms)"
else fail "n1 and n2: members_alive $(info n1 members_alive) and $(info n2 members_alive), not 2, 5 s after the fake members left"; fi
echo "# final VmRSS $(rss) kB"
no_sanitizer_reports
# lib.sh's cleanup SIGKILLs the agents: keep bash's "Killed" job notices from following the tally
exec 2>/dev/null
finish
