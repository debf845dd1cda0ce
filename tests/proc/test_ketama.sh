#!/bin/bash
# test_ketama.sh RINGD — ketama mode with real agents, held against libmemcached.
#  (a) a1, a2, a3 start with --ring ketama: a1 and a2 name their memcached server with a
#      ketama tag (one on the default port 11211, one on 11212), a3 has none (its name is its
#      server); weights 2, 1, 3. INFO says ring_mode:ketama on all three, one checksum;
#  (b) 2,000 keys asked with MOWNER and a few with OWNER: every owner is the server that
#      libmemcached gives for the same servers and weights (tests/proc/ketama_owners.c);
#  (c) a4 joins without --ring and adopts ketama (ring_params:adopted); the four agree with
#      libmemcached again;
#  (d) a5 joins with --ring ringd: it exits 1 with one error line; a6 joins without --ring
#      but with --weight 1.5: it cannot adopt ketama and exits 1 with one error line, and
#      never enters the ring; `ringd agent --ring ketama --weight 1.5` is a bad option (2);
#  (e) WEIGHT 1.5 is answered -ERR in a ketama cluster, WEIGHT 4 is taken, and the owners
#      follow libmemcached with a1 at weight 4;
#  (f) TAGS SET ketama on a3 moves a3 to the new server's points, as libmemcached places it.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../missing.sh"
OWNERS=${RD_KETAMA_OWNERS:-}
[ -x "$OWNERS" ] || missing "rd_ketama_owners was not built (libmemcached-dev; RD_KETAMA_OWNERS)"

P1=$PORT0 P2=$((PORT0 + 1)) P3=$((PORT0 + 2)) P4=$((PORT0 + 3)) P5=$((PORT0 + 4)) P6=$((PORT0 + 5))
FLAGS=(--profile local --log-level info)

start a1 "$P1" "${FLAGS[@]}" --ring ketama --weight 2 --tag ketama=10.0.0.1:11211
start a2 "$P2" "${FLAGS[@]}" --ring ketama --tag ketama=10.0.0.2:11212 --join "127.0.0.1:$P1"
start a3 "$P3" "${FLAGS[@]}" --ring ketama --weight 3 --join "127.0.0.1:$P1"
wait_ready 10 a2 a3 || true
agreed() { # agreed N NAME...: each has N ring members and a1's checksum
  n=$1; shift
  for a in "$@"; do
    [ "$(info "$a" ring_members)" = "$n" ] && [ "$(info "$a" ring_checksum)" = "$(info a1 ring_checksum)" ] || return 1
  done
}
check "(a) a1, a2, a3 build one ring of three" wait_for 10 agreed 3 a1 a2 a3
check "(a) INFO says ring_mode ketama" test "$(info a1 ring_mode) $(info a2 ring_mode) $(info a3 ring_mode)" = "ketama ketama ketama"
check "(a) the parameters are set, not adopted" test "$(info a3 ring_params)" = set

# KEYS: 2,000 keys of assorted shapes, one a line
seq 2000 | awk '{ if ($1 % 3 == 0) print "user:" $1; else if ($1 % 3 == 1) print "k" $1 "-" ($1 * 7919 % 10007); else print "session/" ($1 * 31) "/x" }' >"$DIR/keys"

# compare AGENT SERVERS...: MOWNER of every key (in batches of 500) against libmemcached's
compare() {
  agent=$1; shift
  "$OWNERS" "$@" <"$DIR/keys" >"$DIR/want" || return 1
  : >"$DIR/got"
  split -l 500 "$DIR/keys" "$DIR/batch."
  for b in "$DIR"/batch.*; do
    mapfile -t ks <"$b"
    q "$agent" MOWNER "${ks[@]}" >>"$DIR/got"
    rm -f "$b"
  done
  diff -q "$DIR/want" "$DIR/got" >/dev/null
}
SERVERS3=(a1,2,10.0.0.1:11211 a2,1,10.0.0.2:11212 a3,3,a3)
check "(b) MOWNER on a2 agrees with libmemcached on 2,000 keys" compare a2 "${SERVERS3[@]}"
check "(b) ... and on a3" compare a3 "${SERVERS3[@]}"
check "(b) every member owns some of them" test "$(sort -u "$DIR/got" | tr '\n' ' ')" = "a1 a2 a3 "
one_owner() { [ "$(q a1 OWNER "$1")" = "$(printf '%s\n' "$1" | "$OWNERS" "${SERVERS3[@]}")" ]; }
for k in foo bar hello user:1000 session:42; do
  check "(b) OWNER $k is libmemcached's" one_owner "$k"
done

# (c) a joiner without --ring adopts the cluster's ketama ring
start a4 "$P4" "${FLAGS[@]}" --join "127.0.0.1:$P1"
check "(c) a4 joins" wait_ready 10 a4
check "(c) a4 adopted ketama" test "$(info a4 ring_mode) $(info a4 ring_params)" = "ketama adopted"
check "(c) a4 logged the adoption" \
  grep -qE 'msg="ring parameters adopted" ours="spec=1 mode=ringd vnodes=512" cluster="spec=1 mode=ketama vnodes=512"' "$DIR/a4.log"
check "(c) four agents, one ring" wait_for 10 agreed 4 a1 a2 a3 a4
check "(c) a4's owners are libmemcached's with four servers" \
  compare a4 "${SERVERS3[@]}" a4,1,a4

# (d) joiners that cannot share the ring stop with exit status 1 and one error line
ring4=$(info a1 ring_checksum)
joins_and_stops() { # NAME PORT FLAGS...: 0 if it exits 1 within 10 s having logged one error
  name=$1 port=$2; shift 2
  "$RINGD" agent --name "$name" --bind "127.0.0.1:$port" --socket "$DIR/$name.sock" "${FLAGS[@]}" \
    --join "127.0.0.1:$P1" "$@" 2>"$DIR/$name.log" &
  pid=$!
  PIDS="$PIDS $pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && return 1
  wait "$pid"
  [ $? = 1 ] && [ "$(grep -c 'level=error' "$DIR/$name.log")" = 1 ]
}
check "(d) a5 with --ring ringd exits 1" joins_and_stops a5 "$P5" --ring ringd
check "(d) a5's line names both modes" \
  grep -qE 'level=error msg="ring parameters differ from the cluster.s: stopping" ours="spec=1 mode=ringd vnodes=512" cluster="spec=1 mode=ketama vnodes=512"' "$DIR/a5.log"
check "(d) a6 with --weight 1.5 exits 1" joins_and_stops a6 "$P6" --weight 1.5
check "(d) a6's line says why" \
  grep -qE 'level=error msg="cannot adopt the cluster.s ketama ring: stopping" .*error="--weight 1.500 is not a whole number' "$DIR/a6.log"
"$RINGD" agent --name a7 --socket "$DIR/a7.sock" --ring ketama --weight 1.5 2>"$DIR/a7.log"
check "(d) --ring ketama --weight 1.5 is a bad option (exit 2) at start" test $? = 2
check "(d) ... saying why" grep -q 'weight 1.500 is not a whole number' "$DIR/a7.log"
check "(d) the cluster never took a5 in" bash -c "! redis-cli -s '$DIR/a1.sock' MEMBERS | grep -qx a5"
# a6 adopted from a1's answer, so a1 merged its record; with its fractional weight it is
# left out of the ketama ring while it lasts
check "(d) a6 never entered the ring" test "$(info a1 ring_checksum) $(info a1 ring_members)" = "$ring4 4"
check "(d) a1 said why" grep -q 'msg="members with a fractional weight left out of the ketama ring" members=1 member=a6' "$DIR/a1.log"

# (e) WEIGHT takes whole weights only in a ketama cluster
check "(e) WEIGHT 1.5 is refused" bash -c "redis-cli -s '$DIR/a1.sock' WEIGHT 1.5 | grep -q 'not a whole number'"
before=$(info a1 ring_checksum)
check "(e) WEIGHT 4 is taken" test "$(q a1 WEIGHT 4)" = OK
reweighed() { [ "$(info a3 ring_checksum)" != "$before" ] && agreed 4 a1 a2 a3 a4; }
check "(e) the ring follows" wait_for 10 reweighed
check "(e) owners are libmemcached's with a1 at weight 4" \
  compare a3 a1,4,10.0.0.1:11211 a2,1,10.0.0.2:11212 a3,3,a3 a4,1,a4

# (f) a ketama tag set at run time names the member's server from then on
before=$(info a1 ring_checksum)
check "(f) TAGS SET ketama on a3 is taken" test "$(q a3 TAGS SET ketama 10.0.0.9:11213)" = OK
check "(f) the ring follows" wait_for 10 reweighed
check "(f) owners are libmemcached's with a3 at 10.0.0.9:11213" \
  compare a2 a1,4,10.0.0.1:11211 a2,1,10.0.0.2:11212 a3,3,10.0.0.9:11213 a4,1,a4

no_sanitizer_reports
finish
