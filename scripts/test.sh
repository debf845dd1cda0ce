#!/bin/sh
# Sets up, builds with AddressSanitizer + UndefinedBehaviorSanitizer and -Werror, and runs
# every test (unit, simulation, real processes). This is what CI runs.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
build=${BUILD_DIR:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRINGD_SANITIZE=ON -DRINGD_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# set-up ran above: a check whose tool is missing fails rather than skips (tests/deploy)
export RINGD_REQUIRE_TOOLS=1
cd "$build" && ctest --output-on-failure -j2 "$@"
