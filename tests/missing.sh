# missing.sh — what a check (tests/deploy, tests/proc) does when something it needs is
# absent: skipped (exit 77) on a machine set up by hand, failed under scripts/test.sh, which
# ran scripts/setup.sh and sets RINGD_REQUIRE_TOOLS=1: there, a missing tool means the
# set-up broke, and a skipped check would pass CI without checking anything.
missing() {
  if [ -n "${RINGD_REQUIRE_TOOLS:-}" ]; then
    echo "FAIL: $* (scripts/setup.sh should have installed it)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# need_npm DIR PACKAGE...: the packages scripts/setup.sh's npm ci put in DIR/node_modules.
# When the registry was out of reach at set-up, npm's reason is in DIR/.npm-ci-failed and
# the check skips saying it: that is the network, not the set-up.
need_npm() { # (its variables start with _npm: a function's are the caller's in sh)
  _npm_dir=$1
  shift
  for _npm_pkg in "$@"; do
    [ -d "$_npm_dir/node_modules/$_npm_pkg" ] && continue
    if [ -s "$_npm_dir/.npm-ci-failed" ]; then
      echo "SKIP: npm ci could not fetch $_npm_pkg at set-up: $(cat "$_npm_dir/.npm-ci-failed")"
      exit 77
    fi
    missing "$_npm_pkg (npm ci in $_npm_dir)"
  done
}
