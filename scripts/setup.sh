#!/bin/sh
# Installs what ringd needs to build, test and demo on Debian 12 (run as root, or with sudo).
# Idempotent and quiet: packages already present are not fetched again.
set -eu
pkgs="build-essential cmake pkg-config libuv1-dev libmsgpack-dev libxxhash-dev libinih-dev libsodium-dev libc-ares-dev
      libcmocka-dev libhiredis-dev redis-tools redis-server python3 python3-redis python3-xxhash procps iproute2 nftables
      netcat-openbsd dnsmasq-base serf clang libclang-rt-14-dev clang-format
      help2man systemd prometheus curl buildah umoci yamllint nettle-dev libmemcached-dev"
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
# checker (deploy_kubernetes) and the Redis client libraries (proc_test_clients), installed
# again when the lock file changes. A registry out of reach fails nothing here: npm's reason
# is kept in .npm-ci-failed, and the test skips saying it, since that is the network, not
# the set-up.
for dir in deploy/kubernetes/check tests/clients/node; do
  d=$(cd "$(dirname "$0")/../$dir" && pwd)
  if [ "$d/node_modules/.package-lock.json" -nt "$d/package-lock.json" ]; then
    rm -f "$d/.npm-ci-failed"
    continue
  fi
  echo "setup: npm ci in $dir"
  if (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$d/.npm-ci-log"); then
    rm -f "$d/.npm-ci-failed"
  else # the line that says why: "request to ... failed, reason: ..." or the error code
    grep -m1 -E 'request to|reason|code' "$d/.npm-ci-log" >"$d/.npm-ci-failed" ||
      echo "npm ci failed" >"$d/.npm-ci-failed"
    echo "setup: npm ci failed in $dir: $(cat "$d/.npm-ci-failed")"
  fi
  rm -f "$d/.npm-ci-log"
done
