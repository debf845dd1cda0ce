#!/bin/bash
# test_snapshot.sh RINGD — --state-dir and --rejoin with real agents: the snapshot is
# written within a few seconds of a change and at exit, 0600 in a 0700 directory; an agent
# SIGKILLed and started again without --join comes back alive everywhere within 5 s, under
# its name and a higher incarnation; after a graceful leave it starts alone unless
# --rejoin; a cut, mangled, oversized, foreign or renamed snapshot is logged and ignored;
# an unsafe state directory is refused.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

S=$DIR/state1
SNAP=$S/members.snap

# snap_show FILE: "name status incarnation" per record, from the format in PROTOCOL.md
# (read independently of the agent's decoder); exit 1 if the file does not check out.
snap_show() {
  python3 - "$1" <<'PY'
import ctypes, struct, sys
x = ctypes.CDLL("libxxhash.so.0"); x.XXH3_64bits.restype = ctypes.c_uint64
x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
xxh3 = lambda d: x.XXH3_64bits(d, len(d))
b = open(sys.argv[1], "rb").read()
magic, ver, res, blen, csum = struct.unpack(">4sB3sIQ", b[:20])
body = b[20:]
if magic != b"RDSN" or ver != 1 or res != b"\0\0\0" or blen != len(body) or xxh3(body) != csum:
    sys.exit(1)
p = 0
def s():
    global p
    n = body[p]; v = body[p + 1:p + 1 + n].decode(); p += 1 + n; return v
cluster, me = s(), s()
saved, count = struct.unpack(">QI", body[p:p + 12]); p += 12
print("self", me, "cluster", cluster)
for _ in range(count):
    name = s(); fam = body[p]; p += 1 + (16 if fam == 6 else 4) + 2
    inc, st = struct.unpack(">QB", body[p:p + 9]); p += 9
    print(name, ["alive", "suspect", "dead", "left"][st], inc)
sys.exit(0 if p == len(body) else 1)
PY
}
# status_in NAME MEMBER: MEMBER's status as NAME's MEMBERS reply gives it
member_field() {
  q "$1" MEMBERS | tr -d '\r' | awk -v m="$2" -v f="$3" '
    $0 == "name" { getline; cur = $0 } $0 == f && cur == m { getline; print; exit }'
}
started_inc() { grep "agent started" "$DIR/$1.log" | tail -1 | sed -n 's/.*incarnation=\([0-9]*\).*/\1/p'; }
mode_of() { stat -c %a "$1"; }
# kill9 NAME: SIGKILL, and the socket it leaves goes too, so that start waits for the next
kill9() { kill -KILL "$(pid_of "$1")"; wait "$(pid_of "$1")" 2>/dev/null; rm -f "$DIR/$1.sock"; }

start n0 "$PORT0" || exit 1
start n1 $((PORT0 + 1)) --join "127.0.0.1:$PORT0" --state-dir "$S" || exit 1
start n2 $((PORT0 + 2)) --join "127.0.0.1:$PORT0" || exit 1
all3() { for n in n0 n1 n2; do [ "$(info $n members_alive)" = 3 ] || return 1; done; }
wait_for 20 all3 >/dev/null || fail "3 agents did not converge"
check "the state directory is created mode 0700" [ "$(mode_of "$S")" = 700 ]

# written within a few seconds of a change (the join), 0600, with all three alive
has3() { [ "$(snap_show "$SNAP" | grep -c ' alive ')" = 3 ]; }
if t=$(wait_for 6 has3); then
  check "snapshot written ${t} ms after the cluster formed (limit 5 s)" [ "$t" -le 5000 ]
else fail "no snapshot with 3 alive members within 6 s"; snap_show "$SNAP"; fi
check "the snapshot file is mode 0600" [ "$(mode_of "$SNAP")" = 600 ]
check "no temporary file is left beside it" [ ! -e "$SNAP.tmp" ]

# a change later on is saved within a few seconds, too
start n3 $((PORT0 + 3)) --join "127.0.0.1:$PORT0" || exit 1
has_n3() { snap_show "$SNAP" | grep -q '^n3 alive '; }
if t=$(wait_for 8 has_n3); then
  check "a new member is in the snapshot ${t} ms after it started (limit 5 s)" [ "$t" -le 5000 ]
else fail "n3 not in the snapshot within 8 s"; fi

# SIGKILL, then start again with the same --state-dir and no --join
old_inc=$(started_inc n1)
kill9 n1
t0=$(now_ms)
start n1 $((PORT0 + 1)) --state-dir "$S" || exit 1
new_inc=$(started_inc n1)
back() {
  [ "$(info n1 members_alive)" = 4 ] || return 1
  for n in n0 n2 n3; do
    [ "$(member_field $n n1 status)" = alive ] && [ "$(member_field $n n1 incarnation)" = "$new_inc" ] || return 1
  done
}
if wait_for 10 back >/dev/null; then
  t=$(( $(now_ms) - t0 ))
  check "restarted without --join, n1 is alive everywhere at its new incarnation ${t} ms after its start (limit 5 s)" [ "$t" -le 5000 ]
else fail "n1 did not come back everywhere within 10 s"; fi
check "it rejoined through the snapshot" grep -q "rejoining through the snapshot" "$DIR/n1.log"
check "its new incarnation ($new_inc) is above the old one ($old_inc)" [ "$new_inc" -gt "$old_inc" ]

# the snapshot's record of ourselves decides the incarnation, even ahead of the clock:
# a snapshot that says we were at 2^62 makes the next life start above it
python3 - "$SNAP" <<'PY'
import ctypes, struct, sys
x = ctypes.CDLL("libxxhash.so.0"); x.XXH3_64bits.restype = ctypes.c_uint64
x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
xxh3 = lambda d: x.XXH3_64bits(d, len(d))
f = sys.argv[1]; b = open(f, "rb").read(); body = bytearray(b[20:])
p = 0
def skip_str():
    global p; p += 1 + body[p]
skip_str(); skip_str(); count = struct.unpack(">I", body[p + 8:p + 12])[0]; p += 12
for _ in range(count):
    n = body[p]; name = bytes(body[p + 1:p + 1 + n]); p += 1 + n
    fam = body[p]; p += 1 + (16 if fam == 6 else 4) + 2
    if name == b"n1": body[p:p + 8] = struct.pack(">Q", 1 << 62)
    p += 9
hdr = b[:8] + struct.pack(">IQ", len(body), xxh3(bytes(body)))
open(f + ".ahead", "wb").write(hdr + bytes(body))
PY
cp "$SNAP" "$DIR/good.snap"

# graceful leave: recorded, and a restart without --rejoin stays alone
kill -TERM "$(pid_of n1)"; wait "$(pid_of n1)"; rc=$?
check "n1 left gracefully (exit $rc)" [ "$rc" = 0 ]
left_recorded() { snap_show "$SNAP" | grep -q '^n1 left '; }
check "the snapshot written at exit records n1 as left" left_recorded
cp "$SNAP" "$DIR/left.snap"
start n1 $((PORT0 + 1)) --state-dir "$S" || exit 1
check "after a graceful leave it says so and does not rejoin" grep -q "left the cluster last time" "$DIR/n1.log"
sleep 3
check "... and stays alone for 3 s" [ "$(info n1 members_alive)" = 1 ]
check "... while the others still see it as left" [ "$(member_field n0 n1 status)" = left ]
kill9 n1

# with --rejoin it comes back through the same snapshot
cp "$DIR/left.snap" "$SNAP"
t0=$(now_ms)
start n1 $((PORT0 + 1)) --state-dir "$S" --rejoin || exit 1
new_inc=$(started_inc n1)
if wait_for 10 back >/dev/null; then
  t=$(( $(now_ms) - t0 ))
  check "with --rejoin it is alive everywhere again ${t} ms after its start (limit 5 s)" [ "$t" -le 5000 ]
else fail "n1 did not rejoin with --rejoin within 10 s"; fi
kill9 n1

# our own record ahead of the clock: the new life starts above it
cp "$SNAP.ahead" "$SNAP"
start n1 $((PORT0 + 1)) --state-dir "$S" || exit 1
check "an incarnation of 2^62 in the snapshot starts the next life above it" \
  [ "$(started_inc n1)" = $(( (1 << 62) + 1 )) ]
kill9 n1

alone() { [ "$(info "$1" members_alive)" = 1 ]; }
answers() { [ "$(info "$1" name)" = "$1" ]; }
# bad snapshots: logged (one line: which file and why) and ignored; the agent starts alone
ignored() { # DESC EXPECTED-REASON [extra flags...]
  desc=$1; why=$2; shift 2
  : >"$DIR/n1.log"
  start n1 $((PORT0 + 1)) --state-dir "$S" "$@" || { fail "$desc: agent did not start"; return; }
  wait_for 15 answers n1 >/dev/null # no timing is checked here: slow under load is fine
  line=$(grep "snapshot ignored" "$DIR/n1.log")
  # (not "alone": the others try a dead member's address every 5-15 s, and may find it)
  if echo "$line" | grep -q "file=$SNAP" && echo "$line" | grep -q "$why" &&
    [ "$(echo "$line" | wc -l)" = 1 ] && ! grep -q "rejoining through" "$DIR/n1.log"; then
    ok "$desc: logged ($why) and ignored"
  else fail "$desc: log was: $(cat "$DIR/n1.log")"; fi
  kill9 n1
}
head -c $(( $(stat -c %s "$DIR/good.snap") - 7 )) "$DIR/good.snap" >"$SNAP"
ignored "a truncated snapshot" "truncated"
cp "$DIR/good.snap" "$SNAP"
printf '\xff' | dd of="$SNAP" bs=1 seek=40 conv=notrunc 2>/dev/null
ignored "a snapshot with a flipped byte" "checksum mismatch"
printf 'not a snapshot at all\n' >"$SNAP"
ignored "a file that is not a snapshot" "bad magic"
head -c $(( 2 * 1024 * 1024 )) /dev/zero >"$SNAP"
ignored "an oversized file" "over the"
cp "$DIR/good.snap" "$SNAP"
ignored "another cluster's snapshot" "written for cluster" --cluster other
cp "$DIR/good.snap" "$SNAP"
: >"$DIR/n9.log"
start n9 $((PORT0 + 9)) --state-dir "$S" || exit 1
check "a snapshot written by another member is ignored" grep -q "snapshot ignored.*written by member 'n1'" "$DIR/n9.log"
check "... and n9 starts alone" [ "$(info n9 members_alive)" = 1 ]
kill9 n9

# an unsafe state directory is refused, as an unsafe socket directory is
U=$DIR/unsafe; mkdir -m 0777 "$U"; chmod 0777 "$U"
timeout 10 "$RINGD" agent --name u --bind "127.0.0.1:$((PORT0 + 10))" --socket "$DIR/u.sock" \
  --state-dir "$U" 2>"$DIR/u.log"; rc=$?
check "a world-writable state directory is refused (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'state directory $U is writable by others' '$DIR/u.log'"

no_sanitizer_reports
finish
