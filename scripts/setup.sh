#!/bin/sh
# Installs what ringd needs to build, test and demo on Debian 12 (run as root, or with sudo).
# Idempotent and quiet: packages already present are not fetched again.
set -eu
pkgs="build-essential cmake pkg-config libuv1-dev libmsgpack-dev libxxhash-dev libinih-dev libsodium-dev libc-ares-dev
      libcmocka-dev libhiredis-dev redis-tools redis-server python3 procps iproute2 nftables
      netcat-openbsd dnsmasq-base serf clang libclang-rt-14-dev clang-format
      help2man systemd prometheus curl buildah umoci yamllint"
# node and npm check the Kubernetes manifests (deploy/kubernetes/check): Debian's, unless
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
# The manifests' schema checker, pinned by its lock file (tests/deploy/kubernetes.sh). A
# registry out of reach fails nothing here: the reason is kept in .npm-ci-failed, and the
# test skips saying it, since that is the network, not the set-up.
check=$(cd "$(dirname "$0")/../deploy/kubernetes/check" && pwd)
if [ ! -d "$check/node_modules/kubernetes-models" ]; then
  echo "setup: npm ci in deploy/kubernetes/check"
  if (cd "$check" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$check/.npm-ci-log"); then
    rm -f "$check/.npm-ci-failed"
  else # the line that says why: "request to ... failed, reason: ..." or the error code
    grep -m1 -E 'request to|reason|code' "$check/.npm-ci-log" >"$check/.npm-ci-failed" ||
      echo "npm ci failed" >"$check/.npm-ci-failed"
    echo "setup: npm ci failed in deploy/kubernetes/check: $(cat "$check/.npm-ci-failed")"
  fi
  rm -f "$check/.npm-ci-log"
else
  rm -f "$check/.npm-ci-failed"
fi
