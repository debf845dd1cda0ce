#!/bin/bash
# The OCI image (deploy/oci/): builds a static Release ringd in a build dir of its own,
# builds the image from it with deploy/oci/build.sh, then checks what a runtime would see:
# the config (entrypoint, command, user, labels, ports) as buildah reads it back, a root
# filesystem holding the binary and nothing else (unpacked by umoci), and that binary
# running there as the image's user with no libc beside it.
#   tests/deploy/oci.sh SOURCE_DIR WORK_DIR
# Exit 77 (skipped) where buildah cannot build (no root, or a root that is no mount point,
# as in a plain chroot: deploy/oci/README.md); without buildah or umoci, skipped, or failed
# under scripts/test.sh (missing.sh).
set -euo pipefail
src=$1 work=$2
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (buildah's storage, chroot)"
. "$(dirname "$0")/../missing.sh"
command -v buildah >/dev/null || missing "buildah not installed (apt-get install buildah)"
command -v umoci >/dev/null || missing "umoci not installed (apt-get install umoci)"

mkdir -p "$work"
tmp=$(mktemp -d "$work/tmp.XXXXXX")
B="buildah --root $tmp/root --runroot $tmp/run --storage-driver vfs"
trap '$B rm -a >/dev/null 2>&1 || true; $B rmi -a -f >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
# A build of one file, as build.sh does it: committing a layer is where buildah needs more
# than root (in a plain chroot, / is no mount point and the vfs layer cannot be applied).
mkdir "$tmp/probe"
echo probe >"$tmp/probe/f"
printf 'FROM scratch\nCOPY f /f\n' >"$tmp/probe/Containerfile"
probe=$(BUILDAH_ISOLATION=chroot $B bud --quiet --format oci -f "$tmp/probe/Containerfile" \
  -t probe "$tmp/probe" 2>&1) || skip "buildah cannot build here: $(echo "$probe" | tail -1)"
$B rmi -a -f >/dev/null 2>&1 || true

# The image needs the static binary, which a sanitizer build is not.
rel=$work/release
{ cmake -S "$src" -B "$rel" -DCMAKE_BUILD_TYPE=Release -DRINGD_TESTS=OFF &&
  cmake --build "$rel" --target ringd -j2; } >"$work/release.log" 2>&1 ||
  { cat "$work/release.log"; fail "the Release build failed"; }
version=$("$rel/ringd" version | awk '{print $NF}')

# A dynamic binary is refused: it could not start in an image without libc.
dyn=$(command -v sh)
if sh "$src/deploy/oci/build.sh" "$dyn" "$tmp/bad.tar" 2>/dev/null; then
  fail "build.sh accepted a dynamically linked binary"
fi

sh "$src/deploy/oci/build.sh" "$rel/ringd" "$tmp/ringd.tar" "ringd:$version"
[ -s "$tmp/ringd.tar" ] || fail "no archive written"

$B pull -q "oci-archive:$tmp/ringd.tar" >/dev/null
cfg() { $B inspect --type image --format "$1" "ringd:$version"; }
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; echo "ok: $1 = $2"; }
expect entrypoint "$(cfg '{{.OCIv1.Config.Entrypoint}}')" "[/usr/bin/ringd]"
expect cmd "$(cfg '{{.OCIv1.Config.Cmd}}')" "[agent]"
expect user "$(cfg '{{.OCIv1.Config.User}}')" "10001:10001"
expect title "$(cfg '{{index .OCIv1.Config.Labels "org.opencontainers.image.title"}}')" "ringd"
expect version "$(cfg '{{index .OCIv1.Config.Labels "org.opencontainers.image.version"}}')" "$version"
expect ports "$(cfg '{{.OCIv1.Config.ExposedPorts}}')" "map[7946/tcp:{} 7946/udp:{}]"
expect os/arch "$(cfg '{{.OCIv1.OS}}/{{.OCIv1.Architecture}}')" "linux/amd64"

# What a runtime unpacks: one file, and it runs as uid 10001 with nothing else there.
mkdir "$tmp/layout"
tar -xf "$tmp/ringd.tar" -C "$tmp/layout"
umoci unpack --image "$tmp/layout:ringd:$version" "$tmp/bundle" >/dev/null
files=$(cd "$tmp/bundle/rootfs" && find . -type f -o -type l | sort | tr '\n' ' ')
expect "rootfs files" "$files" "./usr/bin/ringd "
out=$(chroot --userspec=10001:10001 "$tmp/bundle/rootfs" /usr/bin/ringd version)
expect "ringd version in the image" "$out" "ringd $version"
echo "PASS: image ringd:$version, $(stat -c %s "$tmp/ringd.tar") bytes"
