#!/bin/bash
# storm_cost.sh RINGD [N] [VNODES] [TIMEOUT] — what a join storm costs the agents, in CPU and
# page faults. N agents (default 400) on loopback are started at once, all joining the first;
# once 10 of them spread over the list (the first, the last and eight between) hold one ring
# of N members with the same checksum, it prints how long that took from the first start,
# the spawn time, the CPU seconds (user + system) and minor page faults of all N agents
# together at that moment, and their "member dead" log lines (every one false: nobody
# crashed). Gives up after TIMEOUT seconds (default 240). Every agent is killed by PID on
# exit. Run by hand (bench/README.md), never timed in tests.
set -u
RINGD=$1; N=${2:-400}; VNODES=${3:-512}; TIMEOUT=${4:-240}
DIR=$(mktemp -d /tmp/ringd-storm.XXXXXX)
PIDS=()
cleanup() {
  exec 2>/dev/null
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# N consecutive loopback ports free for UDP and TCP, outside the tests' range (benchlib.py)
PORT0=$(cd "$(dirname "$0")" && python3 -c 'import sys, benchlib; print(benchlib.free_port_block(int(sys.argv[1])))' "$N")
[ -n "$PORT0" ] || exit 1

t0=$(date +%s%N)
for i in $(seq 0 $((N - 1))); do
  join=(); [ "$i" -gt 0 ] && join=(--join "127.0.0.1:$PORT0")
  "$RINGD" agent --name "a$i" --bind "127.0.0.1:$((PORT0 + i))" --socket "$DIR/a$i.sock" \
    --vnodes "$VNODES" "${join[@]}" 2>>"$DIR/a$i.log" &
  PIDS+=($!)
done
t1=$(date +%s%N)
sample="0 $((N - 1))"; for k in 1 2 3 4 5 6 7 8; do sample="$sample $((k * N / 9))"; done
agreed() {
  local want="" s out m c
  for s in $sample; do
    out=$(redis-cli -s "$DIR/a$s.sock" INFO 2>/dev/null | tr -d '\r')
    m=$(sed -n 's/^ring_members://p' <<<"$out"); c=$(sed -n 's/^ring_checksum://p' <<<"$out")
    [ "$m" = "$N" ] || return 1
    [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}
ok=0
while [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt "$TIMEOUT" ]; do
  agreed && { ok=1; break; }
  sleep 0.25
done
t2=$(date +%s%N)
ticks=0; faults=0
for p in "${PIDS[@]}"; do
  read -r -a f <"/proc/$p/stat" 2>/dev/null || continue
  ticks=$((ticks + f[13] + f[14])); faults=$((faults + f[9]))
done
dead=$(cat "$DIR"/*.log | grep -c 'msg="member dead"')
ms() { echo $(( ($1) / 1000000 )); }
echo "agents $N, vnodes $VNODES: $([ $ok = 1 ] && echo agreed || echo "NOT agreed") after $(ms $((t2 - t0))) ms from the first start (spawn $(ms $((t1 - t0))) ms)"
echo "all agents: CPU $((ticks * 1000 / $(getconf CLK_TCK))) ms, minor faults $faults, member dead lines $dead"
