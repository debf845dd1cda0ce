#!/bin/bash
# test_prometheus.sh RINGD — three agents with --metrics-addr scraped by a real Prometheus
# (Debian's binary, on loopback, in a temporary directory): the output passes promtool,
# Prometheus sums 9 alive members (3 agents x 3), the ring-disagreement alert stays quiet
# while the agents agree and fires once one agent comes back as a cluster of its own with
# another --vnodes (a joiner with another --vnodes would stop: ring parameters are agreed
# at join, proto/PROTOCOL.md). Then the
# endpoint under abuse: a client trickling its headers a byte a second is cut off, and
# idle connections from another address neither stop a scrape nor disturb gossip; garbage,
# a header too large and HTTP/2 get 400, 431 and 505; clients that never read their answers
# lose their slots; with all 32 slots taken one more connection is closed at once, the 32
# are cut at the deadline, and gossip notices nothing (tests/proc/http_abuse.py).
# The alert is the real rule's expression, read from deploy/prometheus/ringd-rules.yml,
# in a test copy whose `for:` is 3s instead of 1m so that the test stays short.
set -u
RINGD=$1
. "$(dirname "$0")/lib.sh"
RULES="$(dirname "$0")/../../deploy/prometheus/ringd-rules.yml"

for tool in prometheus promtool curl; do
  command -v "$tool" >/dev/null || { echo "FAIL - $tool not installed (scripts/setup.sh)"; exit 1; }
done

M0=$((PORT0 + 10)) # metrics ports: a0 a1 a2 at M0, M0+1, M0+2
PROM=$((PORT0 + 20))
flags="--profile local"
start a0 "$PORT0" $flags --metrics-addr "127.0.0.1:$M0" || exit 1
start a1 $((PORT0 + 1)) $flags --metrics-addr "127.0.0.1:$((M0 + 1))" --join "127.0.0.1:$PORT0" || exit 1
start a2 $((PORT0 + 2)) $flags --metrics-addr "127.0.0.1:$((M0 + 2))" --join "127.0.0.1:$PORT0" || exit 1

all_alive() { for n in a0 a1 a2; do [ "$(info $n members_alive)" = "$1" ] || return 1; done; }
check "three agents see three alive members" wait_for 20 all_alive 3

# --- the text itself
scrape() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics"; }
wait_for 5 sh -c "curl -s http://127.0.0.1:$M0/metrics | grep -q 'ringd_members{status=\"alive\"} 3'" >/dev/null
scrape "$M0" >"$DIR/a0.prom"
check "promtool check metrics passes the HTTP output" promtool check metrics <"$DIR/a0.prom"
"$RINGD" metrics --socket "$DIR/a0.sock" >"$DIR/a0-cli.prom"
check "promtool check metrics passes ringd metrics" promtool check metrics <"$DIR/a0-cli.prom"
families() { grep '^# TYPE' "$1"; }
check "ringd metrics and /metrics have the same families" \
  diff <(families "$DIR/a0.prom") <(families "$DIR/a0-cli.prom")
check "alive members are 3 on /metrics" grep -qx 'ringd_members{status="alive"} 3' "$DIR/a0.prom"
check "the ring checksum label is INFO's ring_checksum" \
  grep -qx "ringd_ring_info{checksum=\"$(info a0 ring_checksum)\"} 1" "$DIR/a0.prom"
# every counter (and histogram count, sum and bucket) of a later scrape is at least the
# earlier one's: Prometheus reads a fall as a restart of the agent
sleep 3
scrape "$M0" >"$DIR/a0-later.prom"
counters() { awk -v f="$1" '/^# TYPE .* (counter|histogram)$/ {c[$3] = 1; next} /^#/ {next}
  {n = $1; sub(/\{.*/, "", n); b = n; sub(/_(bucket|count|sum)$/, "", b)
   if (n in c || b in c) print f, $1, $2}' "$2"; }
check "no counter of a later scrape is lower" awk '
  $1 == "a" {a[$2] = $3; next} ($2 in a) && $3 + 0 < a[$2] + 0 {print "fell:", $2, a[$2], "->", $3; bad = 1}
  END {exit bad}' <(counters a "$DIR/a0.prom"; counters b "$DIR/a0-later.prom")
check "the counters moved between the scrapes (gossip went on)" bash -c "
  ! diff <(grep ringd_gossip_packets_total '$DIR/a0.prom') <(grep ringd_gossip_packets_total '$DIR/a0-later.prom') >/dev/null"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
check "another path is 404" [ "$(code "http://127.0.0.1:$M0/")" = 404 ]
check "POST is 405" [ "$(code -X POST -d x "http://127.0.0.1:$M0/metrics")" = 405 ]
check "a 405 says Allow: GET, HEAD" \
  sh -c "curl -s -i -X DELETE http://127.0.0.1:$M0/metrics | tr -d '\r' | grep -qx 'Allow: GET, HEAD'"
curl -s -I --max-time 5 "http://127.0.0.1:$M0/metrics" | tr -d '\r' >"$DIR/head.txt"
head_len=$(sed -n 's/^Content-Length: //p' "$DIR/head.txt")
get_len=$(curl -s --max-time 5 -o /dev/null -w '%{size_download}' "http://127.0.0.1:$M0/metrics")
check "HEAD is 200 with the headers alone ($head_len bytes announced, GET brings $get_len)" \
  sh -c "grep -qx 'HTTP/1.1 200 OK' '$DIR/head.txt' && grep -qx 'Connection: close' '$DIR/head.txt' &&
         grep -qx 'Content-Type: text/plain; version=0.0.4; charset=utf-8' '$DIR/head.txt' &&
         [ -n '$head_len' ] && awk 'BEGIN {d = $head_len - $get_len; exit !(d < 200 && d > -200)}'"
check "a query string is not part of the path" [ "$(code "http://127.0.0.1:$M0/metrics?x=1")" = 200 ]
check "the promtool rule check passes on deploy/prometheus" promtool check rules "$RULES" >/dev/null

# --- a real Prometheus
expr=$(awk '/alert: RingdRingDisagreement/ {f = 1} f && /expr:/ {sub(/^ *expr: /, ""); print; exit}' "$RULES")
check "the rule file holds the disagreement expression: $expr" grep -q ringd_ring_info <<<"$expr"
cat >"$DIR/rules.yml" <<YML
groups:
  - name: ringd-test
    rules:
      - alert: RingdRingDisagreement
        expr: $expr
        for: 3s
YML
cat >"$DIR/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ["$DIR/rules.yml"]
scrape_configs:
  - job_name: ringd
    static_configs:
      - targets: ["127.0.0.1:$M0", "127.0.0.1:$((M0 + 1))", "127.0.0.1:$((M0 + 2))"]
YML
prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/prom-data" \
  --web.listen-address="127.0.0.1:$PROM" 2>"$DIR/prometheus.log" &
PIDS="$PIDS $!"

# promq EXPR: the first result's value, or empty
promq() {
  curl -s --max-time 5 -G "http://127.0.0.1:$PROM/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")'
}
# alert_state NAME: firing, pending or empty
alert_state() {
  curl -s --max-time 5 "http://127.0.0.1:$PROM/api/v1/alerts" |
    python3 -c 'import json,sys
try:
    a = [x["state"] for x in json.load(sys.stdin)["data"]["alerts"] if x["labels"]["alertname"] == sys.argv[1]]
    print(a[0] if a else "")
except Exception:
    print("error")' "$1"
}
sum_alive() { [ "$(promq 'sum(ringd_members{status="alive"})')" = 9 ]; }
check "Prometheus sums 9 alive members (3 agents x 3)" wait_for 30 sum_alive
check "Prometheus sees one ring checksum" [ "$(promq 'count(count by (checksum) (ringd_ring_info))')" = 1 ]
quiet=1
for _ in $(seq 8); do # twice the rule's for:, evaluated every second
  [ -z "$(alert_state RingdRingDisagreement)" ] || quiet=0
  sleep 1
done
check "the disagreement alert stays quiet while the agents agree" [ "$quiet" = 1 ]

kill -TERM "$(pid_of a2)"
wait_for 10 sh -c "! kill -0 $(pid_of a2) 2>/dev/null" >/dev/null
start a2 $((PORT0 + 2)) $flags --vnodes 64 --metrics-addr "127.0.0.1:$((M0 + 2))" || exit 1
firing() { [ "$(alert_state RingdRingDisagreement)" = firing ]; }
if t=$(wait_for 40 firing); then
  ok "the disagreement alert fires ${t} ms after one agent came back alone with --vnodes 64"
else
  fail "the disagreement alert did not fire (state: '$(alert_state RingdRingDisagreement)')"
fi
check "Prometheus sees two ring checksums" [ "$(promq 'count(count by (checksum) (ringd_ring_info))')" = 2 ]
# a2 rejoins the cluster as it was, for the abuse checks below
kill -TERM "$(pid_of a2)"
wait_for 10 sh -c "! kill -0 $(pid_of a2) 2>/dev/null" >/dev/null
start a2 $((PORT0 + 2)) $flags --metrics-addr "127.0.0.1:$((M0 + 2))" --join "127.0.0.1:$PORT0" || exit 1
check "a2 rejoins with the cluster's parameters" wait_for 20 all_alive 3

# --- abuse: a byte a second, and idle connections from another address
susp_before=$(grep -h '^ringd_suspicions_total' <(scrape "$M0") <(scrape $((M0 + 1))) | awk '{s+=$2} END {print s}')
python3 - "$M0" >"$DIR/slowloris.out" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(1.0)
t0 = time.time()
request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60
for b in request:
    if time.time() - t0 > 15:
        print("never"); break
    try:
        s.send(bytes([b]))
        if s.recv(64) == b"":
            print("cut %.1f" % (time.time() - t0)); break
    except socket.timeout:
        continue
    except OSError:
        print("cut %.1f" % (time.time() - t0)); break
else:
    print("never")
PY
slow=$!
python3 - "$M0" >"$DIR/idle.out" <<'PY' &
import socket, sys, time
held = []
for _ in range(50):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        held.append(s)
    except OSError:
        pass
print(len(held))
time.sleep(12)
PY
idle=$!
PIDS="$PIDS $slow $idle"
sleep 2
ok_scrapes=0
for _ in $(seq 5); do
  scrape "$M0" | grep -q '^ringd_members{status="alive"} 3$' && ok_scrapes=$((ok_scrapes + 1))
  sleep 1
done
check "scrapes answer while 50 idle connections are open from 127.0.0.2 ($ok_scrapes/5)" [ "$ok_scrapes" = 5 ]
check "Prometheus still scrapes a0 (up == 1)" [ "$(promq "up{instance=\"127.0.0.1:$M0\"}")" = 1 ]
wait "$slow"
read -r verdict secs <"$DIR/slowloris.out"
check "a client sending a byte a second is cut off within 8 s (${secs:-never} s)" \
  sh -c "[ '$verdict' = cut ] && awk 'BEGIN {exit !($secs <= 8)}'"
wait "$idle"
susp_after=$(grep -h '^ringd_suspicions_total' <(scrape "$M0") <(scrape $((M0 + 1))) | awk '{s+=$2} END {print s}')
check "no suspicion during the abuse ($susp_before -> $susp_after)" [ "$susp_before" = "$susp_after" ]
check "the endpoint counted the connections it cut" \
  sh -c "curl -s http://127.0.0.1:$M0/metrics | awk '/^ringd_metrics_connections_cut_off_total/ {exit !(\$2 >= 1)}'"

# --- more abuse: bytes that are not HTTP, a header too large, clients that never read their
# answers, and every slot taken at once; gossip must not notice any of it
ABUSE="$(dirname "$0")/http_abuse.py"
# the counters come from the text the loop publishes every second: read them settled
counter() { scrape "$M0" | awk -v n="$1" '$1 == n {print $2}'; }
sleep 1.2
r0=$(counter ringd_metrics_requests_refused_total)
check "binary garbage is answered 400" [ "$(python3 "$ABUSE" "$M0" garbage)" = "HTTP/1.1 400 Bad Request" ]
check "a 9,000-byte header is answered 431" \
  [ "$(python3 "$ABUSE" "$M0" oversize)" = "HTTP/1.1 431 Request Header Fields Too Large" ]
check "HTTP/2.0 is answered 505" \
  [ "$(python3 "$ABUSE" "$M0" http2)" = "HTTP/1.1 505 HTTP Version Not Supported" ]
refused_3() { [ "$(counter ringd_metrics_requests_refused_total)" = $((r0 + 3)) ]; }
check "the endpoint counted the 3 requests it refused (from $r0)" wait_for 3 refused_3
susp_before=$(grep -h '^ringd_suspicions_total' <(scrape "$M0") <(scrape $((M0 + 1))) | awk '{s+=$2} END {print s}')
read -r verdict _ secs < <(python3 "$ABUSE" "$M0" noread)
check "a 5th connection from one address is closed at once ($verdict)" [ "$verdict" = refused ]
check "4 clients that never read their answers lose their slots within 6 s (${secs} s)" \
  sh -c "[ '$secs' != never ] && awk 'BEGIN {exit !($secs <= 6)}'"
sleep 1.2
cut_before=$(counter ringd_metrics_connections_cut_off_total)
refused_before=$(counter ringd_metrics_connections_refused_total)
read -r verdict _ secs < <(python3 "$ABUSE" "$M0" flood)
check "with 32 connections open from 8 addresses a 33rd is closed at once ($verdict)" [ "$verdict" = refused ]
check "the 32 idle connections are cut at their deadline: a scrape is served within 7 s (${secs} s)" \
  sh -c "[ '$secs' != never ] && awk 'BEGIN {exit !($secs <= 7)}'"
flood_counted() {
  [ "$(counter ringd_metrics_connections_refused_total)" -gt "$refused_before" ] &&
    [ "$(counter ringd_metrics_connections_cut_off_total)" -ge $((cut_before + 32)) ]
}
check "the flood was counted: connections refused (from $refused_before), 32 cut (from $cut_before)" \
  wait_for 3 flood_counted
susp_after=$(grep -h '^ringd_suspicions_total' <(scrape "$M0") <(scrape $((M0 + 1))) | awk '{s+=$2} END {print s}')
check "no suspicion while the slots were taken ($susp_before -> $susp_after)" [ "$susp_before" = "$susp_after" ]
check "every agent still sees three alive members" all_alive 3

# --- a reload cannot move the endpoint: SIGHUP names it as needing a restart
printf 'metrics-addr = 127.0.0.1:%s\n' $((M0 + 3)) >"$DIR/a3.conf"
start a3 $((PORT0 + 3)) $flags --config "$DIR/a3.conf" --join "127.0.0.1:$PORT0" || exit 1
check "a3 serves on the address its config file gives" \
  sh -c "curl -s http://127.0.0.1:$((M0 + 3))/metrics | grep -q '^ringd_ready'"
printf 'metrics-addr = 127.0.0.1:%s\n' $((M0 + 4)) >"$DIR/a3.conf"
kill -HUP "$(pid_of a3)"
wait_for 5 grep -q 'msg="reloaded"' "$DIR/a3.log" >/dev/null
check "SIGHUP with another metrics-addr: needs_restart=metrics-addr, still served where it was" \
  sh -c "grep 'msg=\"reloaded\"' '$DIR/a3.log' | grep -q 'needs_restart=metrics-addr' &&
         curl -s http://127.0.0.1:$((M0 + 3))/metrics | grep -q '^ringd_ready'"

no_sanitizer_reports
finish
