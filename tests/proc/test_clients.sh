#!/usr/bin/env bash
# test_clients.sh — Redis client libraries, installed as a user installs them and used with
# their default options, against three real agents.
#
#   tests/proc/test_clients.sh path/to/ringd
#
# Each client connects through its own handshake (HELLO 3 for node-redis and ioredis,
# CLIENT SETNAME for redis-py's client_name=, none for hiredis) and asks for the owners of
# 1,000 keys, one OWNER each (pipelined where the library pipelines); every answer must
# equal what MOWNER gives. redis-cli's interactive mode shows the arguments' hints and
# HELP that COMMAND DOCS gives (tests/proc/cli_hints.py, in a pseudo-terminal). The
# clients: redis-cli -2 and -3; redis-py (Debian's python3-redis) with defaults,
# client_name= and a pipeline; hiredis (Debian's libhiredis-dev,
# tests/proc/hiredis_owners.c, RD_HIREDIS_OWNERS); node-redis with default options and
# with RESP 2, and ioredis with defaults and a pipeline (npm packages pinned by
# tests/clients/node/package-lock.json; scripts/setup.sh runs npm ci there).
# Then pub/sub: every one of these subscribes to the channels members and ring through its
# own API (hiredis's blocking redisGetReply, redis-py's pubsub(), node-redis's subscribe()
# with default options and with RESP 2, ioredis's subscribe(), redis-cli SUBSCRIBE and
# PSUBSCRIBE * in their streaming mode), a fourth agent joins, and each must receive the
# member event saying it is alive and a ring event.
# Exits 77 (skipped) only when the node packages are not installed, saying why.
set -u
RINGD=${1:?usage: test_clients.sh path/to/ringd}
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=$HERE/../clients/node
HIREDIS_OWNERS=${RD_HIREDIS_OWNERS:-}
. "$HERE/../missing.sh"
command -v node >/dev/null || missing "node not installed"
need_npm "$NODE_DIR" redis ioredis
. "$HERE/lib.sh"

# Debian's python3-redis is for Debian's python3, which a version manager may shadow.
PYREDIS=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import redis' 2>/dev/null; then PYREDIS=$py; break; fi
done

start n0 "$PORT0" || exit 1
start n1 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
start n2 $((PORT0 + 2)) --join "127.0.0.1:$PORT0" || exit 1
check "every agent is ready" wait_ready 10 n0 n1 n2
converged() {
  for n in n0 n1 n2; do [ "$(info "$n" ring_members)" = 3 ] || return 1; done
  [ "$(info n0 ring_checksum)" = "$(info n1 ring_checksum)" ] &&
    [ "$(info n0 ring_checksum)" = "$(info n2 ring_checksum)" ]
}
check "the three agents agree on a ring of three" wait_for 20 converged

for i in $(seq 0 999); do echo "key-$i"; done > "$DIR/keys"
# shellcheck disable=SC2046
q n0 MOWNER $(cat "$DIR/keys") > "$DIR/want"
check "MOWNER answers 1000 owners" [ "$(wc -l < "$DIR/want")" = 1000 ]
check "the owners are the three members" \
  [ "$(sort -u "$DIR/want" | tr '\n' ' ')" = "n0 n1 n2 " ]

# same NAME FILE: FILE holds the same owners as MOWNER gave, in order
same() {
  if cmp -s "$DIR/want" "$2"; then ok "$1"; else
    fail "$1"; diff "$DIR/want" "$2" | head -5; tail -5 "$DIR/$(basename "$2").err" 2>/dev/null
  fi
}
sock() { echo "$DIR/n$(($1 % 3)).sock"; }

# redis-cli, each protocol, one OWNER per line of stdin
for p in 2 3; do
  sed 's/^/OWNER /' "$DIR/keys" | redis-cli -"$p" -s "$(sock $p)" > "$DIR/cli$p" 2> "$DIR/cli$p.err"
  same "redis-cli -$p: 1000 owners equal MOWNER's" "$DIR/cli$p"
done
hello_map() {
  [[ "$(redis-cli -3 -s "$(sock 0)" HELLO | tr '\n' ' ')" == \
    "server ringd version "*" proto 3 id "*" mode standalone role master modules "* ]]
}
check "redis-cli -3: HELLO is the server map in RESP3" hello_map
hints() {
  python3 "$HERE/cli_hints.py" "$(sock 2)" > "$DIR/hints" 2>&1 || { cat "$DIR/hints"; return 1; }
}
check "redis-cli interactive: argument hints and HELP come from COMMAND DOCS" hints
check "redis-cli: HELLO 4 is refused with NOPROTO" \
  [ "$(q n0 HELLO 4)" = "NOPROTO unsupported protocol version" ]

# redis-py
if [ -z "$PYREDIS" ]; then
  fail "redis-py: python3-redis is not installed (scripts/setup.sh installs it)"
else
  i=0
  for mode in default client_name pipeline pipeline_plain; do
    i=$((i + 1))
    "$PYREDIS" "$HERE/redis_py_owners.py" "$mode" "$(sock $i)" < "$DIR/keys" \
      > "$DIR/py-$mode" 2> "$DIR/py-$mode.err"
    same "redis-py $mode: 1000 owners equal MOWNER's" "$DIR/py-$mode"
  done
fi

# hiredis
if [ -z "$HIREDIS_OWNERS" ]; then
  fail "hiredis: rd_hiredis_owners was not built (libhiredis-dev; RD_HIREDIS_OWNERS)"
else
  "$HIREDIS_OWNERS" "$(sock 1)" < "$DIR/keys" > "$DIR/hiredis" 2> "$DIR/hiredis.err"
  same "hiredis: 1000 pipelined owners equal MOWNER's" "$DIR/hiredis"
fi

# node-redis and ioredis: their current majors declare Node.js 20, and run on Debian 12's
# Node.js 18 as well (this test passes there)
i=0
for run in "node-redis default 3" "node-redis resp2 2" "ioredis default" "ioredis pipeline"; do
  set -- $run
  i=$((i + 1))
  out="$DIR/$1-$2"
  (cd "$NODE_DIR" && node owners.js "$1" "$2" "$(sock $i)") < "$DIR/keys" > "$out" 2> "$out.err"
  same "$1 $2: 1000 owners equal MOWNER's" "$out"
  if [ -n "${3:-}" ]; then
    check "$1 $2: the connection spoke RESP$3" grep -qx "resp=$3" "$out.err"
  fi
  check "$1 $2: CLIENT SETINFO recorded the library's name" grep -qx "lib-name=$1" "$out.err"
done

# ---------------------------------------------------------------- pub/sub
# Each subscriber prints the payloads it gets, one per line, and exits 0 by itself once it
# has n3's member event and a ring event (40 s at most); redis-cli streams until killed.
subs=""
sub_names=""
subscriber() { # NAME COMMAND...: runs COMMAND in the background, output in $DIR/sub-NAME
  name=$1; shift
  "$@" > "$DIR/sub-$name" 2> "$DIR/sub-$name.err" &
  subs="$subs $!"; PIDS="$PIDS $!"; sub_names="$sub_names $name"
  eval "SUBPID_$(echo "$name" | tr -c 'A-Za-z0-9\n' _)=$!"
}
[ -n "$HIREDIS_OWNERS" ] && subscriber hiredis "$HIREDIS_OWNERS" subscribe "$(sock 0)" n3
[ -n "$PYREDIS" ] && subscriber redis-py "$PYREDIS" "$HERE/redis_py_owners.py" subscribe "$(sock 1)" n3
subscriber node-redis-default sh -c 'cd "$1" && exec node owners.js node-redis subscribe "$2" n3' _ "$NODE_DIR" "$(sock 2)"
subscriber node-redis-resp2 sh -c 'cd "$1" && exec node owners.js node-redis subscribe-resp2 "$2" n3' _ "$NODE_DIR" "$(sock 0)"
subscriber ioredis sh -c 'cd "$1" && exec node owners.js ioredis subscribe "$2" n3' _ "$NODE_DIR" "$(sock 1)"
cli_subs=""
cli_sub() { # NAME ARGS...: redis-cli ARGS streaming into $DIR/cli-NAME, for 60 s at most
  name=$1; shift
  timeout 60 redis-cli -s "$(sock 2)" "$@" > "$DIR/cli-$name" 2> "$DIR/cli-$name.err" &
  cli_subs="$cli_subs $!"; PIDS="$PIDS $!"
}
cli_sub SUBSCRIBE SUBSCRIBE members ring
cli_sub PSUBSCRIBE PSUBSCRIBE '*'
nsubs=$(( $(echo $subs | wc -w) + 2 ))
subscribed() { [ $(( $(info n0 watchers) + $(info n1 watchers) + $(info n2 watchers) )) = "$nsubs" ]; }
if t=$(wait_for 20 subscribed); then ok "all $nsubs subscribers subscribed after ${t} ms"
else fail "not all $nsubs subscribers subscribed within 20 s (watchers: $(info n0 watchers) $(info n1 watchers) $(info n2 watchers))"; fi

start n3 $((PORT0 + 3)) --join "127.0.0.1:$PORT0" || exit 1
t0=$(now_ms)
for name in $sub_names; do
  pid=$(eval "echo \$SUBPID_$(echo "$name" | tr -c 'A-Za-z0-9\n' _)")
  wait "$pid"; rc=$?
  if [ "$rc" = 0 ] && grep -q '"type":"member","member":"n3","status":"alive"' "$DIR/sub-$name" &&
    grep -q '"type":"ring"' "$DIR/sub-$name"; then
    ok "$name subscribe: n3's member event and the ring event arrived"
  else
    fail "$name subscribe: exit $rc, got: $(tr '\n' ' ' < "$DIR/sub-$name" | cut -c1-300) $(tail -3 "$DIR/sub-$name.err")"
  fi
done
# redis-cli prints each message's three (pmessage: four) elements on lines of their own
cli_got() {
  grep -q '"type":"member","member":"n3","status":"alive"' "$DIR/cli-$1" && grep -q '"type":"ring"' "$DIR/cli-$1"
}
wait_for 10 cli_got SUBSCRIBE >/dev/null
wait_for 10 cli_got PSUBSCRIBE >/dev/null
for p in $cli_subs; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
check "redis-cli SUBSCRIBE members ring: confirmations, then n3's member event and the ring event" \
  sh -c "head -6 '$DIR/cli-SUBSCRIBE' | tr '\n' ' ' | grep -qx 'subscribe members 1 subscribe ring 2 ' &&
    grep -A2 -x message '$DIR/cli-SUBSCRIBE' | grep -qx members &&
    grep -q '\"type\":\"member\",\"member\":\"n3\",\"status\":\"alive\"' '$DIR/cli-SUBSCRIBE' &&
    grep -q '\"type\":\"ring\"' '$DIR/cli-SUBSCRIBE'"
check "redis-cli PSUBSCRIBE *: pmessages of both channels" \
  sh -c "head -3 '$DIR/cli-PSUBSCRIBE' | tr '\n' ' ' | grep -qx 'psubscribe \\* 1 ' &&
    grep -A2 -x pmessage '$DIR/cli-PSUBSCRIBE' | grep -qx members &&
    grep -A2 -x pmessage '$DIR/cli-PSUBSCRIBE' | grep -qx ring &&
    grep -q '\"member\":\"n3\",\"status\":\"alive\"' '$DIR/cli-PSUBSCRIBE'"
echo "# events reached every subscriber within $(( $(now_ms) - t0 )) ms of n3's start"

no_sanitizer_reports
finish
