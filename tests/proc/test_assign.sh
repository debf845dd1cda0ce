#!/bin/bash
# test_assign.sh RINGD — bounded-load assignment end to end. Four agents (n3 of weight 2.0)
# converge; ASSIGN 1.05 of 1,000 keys answers identically on every agent and in any order
# of the keys, no member above ceil(1.05 x 1000 x its weight share), and a key away from its
# MOWNER owner only when that owner is full; `ringd assign` prints the same, --json too, and
# refuses a bad C with exit 2. Then n1 leaves: the three left agree again, within their new
# caps, and the keys that moved are counted beside MOWNER's.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
PY=$(python3 -c 'import sys; print(sys.executable)')
KEYS=1000

# assign.py SOCK OUT CMD C [shuffle]: CMD (ASSIGN c or MOWNER) of key:0..KEYS-1 on one
#   request, the reply written one name per line in key order (shuffle: sent in a random
#   order, the reply put back in key order).
cat >"$DIR/assign.py" <<'PY'
import random, socket, sys

def read_reply(f):
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-", b":"):
        return (t + rest).decode()
    if t == b"$":
        n = int(rest)
        return "(nil)" if n < 0 else f.read(n + 2)[:-2].decode()
    if t == b"*":
        return [read_reply(f) for _ in range(max(int(rest), 0))]
    raise ValueError("bad reply: %r" % line)

path, out, cmd, c, nkeys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
order = list(range(nkeys))
if len(sys.argv) > 6:
    random.Random(int(sys.argv[6])).shuffle(order)
args = [cmd] + ([c] if cmd == "ASSIGN" else []) + ["key:%d" % i for i in order]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
s.sendall(req)
r = read_reply(s.makefile("rb"))
assert isinstance(r, list) and len(r) == nkeys, r
names = [None] * nkeys
for k, name in zip(order, r):
    names[k] = name
open(out, "w").write("\n".join(names) + "\n")
PY

# caps.py ASSIGNED OWNERS C_MILLI NAME=WEIGHT_MILLI...: checks the caps and the walk rule;
#   prints "max=M mean=X over=N away=A away_not_full=B"
cat >"$DIR/caps.py" <<'PY'
import sys
got = open(sys.argv[1]).read().split()
own = open(sys.argv[2]).read().split()
c = int(sys.argv[3])
w = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in sys.argv[4:])
W, D = sum(w.values()), len(set(range(len(got))))
cap = {m: (c * D * w[m] + 1000 * W - 1) // (1000 * W) for m in w}
load = {m: got.count(m) for m in w}
away = [(g, o) for g, o in zip(got, own) if g != o]
print("max=%d mean=%.1f over=%d away=%d away_not_full=%d unknown=%d caps=%s loads=%s" % (
    max(load.values()), len(got) / len(w), sum(load[m] > cap[m] for m in w), len(away),
    sum(1 for g, o in away if load[o] < cap[o]), sum(1 for g in got if g not in w),
    ",".join("%s:%d" % (m, cap[m]) for m in sorted(w)),
    ",".join("%s:%d" % (m, load[m]) for m in sorted(w))))
PY
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

start n0 "$PORT0" || exit 1
names="n0"
for i in 1 2 3; do
  extra=""; [ "$i" = 3 ] && extra="--weight 2"
  start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" $extra || exit 1
  names="$names n$i"
done
if t=$(wait_for 15 agreed 4); then ok "4 agents converge after ${t} ms"; else fail "4 agents did not converge within 15 s"; fi
check "every agent is ready" wait_ready 10 $names

# ask_all PREFIX C: every agent's ASSIGN into PREFIX.NAME, and n0's in a shuffled order
ask_all() {
  for n in $names; do "$PY" "$DIR/assign.py" "$DIR/$n.sock" "$DIR/$1.$n" ASSIGN "$2" "$KEYS" || return 1; done
  "$PY" "$DIR/assign.py" "$DIR/n0.sock" "$DIR/$1.shuffled" ASSIGN "$2" "$KEYS" 7
}
all_same() {
  for f in $names shuffled; do cmp -s "$DIR/$1.n0" "$DIR/$1.$f" || { echo "# $f differs from n0"; return 1; }; done
}
check "ASSIGN 1.05 of $KEYS keys asked of every agent" ask_all before 1.05
check "every agent, and a shuffled request, answer the same assignment" all_same before
"$PY" "$DIR/assign.py" "$DIR/n0.sock" "$DIR/owners.before" MOWNER - "$KEYS"
r=$("$PY" "$DIR/caps.py" "$DIR/before.n0" "$DIR/owners.before" 1050 n0=1000 n1=1000 n2=1000 n3=2000)
echo "# c 1.05 with n3 at weight 2: $r"
check "no member above its cap and only ring members ($r)" [ "$(kv "$r" over)/$(kv "$r" unknown)" = 0/0 ]
check "a key leaves its owner only for a full owner" [ "$(kv "$r" away_not_full)" = 0 ]
check "the cap binds: some keys walked away from a full owner ($(kv "$r" away))" [ "$(kv "$r" away)" -gt 0 ]
p=$("$PY" "$DIR/caps.py" "$DIR/owners.before" "$DIR/owners.before" 1050 n0=1000 n1=1000 n2=1000 n3=2000)
echo "# MOWNER of the same keys: $p"

# the CLI: the same names, in order, for 300 keys; --json; a bad C is a usage error
keys300=$(seq 0 299 | sed 's/^/key:/')
# shellcheck disable=SC2086
"$RINGD" assign 1.25 $keys300 --socket "$DIR/n2.sock" >"$DIR/cli.txt" 2>"$DIR/cli.err"
"$PY" "$DIR/assign.py" "$DIR/n2.sock" "$DIR/q300" ASSIGN 1.25 300
check "ringd assign prints what ASSIGN answers" cmp -s "$DIR/cli.txt" "$DIR/q300"
json=$("$RINGD" assign 2 a b a --json --socket "$DIR/n1.sock")
want=$(q n1 ASSIGN 2 a b a | tr '\n' ' ')
check "ringd assign --json: [{key, member}...] ($json; ASSIGN: $want)" "$PY" -c '
import json, sys
j = json.loads(sys.argv[1]); w = sys.argv[2].split()
assert [e["key"] for e in j] == ["a", "b", "a"] and [e["member"] for e in j] == w, (j, w)
assert j[0]["member"] == j[2]["member"]' "$json" "$want"
for bad in 1 0.5 abc 1.1x 99999999999 1.0001; do
  "$RINGD" assign "$bad" k --socket "$DIR/n0.sock" >/dev/null 2>"$DIR/bad.err"; rc=$?
  check "ringd assign $bad exits 2 ($(cat "$DIR/bad.err"))" [ "$rc" = 2 ]
done
# shellcheck disable=SC2046
"$RINGD" assign 1.1 $(seq 0 4000) --socket "$DIR/n0.sock" >/dev/null 2>"$DIR/many.err"; rc=$?
check "ringd assign of 4001 keys exits 2 ($(cat "$DIR/many.err"))" [ "$rc" = 2 ]
check "ASSIGN with c 1 is -ERR over the socket" sh -c "redis-cli -s '$DIR/n0.sock' ASSIGN 1 k | grep -q '^ERR c must be'"

# n1 leaves: the three left agree again, within their caps
q n1 LEAVE >/dev/null
names="n0 n2 n3"
if t=$(wait_for 15 agreed 3); then ok "3 agents agree after n1 left (${t} ms)"; else fail "no agreement within 15 s after n1 left"; fi
check "ASSIGN 1.05 asked again of the three" ask_all after 1.05
check "the three answer the same assignment" all_same after
"$PY" "$DIR/assign.py" "$DIR/n0.sock" "$DIR/owners.after" MOWNER - "$KEYS"
r=$("$PY" "$DIR/caps.py" "$DIR/after.n0" "$DIR/owners.after" 1050 n0=1000 n2=1000 n3=2000)
echo "# after n1 left: $r"
check "no member above its new cap ($r)" [ "$(kv "$r" over)/$(kv "$r" unknown)" = 0/0 ]
check "and a key leaves its owner only for a full owner" [ "$(kv "$r" away_not_full)" = 0 ]
moved=$(paste -d' ' "$DIR/before.n0" "$DIR/after.n0" | awk '$1 != $2' | wc -l)
moved_owner=$(paste -d' ' "$DIR/owners.before" "$DIR/owners.after" | awk '$1 != $2' | wc -l)
n1_had=$(grep -cx n1 "$DIR/before.n0")
echo "# moved when n1 left: ASSIGN $moved of $KEYS (n1 held $n1_had), MOWNER $moved_owner"
check "every key n1 held moved, and under a tenth of the others ($moved moved)" \
  awk -v m="$moved" -v h="$n1_had" -v k="$KEYS" 'BEGIN { exit !(m >= h && m - h < (k - h) / 10) }'
no_sanitizer_reports
finish
