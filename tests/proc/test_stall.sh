#!/bin/bash
# test_stall.sh RINGD — a loop that stalls says where its time went (agent/stall.h). Agent a
# logs into a pipe whose reader the test pauses; once the pipe is full, a's loop blocks in
# the write of its next line and answers nothing until the reader goes on. Checked:
#  (a) with the pipe full, a answers no PING: its loop is blocked;
#  (b) once the reader goes on, a logs `loop stalled`, late by at least the pause, with that
#      time counted as blocked outside its poll, not as time on a CPU or waiting for one;
#  (c) b, a's peer, whose loop never stalled, logs no stall.
# About 10 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
PAUSE_S=3

names="a b"
start b "$PORT0" || exit 1
# a: its log goes through a pipe, read by a cat the test can pause
mkfifo "$DIR/a.fifo"
cat "$DIR/a.fifo" >>"$DIR/a.log" &
reader=$!
PIDS="$PIDS $reader"
"$RINGD" agent --name a --bind "127.0.0.1:$((PORT0 + 1))" --socket "$DIR/a.sock" \
  --join "127.0.0.1:$PORT0" 2>"$DIR/a.fifo" &
apid=$!
PIDS="$PIDS $apid"
wait_for 20 agreed 2 >/dev/null || { fail "a and b did not agree within 20 s"; finish; exit; }

# (a) pause the reader, then make a log (SIGUSR1 dumps its table) until its loop blocks
answers() { timeout 0.5 redis-cli -s "$DIR/a.sock" PING 2>/dev/null | grep -q PONG; }
silent() { ! answers; }
kill -STOP "$reader"
dumps=0
while [ "$dumps" -lt 3000 ] && answers; do
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -USR1 "$apid"; done
  dumps=$((dumps + 10))
done
t0=$(now_ms)
check "(a) a answers no PING once its log pipe is full (after $dumps dumps)" silent
sleep "$PAUSE_S"
paused=$(($(now_ms) - t0))
kill -CONT "$reader"

# (b) the stall, as a tells it
stall_line() { grep -m1 'msg="loop stalled"' "$DIR/a.log"; }
wait_for 10 stall_line >/dev/null
line=$(stall_line)
echo "# a's pause: $paused ms; $line"
field() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
late=$(field late_ms) blocked=$(field blocked_ms) cpu=$(field on_cpu_ms) runnable=$(field runnable_ms)
at_least() { [ -n "$1" ] && [ "$1" -ge "$2" ]; }
check "(b) a logged a stall of at least the pause ($paused ms): late_ms=${late:-none}" \
  at_least "$late" $((paused - 500))
check "(b) ... counted as blocked outside its poll (blocked_ms=${blocked:-none})" \
  at_least "$blocked" $((paused - 1000))
check "(b) ... not as time on a CPU or waiting for one (on_cpu_ms=${cpu:-none}, runnable_ms=${runnable:-none})" \
  at_least $((1000 - ${cpu:-1000} - ${runnable:-0})) 1
no_stall() { ! grep -q 'msg="loop stalled"' "$DIR/b.log"; }
check "(c) b logged no stall" no_stall
no_sanitizer_reports
finish
