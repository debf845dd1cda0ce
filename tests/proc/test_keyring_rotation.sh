#!/bin/bash
# test_keyring_rotation.sh RINGD — rotating the gossip key of a running cluster, end to end.
# Three agents on loopback, each with its own keyring file holding key A:
#   (a) full rotation with `ringd keys`: install B on every agent, use B on every agent,
#       remove A on every agent, with gossip (and a forced TCP sync) after every step: no
#       packet or frame is ever dropped, no member is ever suspected, all agree; the files
#       on disk then hold exactly B, mode 0600; INFO shows one key, B's fingerprint;
#   (b) a forger sealing with A is dropped and counted as no key matched; sealing with B
#       (a key holder) it is answered, with an ACK sealed with B;
#   (c) an agent that was down during the rotation and starts with A alone never joins and
#       its packets are counted as no key matched; with B in its file it joins;
#   (d) SIGHUP: a key added to a file by hand is picked up (KEYRING LIST shows it); an
#       invalid file leaves the old ring in force and the agent running; a file edited by
#       hand and not reloaded is not overwritten by a KEYRING change; a change whose file
#       cannot be written is not made; an agent without a keyring says so; a SIGHUP while
#       an agent still starts does not kill it;
#   (e) a client running as nobody lists the keys but gets -NOPERM for INSTALL, USE and
#       REMOVE, and its connection answers on (needs root, as the CI has).
# About 40 s (a minute or two with the sanitizers).
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
FORGER="python3 $(dirname "$0")/forger.py"
command -v python3 >/dev/null || { echo "python3 not found"; exit 1; }
umask 077

# fp KEY: the fingerprint as PROTOCOL.md defines it, computed here independently of ringd
fp() { python3 -c 'import base64,hashlib,sys; print(hashlib.blake2b(base64.b64decode(sys.argv[1]), digest_size=32).hexdigest()[:16])' "$1"; }
keys_in() { grep -v -e '^#' -e '^[[:space:]]*$' "$1"; } # the key lines of a keyring file
expect() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi; }
keys() { n=$1; shift; "$RINGD" keys "$@" --socket "$DIR/$n.sock"; } # keys NAME ARGS...
list() { q "$1" KEYRING LIST | paste -sd' '; }

A=$("$RINGD" keygen); B=$("$RINGD" keygen); C=$("$RINGD" keygen)
FA=$(fp "$A"); FB=$(fp "$B"); FC=$(fp "$C")
names="k1 k2 k3"
for n in $names k4; do printf '%s\n' "$A" >"$DIR/$n.keys"; done
chmod 755 "$DIR" # (e): nobody must reach the sockets inside

start k1 "$PORT0" --keyring-file "$DIR/k1.keys" --cluster rot --socket-mode 0666 || exit 1
start k2 $((PORT0 + 1)) --keyring-file "$DIR/k2.keys" --cluster rot --socket-mode 0666 \
  --join "127.0.0.1:$PORT0" || exit 1
start k3 $((PORT0 + 2)) --keyring-file "$DIR/k3.keys" --cluster rot --socket-mode 0666 \
  --join "127.0.0.1:$PORT0" || exit 1
agreed() { # agreed N NAMES...: every agent named sees N alive, none suspect, one ring
  want_n=$1; shift; want=""
  for n in "$@"; do
    [ "$(info "$n" members_alive)" = "$want_n" ] && [ "$(info "$n" members_suspect)" = 0 ] || return 1
    c=$(info "$n" ring_checksum); [ -z "$want" ] && want=$c
    [ "$c" = "$want" ] || return 1
  done
}
if t=$(wait_for 20 agreed 3 $names); then ok "3 agents with key A agree after $t ms"
else fail "3 agents with key A did not agree within 20 s"; finish; exit 1; fi
expect "KEYRING LIST before: A alone, primary" "$(list k1)" "$FA primary"

# ---------------------------------------------------------------- (a) the rotation
drops() { # the sum, over every agent named, of the envelope drops and malformed counts
  sum=0
  for n in "$@"; do
    for f in packets_dropped_nokey packets_dropped_plain syncs_dropped_nokey syncs_dropped_plain \
      packets_malformed syncs_malformed; do
      sum=$((sum + $(info "$n" $f)))
    done
  done
  echo "$sum"
}
syncs_in() { sum=0; for n in $names; do sum=$((sum + $(info "$n" syncs_in))); done; echo "$sum"; }
synced_past() { [ "$(syncs_in)" -gt "$1" ]; }
suspicions() { cat "$DIR"/k[1-4].log | grep -cE 'msg="member (suspect|dead)"'; }
step() { # step DESC ARGS...: `ringd keys ARGS` on every agent, gossip after each, then a sync
  desc=$1; shift; bad=""
  for n in $names; do
    out=$(keys "$n" "$@" 2>&1) || bad="$bad $n:$out"
    sleep 1 # a probe round or so with the agents on different rings
  done
  s0=$(syncs_in)
  q k2 JOIN "127.0.0.1:$PORT0" >/dev/null; q k3 JOIN "127.0.0.1:$((PORT0 + 1))" >/dev/null
  wait_for 5 synced_past "$s0" >/dev/null
  expect "(a) $desc on every agent: exit 0, no drop, no suspicion, a TCP sync went through" \
    "${bad:-none} $(drops $names) $(suspicions) $([ "$(syncs_in)" -gt "$s0" ] && echo synced)" "none 0 0 synced"
}
step "install B" install "$B"
expect "(a) after install: A primary, B installed" "$(list k2)" "$FA primary $FB installed"
step "use B" use "${FB:0:6}" # a prefix is enough
expect "(a) after use: B primary, A installed" "$(list k3)" "$FB primary $FA installed"
step "remove A" remove "$FA"
for n in $names; do
  expect "(a) $n: KEYRING LIST is B alone" "$(list "$n")" "$FB primary"
  expect "(a) $n's file holds exactly B, mode 600" "$(keys_in "$DIR/$n.keys") $(stat -c %a "$DIR/$n.keys")" "$B 600"
  expect "(a) $n's INFO: one key, B's fingerprint" "$(info "$n" keyring_keys) $(info "$n" keyring_primary)" "1 $FB"
done
sleep 2
if agreed 3 $names; then ok "(a) all three alive and agreeing after the rotation"; else fail "(a) the cluster does not agree after the rotation"; fi
expect "(a) no drop, no suspect or dead line in any log" "$(drops $names) $(suspicions)" "0 0"
expect "(a) every change logged once, by fingerprint" \
  "$(grep -c 'msg="keyring key installed" key='"$FB"' keys=2' "$DIR/k1.log") $(grep -c 'msg="keyring primary key changed" key='"$FB"'.*was_primary='"$FA" "$DIR/k1.log") $(grep -c 'msg="keyring key removed" key='"$FA"' keys=1 primary_key='"$FB" "$DIR/k1.log")" "1 1 1"

# ---------------------------------------------------------------- (b) forgers
n0=$(info k1 packets_dropped_nokey)
r=$($FORGER sealed "$PORT0" "$A" rot k1)
grew() { [ "$(info k1 packets_dropped_nokey)" -gt "$n0" ]; }
wait_for 3 grew >/dev/null
expect "(b) a PING sealed with the old key A: no reply, counted as no key matched ($n0 -> $(info k1 packets_dropped_nokey))" \
  "$r $(grew && echo counted)" "sent=65 replies=0 opened=0 acks=0 counted"
r=$($FORGER sealed "$PORT0" "$B" rot k1)
expect "(b) a PING sealed with B is accepted: an ACK sealed with B comes back" \
  "$(sed 's/replies=[0-9]* //' <<<"$r")" "sent=65 opened=1 acks=1"

# ---------------------------------------------------------------- (c) down during the rotation
nokey() { echo $(($(info k1 packets_dropped_nokey) + $(info k1 syncs_dropped_nokey))); }
n0=$(nokey)
grew() { [ "$(nokey)" -gt "$n0" ]; }
start k4 $((PORT0 + 3)) --keyring-file "$DIR/k4.keys" --cluster rot --join "127.0.0.1:$PORT0" || exit 1
if wait_for 10 grew >/dev/null; then ok "(c) an agent still on A: its packets and syncs are counted as no key matched ($n0 -> $(nokey))"
else fail "(c) the agent on A was not counted"; fi
sleep 2
expect "(c) ... and it never joins: INFO joined:0 there" "$(info k4 joined) $(info k4 members_alive) $(info k1 members_alive)" "0 1 3"
pid=$(pid_of k4); kill -TERM "$pid"; wait "$pid"
printf '%s\n' "$B" >"$DIR/k4.keys"
start k4 $((PORT0 + 3)) --keyring-file "$DIR/k4.keys" --cluster rot --join "127.0.0.1:$PORT0" || exit 1
names="k1 k2 k3 k4"
if t=$(wait_for 20 agreed 4 $names); then ok "(c) with B in its file it joins: 4 agree after $t ms"
else fail "(c) with B in its file it did not join within 20 s"; fi

# ---------------------------------------------------------------- (d) SIGHUP and the file
printf '%s\n' "$C" >>"$DIR/k3.keys"
kill -HUP "$(pid_of k3)"
shows_c() { [ "$(list k3)" = "$FB primary $FC installed" ]; }
if wait_for 5 shows_c >/dev/null; then ok "(d) a key added by hand is picked up on SIGHUP: $(list k3)"
else fail "(d) SIGHUP did not load the edited file: $(list k3)"; fi
check "(d) ... logged as reloaded, by fingerprint" \
  grep -q 'msg="keyring reloaded" file='"$DIR"'/k3.keys keys=2 primary_key='"$FB"' added=1 removed=0 fingerprints='"$FB,$FC" "$DIR/k3.log"
expect "(d) ... and INFO counts it" "$(info k3 keyring_keys)" 2

printf 'this is not a key\n' >"$DIR/k2.keys"
kill -HUP "$(pid_of k2)"
sleep 0.5
expect "(d) an invalid file on SIGHUP: the agent runs on with B" \
  "$(kill -0 "$(pid_of k2)" 2>&1 && echo running) $(list k2)" "running $FB primary"
check "(d) ... and logs the file and the reason" \
  grep -q 'msg="keyring reload failed: the keys in force stay" file='"$DIR"'/k2.keys error=".*:1: not a base64 key of 32 bytes" keys=1 primary_key='"$FB" "$DIR/k2.log"
out=$(keys k2 install "$C" 2>&1); rc=$?
expect "(d) a change while the file does not load: exit 1, nothing changed" \
  "$rc $(list k2) $(keys_in "$DIR/k2.keys")" "1 $FB primary this is not a key"
printf '%s\n' "$B" >"$DIR/k2.keys"

printf '%s\n' "$C" >>"$DIR/k1.keys" # edited by hand, not reloaded
out=$(keys k1 install "$C" 2>&1); rc=$?
expect "(d) a change while the file holds other keys than those in force: exit 1, the edit kept" \
  "$rc $(list k1) $(keys_in "$DIR/k1.keys" | wc -l)" "1 $FB primary 2"
check "(d) ... the error says to send SIGHUP ($out)" grep -q "no longer holds the keys in force.*SIGHUP" <<<"$out"
printf '%s\n' "$B" >"$DIR/k1.keys"

mkdir "$DIR/k1.keys.tmp" # the new file cannot be created
out=$(keys k1 install "$C" 2>&1); rc=$?
expect "(d) a change whose file cannot be written: exit 1, not made" "$rc $(list k1)" "1 $FB primary"
check "(d) ... with the reason ($out)" grep -q "^ringd: ERR cannot save the keyring: .*k1.keys.tmp" <<<"$out"
rmdir "$DIR/k1.keys.tmp"
expect "(d) then it works: the fingerprint is printed" "$(keys k1 install "$C")" "$FC"
expect "(d) ... and the file follows" "$(keys_in "$DIR/k1.keys" | paste -sd' ')" "$B $C"

start k0 $((PORT0 + 5)) || exit 1 # no keyring: gossip in the clear
out=$(keys k0 install "$C" 2>&1); rc=$?
expect "(d) without a keyring a change is refused, saying how to start with one" \
  "$rc $(grep -c -- '--keyring-file PATH' <<<"$out")" "1 1"
out=$(keys k0 list 2>&1); rc=$?
expect "(d) ... and list says gossip is in the clear" "$rc $out" "0 ringd: no keyring: this agent gossips in the clear"
kill -HUP "$(pid_of k0)"; sleep 0.3
expect "(d) ... and SIGHUP has nothing to reload, and does not stop it" \
  "$(kill -0 "$(pid_of k0)" 2>&1 && echo running) $(grep -c 'msg="keyring: nothing to reload"' "$DIR/k0.log")" "running 1"
# SIGHUP while an agent is still starting: here it waits to read a keyring that is a FIFO
mkfifo "$DIR/fifo.keys"
"$RINGD" agent --name h1 --bind "127.0.0.1:$((PORT0 + 6))" --socket "$DIR/h1.sock" \
  --keyring-file "$DIR/fifo.keys" 2>"$DIR/h1.log" &
hpid=$!
sleep 0.5
kill -HUP "$hpid"
sleep 0.2
timeout 5 sh -c "echo x >'$DIR/fifo.keys'"
wait "$hpid"; rc=$?
expect "(d) SIGHUP during start-up does not kill it: it goes on to refuse the FIFO (exit 2)" \
  "$rc $(grep -c 'not a regular file' "$DIR/h1.log")" "2 1"
for n in k1 k2 k3 k4; do kill -HUP "$(pid_of "$n")"; done
sleep 1
if agreed 4 k1 k2 k3 k4; then ok "(d) after every SIGHUP, all four run and agree"; else fail "(d) the cluster does not agree after SIGHUPs"; fi

# ---------------------------------------------------------------- (e) who may change keys
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "# (e) skipped: needs root and setpriv to run a client as nobody"
else
  as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
  NOPERM="NOPERM this command needs root or the agent's user"
  out=$(printf '%s\n' "KEYRING LIST" "KEYRING INSTALL $A" "KEYRING USE $FC" "KEYRING REMOVE $FC" PING |
    as_nobody redis-cli -s "$DIR/k1.sock" 2>&1 | grep -v '^$' | paste -sd'|')
  expect "(e) nobody: LIST answered, INSTALL, USE and REMOVE refused, the connection answers on" \
    "$out" "$FB|primary|$FC|installed|$NOPERM|$NOPERM|$NOPERM|PONG"
  expect "(e) ... \`ringd keys list\` as nobody: exit 0" "$(as_nobody "$RINGD" keys list --socket "$DIR/k1.sock"; echo $?)" \
    "$FB primary
$FC installed
0"
  out=$(as_nobody "$RINGD" keys remove "$FC" --socket "$DIR/k1.sock" 2>&1)
  expect "(e) ... \`ringd keys remove\` as nobody: exit 1 with the agent's refusal" "$? $out" "1 ringd: $NOPERM"
  expect "(e) ... nothing changed" "$(list k1)" "$FB primary $FC installed"
fi

check "no key appears in any log" bash -c "! grep -qF -e '$A' -e '$B' -e '$C' $DIR/*.log"
expect "no member was suspected or declared dead at any time" "$(suspicions)" 0
no_sanitizer_reports
finish
