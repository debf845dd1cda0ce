#!/bin/bash
# test_cli.sh RINGD — what an operator sees through the CLI, against real agents on
# loopback: --profile (lan, wan, local) in INFO, in the start log and in how often an agent
# probes; INFO's version, pid and config_file; `ringd members` filtered by status, tag and
# zone; --json from every command that prints, each checked by python3 -m json.tool; and
# `ringd watch` exiting 1 when its agent is killed, 0 on its own Ctrl-C or SIGTERM.
set -u
RINGD=$(realpath "$1") # absolute: one agent starts in another directory
. "$(dirname "$0")/lib.sh"

PY=$(python3 -c 'import sys; print(sys.executable)')
R() { name=$1; shift; "$RINGD" --socket "$DIR/$name.sock" "$@"; }
# names NAME ARGS...: the first column of `ringd members ARGS` on NAME, sorted, one line
names() { name=$1; shift; R "$name" members "$@" | awk 'NR > 1 { print $1 }' | sort | tr '\n' ' '; }
is_json() { "$PY" -m json.tool >/dev/null 2>&1 <<<"$1"; }
# jget JSON EXPR: a Python expression over the parsed document `d`
jget() { "$PY" -c "import json, sys; d = json.load(sys.stdin); print($2)" <<<"$1"; }

# three lan agents in two zones; two wan agents (one through a config file named relative
# to its working directory); two local agents
printf 'profile = wan\n' >"$DIR/wan.conf"
start l0 "$PORT0" --zone z1 --tag role=db || exit 1
start l1 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" --zone z2 --tag role=web --tag tier=1 || exit 1
start l2 $((PORT0 + 2)) --join "127.0.0.1:$PORT0" --zone z1 --tag role=web || exit 1
cd "$DIR" || exit 1
start w0 $((PORT0 + 10)) --config wan.conf || exit 1
cd - >/dev/null || exit 1
start w1 $((PORT0 + 11)) --join "127.0.0.1:$((PORT0 + 10))" --profile wan || exit 1
start c0 $((PORT0 + 20)) --profile local || exit 1
start c1 $((PORT0 + 21)) --join "127.0.0.1:$((PORT0 + 20))" --profile local || exit 1

alive() { [ "$(info "$1" members_alive)" = "$2" ]; }
wait_for 10 alive l0 3 >/dev/null || fail "the lan agents did not join within 10 s"
wait_for 10 alive w0 2 >/dev/null || fail "the wan agents did not join within 10 s"
wait_for 10 alive c0 2 >/dev/null || fail "the local agents did not join within 10 s"

# ---------------------------------------------------------------- profiles
check "INFO shows profile:lan by default" [ "$(info l0 profile)" = lan ]
check "INFO shows profile:wan from a config file" [ "$(info w0 profile)" = wan ]
check "INFO shows profile:wan from --profile" [ "$(info w1 profile)" = wan ]
check "INFO shows profile:local" [ "$(info c0 profile)" = local ]
check "the lan start log: 1 s probes, 500 ms timeout, 3 indirect checks" \
  grep -q 'msg="timing profile" profile=lan probe_interval_ms=1000 probe_timeout_ms=500 indirect_checks=3 gossip_interval_ms=200 ' "$DIR/l0.log"
check "the wan start log: 5 s probes, 3 s timeout, gossip to 4 every 500 ms" \
  grep -q 'msg="timing profile" profile=wan probe_interval_ms=5000 probe_timeout_ms=3000 indirect_checks=3 gossip_interval_ms=500 gossip_fanout=4 ' "$DIR/w0.log"
check "the local start log: 200 ms timeout, 1 indirect check, gossip every 100 ms" \
  grep -q 'msg="timing profile" profile=local probe_interval_ms=1000 probe_timeout_ms=200 indirect_checks=1 gossip_interval_ms=100 ' "$DIR/c0.log"

# probes counted over the same 8 s: a lan agent probes once a second, a wan one every 5 s
# (an overloaded host may stretch the lan agent's period, hence "at least 4")
l_before=$(info l0 probes); w_before=$(info w0 probes)
sleep 8
l_probes=$(( $(info l0 probes) - l_before )); w_probes=$(( $(info w0 probes) - w_before ))
check "in 8 s the lan agent probed ${l_probes} times (at least 4)" [ "$l_probes" -ge 4 ]
check "in 8 s the wan agent probed ${w_probes} times (1 or 2)" [ "$w_probes" -ge 1 -a "$w_probes" -le 2 ]
bad=$("$RINGD" agent --name x --bind 127.0.0.1:1 --socket "$DIR/x.sock" --profile fast 2>&1)
rc=$?
check "--profile fast is refused with exit 2: $bad" \
  [ "$rc: $bad" = "2: ringd agent: --profile: 'fast' is not lan, wan or local" ]

# ---------------------------------------------------------------- version, pid, config_file
want_version=$("$RINGD" version | sed 's/^ringd //')
check "INFO version is ringd version's ($want_version)" [ "$(info l0 version)" = "$want_version" ]
check "INFO pid is the agent's process" [ "$(info l0 pid)" = "$(pid_of l0)" ]
check "INFO pid of a second agent is its own" [ "$(info w1 pid)" = "$(pid_of w1)" ]
check "INFO config_file is empty without --config" [ -z "$(info l0 config_file)" ]
wantconf=$(realpath "$DIR/wan.conf")
check "INFO config_file is the absolute path of a relative --config ($(info w0 config_file))" \
  [ "$(info w0 config_file)" = "$wantconf" ]

# ---------------------------------------------------------------- watchers, then a leave
# (ringd itself in the background, not a shell function: $! must be the watcher's pid)
"$RINGD" --socket "$DIR/l0.sock" watch >"$DIR/watch_l0.txt" 2>"$DIR/watch_l0.err" &
w_l0=$!
"$RINGD" --socket "$DIR/l1.sock" watch --json >"$DIR/watch_l1.json" 2>"$DIR/watch_l1.err" &
w_l1=$!
"$RINGD" --socket "$DIR/l1.sock" watch >/dev/null 2>"$DIR/watch_int.err" &
w_int=$!
"$RINGD" --socket "$DIR/l1.sock" watch >/dev/null 2>"$DIR/watch_term.err" &
w_term=$!
PIDS="$PIDS $w_l0 $w_l1 $w_int $w_term"
watchers() { [ "$(info "$1" watchers)" = "$2" ]; }
wait_for 5 watchers l0 1 >/dev/null && wait_for 5 watchers l1 3 >/dev/null ||
  fail "the watchers did not connect within 5 s"
kill -TERM "$(pid_of l2)" # l2 leaves: l0 and l1 see it left
left() { [ "$(info "$1" members_left)" = 1 ]; }
wait_for 10 left l0 >/dev/null && wait_for 10 left l1 >/dev/null ||
  fail "l2's leave did not reach l0 and l1 within 10 s"

# ---------------------------------------------------------------- members filters
# one case per line: the names l0 lists, then the filters (split on blanks)
while IFS='|' read -r want args; do
  # shellcheck disable=SC2086
  got=$(names l0 $args)
  check "members ${args:-(no filter)}: ${want:-none}" [ "$got" = "$want" ]
done <<'CASES'
l0 l1 l2 |
l0 l1 |--status alive
l2 |--status left
|--status dead
l0 l1 l2 |--status alive,left
l2 |--status suspect --status=left
l1 l2 |--tag role=web
l1 |--tag role=web --tag tier=1
|--tag role=we
l0 l2 |--zone z1
l0 |--zone=z1 --status alive
l2 |--zone z1 --tag role=web --status left
CASES
out=$(R l0 members --status gone 2>&1)
rc=$?
check "members --status gone exits 2 with one line" [ "$rc $(wc -l <<<"$out")" = "2 1" ]
R l0 members --tag role >/dev/null 2>&1
check "members --tag without = exits 2" [ $? -eq 2 ]
R l0 info --zone z1 >/dev/null 2>&1
check "a filter on another command exits 2" [ $? -eq 2 ]

# ---------------------------------------------------------------- --json everywhere
j=$(R l0 members --json --tag role=web --status alive)
check "members --json with filters: valid JSON" is_json "$j"
check "members --json with filters: only l1" [ "$(jget "$j" '[m["name"] for m in d]')" = "['l1']" ]
j=$(R l0 members --json --zone z9)
check "members --json matching nobody: an empty array" [ "$(jget "$j" 'd')" = "[]" ]
j=$(R l0 info --json)
check "info --json: valid JSON" is_json "$j"
check "info --json: one object, same name, pid a number, profile text" \
  [ "$(jget "$j" '(type(d).__name__, d["name"], d["pid"] == '"$(pid_of l0)"', d["profile"], d["members_checksum"] == "'"$(info l0 members_checksum)"'")')" = "('dict', 'l0', True, 'lan', True)" ]
check "info --json: every INFO field, in order" \
  [ "$(jget "$j" '" ".join(d)')" = "$(q l0 INFO | tr -d '\r' | grep -v '^#' | cut -d: -f1 | grep . | tr '\n' ' ' | sed 's/ $//')" ]
j=$(R w0 info --json)
check "info --json: config_file as text" [ "$(jget "$j" 'd["config_file"]')" = "$wantconf" ]
j=$(R l0 owner k --json)
check "owner --json: valid JSON" is_json "$j"
j=$(R l0 owner k -n 2 --json)
check "owner -n 2 --json: valid JSON with two owners" [ "$(jget "$j" 'len(d["owners"])')" = 2 ]
j=$(R l0 keys list --json 2>/dev/null)
check "keys list --json: valid JSON" is_json "$j"
j=$("$RINGD" version --json)
check "version --json: {\"version\": ...}" [ "$(jget "$j" 'd["version"]')" = "$want_version" ]
check "watch --json: at least one event line" [ -s "$DIR/watch_l1.json" ]
check "watch --json: every line is one valid JSON object" \
  "$PY" -c 'import json, sys
for line in open(sys.argv[1]):
    assert isinstance(json.loads(line), dict)' "$DIR/watch_l1.json"
check "watch --json: l2's leave" grep -q '"type":"member","member":"l2","status":"left"' "$DIR/watch_l1.json"

# ---------------------------------------------------------------- watch ends
kill -INT "$w_int"
wait "$w_int"
check "watch exits 0 on Ctrl-C" [ $? -eq 0 ]
kill -TERM "$w_term"
wait "$w_term"
check "watch exits 0 on SIGTERM" [ $? -eq 0 ]
kill -KILL "$(pid_of l1)"
wait "$w_l1"
rc=$?
check "watch exits 1 when its agent is SIGKILLed (got $rc)" [ "$rc" -eq 1 ]
check "... with one line on stderr" [ "$(wc -l <"$DIR/watch_l1.err")" = 1 ]
echo "# watch said: $(cat "$DIR/watch_l1.err")"
R l0 leave >/dev/null
wait "$w_l0"
rc=$?
check "watch exits 1 when its agent leaves (got $rc)" [ "$rc" -eq 1 ]

no_sanitizer_reports
finish
