#!/bin/bash
# test_zones.sh RINGD — zone-aware replicas end to end. Six agents on loopback in three zones
# (--zone a, b, c; two each) converge on one ring; OWNERS for 300 keys, asked over redis-cli
# of every agent, is identical everywhere, its first three members are always in three
# different zones, and every answer is what an independent implementation of PROTOCOL.md's
# rule ("Owners (replicas)", written here in Python over the system's libxxhash) gives, which
# also shows how often the plain clockwise walk would have put two replicas in one zone.
# Then a seventh agent joins zone a and an eighth comes without a zone (a zone of its own):
# after each, all agents agree again, the answers still follow the rule and span three
# zones (four with the eighth), and the share of keys whose replica set changed is printed
# next to what the plain walk would have changed. Last, the eighth takes zone c at run time
# (its config file and SIGHUP): every ring follows, and the answers follow the rule again.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
command -v redis-cli >/dev/null || { echo "redis-cli not found"; exit 1; }
PY=$(python3 -c 'import sys; print(sys.executable)')
KEYS=300
N=3

# The rule, from the document alone: ring points, the walk, ranks, (rank, walk order).
#   zones.py check ZONES_FILE ANSWERS_FILE N KEYS  -> "mismatches=M spread=S plain_same_zone=P"
#   zones.py moved OLD_ZONES NEW_ZONES N KEYS      -> "zoned=F plain=F" (fractions of keys
#                                                     whose set of N replicas changed)
# ZONES_FILE: one "name zone" per line (zone "-" for none); ANSWERS_FILE: redis-cli's output
# of OWNERS key:i N for i < KEYS, N lines per key.
cat >"$DIR/zones.py" <<'PY'
import bisect, ctypes, ctypes.util, sys
lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
lib.XXH3_64bits.restype = ctypes.c_uint64
lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
h = lambda b: lib.XXH3_64bits(b, len(b))
assert h(b"user:42") == 0x9fc1e605fa7174aa

def members(path):
    out = {}
    for line in open(path):
        name, zone = line.split()
        out[name] = "" if zone == "-" else zone
    return out

def ring(ms, vnodes=512):
    names = sorted(ms, key=lambda n: n.encode())
    pts = sorted((h(bytes([len(n)]) + n.encode() + i.to_bytes(4, "big")), k)
                 for k, n in enumerate(names) for i in range(vnodes))
    return names, [p[0] for p in pts], [p[1] for p in pts]

def walk(r, key):
    names, pos, own = r
    j = bisect.bisect_left(pos, h(key.encode()))
    seen, order = set(), []
    for s in range(len(pos)):
        m = own[(j + s) % len(pos)]
        if m not in seen:
            seen.add(m)
            order.append(names[m])
            if len(order) == len(names):
                break
    return order

def zoned(order, ms, n):
    count, ranked = {}, []
    for i, m in enumerate(order):
        z = ms[m] or "\0" + m  # no zone: a zone of its own
        ranked.append((count.get(z, 0), i, m))
        count[z] = count.get(z, 0) + 1
    return [m for _, _, m in sorted(ranked)[:n]]

def zones_of(ans, ms):
    return len({ms[m] or "\0" + m for m in ans})

mode = sys.argv[1]
n, nkeys = int(sys.argv[4]), int(sys.argv[5])
keys = ["key:%d" % i for i in range(nkeys)]
if mode == "check":
    ms = members(sys.argv[2])
    r = ring(ms)
    lines = open(sys.argv[3]).read().split()
    assert len(lines) == n * nkeys, (len(lines), n * nkeys)
    nz = len({ms[m] or "\0" + m for m in ms})
    bad = spread = plain_same = 0
    for i, k in enumerate(keys):
        got = lines[i * n:(i + 1) * n]
        order = walk(r, k)
        bad += got != zoned(order, ms, n)
        spread += zones_of(got, ms) == min(n, nz)
        plain_same += zones_of(order[:n], ms) < min(n, nz)
    print("mismatches=%d spread=%d plain_same_zone=%d" % (bad, spread, plain_same))
else:
    a, b = members(sys.argv[2]), members(sys.argv[3])
    ra, rb = ring(a), ring(b)
    zm = pm = 0
    for k in keys:
        wa, wb = walk(ra, k), walk(rb, k)
        zm += set(zoned(wa, a, n)) != set(zoned(wb, b, n))
        pm += set(wa[:n]) != set(wb[:n])
    print("zoned=%.4f plain=%.4f" % (zm / nkeys, pm / nkeys))
PY

for i in $(seq 0 $((KEYS - 1))); do echo "OWNERS key:$i $N"; done >"$DIR/cmds"
: >"$DIR/zones"
names=""
# add NAME ZONE [flags]: start an agent (ZONE "-" for none) joining n0 unless it is n0
add() {
  name=$1 zone=$2; shift 2
  i=${name#n}
  extra=""
  [ "$name" = n0 ] || extra="--join 127.0.0.1:$PORT0"
  if [ "$zone" = - ]; then start "$name" $((PORT0 + i)) $extra "$@" || exit 1
  else start "$name" $((PORT0 + i)) $extra --zone "$zone" "$@" || exit 1; fi
  names="$names $name"
  echo "$name $zone" >>"$DIR/zones"
}

# ask_all PREFIX: every agent's OWNERS answers into $DIR/PREFIX.NAME, over redis-cli
ask_all() {
  for n in $names; do
    redis-cli -s "$DIR/$n.sock" <"$DIR/cmds" >"$DIR/$1.$n" 2>&1 || return 1
    [ "$(wc -l <"$DIR/$1.$n")" = $((KEYS * N)) ] || { echo "# $n: $(head -3 "$DIR/$1.$n")"; return 1; }
  done
}
all_same() {
  for n in $names; do cmp -s "$DIR/$1.n0" "$DIR/$1.$n" || { echo "# $n differs from n0"; return 1; }; done
}
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# round LABEL COUNT ZONES: converge, ask everyone, check against the rule
round() {
  label=$1 count=$2 zones=$3
  if t=$(wait_for 20 agreed "$count"); then ok "$count agents converge on ring checksum $(info n0 ring_checksum) after ${t} ms"
  else fail "$count agents did not converge within 20 s"; return; fi
  # shellcheck disable=SC2086
  check "every agent is ready" wait_ready 10 $names
  check "OWNERS key:0..$((KEYS - 1)) $N asked over redis-cli of each of $count agents" ask_all "$label"
  check "all $count agents give identical OWNERS answers" all_same "$label"
  cp "$DIR/zones" "$DIR/zones.$label"
  r=$("$PY" "$DIR/zones.py" check "$DIR/zones.$label" "$DIR/$label.n0" "$N" "$KEYS")
  echo "# $label: $r"
  check "every answer is the rule's (independent implementation of PROTOCOL.md): $(kv "$r" mismatches) mismatches" \
    [ "$(kv "$r" mismatches)" = 0 ]
  check "the $N replicas of every key are in $zones different zones ($(kv "$r" spread) of $KEYS)" \
    [ "$(kv "$r" spread)" = "$KEYS" ]
  echo "# the plain clockwise walk would have put two of $N replicas in one zone for $(kv "$r" plain_same_zone) of $KEYS keys"
}

add n0 a
add n1 a
add n2 b
add n3 b
add n4 c
add n5 c
round six 6 3
check "zones change answers: the plain walk would have repeated a zone for some keys" \
  [ "$(kv "$r" plain_same_zone)" -gt 0 ]
check "OWNERS's first member is OWNER's" \
  [ "$(q n3 OWNERS key:7 3 | head -1)" = "$(q n3 OWNER key:7)" ]
check "OWNERS key 6 on 6 agents: the last three again one per zone" \
  sh -c "[ \"\$(redis-cli -s '$DIR/n2.sock' OWNERS key:7 6 | tail -3 | sed 's/n[01]/a/;s/n[23]/b/;s/n[45]/c/' | sort | tr -d '\n')\" = abc ]"

add n6 a
round join-a 7 3
m=$("$PY" "$DIR/zones.py" moved "$DIR/zones.six" "$DIR/zones.join-a" "$N" "$KEYS")
echo "# a member joins zone a: replica sets changed for zone-aware $(kv "$m" zoned), plain walk $(kv "$m" plain) of $KEYS keys"
check "the new member n6 is among the replicas of some keys" grep -qx n6 "$DIR/join-a.n0"

printf 'log-level = info\n' >"$DIR/n7.conf"
add n7 - --config "$DIR/n7.conf"
round join-none 8 3
m=$("$PY" "$DIR/zones.py" moved "$DIR/zones.join-a" "$DIR/zones.join-none" "$N" "$KEYS")
echo "# a member without a zone joins: replica sets changed for zone-aware $(kv "$m" zoned), plain walk $(kv "$m" plain) of $KEYS keys"

# n7 takes zone c at run time (config file and SIGHUP): every agent rebuilds its ring with it
was=$(info n0 ring_checksum)
printf 'log-level = info\nzone = c\n' >"$DIR/n7.conf"
kill -HUP "$(pid_of n7)"
sed -i 's/^n7 -$/n7 c/' "$DIR/zones"
moved_on() { for n in $names; do [ "$(info "$n" ring_checksum)" != "$was" ] || return 1; done; }
if t=$(wait_for 15 moved_on); then ok "n7's new zone reached every agent's ring after ${t} ms"
else fail "n7's new zone did not reach every agent's ring within 15 s"; fi
round rezone 8 3
# the edges of n with zones: all members once for a huge n, nothing for 0, refusals
check "OWNERS key:1 1000000 gives each of the 8 members once" \
  sh -c "[ \"\$(redis-cli -s '$DIR/n5.sock' OWNERS key:1 1000000 | sort -u | wc -l)\" = 8 ] && [ \"\$(redis-cli -s '$DIR/n5.sock' OWNERS key:1 1000000 | wc -l)\" = 8 ]"
check "OWNERS key:1 0 gives an empty array" [ -z "$(q n5 OWNERS key:1 0)" ]
for bad in -1 1000001 3x ''; do
  check "OWNERS key:1 '$bad' is refused" sh -c "redis-cli -s '$DIR/n5.sock' OWNERS key:1 '$bad' | grep -q '^ERR'"
done
check "OWNERS with a missing or an extra argument is refused" \
  sh -c "redis-cli -s '$DIR/n5.sock' OWNERS key:1 | grep -q '^ERR' && redis-cli -s '$DIR/n5.sock' OWNERS key:1 3 4 | grep -q '^ERR'"
check "n7 is listed in zone c" sh -c "redis-cli -s '$DIR/n0.sock' MEMBERS | grep -A12 -x n7 | grep -qx c"

no_sanitizer_reports
# lib.sh's cleanup SIGKILLs the agents: keep bash's "Killed" job notices from following the tally
exec 2>/dev/null
finish
