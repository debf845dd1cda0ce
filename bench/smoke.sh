#!/bin/sh
# bench/smoke.sh BUILD_DIR — CI smoke test of the benchmarks: runs every benchmark at tiny
# sizes (about a minute in all) to prove the scripts still work. The numbers mean nothing.
# Exits non-zero if any benchmark fails. Needs: redis-server, redis-tools, python3; serf
# and nft are used when present (cluster: ringd always, serf only if installed).
set -u
BUILD=${1:?usage: bench/smoke.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d /tmp/ringd-bench-smoke.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
RINGD=$BUILD/ringd
failed=0

step() {
  name=$1; shift
  start=$(date +%s)
  if "$@" >"$OUT/$name.log" 2>&1; then
    echo "ok - $name ($(( $(date +%s) - start )) s)"
  else
    echo "FAIL - $name (exit $?); output:"
    sed 's/^/    /' "$OUT/$name.log" | tail -40
    failed=$((failed + 1))
  fi
}

[ -x "$RINGD" ] || { echo "FAIL - no ringd at $RINGD"; exit 1; }
[ -x "$BUILD/bench/bench_ring" ] || { echo "FAIL - no bench_ring at $BUILD/bench/bench_ring"; exit 1; }

step bench_ring "$BUILD/bench/bench_ring" --keys 2000 --runs 1 --csv "$OUT/ring.csv"
step socket python3 "$HERE/socket" --smoke --ringd "$RINGD" --csv "$OUT/socket.csv"
impls=ringd
command -v serf >/dev/null 2>&1 && impls=ringd,serf
step cluster python3 "$HERE/cluster" --smoke --impl "$impls" -n 4 --ringd "$RINGD" \
  --csv "$OUT/cluster.csv"

# the outputs exist and have a header and data
for f in ring.csv socket.csv cluster.csv; do
  if [ "$(grep -c . "$OUT/$f" 2>/dev/null)" -lt 2 ]; then
    echo "FAIL - $f is missing or empty"; failed=$((failed + 1))
  fi
done
[ "$failed" -eq 0 ] && echo "bench smoke: all ok" || echo "bench smoke: $failed failed"
[ "$failed" -eq 0 ]
