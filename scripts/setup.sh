#!/bin/sh
# Installs what ringd needs to build, test and demo on Debian 12 (run as root, or with sudo).
# Idempotent and quiet: packages already present are not fetched again.
set -eu
pkgs="build-essential cmake pkg-config libuv1-dev libmsgpack-dev libxxhash-dev libinih-dev libsodium-dev
      libcmocka-dev libhiredis-dev redis-tools redis-server python3 procps iproute2 nftables
      netcat-openbsd serf clang libclang-rt-14-dev clang-format prometheus curl"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
