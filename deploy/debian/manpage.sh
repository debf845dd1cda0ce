#!/bin/sh
# manpage.sh RINGD OUT — writes ringd(1) to OUT with help2man, from `ringd --help` and
# `ringd --version`, plus a section with every `ringd agent` option from `ringd agent
# --help` (help2man reads one --help; the agent's options are most of what an operator
# needs), and the files the systemd unit and the package use.
set -eu
ringd=$1
out=$2
inc=$out.include
{
  echo "[AGENT OPTIONS]"
  echo ".nf"
  # roff: a backslash is \e, and a line starting with . or ' is protected by \&
  "$ringd" agent --help | sed -e 's/\\/\\e/g' -e "s/^[.']/\\\\\\&&/"
  echo ".fi"
  echo "[FILES]"
  echo ".TP"
  echo "/etc/ringd/ringd.conf"
  echo "the agent's options, read at start and on SIGHUP (systemctl reload ringd)"
  echo ".TP"
  echo "/var/lib/ringd"
  echo "the state directory: the member table snapshot and the gossip keyring"
  echo ".TP"
  echo "/run/ringd/ringd.sock"
  echo "the query socket (RESP); members of group ringd may query it"
  echo "[SEE ALSO]"
  echo "systemctl(1), and README.md in the source for the protocol and every command."
} >"$inc"
help2man --no-info --section=1 --name="cluster membership agent and consistent-hash ring" \
  --include="$inc" --output="$out" "$ringd"
rm -f "$inc"
