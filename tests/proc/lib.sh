# lib.sh — helpers for the real-process tests: start agents on loopback, ask them things
# through their query sockets with redis-cli, wait for conditions, count results.
# Every agent started here is remembered by PID and killed on exit; nothing else is.

RINGD=${RINGD:?path to the ringd binary}
DIR=$(mktemp -d /tmp/ringd-test.XXXXXX)
PIDS=""
PASSED=0
FAILED=0

cleanup() {
  for p in $PIDS; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$FAILED" -gt 0 ] || [ -n "${KEEP:-}" ]; then echo "# logs kept in $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A block of 32 loopback ports free for both UDP and TCP, below the ephemeral range
# (32768 and up) so that no outgoing connection can take one mid-test; the search starts
# at a place chosen by PID.
PORT0=$(python3 - "$$" <<'PY'
import socket, sys
start = int(sys.argv[1]) % 370
def free(p):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
        finally:
            s.close()
    return True
for k in range(370):
    base = 20000 + 32 * ((start + k) % 370)
    if all(free(base + i) for i in range(32)):
        print(base)
        break
PY
)
[ -n "$PORT0" ] || { echo "no block of 32 free loopback ports"; exit 1; }

# start NAME PORT [extra agent flags...]: runs an agent in the background, logs to $DIR/NAME.log
start() {
  name=$1; port=$2; shift 2
  "$RINGD" agent --name "$name" --bind "127.0.0.1:$port" --socket "$DIR/$name.sock" "$@" \
    2>>"$DIR/$name.log" &
  pid=$!
  PIDS="$PIDS $pid"
  eval "PID_$(echo "$name" | tr -c 'A-Za-z0-9\n' _)=$pid"
  for _ in $(seq 100); do [ -S "$DIR/$name.sock" ] && return 0; sleep 0.05; done
  echo "agent $name did not open its socket"; cat "$DIR/$name.log"; return 1
}

pid_of() { eval "echo \$PID_$(echo "$1" | tr -c 'A-Za-z0-9\n' _)"; }

# q NAME ARGS...: one command to agent NAME
q() { name=$1; shift; redis-cli -s "$DIR/$name.sock" "$@" 2>/dev/null; }

# info NAME FIELD
info() { q "$1" INFO | tr -d '\r' | sed -n "s/^$2://p"; }

# agreed N: every agent of $names sees N alive, has rebuilt its ring to N members (a
# rebuild can trail the membership by up to a second during churn) and the same checksum
agreed() {
  want=""
  for n in $names; do
    [ "$(info "$n" members_alive)" = "$1" ] && [ "$(info "$n" ring_members)" = "$1" ] || return 1
    c=$(info "$n" ring_checksum)
    [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s; prints the seconds it took
wait_for() {
  limit=$1; shift
  start_ns=$(date +%s%N)
  while :; do
    if "$@" >/dev/null 2>&1; then
      echo $(( ($(date +%s%N) - start_ns) / 1000000 ))
      return 0
    fi
    if [ $(( ($(date +%s%N) - start_ns) / 1000000000 )) -ge "$limit" ]; then return 1; fi
    sleep 0.1
  done
}

# is_ready NAME: `ringd ready` says NAME answers placement (it joined, or started alone)
is_ready() { "$RINGD" ready --socket "$DIR/$1.sock" >/dev/null 2>&1; }
# wait_ready SECONDS NAMES...: until every agent named is ready; false (saying which) if one
# is not within SECONDS. An agent started with --join answers OWNER, OWNERS and MOWNER with
# -NOTREADY until its first full-state exchange with a seed or member was answered.
wait_ready() {
  limit=$1; shift
  for n in "$@"; do
    wait_for "$limit" is_ready "$n" >/dev/null || { echo "# agent $n not ready within $limit s"; return 1; }
  done
}

ok() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else fail "$desc"; fi; }

# A check that no agent of this test logged an AddressSanitizer or UBSan report.
no_sanitizer_reports() {
  if grep -E "AddressSanitizer|runtime error" "$DIR"/*.log >/dev/null; then
    fail "sanitizer reports in the agents' logs"
    grep -E -A8 "AddressSanitizer|runtime error" "$DIR"/*.log | head -40
  else
    ok "no sanitizer report in the agents' logs"
  fi
}

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

now_ms() { date +%s%3N; }

# log_ms NAME REGEX: the time (ms since the epoch) of the first line of NAME's log matching
# REGEX, from the line's own ts= field, so that timings do not depend on how fast the test
# could poll. Empty if no line matches.
log_ms() {
  ts=$(grep -m1 -E "$2" "$DIR/$1.log" | sed -n 's/^ts=\([^ ]*\) .*/\1/p')
  [ -n "$ts" ] && date -d "$ts" +%s%3N
}

# last_log_ms REGEX NAMES...: the latest, over the agents named, of log_ms; empty if any
# agent has no matching line.
last_log_ms() {
  re=$1; shift; latest=0
  for n in "$@"; do
    t=$(log_ms "$n" "$re"); [ -n "$t" ] || return 1
    [ "$t" -gt "$latest" ] && latest=$t
  done
  echo "$latest"
}

# builder_tid PID: the thread of agent PID named ring-builder (empty if it has none)
builder_tid() { grep -lx ring-builder /proc/"$1"/task/*/comm | cut -d/ -f5; }

# thread_cpu_ns PID TID: thread TID's time on a CPU so far, in ns (the first field of its
# schedstat)
thread_cpu_ns() { cut -d' ' -f1 "/proc/$1/task/$2/schedstat"; }

# rings_given_up NAME: one "ring_members given_up" pair per `ring rebuilt` line of NAME's log
rings_given_up() {
  sed -n 's/.*msg="ring rebuilt".* ring_members=\([0-9]*\) .* given_up=\([0-9]*\).*/\1 \2/p' \
    "$DIR/$1.log"
}
# first_given_up RINGS MIN: given_up= of the first of RINGS (rings_given_up) with MIN members
# or more
first_given_up() { echo "$1" | awk -v min="$2" '$1 >= min { print $2; exit }'; }

# one_ring A B: agents A and B hold one ring (one checksum)
one_ring() { [ "$(info "$1" ring_checksum)" = "$(info "$2" ring_checksum)" ]; }

# starve PID TID SPINNERS: a thread that gets almost no CPU, as on a host crowded by a join
# storm. Every thread of PID is pinned to the first CPU it may use, beside SPINNERS busy
# loops (killed on exit, like the agents), and thread TID is put under SCHED_IDLE. False if
# either cannot be done. Needs taskset and chrt (util-linux). unstarve PID TID undoes it.
starve() {
  STARVED_CPUS=$(taskset -p -c "$1" | sed 's/.*: //')
  local cpu k
  cpu=$(echo "$STARVED_CPUS" | sed 's/[,-].*//')
  SPINNERS=""
  for k in $(seq "$3"); do
    taskset -c "$cpu" sh -c 'while :; do :; done' &
    SPINNERS="$SPINNERS $!"
  done
  PIDS="$PIDS $SPINNERS"
  taskset -a -p -c "$cpu" "$1" >/dev/null && chrt -i -p 0 "$2"
}
# starve_builder NAME: starve agent NAME's builder thread beside four busy loops; sets wpid
# and builder, which unstarve takes. False, the test failed with the reason, if it cannot.
starve_builder() {
  wpid=$(pid_of "$1")
  builder=$(builder_tid "$wpid")
  [ -n "$builder" ] || { fail "$1 has no thread named ring-builder"; return 1; }
  starve "$wpid" "$builder" 4 || { fail "could not pin $1 or lower its builder thread"; return 1; }
}
unstarve() {
  local p
  for p in $SPINNERS; do { kill -KILL "$p" && wait "$p"; } 2>/dev/null; done
  taskset -a -p -c "$STARVED_CPUS" "$1" >/dev/null
  chrt -o -p 0 "$2"
}
