#!/bin/bash
# fuzz.sh — builds every libFuzzer target of tests/fuzz with clang and runs each one for
# SECONDS (default 20), starting from a copy of its seeds in tests/fuzz/corpus/<target>/.
# Fails on any crash, sanitizer report, leak, timeout or out-of-memory, and prints the
# executions of each target. ctest runs it as fuzz_smoke; hours-long runs: tests/fuzz/README.md.
#   scripts/fuzz.sh [SECONDS]
#   FUZZ_BUILD_DIR=dir   the clang build (default build-fuzz); crash inputs go to dir/artifacts/
# Exits 77 (skipped) when clang is not installed (scripts/setup.sh installs it).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-20}
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found (apt-get install clang libclang-rt-14-dev); skipped"
  exit 77
fi
build=${FUZZ_BUILD_DIR:-build-fuzz}
mkdir -p "$build"
# -O1 and assertions on, as fuzzing wants; the build log is shown only on failure.
if ! { CC=clang cmake -S . -B "$build" -DRINGD_FUZZ=ON -DRINGD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" &&
  cmake --build "$build" --target fuzz -j"$(nproc)"; } >"$build/fuzz-build.log" 2>&1; then
  cat "$build/fuzz-build.log"
  echo "fuzz: the build failed"
  exit 1
fi
artifacts=$(cd "$build" && pwd)/artifacts
mkdir -p "$artifacts"
work=$(mktemp -d /tmp/ringd-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
for src in tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  corpus=$work/$name
  mkdir -p "$corpus"
  if [ -d "tests/fuzz/corpus/$name" ]; then cp -R "tests/fuzz/corpus/$name/." "$corpus/"; fi
  seeds=$(ls "$corpus" | wc -l)
  log=$work/$name.log
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: the default 2 GB, said aloud.
  rc=0
  "$build/fuzz/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  found=$(ls "$corpus" | wc -l)
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    echo "fuzz: $name: ${execs:-?} execs in ${secs} s (${rate:-?}/s), corpus $seeds -> $found inputs: clean"
  else
    failed=$((failed + 1))
    echo "fuzz: $name: FAILED (exit $rc) after ${execs:-?} execs; its report:"
    grep -v -e '^#[0-9]' -e '^stat::' "$log" | tail -n 60
    echo "fuzz: the input is in $artifacts/; replay it with $build/fuzz/$name <file>"
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
