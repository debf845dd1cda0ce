#!/bin/bash
# test_hooks.sh RINGD — event handlers (--on-event) on real agents on loopback:
#  (a) agent a runs three handlers: one that appends its environment and its stdin to a
#      file, one filtered to member-failed doing the same, one filtered to member-leave that
#      exits 1. b and c join, c leaves, b is SIGKILLed. The first file must hold member-join
#      for b and c, member-leave for c, member-failed for b and ring events, as the JSON
#      lines `ringd watch --json` prints, each run's RINGD_* variables those of its last
#      event; the second only member-failed; the failing handler is logged at warn and
#      counted in INFO.
#  (b) agent d runs a handler that sleeps and never reads its stdin, with --event-timeout 3,
#      while 1300 events are forged at it in a burst: for 15 s d keeps gossiping, probing and
#      answering its socket, nobody suspects it, the events beyond its queue (1024) are
#      counted as dropped, and the handler is killed after 3 s each time, and logged.
# About 60 s in all (up to 90 s when a death takes long to be declared).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

# ---- (a) what handlers are given
cat >"$DIR/rec.sh" <<'SH'
#!/bin/sh
# rec.sh FILE: one block per run, its variables then the events it was given
{ echo "ENV event=$RINGD_EVENT member=${RINGD_MEMBER-} status=${RINGD_STATUS-} addr=${RINGD_ADDR-} checksum=${RINGD_RING_CHECKSUM-} moved=${RINGD_MOVED-} kept=${RINGD_HOOK_TEST-}"; cat; } >>"$1"
SH
chmod +x "$DIR/rec.sh"
# an inherited RINGD_MEMBER must not reach a handler: the agent's own values replace it
export RINGD_MEMBER=inherited RINGD_HOOK_TEST=kept
start a "$PORT0" --on-event "$DIR/rec.sh $DIR/all.txt" \
  --on-event "member-failed=$DIR/rec.sh $DIR/failed.txt" --on-event "member-leave=exit 1" || exit 1
unset RINGD_MEMBER RINGD_HOOK_TEST
start b $((PORT0 + 1)) --join "127.0.0.1:$PORT0" || exit 1
start c $((PORT0 + 2)) --join "127.0.0.1:$PORT0" || exit 1
three() { [ "$(info a members_alive)" = 3 ]; }
wait_for 20 three >/dev/null || fail "a did not see 3 alive within 20 s"
kill -TERM "$(pid_of c)"
left() { [ "$(info a members_left)" = 1 ]; }
wait_for 20 left >/dev/null || fail "a did not see c leave within 20 s"
kill -KILL "$(pid_of b)"
dead() { [ "$(info a members_dead)" = 1 ]; }
if t=$(wait_for 60 dead); then echo "# b declared dead by a after ${t} ms"; else fail "b not declared dead within 60 s"; fi
# the handlers run after the event: give the last runs a moment to append
settled() {
  grep -q '"status":"dead"' "$DIR/failed.txt" && [ "$(info a ring_members)" = 1 ] &&
    grep '"type":"ring"' "$DIR/all.txt" | tail -1 | grep -q "\"checksum\":\"$(info a ring_checksum)\""
}
wait_for 10 settled >/dev/null

# check_runs FILE KIND...: every run's variables match its last event, and each KIND
# (EVENT:MEMBER, or "ring") is among the events; prints what is wrong, if anything
check_runs() {
  python3 - "$@" "$(info a ring_checksum)" <<'PY'
import json, sys
path, kinds, ring_now = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
runs, bad = [], []
for line in open(path):
    if line.startswith("ENV "):
        env = dict(kv.split("=", 1) for kv in line[4:].split())
        if env.pop("kept", "") != "kept":
            bad.append("the agent's environment was not passed on")
        runs.append((env, []))
    else:
        runs[-1][1].append(json.loads(line))
def name(ev):
    if ev["type"] == "ring":
        return "ring"
    return {"alive": "member-join", "left": "member-leave", "dead": "member-failed"}[ev["status"]]
seen = set()
for env, evs in runs:
    if not evs:
        bad.append("a run with no events on stdin")
        continue
    for ev in evs:
        if not ev["ts"].endswith("Z"):
            bad.append("ts %r" % ev["ts"])
        if ev["type"] == "member":
            if set(ev) != {"ts", "type", "member", "status", "addr", "incarnation"} or \
               not isinstance(ev["incarnation"], int) or not ev["addr"].startswith("127.0.0.1:"):
                bad.append("member event %r" % ev)
            seen.add("%s:%s" % (name(ev), ev["member"]))
        else:
            if set(ev) != {"ts", "type", "version", "checksum", "points", "moved", "moves"} or \
               not isinstance(ev["version"], int) or len(ev["checksum"]) != 16:
                bad.append("ring event %r" % ev)
            seen.add("ring")
    last = evs[-1]
    want = {"event": name(last), "member": "", "status": "", "addr": "", "checksum": "", "moved": ""}
    if last["type"] == "ring":
        want["checksum"] = last["checksum"]
        want["moved"] = "%.6f" % last["moved"]
    else:
        want.update(member=last["member"], status=last["status"], addr=last["addr"])
    if env != want:
        bad.append("variables %r for last event %r" % (env, last))
for k in kinds:
    if k not in seen:
        bad.append("no %s event (saw %s)" % (k, sorted(seen)))
if "ring" in kinds:
    rings = [ev for _, evs in runs for ev in evs if ev["type"] == "ring"]
    if rings and rings[-1]["checksum"] != ring_now:
        bad.append("last ring event %s, INFO says %s" % (rings[-1]["checksum"], ring_now))
if not kinds and seen - {"member-failed:b"}:
    bad.append("events beyond the filter: %s" % sorted(seen - {"member-failed:b"}))
print("; ".join(bad)[:400])
PY
}
why=$(check_runs "$DIR/all.txt" member-join:b member-join:c member-leave:c member-failed:b ring)
check "an unfiltered handler got member-join, member-leave, member-failed and ring, variables of each run's last event ${why:+($why)}" [ -z "$why" ]
why=$(check_runs "$DIR/failed.txt" member-failed:b)
why2=$(check_runs "$DIR/failed.txt")
check "a member-failed handler got member-failed only ${why}${why2}" [ -z "$why$why2" ]
check "no handler saw the RINGD_MEMBER the agent inherited" bash -c "! grep -q inherited '$DIR/all.txt'"
check "a handler exiting 1 is logged at warn" \
  grep -q 'level=warn msg="event handler failed" handler=2 command="exit 1" exit_code=1' "$DIR/a.log"
check "INFO counts the failed runs and the events handled" \
  [ "$(info a handlers_failed)" -ge 1 -a "$(info a events_handled)" -ge 5 -a "$(info a handlers_killed)" = 0 ]

# ---- (b) a handler that never reads and never ends
start d $((PORT0 + 3)) --on-event "sleep 20" --event-timeout 3 --join "127.0.0.1:$PORT0" || exit 1
start e $((PORT0 + 4)) --join "127.0.0.1:$PORT0" || exit 1
together() { [ "$(info d members_alive)" = 3 ] && [ "$(info e members_alive)" = 3 ]; }
wait_for 20 together >/dev/null || fail "d, a and e did not see each other within 20 s"
t0=$(now_ms)
in0=$(info d packets_in); out0=$(info d packets_out); probes0=$(info d probes)
# 650 members appear and leave at once: 1300 member events at d within a fraction of a
# second, beyond its queue of 1024, while its handler sleeps on a full pipe
python3 - "$(dirname "$0")" $((PORT0 + 3)) <<'PY'
import socket, sys, time
sys.path.insert(0, sys.argv[1])
from forger import member, packet
port = int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for status, inc in ((0, 1), (3, 2)):
    recs = [member((b"ghost-%d-" % k).ljust(64, b"x"), 40000 + k, inc, status, 1000) for k in range(650)]
    for k in range(0, len(recs), 12):
        s.sendto(packet(b"forger", members=recs[k:k + 12]), ("127.0.0.1", port))
        time.sleep(0.001)
PY
slow=0
while [ $(( $(now_ms) - t0 )) -lt 15000 ]; do
  s=$(now_ms)
  [ -n "$(info d members_alive)" ] || slow=$((slow + 1000000))
  [ $(( $(now_ms) - s )) -gt 1000 ] && slow=$((slow + 1))
  sleep 0.5
done
check "d's socket answered every INFO within 1 s for 15 s (late: $slow)" [ "$slow" = 0 ]
in1=$(info d packets_in); out1=$(info d packets_out); probes1=$(info d probes)
check "d kept gossiping and probing ($in0->$in1 in, $out0->$out1 out, $probes0->$probes1 probes)" \
  [ $((in1 - in0)) -ge 20 -a $((out1 - out0)) -ge 20 -a $((probes1 - probes0)) -ge 10 ]
check "nobody suspected d" bash -c "! grep -h 'member=d ' '$DIR/a.log' '$DIR/e.log' | grep -q 'msg=\"member suspect\"'"
check "d never had to refute a suspicion" [ "$(info d refutes)" = 0 ]
dropped=$(info d events_dropped)
check "events beyond the queue counted as dropped ($dropped) and logged" \
  [ "${dropped:-0}" -ge 100 -a "$(grep -c 'msg="event handler behind: events dropped"' "$DIR/d.log")" -ge 1 ]
started=$(log_ms d 'msg="agent started"'); killed=$(log_ms d 'msg="event handler killed')
check "the handler was killed $((killed - started)) ms after it started (--event-timeout 3)" \
  [ -n "$killed" -a $((${killed:-0} - started)) -ge 2900 -a $((${killed:-0} - started)) -le 5000 ]
kills=$(info d handlers_killed)
biggest=$(sed -n 's/.*msg="event handler killed.* events=\([0-9]*\).*/\1/p' "$DIR/d.log" | sort -n | tail -1)
check "every run was killed and counted ($kills), one run was given the coalesced burst ($biggest events)" \
  [ "${kills:-0}" -ge 2 -a "$(grep -c 'level=warn msg="event handler killed: past --event-timeout"' "$DIR/d.log")" -ge "${kills:-0}" -a "${biggest:-0}" -ge 500 ]
no_sanitizer_reports
finish
