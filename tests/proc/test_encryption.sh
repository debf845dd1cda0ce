#!/bin/bash
# test_encryption.sh RINGD — sealed gossip between real agents on loopback: three agents
# with one keyring form a cluster and agree, and what they send is sealed; an agent with
# another key, one with another --cluster label, and one in the clear never join, and the
# counters of INFO say why; a keyring readable by others and plain gossip on a
# non-loopback address are refused before anything is bound; `ringd keygen` makes keys.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"

umask 077
"$RINGD" keygen >"$DIR/keys-a" && "$RINGD" keygen >"$DIR/keys-b" || { echo "keygen failed"; exit 1; }
printf '# a comment, then the primary\n\n%s\n' "$(cat "$DIR/keys-b")" >"$DIR/ring-b"

# ---- ringd keygen: 44 base64 characters decoding to 32 bytes, a new key every call
k1=$("$RINGD" keygen); rc1=$?
k2=$("$RINGD" keygen)
check "keygen exits 0" [ "$rc1" -eq 0 ]
check "keygen prints 44 characters" [ "${#k1}" -eq 44 ]
decoded=$(python3 -c 'import base64,sys; print(len(base64.b64decode(sys.argv[1], validate=True)))' "$k1" 2>&1)
check "keygen's key decodes to 32 bytes ($decoded)" [ "$decoded" = 32 ]
check "two keygen calls differ" [ "$k1" != "$k2" ]

# ---- three agents, one keyring, one cluster label: they agree
A="alpha-node"
start "$A-1" "$PORT0" --keyring-file "$DIR/keys-a" --cluster blue || exit 1
start "$A-2" $((PORT0 + 1)) --keyring-file "$DIR/keys-a" --cluster blue --join "127.0.0.1:$PORT0" || exit 1
start "$A-3" $((PORT0 + 2)) --keyring-file "$DIR/keys-a" --cluster blue --join "127.0.0.1:$PORT0" || exit 1
agreed() {
  want=""
  for n in "$A-1" "$A-2" "$A-3"; do
    [ "$(info "$n" members_alive)" = 3 ] && [ "$(info "$n" ring_members)" = 3 ] || return 1
    c=$(info "$n" ring_checksum); [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}
if wait_for 20 agreed >/dev/null; then ok "three sealed agents agree on one ring"; else fail "three sealed agents did not agree within 20 s"; fi
check "the sealed agents log the key's fingerprint, never the key" \
  grep -q "msg=\"gossip sealed\" cluster=blue keys=1 primary_key=[0-9a-f]\{16\}" "$DIR/$A-1.log"
check "the key is not in any log" bash -c "! grep -qF '$(cat "$DIR/keys-a")' $DIR/*.log"
drops() { # the sum of one agent's envelope drop counters for REASON
  echo $(( $(info "$1" "packets_dropped_$2") + $(info "$1" "syncs_dropped_$2") ))
}
check "no drops inside the sealed cluster" [ "$(drops "$A-1" nokey)$(drops "$A-1" plain)$(info "$A-1" packets_malformed)" = 000 ]

# what a sealed agent sends is sealed: ask it to join a listener of ours and read the frame
python3 - "$((PORT0 + 6))" >"$DIR/frame" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); s.settimeout(10)
c, _ = s.accept(); c.settimeout(5)
data = b""
try:
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = c.recv(65536)
        if not chunk: break
        data += chunk
except socket.timeout:
    pass
body = data[4:]
print("header", body[:4].hex(), "plain-name", b"alpha-node" in body, "len", len(body))
PY
lpid=$!
sleep 0.3
q "$A-1" JOIN "127.0.0.1:$((PORT0 + 6))" >/dev/null
wait "$lpid"
check "a sync frame leaves sealed, no member name in the clear ($(cat "$DIR/frame"))" \
  grep -q "^header 52440101 plain-name False" "$DIR/frame"

# ---- intruders: another key, another cluster label, no key at all
alone() { [ "$(info "$1" members_alive)" = 1 ] && [ "$(info "$A-1" members_alive)" = 3 ]; }
grows() { [ "$(drops "$1" "$2")" -gt "$3" ]; }

n0=$(drops "$A-1" nokey)
start wrong-key $((PORT0 + 3)) --keyring-file "$DIR/ring-b" --cluster blue --join "127.0.0.1:$PORT0" || exit 1
if wait_for 10 grows "$A-1" nokey "$n0" >/dev/null; then ok "another key's packets are counted as no key matched ($n0 -> $(drops "$A-1" nokey))"; else fail "another key's packets were not counted"; fi
sleep 3
check "the agent with another key never joins" alone wrong-key
pid=$(pid_of wrong-key); kill -TERM "$pid"; wait "$pid" # its packets must not count below

n0=$(drops "$A-1" nokey)
start red-cluster $((PORT0 + 4)) --keyring-file "$DIR/keys-a" --cluster red --join "127.0.0.1:$PORT0" || exit 1
if wait_for 10 grows "$A-1" nokey "$n0" >/dev/null; then ok "another cluster's packets are counted as no key matched ($n0 -> $(drops "$A-1" nokey))"; else fail "another cluster's packets were not counted"; fi
sleep 3
check "the agent of another cluster never joins, with the same key" alone red-cluster

p0=$(drops "$A-1" plain)
start plain-node $((PORT0 + 5)) --join "127.0.0.1:$PORT0" || exit 1
if wait_for 10 grows "$A-1" plain "$p0" >/dev/null; then ok "plain packets to a sealed agent are counted ($p0 -> $(drops "$A-1" plain))"; else fail "plain packets were not counted"; fi
q "$A-2" JOIN "127.0.0.1:$((PORT0 + 5))" >/dev/null # sealed packets to the plain agent
if wait_for 10 grows plain-node sealed 0 >/dev/null; then ok "sealed packets to a plain agent are counted ($(drops plain-node sealed))"; else fail "sealed packets to a plain agent were not counted"; fi
sleep 2
check "the plain agent never joins" alone plain-node
check "the sealed cluster still agrees" agreed

# ---- refusals before anything is bound: one line, exit 2
refused() { # refused DESC WANT-IN-LINE PORT ARGS...: exit 2, one line, the port still free
  desc=$1; want=$2; port=$3; shift 3
  out=$(timeout 10 "$RINGD" agent --name refused --socket "$DIR/refused.sock" "$@" 2>&1); rc=$?
  lines=$(printf '%s\n' "$out" | wc -l)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$out" == *"$want"* ]] && [ ! -e "$DIR/refused.sock" ]; then
    ok "$desc: exit 2, one line"
  else
    fail "$desc: rc=$rc lines=$lines out=$out"
  fi
}
cp "$DIR/keys-a" "$DIR/keys-open"; chmod 644 "$DIR/keys-open"
refused "a keyring others can read" "group or others can access it (mode 644): chmod 600 it" \
  $((PORT0 + 7)) --bind "127.0.0.1:$((PORT0 + 7))" --keyring-file "$DIR/keys-open"
refused "plain gossip on 0.0.0.0" "needs --keyring-file PATH" $((PORT0 + 7)) \
  --bind "0.0.0.0:$((PORT0 + 7))" --advertise "127.0.0.1:$((PORT0 + 7))"
check "the refusal names the other way out too" \
  bash -c "timeout 10 '$RINGD' agent --name x --bind 0.0.0.0:$((PORT0 + 7)) --socket '$DIR/x.sock' 2>&1 | grep -q -- --insecure-gossip"

start insecure $((PORT0 + 7)) --bind "0.0.0.0:$((PORT0 + 7))" --advertise "127.0.0.1:$((PORT0 + 7))" \
  --insecure-gossip || exit 1
check "with --insecure-gossip it starts on 0.0.0.0 and says so" \
  grep -q 'msg="gossip in the clear"' "$DIR/insecure.log"
pid=$(pid_of insecure); kill -TERM "$pid"; wait "$pid"; rc=$?
check "and leaves with exit 0 ($rc)" [ "$rc" -eq 0 ]

finish
