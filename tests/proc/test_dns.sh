#!/bin/bash
# test_dns.sh RINGD — seeds by name, against a real name server (dnsmasq, started here on
# a loopback port, answering from a hosts file it reads again on SIGHUP), with the agents
# pointed at it by --dns-server:
#  (a) a name's A record is a seed;
#  (a) a name with two addresses, the first with no agent behind it: both are seeds;
#  (b) srv:NAME: the SRV record's target and port are the seed;
#  (c) a name pointing at no agent, changed to point at a live one: the agent joins, since
#      names are resolved again at every retry;
#  (d) a name the server does not know: logged as a failed join attempt, retried, and
#      joined through once the server knows it.
# About 15 s.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
DNSMASQ=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
[ -x "$DNSMASQ" ] || { echo "dnsmasq not found: apt-get install dnsmasq-base"; exit 1; }

SEED=$PORT0
DNS=$((PORT0 + 30))
HOSTS=$DIR/hosts
cat >"$HOSTS" <<HOSTS
127.0.0.1 a.test.ringd s.test.ringd
127.0.0.2 moving.test.ringd multi.test.ringd
127.0.0.1 multi.test.ringd
HOSTS
"$DNSMASQ" --keep-in-foreground --no-resolv --no-hosts --addn-hosts="$HOSTS" \
  --port "$DNS" --listen-address 127.0.0.1 --bind-interfaces --user="$(id -un)" \
  --pid-file= --log-facility=- --local-ttl=0 --local=/test.ringd/ \
  --srv-host="_ringd._udp.test.ringd,s.test.ringd,$SEED" 2>"$DIR/dnsmasq.log" &
DNSPID=$!
PIDS="$PIDS $DNSPID"
sleep 0.5
kill -0 "$DNSPID" 2>/dev/null || { echo "dnsmasq did not start"; cat "$DIR/dnsmasq.log"; exit 1; }

start seed "$SEED" || exit 1
start a $((PORT0 + 1)) --dns-server "127.0.0.1:$DNS" --join "a.test.ringd:$SEED" || exit 1
start b $((PORT0 + 2)) --dns-server "127.0.0.1:$DNS" --join "srv:_ringd._udp.test.ringd" || exit 1
start c $((PORT0 + 3)) --dns-server "127.0.0.1:$DNS" --join "moving.test.ringd:$SEED" || exit 1
start d $((PORT0 + 4)) --dns-server "127.0.0.1:$DNS" --join "nowhere.test.ringd:$SEED" || exit 1

start e $((PORT0 + 5)) --dns-server "127.0.0.1:$DNS" --join "multi.test.ringd:$SEED" || exit 1

check "(a) an A record is a seed: a is ready" wait_ready 10 a
check "(a) every address of a name is a seed: e is ready" wait_ready 10 e
both_logged() { grep 'msg="seed resolved" seed=multi.test.ringd:' "$DIR/e.log" |
  grep "127.0.0.1:$SEED" | grep -q "127.0.0.2:$SEED"; }
check "(a) e logs both addresses of its seed name" both_logged
check "(b) an SRV record is a seed: b is ready" wait_ready 10 b
sleep 2
check "(c) not ready while the name points at no agent" [ "$(info c ready)" = 0 ]
check "(d) not ready while the name does not resolve" [ "$(info d ready)" = 0 ]
check "(d) the failure is logged as a join attempt with its reason" \
  grep -q 'msg="join attempt failed" seed=nowhere.test.ringd:'"$SEED"' reason="cannot resolve nowhere.test.ringd: Domain name not found' "$DIR/d.log"
cat >"$HOSTS" <<HOSTS
127.0.0.1 a.test.ringd s.test.ringd moving.test.ringd nowhere.test.ringd multi.test.ringd
HOSTS
kill -HUP "$DNSPID"
check "(c) the name changed: c joins through its new address" wait_ready 40 c
check "(d) the name appeared: d joins" wait_ready 40 d
wait_quiet() { wait_for "$@" >/dev/null; }
all_six() { [ "$(info seed members_alive)" = 6 ]; }
check "the seed sees all 6 members" wait_quiet 10 all_six

for n in seed a b c d e; do kill -TERM "$(pid_of $n)" 2>/dev/null; done
kill -TERM "$DNSPID"
wait 2>/dev/null
no_sanitizer_reports
finish
