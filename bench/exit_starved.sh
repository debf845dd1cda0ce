#!/bin/bash
# exit_starved.sh RINGD [SPINNERS] [RUNS] — how long an agent takes to exit on a host with no
# CPU to spare. Per run: agents a and b join on loopback; SPINNERS busy loops (default 300,
# nice 0) take every core; agent c joins, so that b has a ring build to make at nice 19, and
# a second later b gets SIGTERM. Prints the seconds from the signal to b's exit, per run and
# the median of RUNS (default 5). The script runs itself at nice -10 (its agents and loops
# at 0), so that its own clock is not starved: run it as root. Run by hand (bench/README.md).
set -u
RINGD=$1; SPIN=${2:-300}; RUNS=${3:-5}
export RINGD
. "$(dirname "$0")/../tests/proc/lib.sh"
renice -n -10 -p $$ >/dev/null || { echo "needs root (renice -10)"; exit 2; }
at0() { renice -n 0 -p "$1" >/dev/null; } # a child back to nice 0
times=()
for run in $(seq "$RUNS"); do
  start "a$run" "$PORT0" && at0 "$(pid_of "a$run")" || exit 1
  start "b$run" $((PORT0 + 1)) --join "127.0.0.1:$PORT0" && at0 "$(pid_of "b$run")" || exit 1
  sleep 2
  spinners=()
  for _ in $(seq "$SPIN"); do
    timeout 120 sh -c 'while :; do :; done' &
    spinners+=($!)
    at0 $!
  done
  sleep 5
  start "c$run" $((PORT0 + 2)) --join "127.0.0.1:$PORT0" && at0 "$(pid_of "c$run")" || exit 1
  sleep 1
  b=$(pid_of "b$run")
  t0=$(date +%s.%N)
  kill -TERM "$b"
  wait "$b"
  t1=$(date +%s.%N)
  kill "${spinners[@]}" 2>/dev/null
  wait "${spinners[@]}" 2>/dev/null
  for n in a c; do kill -TERM "$(pid_of "$n$run")"; wait "$(pid_of "$n$run")"; done
  s=$(python3 -c "print(round($t1 - $t0, 2))")
  times+=("$s")
  echo "run $run: exit ${s} s after SIGTERM"
done
python3 -c "import statistics, sys; print('median', statistics.median(map(float, sys.argv[1:])), 's')" "${times[@]}"
