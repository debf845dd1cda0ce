# lib.sh — what the deploy/ checks share: a scratch directory removed on exit, and the
# ok/fail/check counters with the closing "N passed, N failed" line (finish).
DIR=$(mktemp -d "/tmp/ringd-${1:-deploy}.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
PASSED=0
FAILED=0
ok() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else fail "$desc"; fi; }
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
