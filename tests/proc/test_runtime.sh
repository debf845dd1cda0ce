#!/bin/bash
# test_runtime.sh RINGD — changing a running agent: SIGHUP, SIGUSR1 and the run-time socket
# commands, on four real agents on loopback. Clients run as nobody with setpriv, so this
# test needs root, as the CI has.
#   (a) SIGHUP with a changed --config file (log level, tag, weight) applies them: the
#       others see the new tag and weight, and one "reloaded" line lists the changes;
#   (b) an invalid file keeps the config in force and logs file:line; an option that
#       cannot change live (vnodes) is named as needing a restart and not applied;
#   (c) 20 SIGHUPs in a row: no leave, nobody suspects the agent, the ring is unchanged;
#   (d) SIGUSR1 logs one line per member and one counters line; SIGUSR2 and SIGPIPE do
#       not stop the agent;
#   (e) TAGS SET/DEL; WEIGHT 2; WEIGHT 0 drains (alive and listed, owns no key on any
#       agent, and exactly the keys it owned moved); WEIGHT 1 brings the first placement
#       back; a weight above --max-weight is refused;
#   (f) FORCE-LEAVE of an alive member is refused without PRUNE; of a killed one, it is
#       left on every agent within 2 s;
#   (g) a client that is not an admin gets -NOPERM for every changing command.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (a client runs as nobody)"; exit 1; }
for c in setpriv python3 redis-cli; do
    command -v "$c" >/dev/null || { echo "$c not found"; exit 1; }
done
chmod 755 "$DIR" # nobody must reach a1's socket (0666) inside

expect() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi; }
expect_match() { if [[ "$2" =~ $3 ]]; then ok "$1"; else fail "$1: got '$2', want /$3/"; fi; }

# rec VIEWER ABOUT FIELD: a field of ABOUT's line in `ringd members` on VIEWER
# (3 status, 4 incarnation, 5 weight, 6 tags).
rec() { "$RINGD" members --socket "$DIR/$1.sock" 2>/dev/null | awk -v m="$2" -v f="$3" '$1 == m { print $f }'; }
# all_see FIELD VALUE ABOUT VIEWERS...: every viewer has that field of ABOUT at VALUE.
all_see() {
    field=$1 value=$2 about=$3; shift 3
    for v in "$@"; do [ "$(rec "$v" "$about" "$field")" = "$value" ] || return 1; done
}
KEYS=$(seq -f k%g 1 2000)
# owners NAME: the owner of each of the 2000 keys, one per line, as NAME places them.
owners() { q "$1" MOWNER $KEYS; }
owns_none() { for v in "$@"; do ! owners "$v" | grep -qx a3 || return 1; done; }
same_ring() {
    c=$(info "$1" ring_checksum); shift
    for v in "$@"; do [ "$(info "$v" ring_checksum)" = "$c" ] || return 1; done
}
count() { grep -c -E "$2" "$DIR/$1.log"; }

P=$PORT0
CONF=$DIR/a2.conf
printf 'log-level = info\ntag = role=web\n' >"$CONF"
start a1 "$P" --socket-mode 0666 --max-weight 4 || exit 1
start a2 $((P + 1)) --config "$CONF" --join "127.0.0.1:$P" --max-weight 4 || exit 1
start a3 $((P + 2)) --join "127.0.0.1:$P" --max-weight 4 || exit 1
start a4 $((P + 3)) --join "127.0.0.1:$P" --max-weight 4 || exit 1
ALL="a1 a2 a3 a4"
joined() { for v in $ALL; do [ "$(info "$v" members_alive)" = 4 ] || return 1; done; same_ring $ALL; }
wait_for 20 joined >/dev/null || { fail "the four agents did not converge"; finish; exit 1; }

# ---------------------------------------------------------------- (a) SIGHUP applies
printf 'log-level = warn\ntag = role=db\nweight = 2\n' >"$CONF"
kill -HUP "$(pid_of a2)"
t=$(wait_for 5 all_see 5 2.000 a2 a1 a3 a4)
check "(a) SIGHUP: the others see a2's new weight and tag (in ${t:-never} ms)" all_see 6 role=db a2 a1 a3 a4
expect_match "(a) one \"reloaded\" line lists log-level, tag and weight" \
    "$(grep 'msg="reloaded"' "$DIR/a2.log" | tail -1)" 'changed=log-level,tag,weight '
kill -USR1 "$(pid_of a2)"
sleep 0.5
up() { kill -0 "$(pid_of "$1")" 2>/dev/null && echo up; }
expect "(a) the new log level is in force: at warn, SIGUSR1's info lines are not written" \
    "$(count a2 'msg="dump: ') $(up a2)" "0 up"
printf 'log-level = info\ntag = role=db\nweight = 2\n' >"$CONF"
kill -HUP "$(pid_of a2)"
sleep 0.3
expect_match "(a) back to info: the line names log-level alone" \
    "$(grep 'msg="reloaded"' "$DIR/a2.log" | tail -1)" 'changed=log-level '
kill -USR1 "$(pid_of a2)"
sleep 0.5
expect "(a) ... and at info SIGUSR1's lines are written again" "$(count a2 'msg="dump: member" ')" 4

# ---------------------------------------------------------------- (b) bad file, restart-only
printf 'log-level = debug\nweight = lots\n' >"$CONF"
kill -HUP "$(pid_of a2)"
sleep 0.3
expect_match "(b) an invalid file is refused with file:line; weight and log level stay" \
    "$(grep 'reload failed' "$DIR/a2.log" | tail -1) | $(info a2 weight) | $(count a2 'level=debug')" \
    "error=\"?$CONF:2: --weight: 'lots'.* \| 2.000 \| 0$"
printf 'log-level = info\ntag = role=db\nweight = 2\nvnodes = 64\n' >"$CONF"
kill -HUP "$(pid_of a2)"
sleep 0.3
expect_match "(b) vnodes changed: nothing applied, vnodes needs a restart and stays 512" \
    "$(grep 'msg="reloaded"' "$DIR/a2.log" | tail -1) | $(info a2 vnodes)" \
    'changed="nothing changed" .* needs_restart=vnodes \| 512$'
printf 'log-level = info\ntag = role=db\nweight = 2\nprofile = wan\nevent-timeout = 5\n' >"$CONF"
kill -HUP "$(pid_of a2)"
sleep 0.3
expect_match "(b) profile and event-timeout changed: not applied, named as needing a restart" \
    "$(grep 'msg="reloaded"' "$DIR/a2.log" | tail -1) | $(info a2 profile)" \
    'needs_restart=event-timeout,profile \| lan$'

# ---------------------------------------------------------------- (c) 20 SIGHUPs
wait_for 5 same_ring $ALL >/dev/null
ring=$(info a1 ring_checksum)
inc=$(rec a1 a2 4)
reloads=$(count a2 'msg="reloaded"')
suspects=$(cat "$DIR"/*.log | grep -c 'msg="member suspect" member=a2 ')
for _ in $(seq 20); do kill -HUP "$(pid_of a2)"; sleep 0.05; done
sleep 3
same_ring $ALL && agree=same
expect "(c) 20 SIGHUPs: 20 \"reloaded\" lines; the agent answers; no leave; no suspicion of it; same incarnation; same ring everywhere" \
    "$(($(count a2 'msg="reloaded"') - reloads)) $(q a2 PING) $(count a2 'leaving cluster') \
$(($(cat "$DIR"/*.log | grep -c 'msg="member suspect" member=a2 ') - suspects)) $(rec a1 a2 4) \
$(info a1 ring_checksum) ${agree:-differ}" "20 PONG 0 0 $inc $ring same"

# ---------------------------------------------------------------- (d) SIGUSR1 and the rest
kill -USR1 "$(pid_of a1)"
sleep 0.5
expect "(d) SIGUSR1: one line per member" "$(count a1 'msg="dump: member" ')" 4
expect "(d) ... and one counters line" "$(count a1 'msg="dump: counters" .*members_alive=4 ')" 1
kill -USR2 "$(pid_of a1)"
kill -PIPE "$(pid_of a1)"
sleep 0.3
expect "(d) SIGUSR2 and SIGPIPE: the agent still answers, no leave" \
    "$(q a1 PING) $(count a1 'leaving cluster')" "PONG 0"

# ---------------------------------------------------------------- (e) TAGS and WEIGHT
expect "(e) ringd tags set" "$("$RINGD" tags set rack r7 --socket "$DIR/a3.sock" 2>&1)" OK
t=$(wait_for 5 all_see 6 rack=r7 a3 a1 a2 a4)
check "(e) ... every agent sees rack=r7 on a3 (in ${t:-never} ms)" all_see 6 rack=r7 a3 a1 a2 a4
out=$("$RINGD" tags del rack --socket "$DIR/a3.sock" 2>&1)
t=$(wait_for 5 all_see 6 "" a3 a1 a2 a4)
expect "(e) ringd tags del: OK, and the tag is gone everywhere (in ${t:-never} ms)" \
    "$out $(all_see 6 "" a3 a1 a2 a4 && echo gone)" "OK gone"
expect "(e) TAGS DEL of a missing tag" "$(q a3 TAGS DEL rack)" "ERR no tag 'rack'"
expect_match "(e) TAGS SET with a bad value" "$(q a3 TAGS SET k 'a b')" "^ERR 'k=a b' is not KEY=VALUE"

before=$(owners a1)
expect "(e) ringd weight 2" "$("$RINGD" weight 2 --socket "$DIR/a3.sock" 2>&1)" OK
t=$(wait_for 5 all_see 5 2.000 a3 a1 a2 a4)
check "(e) ... every agent sees a3 at 2.000 (in ${t:-never} ms)" all_see 5 2.000 a3 a1 a2 a4
wait_for 5 same_ring $ALL >/dev/null
heavy=$(owners a1)
expect "(e) ringd weight 0 (drain)" "$("$RINGD" weight 0 --socket "$DIR/a3.sock" 2>&1)" OK
t=$(wait_for 5 owns_none $ALL)
check "(e) ... a3 owns no key on any agent (in ${t:-never} ms)" owns_none $ALL
check "(e) ... and is still listed alive at 0.000 everywhere" all_see 3 alive a3 a1 a2 a4
check "(e) ... (weight)" all_see 5 0.000 a3 a1 a2 a4
drained=$(owners a1)
moved=$(paste -d' ' <(echo "$heavy") <(echo "$drained") | awk '$1 != $2' | wc -l)
of_a3=$(echo "$heavy" | grep -cx a3)
wrong=$(paste -d' ' <(echo "$heavy") <(echo "$drained") | awk '$1 != $2 && $1 != "a3"' | wc -l)
[ "$of_a3" -gt 0 ] || of_a3="none: a3 owned no key at weight 2"
expect "(e) ... exactly its keys moved ($of_a3 of 2000), no other" "$moved $wrong" "$of_a3 0"
expect_match "(e) ... the ring line logs its share moving away" \
    "$(grep 'msg="ring rebuilt"' "$DIR/a1.log" | tail -1)" 'largest_move=a3->'
expect "(e) ringd weight 1" "$("$RINGD" weight 1 --socket "$DIR/a3.sock" 2>&1)" OK
back() { [ "$(owners a1)" = "$before" ] && same_ring $ALL; }
t=$(wait_for 5 back)
check "(e) ... the first placement is back on every agent (in ${t:-never} ms)" back
expect_match "(e) a weight above --max-weight is refused, and not applied" \
    "$(q a3 WEIGHT 5) | $(rec a3 a3 5)" '^ERR weight 5 is above --max-weight 4.000 \| 1.000$'

# ---------------------------------------------------------------- (f) FORCE-LEAVE
out=$("$RINGD" force-leave a2 --socket "$DIR/a1.sock" 2>&1)
expect_match "(f) force-leave of an alive member is refused without --prune" "$? $out" \
    "^1 ringd: ERR 'a2' is alive, not dead"
kill -KILL "$(pid_of a4)"
wait_for 40 all_see 3 dead a4 a1 a2 a3 >/dev/null
check "(f) the killed a4 is dead everywhere first" all_see 3 dead a4 a1 a2 a3
expect "(f) ringd force-leave a4" "$("$RINGD" force-leave a4 --socket "$DIR/a1.sock" 2>&1)" OK
t=$(wait_for 5 all_see 3 left a4 a1 a2 a3)
check "(f) ... a4 is left on every agent (in ${t:-never} ms, want <= 2000)" \
    test -n "$t" -a "${t:-9999}" -le 2000

# ---------------------------------------------------------------- (g) -NOPERM
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
NOPERM="NOPERM this command needs root or the agent's user"
out=$(printf '%s\n' "TAGS SET k v" "TAGS DEL role" "WEIGHT 0" "FORCE-LEAVE a4" "PING" |
    as_nobody redis-cli -s "$DIR/a1.sock" 2>&1 | grep -v '^$' | tr '\n' '|')
expect "(g) nobody: -NOPERM for TAGS SET/DEL, WEIGHT, FORCE-LEAVE; PING still answered" "$out" \
    "$NOPERM|$NOPERM|$NOPERM|$NOPERM|PONG|"
out=$(as_nobody "$RINGD" weight 0 --socket "$DIR/a1.sock" 2>&1)
expect "(g) \`ringd weight 0\` as nobody: exit 1 with the refusal" "$? $out" "1 ringd: $NOPERM"
expect "(g) ... and nothing changed: a1 at weight 1, a4 still left" "$(info a1 weight) $(rec a1 a4 3)" \
    "1.000 left"

no_sanitizer_reports
finish
