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
# sealed ringd (keyring, --cluster) and plain Serf: both ways of bench/cluster's check that
# a run is sealed or in the clear as labelled, at the cost of the old ringd,serf pair
impls=ringd+enc
command -v serf >/dev/null 2>&1 && impls=ringd+enc,serf
# a CSV from before sealed runs (no 'encrypted' column): its row must survive the merge
printf 'impl,n,reps,converged,join_s\nringd --vnodes 16,1000,1,1/1,124.3\n' >"$OUT/cluster.csv"
step cluster python3 "$HERE/cluster" --smoke --impl "$impls" -n 4 --ringd "$RINGD" \
  --csv "$OUT/cluster.csv"
step cluster_csv python3 - "$OUT/cluster.csv" "$impls" <<'EOF'
import csv, sys
rows = {(r["impl"], r["n"]): r for r in csv.DictReader(open(sys.argv[1]))}
want = {("ringd --vnodes 16", "1000"): "0"}
want.update({(i, "4"): "1" if i.endswith("+enc") else "0" for i in sys.argv[2].split(",")})
got = {k: rows[k]["encrypted"] for k in want if k in rows}
sys.exit(0 if got == want and len(rows) == len(want) else f"rows {got}, want {want}")
EOF

# the outputs exist and have a header and data
for f in ring.csv socket.csv cluster.csv; do
  if [ "$(grep -c . "$OUT/$f" 2>/dev/null)" -lt 2 ]; then
    echo "FAIL - $f is missing or empty"; failed=$((failed + 1))
  fi
done
[ "$failed" -eq 0 ] && echo "bench smoke: all ok" || echo "bench smoke: $failed failed"
[ "$failed" -eq 0 ]
