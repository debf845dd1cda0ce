#!/bin/sh
# Installs what ringd needs to build, test and demo on Debian 12 (run as root, or with sudo).
# Idempotent and quiet: packages already present are not fetched again.
set -eu
pkgs="build-essential cmake pkg-config libuv1-dev libmsgpack-dev libxxhash-dev libinih-dev libsodium-dev libc-ares-dev
      libcmocka-dev libhiredis-dev redis-tools redis-server python3 python3-redis procps iproute2 nftables
      netcat-openbsd dnsmasq-base serf clang libclang-rt-14-dev clang-format
      help2man systemd prometheus curl buildah umoci yamllint"
# node and npm check the Kubernetes manifests (deploy/kubernetes/check) and run the Node.js
# Redis clients of proc_test_clients (tests/clients/node): Debian's, unless
# a node that brings its own npm is already there.
command -v npm >/dev/null || pkgs="$pkgs nodejs npm"
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
# The Node.js packages tests drive, each pinned by its lock file: the manifests' schema
# checker (deploy_kubernetes) and the Redis client libraries (proc_test_clients). Installed
# again when the lock file changes. A registry out of reach fails nothing here: the test
# that needs them then says why it cannot run.
for dir in deploy/kubernetes/check tests/clients/node; do
  d=$(dirname "$0")/../$dir
  [ "$d/node_modules/.package-lock.json" -nt "$d/package-lock.json" ] && continue
  echo "setup: npm ci in $dir"
  (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "setup: npm ci failed in $dir"
done
