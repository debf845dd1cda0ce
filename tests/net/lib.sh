# lib.sh — the multi-host harness: every agent on its own network host.
#
# Each host is a network namespace with one veth ("eth0", 10.213.0.I/24) whose peer sits in a
# "switch" namespace that holds the bridge. Nothing is created in the caller's namespace:
# no interface, no route, no firewall rule, so traffic can only reach the hosts made here.
# Faults are made with the kernel's own tools, inside the host namespaces: nftables rules in
# each host's table (loss, partitions, one-way cuts), a switch port set down (a cut cable),
# SIGSTOP/SIGCONT (a freeze), SIGKILL and a restart (a crash).
#
# Everything created here is recorded (PIDs, namespaces) and removed on exit, whether the
# run passes, fails or is interrupted; nothing else is ever touched.
#
# Observation goes through the agents' query sockets with redis-cli; the logs are read for
# the report and for "member dead" counts.
#
# For seeds by name, a name server (Debian's dnsmasq) runs in the switch namespace, on an
# address of the bridge, answering from records the test rewrites as it goes.

RINGD=${RINGD:?path to the ringd binary}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RINGD=$(readlink -f "$RINGD")
NET=${NET:-10.213.0}            # test-only /24, exists only inside the namespaces made here
PORT=7946
# The agents run at a slightly raised priority, so that other work on a shared machine
# does not starve their 500 ms probe timeouts (CI runs this test alone; NICE=0 to disable).
NICE=${NICE:--5}
P=rdt$$                         # prefix of every namespace of this run
SW=${P}sw                       # the switch namespace (bridge br0, one port per host)
DIR=$(mktemp -d /tmp/ringd-net.XXXXXX)
NSS=""                          # namespaces created by this run
PIDS=""                         # every process started by this run
WATCHDOG=""
PASSED=0
FAILED=0
REPORT="$DIR/report.tsv"        # scenario \t result \t agreement \t false deaths \t moved
: >"$REPORT"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
T0=$(now_ms)
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
# log: "# [seconds into the run, UTC wall clock as in the agents' logs] message"
log() { printf '# [%6ss %s] %s\n' "$(secs $(( $(now_ms) - T0 )))" "$(date -u +%T.%3N)" "$*"; }

cleanup() {
  set +e
  trap - EXIT INT TERM
  exec 2>/dev/null   # no "Killed" notices for the agents we kill below
  [ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null
  # only our own children still unreaped (a reaped PID may belong to someone else by now)
  for p in $PIDS; do
    [ "$(ppid_of "$p")" = $$ ] || continue
    kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
  done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  for ns in $NSS; do ip netns del "$ns" 2>/dev/null; done
  [ "$FAILED" -gt 0 ] || [ -n "${KEEP:-}" ] || rm -rf "$DIR"
}
ppid_of() { awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$1/stat" 2>/dev/null; }
# forget PID: a process of ours that has been reaped, so cleanup leaves its PID alone
forget() { PIDS=$(echo " $PIDS " | sed "s/ $1 / /"); }
trap cleanup EXIT
trap 'fail "interrupted"; finish; exit 130' INT TERM

# watchdog SECONDS: the whole run is stopped (and torn down) if it takes longer than this.
# (its sleep dies with it, so that nothing of this run outlives it or holds its output)
watchdog() {
  (
    sleep "$1" >/dev/null 2>&1 </dev/null &
    s=$!
    trap 'kill $s 2>/dev/null; exit 0' TERM
    wait $s && { echo "# watchdog: the run exceeded $1 s, stopping it"; kill -TERM $$; }
  ) &
  WATCHDOG=$!
}

# ------------------------------------------------------------------ hosts and network

ns() { echo "${P}h$1"; }                 # namespace of host I
addr() { echo "$NET.$1"; }               # address of host I
name() { echo "h$1"; }                   # member name of host I
sock() { echo "$DIR/h$1/ringd.sock"; }   # query socket of host I
logf() { echo "$DIR/h$1/agent.log"; }    # log of host I

# net_up N: the switch and N hosts, each with an empty nftables table `inet rdt` whose
# input and output chains the fault helpers fill.
net_up() {
  HOSTS=$1
  ip netns add "$SW" || return 1
  NSS="$NSS $SW"
  ip -n "$SW" link add br0 type bridge || return 1
  ip -n "$SW" link set br0 up || return 1
  for i in $(seq 1 "$HOSTS"); do
    n=$(ns "$i")
    ip netns add "$n" || return 1
    NSS="$NSS $n"
    ip link add eth0 netns "$n" type veth peer name "h$i" netns "$SW" || return 1
    ip -n "$SW" link set "h$i" master br0 || return 1
    ip -n "$SW" link set "h$i" up || return 1
    ip -n "$n" link set lo up || return 1
    ip -n "$n" addr add "$(addr "$i")/24" dev eth0 || return 1
    ip -n "$n" link set eth0 up || return 1
    ip netns exec "$n" nft -f - <<EOF || return 1
table inet rdt {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
EOF
    mkdir -p "$DIR/h$i"
  done
}

# ------------------------------------------------------------------ agents

# Seeds: h1 and h2. Every agent joins the seeds other than itself.
SEEDS="1 2"
join_flags() {
  for s in $SEEDS; do [ "$s" = "$1" ] || printf -- '--join %s:%s ' "$(addr "$s")" "$PORT"; done
}

# Gossip is sealed, as a real cluster's: one key, generated per run, in a 0600 file per
# host (keysf I), under one cluster label.
keysf() { echo "$DIR/h$1/keys"; }
keys_up() {
  key=$("$RINGD" keygen) || return 1
  for i in $(seq 1 "$HOSTS"); do (umask 077; echo "$key" >"$(keysf "$i")") || return 1; done
}

# start I [nojoin | FLAG...]: starts (or restarts) the agent of host I in its namespace, same
# name, address, socket, keyring file, state directory (a snapshot of the member table) and
# seeds every time, or with no --join at all ("nojoin": it rejoins through its snapshot), or
# with the FLAGs in place of the seeds (seeds by name: --dns-server, --join NAME); its log
# is appended to.
start() {
  i=$1
  rm -f "$(sock "$i")"
  joins=$(join_flags "$i")
  [ $# -gt 1 ] && joins="${*:2}"
  [ "${2:-}" = nojoin ] && joins=""
  # shellcheck disable=SC2086
  nice -n "$NICE" ip netns exec "$(ns "$i")" "$RINGD" agent --name "$(name "$i")" \
    --bind "$(addr "$i"):$PORT" --keyring-file "$(keysf "$i")" --cluster net \
    --socket "$(sock "$i")" --state-dir "$DIR/h$i/state" $joins \
    --log-level "${LOG_LEVEL:-info}" 2>>"$(logf "$i")" &
  pid=$!
  PIDS="$PIDS $pid"
  eval "PID_$i=$pid"
}

# wait_sockets I...: every listed agent has opened its socket (bounded: 5 s)
wait_sockets() {
  for i in "$@"; do
    for _ in $(seq 100); do [ -S "$(sock "$i")" ] && continue 2; sleep 0.05; done
    echo "agent h$i did not open its socket"; tail -5 "$(logf "$i")"; return 1
  done
}

pid_of() { eval "echo \$PID_$1"; }
# crash I...: SIGKILL the agents of these hosts, all at once, and reap them
crash() {
  { for i in "$@"; do kill -KILL "$(pid_of "$i")"; done
    for i in "$@"; do wait "$(pid_of "$i")"; forget "$(pid_of "$i")"; done; } 2>/dev/null
  return 0
}
# stop I: SIGTERM: the agent of host I leaves the cluster and exits (bounded: 10 s), reaped
stop() {
  p=$(pid_of "$1")
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 100); do   # until it has exited: reaped by the shell already, or a zombie
    st=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$p/stat" 2>/dev/null)
    if [ -z "$st" ] || [ "$st" = Z ]; then
      wait "$p" 2>/dev/null; forget "$p"; return 0
    fi
    sleep 0.1
  done
  return 1
}
freeze() { kill -STOP "$(pid_of "$1")"; }
thaw() { kill -CONT "$(pid_of "$1")"; }
alive_proc() { kill -0 "$(pid_of "$1")" 2>/dev/null; }

# ------------------------------------------------------------------ a name server

# The DNS scenario's name server: Debian's dnsmasq in the switch namespace, on DNS_ADDR (an
# address given to br0 only when it starts), answering for DNS_ZONE alone: A records from a
# hosts file that dns_hosts rewrites (SIGHUP makes dnsmasq read it again and drop its
# cache), and the SRV records of DNS_SRV (one per seed, each target hI.DNS_ZONE at PORT).
# TTLs are 0, so nothing between the agents and it can answer from an old record. Every
# query is logged to $DIR/dns.log, which is how dns_queries counts a host's retries. It runs
# as root (--user=root) because the hosts file is in $DIR, which is 0700.
DNSMASQ=${DNSMASQ:-/usr/sbin/dnsmasq}
DNS_ADDR=$NET.254
DNS_ZONE=ringd.test
DNS_SRV=_ringd._udp.$DNS_ZONE
dns_up() {
  ip -n "$SW" addr add "$DNS_ADDR/24" dev br0 || return 1
  srv=""
  for s in $SEEDS; do srv="$srv --srv-host=$DNS_SRV,h$s.$DNS_ZONE,$PORT"; done
  # shellcheck disable=SC2086
  ip netns exec "$SW" "$DNSMASQ" --keep-in-foreground --conf-file=/dev/null --no-resolv \
    --no-hosts --addn-hosts="$DIR/dns.hosts" --local=/$DNS_ZONE/ --local-ttl=0 $srv \
    --listen-address="$DNS_ADDR" --bind-interfaces --port=53 --user=root --pid-file= \
    --log-queries --log-facility="$DIR/dns.log" 2>>"$DIR/dns.log" &
  DNS_PID=$!
  PIDS="$PIDS $DNS_PID"
  for _ in $(seq 50); do   # bounded: 5 s to bind port 53
    [ -n "$(ip netns exec "$SW" ss -Hlun "src $DNS_ADDR:53")" ] && return 0
    kill -0 "$DNS_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "dnsmasq did not start:"; tail -5 "$DIR/dns.log"; return 1
}
# dns_hosts LINE...: the A records ("ADDRESS NAME", NAME without the zone) are these lines now
dns_hosts() {
  printf '%s\n' "$@" | awk -v z="$DNS_ZONE" '{ print $1, $2 "." z }' >"$DIR/dns.hosts.new"
  mv "$DIR/dns.hosts.new" "$DIR/dns.hosts"
  [ -z "${DNS_PID:-}" ] || kill -HUP "$DNS_PID"
}
# dns_queries NAME I: how many A queries for NAME.DNS_ZONE host I has sent
dns_queries() { grep -c "query\[A\] $1\.$DNS_ZONE from $(addr "$2")\$" "$DIR/dns.log"; }

# ------------------------------------------------------------------ faults (nftables, links)

nft_in() { ip netns exec "$(ns "$1")" nft add rule inet rdt input "${@:2}"; }
nft_out() { ip netns exec "$(ns "$1")" nft add rule inet rdt output "${@:2}"; }

# loss_host I PCT: host I loses PCT% of every packet it receives from the test network
loss_host() { nft_in "$1" ip saddr "$NET.0/24" numgen random mod 100 '<' "$2" drop; }
# loss_link I J PCT: PCT% loss on the link between I and J, both ways
loss_link() {
  nft_in "$1" ip saddr "$(addr "$2")" numgen random mod 100 '<' "$3" drop &&
    nft_in "$2" ip saddr "$(addr "$1")" numgen random mod 100 '<' "$3" drop
}
# set_of I...: an nft anonymous set of the hosts' addresses
set_of() { printf '{ '; for i in "$@"; do printf '%s, ' "$(addr "$i")"; done; printf '}'; }
# partition "A..." "B...": two-way partition between groups A and B
partition() {
  for i in $1; do nft_in "$i" ip saddr "$(set_of $2)" drop || return 1; done
  for i in $2; do nft_in "$i" ip saddr "$(set_of $1)" drop || return 1; done
}
# partition_oneway "A..." "B...": B no longer hears A; A still hears B
partition_oneway() { for i in $2; do nft_in "$i" ip saddr "$(set_of $1)" drop || return 1; done; }
# deaf I: host I can send but receives nothing from the test network
deaf() { nft_in "$1" ip saddr "$NET.0/24" drop; }
# mute I: host I receives but sends nothing to the test network
mute() { nft_out "$1" ip daddr "$NET.0/24" drop; }
# link_down I / link_up I: host I's switch port goes down (a pulled cable), or back up
link_down() { ip -n "$SW" link set "h$1" down; }
link_up() { ip -n "$SW" link set "h$1" up; }
# heal: every rule of every host is removed and every switch port is up
heal() {
  for i in $(seq 1 "$HOSTS"); do
    ip netns exec "$(ns "$i")" nft flush chain inet rdt input
    ip netns exec "$(ns "$i")" nft flush chain inet rdt output
    ip -n "$SW" link set "h$i" up
  done
}

# ------------------------------------------------------------------ observation

# q I ARGS...: one command to host I's agent (bounded: a frozen agent does not hang us)
# (the observer runs at the agents' priority: on a loaded machine its queries must not be
# what is slow)
q() { i=$1; shift; nice -n "$NICE" timeout 5 redis-cli -s "$(sock "$i")" "$@" 2>/dev/null; }
# info I FIELD
info() { q "$1" INFO | tr -d '\r' | sed -n "s/^$2:\(.*\)/\1/p"; }
# view I: "alive suspect dead left ring_checksum members_checksum ring_members" as host I
# sees it, or "down" when its socket does not answer
view() { views "$1" | cut -d' ' -f2-; }
# status_of I MEMBER: MEMBER's status as host I sees it (empty if unknown)
status_of() {
  q "$1" MEMBERS | tr -d '\r' | awk -v m="$2" '
    prev == "name" { cur = $0 } prev == "status" && cur == m { print; exit } { prev = $0 }'
}

# views "I...": "I <view of I>" per host, from one process that asks every socket in turn
# (Debian's python3 directly: a version manager's shim in PATH can cost more than the poll)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
views() { nice -n "$NICE" "$PY" "$HERE/views.py" "$DIR" $1; }
# agreed "I...": each listed host sees $WANT alive, none suspect, and all have one ring
# checksum and one member-list checksum
agreed() {
  views "$1" | awk -v want="$WANT" '
    $2 != want || $3 != 0 { bad = 1 }
    { k = $6 " " $7; if (NR == 1) first = k; else if (k != first) bad = 1 }
    END { exit bad }'
}
# same_ring "I...": each listed host has $WANT members in its ring (alive or suspect), and
# all have one ring checksum (suspicions may come and go: they do not change placement)
same_ring() {
  views "$1" | awk -v want="$WANT" '
    $8 != want { bad = 1 }
    { if (NR == 1) first = $6; else if ($6 != first) bad = 1 }
    END { exit bad }'
}
# wait_agreed SECONDS "I..." WANT: prints the ms it took; false on timeout
wait_agreed() { WANT=$3; wait_for "$1" agreed "$2"; }

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it holds; prints the ms it took,
# counted to the end of the poll that saw it hold, and fails if that is over SECONDS
wait_for() {
  limit_ms=$(( $1 * 1000 )); shift
  start_ms=$(now_ms)
  while :; do
    if "$@" >/dev/null 2>&1; then
      el=$(( $(now_ms) - start_ms ))
      echo "$el"
      [ "$el" -le "$limit_ms" ]
      return
    fi
    [ $(( $(now_ms) - start_ms )) -ge "$limit_ms" ] && return 1
    sleep 0.1
  done
}

# The fixed key set: KEYS keys, asked with one MOWNER per 1000 keys, pipelined through one
# redis-cli per host. owners I FILE writes one owner per line, in key order.
KEYS=${KEYS:-20000}
keyset() {
  awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) {
      if (i % 1000 == 0) { if (i) printf "\n"; printf "MOWNER" }
      printf " key:%d", i }
    printf "\n" }' >"$DIR/mowner.txt"
}
owners() { nice -n "$NICE" timeout 20 redis-cli -s "$(sock "$1")" <"$DIR/mowner.txt" 2>/dev/null | tr -d '\r' >"$2"; }
# ready_all "I...": every listed host answers placement (INFO ready:1): an agent started with
# --join answers -NOTREADY until its first full-state exchange was answered
ready_all() { for i in $1; do [ "$(info "$i" ready)" = 1 ] || return 1; done; }
# owners_all "I..." TAG: owners of the key set on every listed host into $DIR/owners.TAG.I;
# true when all are complete (KEYS names, no error) and identical; waits (up to 10 s) for
# every host to be ready first
owners_all() {
  ref=""
  wait_for 10 ready_all "$1" >/dev/null || echo "not every host of $1 was ready within 10 s"
  for i in $1; do
    f="$DIR/owners.$2.$i"
    owners "$i" "$f"
    [ "$(wc -l <"$f")" -eq "$KEYS" ] || { echo "h$i answered $(wc -l <"$f") of $KEYS owners"; return 1; }
    grep -qv '^h[0-9]*$' "$f" && { echo "h$i answered something that is not a member name"; return 1; }
    [ -z "$ref" ] && ref=$f
    cmp -s "$ref" "$f" || { echo "h$i and $(basename "$ref") disagree on $(paste "$ref" "$f" | awk '$1 != $2' | wc -l) keys"; return 1; }
  done
}
# moved FILE1 FILE2: fraction of keys whose owner differs
moved() { paste "$1" "$2" | awk '$1 != $2 { m++ } END { printf "%.3f", m / NR }'; }

# ------------------------------------------------------------------ logs

# mark: remember where every log ends now; since_mark I: what host I logged after the mark
mark() { for i in $(seq 1 "$HOSTS"); do eval "MARK_$i=$(stat -c %s "$(logf "$i")" 2>/dev/null || echo 0)"; done; }
since_mark() { tail -c +$(( $(eval "echo \$MARK_$1") + 1 )) "$(logf "$1")"; }
# deaths: "LOGGER MEMBER" per `member dead` line since the mark
deaths() {
  for i in $(seq 1 "$HOSTS"); do
    since_mark "$i" | sed -n 's/.*msg="member dead" member=\([^ ]*\).*/\1/p' | sed "s/^/h$i /"
  done
}
# churn [I...]: mean over the hosts (default: all) of the sum of `moved=` of the ring
# rebuilds they logged since the mark
churn() {
  for i in ${*:-$(seq 1 "$HOSTS")}; do
    since_mark "$i" | sed -n 's/.*msg="ring rebuilt".* moved=\([0-9.e+-]*\).*/\1/p' |
      awk -v h="$i" '{ s += $1 } END { print s + 0 }'
  done | awk '{ s += $1 } END { printf "%.3f", s / NR }'
}

# load: the machine's load averages (1, 5, 15 min), for the log
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ------------------------------------------------------------------ results

ok() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else fail "$desc"; fi; }

# report SCENARIO RESULT AGREEMENT FALSE_DEATHS MOVED: one row of the final table
report() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$REPORT"; }
print_report() {
  echo
  echo "| scenario | result | time to agreement | false deaths | moved fraction (fault → after; log Σ moved=) |"
  echo "|---|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$REPORT"
  echo
}

finish() {
  log "load average at the end: $(load) ($(nproc) cores)"
  print_report
  if [ "$FAILED" -gt 0 ] || [ -n "${KEEP:-}" ]; then echo "# logs kept in $DIR"; fi
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
