# missing.sh — what a deploy/ check does when a tool it needs is absent: skipped (exit 77)
# on a machine set up by hand, failed under scripts/test.sh, which ran scripts/setup.sh
# and sets RINGD_REQUIRE_TOOLS=1: there, a missing tool means the set-up broke, and a
# skipped check would pass CI without checking anything.
missing() {
  if [ -n "${RINGD_REQUIRE_TOOLS:-}" ]; then
    echo "FAIL: $* (scripts/setup.sh should have installed it)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
