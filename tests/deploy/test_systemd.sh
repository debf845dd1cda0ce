#!/bin/bash
# test_systemd.sh SRC RINGD — the systemd unit and its example config, checked offline:
#  - `systemd-analyze verify` finds nothing to say about deploy/systemd/ringd.service (its
#    ExecStart pointed at RINGD, the binary just built; man pages are not looked up);
#  - `systemd-analyze security --offline=true` rates it "OK" or better, with exactly the
#    exposure deploy/systemd/README.md states (a hardening line dropped or added must
#    change the README too);
#  - the unit and the config agree on the directories systemd creates (socket in
#    /run/ringd, state in /var/lib/ringd) and the unit's Type=notify, ExecReload, user;
#  - the example config parses as `ringd agent --config` reads it: with its keyring
#    pointed at a missing file, the agent stops at the keyring, past every config line.
# Without systemd-analyze (Debian's systemd package): skipped, or failed under
# scripts/test.sh (missing.sh).
set -u
SRC=$1
RINGD=$2
. "$(dirname "$0")/../missing.sh"
command -v systemd-analyze >/dev/null || missing "systemd-analyze not found"
UNIT=$SRC/deploy/systemd/ringd.service
CONF=$SRC/deploy/systemd/ringd.conf
. "$(dirname "$0")/lib.sh" unit

sed "s|/usr/bin/ringd|$RINGD|" "$UNIT" >"$DIR/ringd.service"
out=$(systemd-analyze verify --man=no "$DIR/ringd.service" 2>&1)
rc=$?
check "systemd-analyze verify: exit $rc, nothing said${out:+: $out}" [ "$rc" = 0 -a -z "$out" ]

sec=$(systemd-analyze security --offline=true "$DIR/ringd.service" 2>&1)
line=$(echo "$sec" | grep 'Overall exposure level')
score=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) \([A-Z]*\).*/\1/p')
badge=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) \([A-Z]*\).*/\2/p')
echo "# $line"
check "exposure rated OK or better ($score $badge)" \
  sh -c "case '$badge' in OK|SAFE|PERFECT) true ;; *) false ;; esac"
stated=$(sed -n 's/.*exposure level is \*\*\([0-9.]*\) [A-Z]*\*\*.*/\1/p' "$SRC/deploy/systemd/README.md" | head -1)
check "deploy/systemd/README.md states that exposure (${stated:-nothing} = $score)" [ -n "$stated" -a "$stated" = "$score" ]
for want in CapabilityBoundingSet= NoNewPrivileges= \
  PrivateNetwork= RestrictAddressFamilies=~AF_PACKET; do
  echo "$sec" | grep -E "^. $want" | head -1 | sed 's/  */ /g; s/^/# /'
done

check "unit: Type=notify, reload by SIGHUP, user ringd, its directories, the config" sh -c "
  grep -qx 'Type=notify' '$UNIT' && grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID' '$UNIT' &&
  grep -qx 'User=ringd' '$UNIT' && grep -qx 'RuntimeDirectory=ringd' '$UNIT' &&
  grep -qx 'StateDirectory=ringd' '$UNIT' &&
  grep -qx 'ExecStart=/usr/bin/ringd agent --config /etc/ringd/ringd.conf' '$UNIT'"
check "config: socket in the runtime dir, state and keyring in the state dir, a cluster label" sh -c "
  grep -qx 'socket = /run/ringd/ringd.sock' '$CONF' && grep -qx 'state-dir = /var/lib/ringd' '$CONF' &&
  grep -qx 'keyring-file = /var/lib/ringd/keyring' '$CONF' && grep -qE '^cluster = [a-z]+$' '$CONF'"
err=$("$RINGD" agent --config "$CONF" --keyring-file "$DIR/no-keyring" 2>&1)
rc=$?
check "the example config parses up to the missing keyring (exit $rc: $err)" \
  [ "$rc" = 2 -a "$err" = "ringd agent: --keyring-file $DIR/no-keyring: No such file or directory" ]

finish
