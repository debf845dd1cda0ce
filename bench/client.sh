#!/bin/sh
# bench/client.sh [BUILD_DIR] [bench_client flags...] — ns per lookup with libringd_client in
# the application's process against OWNER and MOWNER over the socket, against one real
# agent started here (alone: it is ready at once; 512 points). BUILD_DIR (default
# /tmp/build-bench) must hold a Release build of ringd and bench/bench_client:
#   cmake -S . -B /tmp/build-bench -DCMAKE_BUILD_TYPE=Release
#   cmake --build /tmp/build-bench -j2 --target ringd bench_client
# Ends only the agent it started, by PID, and removes its temporary directory on exit.
set -u
BUILD=${1:-/tmp/build-bench}
[ $# -gt 0 ] && shift
[ -x "$BUILD/ringd" ] && [ -x "$BUILD/bench/bench_client" ] ||
  { echo "no ringd or bench/bench_client in $BUILD (see the top of $0)"; exit 2; }
DIR=$(mktemp -d /tmp/ringd-bench-client.XXXXXX)
AGENT=""
cleanup() { [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# a loopback port for gossip, from the PID, in bench/cluster's 10000-19999 range
PORT=$((10000 + $$ % 9000))
"$BUILD/ringd" agent --name bench-0 --bind "127.0.0.1:$PORT" --socket "$DIR/agent.sock" \
  2>"$DIR/agent.log" &
AGENT=$!
for _ in $(seq 100); do [ -S "$DIR/agent.sock" ] && break; sleep 0.05; done
[ -S "$DIR/agent.sock" ] || { echo "the agent did not start:"; cat "$DIR/agent.log"; exit 1; }
"$BUILD/bench/bench_client" "$DIR/agent.sock" "$@"
