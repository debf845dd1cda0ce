#!/bin/sh
# Builds ringd's OCI image from deploy/oci/Containerfile with buildah, without a registry,
# and writes it as an OCI image layout archive.
#   deploy/oci/build.sh RINGD_BINARY OUT.tar [TAG]
# RINGD_BINARY must be the static Release build (cmake -DCMAKE_BUILD_TYPE=Release): the
# image has no libc to load a dynamic one. Load OUT.tar with
#   podman load -i OUT.tar   |   skopeo copy oci-archive:OUT.tar docker://REGISTRY/ringd:TAG
# buildah's storage lives in a temporary directory (vfs driver: no overlay mount needed),
# so the host's container storage is left alone. BUILDAH_ISOLATION=chroot: no user
# namespace or runc is needed, and a build from scratch runs no command anyway.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 RINGD_BINARY OUT.tar [TAG]" >&2; exit 2; }
bin=$1 out=$2 tag=${3:-ringd:latest}
here=$(cd "$(dirname "$0")" && pwd)
command -v buildah >/dev/null || { echo "build.sh: buildah not found (apt-get install buildah)" >&2; exit 2; }
if ! readelf -h "$bin" >/dev/null 2>&1 || readelf -l "$bin" | grep -q "program interpreter"; then
  echo "build.sh: $bin is not statically linked: build it with -DCMAKE_BUILD_TYPE=Release" >&2
  exit 2
fi
version=$("$bin" version | awk '{print $NF}')
work=$(mktemp -d)
trap 'buildah --root "$work/root" --runroot "$work/run" --storage-driver vfs rm -a >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p "$work/ctx"
cp "$bin" "$work/ctx/ringd"
strip "$work/ctx/ringd" 2>/dev/null || true
export BUILDAH_ISOLATION=chroot
b="buildah --root $work/root --runroot $work/run --storage-driver vfs"
$b bud --quiet --format oci --build-arg "VERSION=$version" -f "$here/Containerfile" -t "$tag" "$work/ctx" >/dev/null
rm -f "$out"
$b push --quiet "$tag" "oci-archive:$out:$tag"
echo "build.sh: $out ($tag, ringd $version)"
