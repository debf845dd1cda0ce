#!/bin/bash
# demo.sh — ringd's main job on one machine: a cluster of agents on loopback, the
# membership log on the terminal, owners asked of every agent, then a crash and a leave.
# It sets up and builds first, and stops (and cleans up) by itself.
#   N=7 scripts/demo.sh      # more agents
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
# (the static link warns that getpwnam and friends need this glibc's NSS modules at run
# time: only for a group name given to --admin-group; the log is shown only on failure)
mkdir -p build
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"; } \
  >build/build.log 2>&1; then
  cat build/build.log; exit 1
fi
RINGD=$PWD/build/ringd
N=${N:-5}
PORT=${PORT:-17946}
dir=$(mktemp -d /tmp/ringd-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
start() {
  local i=$1; shift
  "$RINGD" agent --name "node-$i" --bind "127.0.0.1:$((PORT + i))" --socket "$dir/node-$i.sock" "$@" \
    2> >(sed -u "s/^/[node-$i] /" >&2) &
  pids[$i]=$!
}
alive() { "$RINGD" info --socket "$dir/node-0.sock" 2>/dev/null | tr -d '\r' | sed -n 's/^members_alive://p'; }
wait_alive() { for _ in $(seq 100); do [ "$(alive)" = "$1" ] && return 0; sleep 0.1; done; return 1; }
# rings_agree K I...: agents node-I all hold a ring of K members, with one checksum (a ring
# is rebuilt a moment after the membership changes, so agreeing members come first)
rings_agree() {
  local want=$1 i info sums=""
  shift
  for i in "$@"; do
    info=$("$RINGD" info --socket "$dir/node-$i.sock" 2>/dev/null | tr -d '\r')
    [ "$(echo "$info" | sed -n 's/^ring_members://p')" = "$want" ] || return 1
    sums="$sums $(echo "$info" | sed -n 's/^ring_checksum://p')"
  done
  [ "$(echo "$sums" | tr ' ' '\n' | sed '/^$/d' | sort -u | wc -l)" = 1 ]
}
wait_rings() { for _ in $(seq 100); do rings_agree "$@" && return 0; sleep 0.1; done; return 1; }

say "starting $N agents on 127.0.0.1:$PORT..$((PORT + N - 1)); node-0 is the seed"
start 0
sleep 0.2
for i in $(seq 1 $((N - 1))); do start "$i" --join "127.0.0.1:$PORT"; done
wait_alive "$N"; sleep 0.3
# an agent answers OWNER once it joined (before, -NOTREADY): `ringd ready` says when
for i in $(seq 0 $((N - 1))); do
  for _ in $(seq 100); do "$RINGD" ready --socket "$dir/node-$i.sock" >/dev/null 2>&1 && break; sleep 0.1; done
done
# shellcheck disable=SC2046 # one agent number per word
wait_rings "$N" $(seq 0 $((N - 1)))

say "ringd members (asked of node-2)"
"$RINGD" members --socket "$dir/node-2.sock"

say "who owns each key? every agent answers the same"
for key in user:1 user:42 cart:7 session:abc; do
  line="$key ->"
  for i in $(seq 0 $((N - 1))); do line="$line $("$RINGD" owner "$key" --socket "$dir/node-$i.sock")"; done
  echo "$line"
done
echo "replicas of user:42: $("$RINGD" owner user:42 -n 3 --socket "$dir/node-1.sock" | tr '\n' ' ')"
echo "any Redis client works: redis-cli -s node-0.sock OWNER user:42 -> $(redis-cli -s "$dir/node-0.sock" OWNER user:42)"

say "crash: SIGKILL node-3; the others detect it (suspect, then dead) and rebuild the ring"
kill -KILL "${pids[3]}"; wait "${pids[3]}" 2>/dev/null || true
for _ in $(seq 200); do
  "$RINGD" info --socket "$dir/node-0.sock" | tr -d '\r' | grep -q '^members_dead:1' && break; sleep 0.1
done
"$RINGD" members --socket "$dir/node-0.sock"

say "graceful leave: SIGTERM node-4 (seen as left, not dead; exits 0)"
kill -TERM "${pids[4]}"
wait "${pids[4]}" && echo "node-4 exited with status 0"
sleep 0.5
"$RINGD" members --socket "$dir/node-0.sock"

say "owners after the changes: only the keys of node-3 and node-4 moved"
# shellcheck disable=SC2046 # one agent number per word
wait_rings $((N - 2)) 0 1 2 $(seq 5 $((N - 1)))
for key in user:1 user:42 cart:7 session:abc; do
  echo "$key -> $("$RINGD" owner "$key" --socket "$dir/node-0.sock")"
done
say "stopping"
for i in 0 1 2; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
sleep 1
