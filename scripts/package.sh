#!/bin/sh
# Builds the Debian package: a Release build, linked statically, installed under /usr,
# packed by CPack into BUILD_DIR/ringd_<version>_amd64.deb (BUILD_DIR: build-release).
# Prints the package's path. Needs help2man for the man page (scripts/setup.sh).
set -eu
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-release}
command -v help2man >/dev/null || { echo "package: help2man not found (apt-get install help2man)" >&2; exit 1; }
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRINGD_STATIC=ON -DRINGD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" -j"$(nproc)" --target ringd ringd_man >/dev/null
(cd "$build" && rm -f ringd_*.deb && cpack -G DEB >/dev/null)
ls "$build"/ringd_*_amd64.deb
