#!/bin/bash
# test_ring_spec.sh RINGD — the ring of proto/PROTOCOL.md, written again in Python from the
# document alone (tests/spec/ring_spec.py, Debian's python3-xxhash), against real agents.
# The document's own test vectors first; then two clusters of three agents:
#   1. default vnodes, weights 1.5 (with --zone and a --tag), 1.0 and 0.25, the third joining
#      last (the time until every agent's ring checksum agrees is printed);
#   2. --vnodes 64 and weights whose point counts round at the edges: 0.007 (0.448 points,
#      at least 1), 0.024 (1.536, rounds up to 2) and 2.343 (149.952, rounds up to 150).
# In each, every agent's RING rebuilds to its checksum and 100,000 keys (text and random
# bytes) get the owner MOWNER gives, with 0 differences; OWNER key WITHCHECKSUM's checksum is
# RING's and INFO's. A definition with one weight doubled is caught (checksum and owners).
set -u
RINGD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../missing.sh"
SPEC="$HERE/../spec/ring_spec.py"
PROTOCOL="$HERE/../../proto/PROTOCOL.md"
# Debian's python3-xxhash and python3-redis are for Debian's python3, which a version
# manager may shadow.
PY=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import xxhash, redis' 2>/dev/null; then PY=$py; break; fi
done
[ -n "$PY" ] || missing "python3-xxhash and python3-redis"
. "$HERE/lib.sh"

check "PROTOCOL.md's ring test vectors hold in the Python ring" "$PY" "$SPEC" vectors "$PROTOCOL"

# agree NAMES...: every agent has 3 ring members and one checksum
agree() {
  first=$(info "$1" ring_checksum)
  for n in "$@"; do
    [ "$(info "$n" ring_members)" = 3 ] && [ "$(info "$n" ring_checksum)" = "$first" ] || return 1
  done
}

# spec_agrees NAME: ring_spec.py rebuilds NAME's RING and compares 100,000 owners
spec_agrees() {
  "$PY" "$SPEC" check --socket "$DIR/$1.sock" --keys 100000 --seed "$2" >"$DIR/spec-$1.out" 2>&1
  rc=$?
  sed 's/^/# /' "$DIR/spec-$1.out"
  [ $rc = 0 ] && grep -q ", 0 differences" "$DIR/spec-$1.out"
}

# checksums_match NAME: OWNER k WITHCHECKSUM's second element = RING's 5th = INFO's
checksums_match() {
  with=$(q "$1" OWNER some-key WITHCHECKSUM | sed -n 2p)
  ring=$(q "$1" RING | sed -n 5p)
  inf=$(info "$1" ring_checksum)
  owner=$(q "$1" OWNER some-key WITHCHECKSUM | sed -n 1p)
  plain=$(q "$1" OWNER some-key)
  echo "# $1: WITHCHECKSUM $with RING $ring INFO $inf owner $owner/$plain"
  [ ${#with} = 16 ] && [ "$with" = "$ring" ] && [ "$ring" = "$inf" ] && [ "$owner" = "$plain" ]
}

# ---------------------------------------------------------------- cell 1
start a0 "$PORT0" --profile local --weight 1.5 --zone eu-1a --tag role=cache || exit 1
start a1 $((PORT0 + 1)) --profile local --join "127.0.0.1:$PORT0" || exit 1
check "two agents are ready" wait_ready 10 a0 a1
check "two agents agree" wait_for 10 eval '[ "$(info a0 ring_members)" = 2 ] && [ "$(info a1 ring_members)" = 2 ]'
joined_ms=$(now_ms)
start a2 $((PORT0 + 2)) --profile local --weight 0.25 --join "127.0.0.1:$PORT0" || exit 1
if took=$(wait_for 15 agree a0 a1 a2); then
  ok "a joiner's ring agrees on every agent ($(( $(now_ms) - joined_ms )) ms from its start, polled every 0.1 s)"
else
  fail "the three agents agree on one ring checksum"
fi
for n in a0 a1 a2; do
  check "$n: the Python ring equals the agent's on 100,000 keys" spec_agrees $n 1
  check "$n: OWNER WITHCHECKSUM's checksum is RING's and INFO's" checksums_match $n
done
check "RING shows a0's zone and weight, a2's weight" \
  eval '[ "$(q a1 RING | tr "\n" " " | grep -o "a0 1500 eu-1a a0 a1 1000  a1 a2 250  a2")" != "" ]'

# A definition with one weight changed: the checksum and some owners differ.
"$PY" "$SPEC" dump --socket "$DIR/a0.sock" "$DIR/ring.json"
sed 's/^\( *\)1500,$/\13000,/' "$DIR/ring.json" >"$DIR/ring-altered.json"
altered_is_caught() {
  ! cmp -s "$DIR/ring.json" "$DIR/ring-altered.json" || return 1
  "$PY" "$SPEC" check --file "$DIR/ring.json" --socket "$DIR/a0.sock" --keys 2000 >/dev/null || return 1
  "$PY" "$SPEC" check --file "$DIR/ring-altered.json" --socket "$DIR/a0.sock" --keys 2000 >"$DIR/altered.out" 2>&1
  rc=$?
  [ $rc = 1 ] && grep -q "FAIL checksum differs" "$DIR/altered.out" && ! grep -q ", 0 differences" "$DIR/altered.out"
}
check "a definition from a file checks, and one with a weight doubled is caught" altered_is_caught

# ---------------------------------------------------------------- cell 2
P=$((PORT0 + 10))
start b0 "$P" --profile local --vnodes 64 --weight 0.007 || exit 1
start b1 $((P + 1)) --profile local --vnodes 64 --weight 0.024 --join "127.0.0.1:$P" || exit 1
start b2 $((P + 2)) --profile local --vnodes 64 --weight 2.343 --join "127.0.0.1:$P" || exit 1
check "the vnodes-64 agents agree" wait_for 15 agree b0 b1 b2
check "their ring has 1 + 2 + 150 points" eval '[ "$(info b0 ring_points)" = 153 ]'
for n in b0 b1 b2; do
  check "$n: the Python ring equals the agent's on 100,000 keys" spec_agrees $n 2
  check "$n: OWNER WITHCHECKSUM's checksum is RING's and INFO's" checksums_match $n
done

ringd_ring_prints() {
  out=$("$RINGD" ring --socket "$DIR/b0.sock") || return 1
  echo "$out" | sed 's/^/# /'
  [ "$(echo "$out" | sed -n 1p)" = "spec 1 mode ringd vnodes 64 version $(info b0 ring_version) checksum $(info b0 ring_checksum) points 153" ] &&
    echo "$out" | grep -qx "b1       0.024  -         b1"
}
check "ringd ring prints the definition readably" ringd_ring_prints

no_sanitizer_reports
finish
