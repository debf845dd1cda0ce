#!/bin/bash
# ring_agreement.sh RINGD [RUNS] [PROFILE] — how long a ring change takes to reach every agent.
# Three agents on loopback agree; a fourth starts with --join; the time from its start until
# every agent's INFO ring_checksum is the same four-member ring's, polled every 20 ms. Prints
# each run and the median. Run by hand (bench/README.md), never timed in tests.
set -u
RINGD=$1; RUNS=${2:-5}; PROFILE=${3:-lan}
export RINGD
. "$(dirname "$0")/../tests/proc/lib.sh"
times=""
for r in $(seq "$RUNS"); do
  P=$((PORT0 + 4 * ((r - 1) % 7)))
  start "r${r}n0" "$P" --profile "$PROFILE" || exit 1
  start "r${r}n1" $((P + 1)) --profile "$PROFILE" --join "127.0.0.1:$P" || exit 1
  start "r${r}n2" $((P + 2)) --profile "$PROFILE" --join "127.0.0.1:$P" || exit 1
  wait_ready 10 "r${r}n1" "r${r}n2" || exit 1
  until [ "$(info "r${r}n0" ring_members)" = 3 ] && [ "$(info "r${r}n1" ring_members)" = 3 ] &&
        [ "$(info "r${r}n2" ring_members)" = 3 ]; do sleep 0.05; done
  t0=$(now_ms)
  start "r${r}n3" $((P + 3)) --profile "$PROFILE" --join "127.0.0.1:$((P + 1))" || exit 1
  while :; do
    s=$(info "r${r}n0" ring_checksum); same=1
    for n in n0 n1 n2 n3; do
      [ "$(info "r${r}$n" ring_members)" = 4 ] && [ "$(info "r${r}$n" ring_checksum)" = "$s" ] || same=0
    done
    [ $same = 1 ] && break
    sleep 0.02
  done
  ms=$(( $(now_ms) - t0 ))
  echo "run $r: $ms ms"
  times="$times $ms"
  for n in n0 n1 n2 n3; do kill "$(pid_of "r${r}$n")" 2>/dev/null; done
  sleep 1
done
echo "median: $(echo $times | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms over $RUNS runs (profile $PROFILE)"
