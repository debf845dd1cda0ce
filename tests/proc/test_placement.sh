#!/bin/bash
# test_placement.sh RINGD — placement agreement end to end. Five agents on loopback converge
# on one ring checksum and give identical owners for 20,000 keys (MOWNER, batches of 1,000);
# a sixth joins: afterwards all six agree again, about 1/6 of the keys moved, every moved key
# moved to the newcomer (none between old members), and the ring event that a subscriber on
# n0 (SUBSCRIBE members ring) received reports a moved fraction matching the measured one. The event's fraction is exact
# over the key space; the 20,000 keys sample it (standard error ~0.003), hence the 0.03.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
PY=$(python3 -c 'import sys; print(sys.executable)')
KEYS=20000

# place.py ask SOCK OUT: the owner of key:0 .. key:KEYS-1, one per line, asked with MOWNER in
#   batches of 1,000 on one connection (nil is written as "(nil)").
# place.py watch SOCK OUT: sends SUBSCRIBE members ring and writes each message's event as
#   one line of space-separated fields (the JSON's values in order) until killed.
cat >"$DIR/place.py" <<'PY'
import json, signal, socket, sys

def values(v):
    """The values of a JSON event in order, numbers as written: its fields."""
    if isinstance(v, dict):
        return [x for k in v for x in values(v[k])]
    if isinstance(v, list):
        return [x for e in v for x in values(e)]
    return [v]

def read_reply(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise EOFError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-", b":"):
        return (t + rest).decode()
    if t == b"$":
        n = int(rest)
        if n < 0:
            return "(nil)"
        data = f.read(n + 2)
        return data[:-2].decode()
    if t == b"*":
        n = int(rest)
        return [read_reply(f) for _ in range(max(n, 0))]
    raise ValueError("bad reply: %r" % line)

def bulk(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

mode, path, outfile = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
f = s.makefile("rb")
if mode == "ask":
    nkeys = int(sys.argv[4])
    owners = []
    for lo in range(0, nkeys, 1000):
        keys = ["key:%d" % i for i in range(lo, min(lo + 1000, nkeys))]
        s.sendall(bulk("MOWNER", *keys))
        r = read_reply(f)
        assert isinstance(r, list) and len(r) == len(keys), r
        owners += r
    with open(outfile, "w") as o:
        o.write("\n".join(owners) + "\n")
elif mode == "watch":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s.sendall(bulk("SUBSCRIBE", "members", "ring"))
    with open(outfile, "w", buffering=1) as o:
        assert read_reply(f) == ["subscribe", "members", ":1"]
        assert read_reply(f) == ["subscribe", "ring", ":2"]
        o.write("+OK\n")
        while True:
            kind, channel, payload = read_reply(f)
            assert kind == "message", kind
            ev = json.loads(payload, parse_float=str, parse_int=str)
            o.write(" ".join(values(ev)[1:]) + "\n")  # without its ts
PY

# compare OLD NEW NEWMEMBER: prints "moved=N fraction=F to_new=N between_old=N"
compare() {
  "$PY" - "$1" "$2" "$3" <<'PY'
import sys
old = open(sys.argv[1]).read().split()
new = open(sys.argv[2]).read().split()
assert len(old) == len(new)
moved = [(a, b) for a, b in zip(old, new) if a != b]
to_new = sum(1 for a, b in moved if b == sys.argv[3])
print("moved=%d fraction=%.6f to_new=%d between_old=%d"
      % (len(moved), len(moved) / len(old), to_new, len(moved) - to_new))
PY
}
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

names=""
start n0 "$PORT0" || exit 1
names="n0"
for i in 1 2 3 4; do
  start "n$i" $((PORT0 + i)) --join "127.0.0.1:$PORT0" || exit 1
  names="$names n$i"
done

if t=$(wait_for 15 agreed 5); then ok "5 agents converge on ring checksum $(info n0 ring_checksum) after ${t} ms"
else fail "5 agents did not converge within 15 s"; fi

# ask_all PREFIX: every agent's owners of the keys into $DIR/PREFIX.NAME
ask_all() {
  for n in $names; do "$PY" "$DIR/place.py" ask "$DIR/$n.sock" "$DIR/$1.$n" "$KEYS" || return 1; done
}
# all_same PREFIX: every agent's file equals n0's
all_same() {
  for n in $names; do cmp -s "$DIR/$1.n0" "$DIR/$1.$n" || { echo "# $n differs from n0"; return 1; }; done
}
check "every agent is ready" wait_ready 10 $names
t0=$(date +%s%N)
check "20000 keys asked of each of 5 agents" ask_all before
echo "# 5 x $KEYS keys asked in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
check "all 5 agents give identical owners for 20000 keys" all_same before
echo "# owners per member before: $(sort "$DIR/before.n0" | uniq -c | awk '{printf "%s=%s ", $2, $1}')"
check "every key has an owner among n0..n4" \
  sh -c "! grep -qvxE 'n[0-4]' '$DIR/before.n0'"

# a watcher on n0, then a sixth agent
"$PY" "$DIR/place.py" watch "$DIR/n0.sock" "$DIR/watch.txt" &
WATCHER=$!
PIDS="$PIDS $WATCHER"
watching() { [ "$(info n0 watchers)" = 1 ] && grep -q '^+OK' "$DIR/watch.txt"; }
if t=$(wait_for 5 watching); then ok "subscribed on n0 after ${t} ms"; else fail "no subscription on n0 within 5 s"; fi

start n5 $((PORT0 + 5)) --join "127.0.0.1:$PORT0" || exit 1
names="$names n5"
if t=$(wait_for 15 agreed 6); then ok "6 agents converge on ring checksum $(info n0 ring_checksum) after ${t} ms"
else fail "6 agents did not converge within 15 s"; fi
final_checksum=$(info n0 ring_checksum)

check "the sixth agent is ready" wait_ready 10 n5
check "20000 keys asked of each of 6 agents" ask_all after
check "all 6 agents give identical owners for 20000 keys" all_same after
echo "# owners per member after: $(sort "$DIR/after.n0" | uniq -c | awk '{printf "%s=%s ", $2, $1}')"

r=$(compare "$DIR/before.n0" "$DIR/after.n0" n5)
frac=$(kv "$r" fraction)
echo "# measured: $r (expected about 1/6 = 0.166667)"
check "about 1/6 of the keys moved: $(kv "$r" moved) of $KEYS = $frac (0.10..0.23)" \
  awk -v f="$frac" 'BEGIN { exit !(f >= 0.10 && f <= 0.23) }'
check "every moved key moved to the new member n5 ($(kv "$r" to_new) of $(kv "$r" moved))" \
  [ "$(kv "$r" to_new)" = "$(kv "$r" moved)" ]
check "no key moved between old members ($(kv "$r" between_old))" [ "$(kv "$r" between_old)" = 0 ]

# the ring event for n5's arrival: "ring VERSION CHECKSUM POINTS MOVED [FROM TO SHARE]..."
ring_event() { grep -q "^ring [0-9]* $final_checksum " "$DIR/watch.txt"; }
wait_for 5 ring_event >/dev/null
kill -TERM "$WATCHER" 2>/dev/null; wait "$WATCHER" 2>/dev/null
PIDS=$(for p in $PIDS; do [ "$p" = "$WATCHER" ] || printf " %s" "$p"; done)
echo "# the subscriber on n0 received:"; sed 's/^/#   /' "$DIR/watch.txt"
ev=$(grep "^ring [0-9]* $final_checksum " "$DIR/watch.txt" | tail -1)
check "the members channel reported n5 joining" grep -q '^member n5 alive ' "$DIR/watch.txt"
check "the ring channel reported a ring event with the final checksum $final_checksum" [ -n "$ev" ]
set -- $ev
ev_points=${4:-0}; ev_moved=${5:--1}
check "ring event has 6 x 512 = 3072 points (got $ev_points)" [ "$ev_points" = 3072 ]
check "ring event moved $ev_moved is within 0.03 of the measured $frac" \
  awk -v a="$ev_moved" -v b="$frac" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.03) }'
# the moves listed: every one to n5, from an old member, and their shares sum to moved
moves=$(echo "$ev" | "$PY" -c '
import sys
f = sys.stdin.read().split()[5:]
t = [f[i:i + 3] for i in range(0, len(f), 3)]
bad = [x for x in t if len(x) != 3 or x[1] != "n5" or x[0] not in ("n0", "n1", "n2", "n3", "n4")]
print("triples=%d bad=%d sum=%.6f" % (len(t), len(bad), sum(float(x[2]) for x in t if len(x) == 3)))')
echo "# ring event moves: $moves"
check "ring event lists 5 moves, each from an old member to n5 ($moves)" \
  [ "$(kv "$moves" triples)/$(kv "$moves" bad)" = 5/0 ]
check "the moves' shares sum to moved ($(kv "$moves" sum) vs $ev_moved)" \
  awk -v a="$ev_moved" -v b="$(kv "$moves" sum)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.00005) }'
# each move's share against the keys that moved from that member (same sampling error bound)
pairs=$("$PY" - "$DIR/before.n0" "$DIR/after.n0" "$ev" <<'PY'
import sys
old = open(sys.argv[1]).read().split()
new = open(sys.argv[2]).read().split()
f = sys.argv[3].split()[5:]
worst, out = 0.0, []
for i in range(0, len(f) - 2, 3):
    src, dst, share = f[i], f[i + 1], float(f[i + 2])
    got = sum(1 for a, b in zip(old, new) if a == src and b == dst) / len(old)
    worst = max(worst, abs(got - share))
    out.append("%s->%s:%.4f/%.4f" % (src, dst, got, share))
print("worst=%.4f %s" % (worst, " ".join(out)))
PY
)
echo "# per move, measured/reported: $pairs"
check "each move's reported share is within 0.01 of the keys measured moving that way (worst $(kv "$pairs" worst))" \
  awk -v w="$(kv "$pairs" worst)" 'BEGIN { exit !(w != "" && w <= 0.01) }'
echo "# moved fraction: measured over $KEYS keys $frac, reported by the ring $ev_moved"

# An independent ring from proto/PROTOCOL.md ("The ring"), with the system's libxxhash
# through ctypes: the same owners for every key, and the exact moved fraction of the diff.
spec=$("$PY" - "$DIR/before.n0" "$DIR/after.n0" "$KEYS" <<'PY'
import bisect, ctypes, ctypes.util, sys
try:
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
except OSError:
    print("skip=no_libxxhash"); sys.exit(0)
lib.XXH3_64bits.restype = ctypes.c_uint64
lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
h = lambda b: lib.XXH3_64bits(b, len(b))
assert h(b"") == 0x2d06800538d394c2 and h(b"user:42") == 0x9fc1e605fa7174aa
def ring(names, vnodes=512):  # weight 1.0 everywhere: vnodes points each
    names = sorted(n.encode() for n in names)
    pts = sorted((h(bytes([len(n)]) + n + i.to_bytes(4, "big")), k, n.decode())
                 for k, n in enumerate(names) for i in range(vnodes))
    return [p[0] for p in pts], [p[2] for p in pts]
def owner(r, x):
    j = bisect.bisect_left(r[0], x)
    return r[1][j if j < len(r[0]) else 0]
old = ring(["n0", "n1", "n2", "n3", "n4"])
new = ring(["n0", "n1", "n2", "n3", "n4", "n5"])
nkeys = int(sys.argv[3])
agents_old = open(sys.argv[1]).read().split()
agents_new = open(sys.argv[2]).read().split()
keys = [h(b"key:%d" % i) for i in range(nkeys)]
diff_old = sum(owner(old, k) != a for k, a in zip(keys, agents_old))
diff_new = sum(owner(new, k) != a for k, a in zip(keys, agents_new))
# exact moved share: owners are constant between consecutive positions of both rings
v = sorted(set(old[0]) | set(new[0]))
moved = sum(b - a for a, b in zip(v, v[1:]) if owner(old, b) != owner(new, b))
if owner(old, v[0]) != owner(new, v[0]):  # the wrapping arc (vm, 2^64-1] + [0, v1]
    moved += 2**64 - v[-1] + v[0]
print("skip=no mismatches_before=%d mismatches_after=%d exact_moved=%.9f" % (diff_old, diff_new, moved / 2**64))
PY
)
echo "# independent ring from the spec: $spec"
if [ "$(kv "$spec" skip)" = no ]; then
  check "an independent ring built from PROTOCOL.md gives every agent's owner for all $KEYS keys, before and after ($spec)" \
    [ "$(kv "$spec" mismatches_before)/$(kv "$spec" mismatches_after)" = 0/0 ]
  check "the ring event's moved $ev_moved is the exact diff $(kv "$spec" exact_moved) (to 6 decimals)" \
    awk -v a="$ev_moved" -v b="$(kv "$spec" exact_moved)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.0000005) }'
fi

no_sanitizer_reports
# lib.sh's cleanup SIGKILLs the agents: keep bash's "Killed" job notices from following the tally
exec 2>/dev/null
finish
