#!/bin/bash
# The Kubernetes manifests (deploy/kubernetes/): yamllint, then every document against the
# Kubernetes API schemas and ringd's DaemonSet against its promises (check/check.js, with
# the leave wait read from agent/config.h so the grace period follows it). No cluster runs
# here: this is what can be checked without one (deploy/kubernetes/README.md). As root, it
# also runs the init container's script, twice (a pod started again), with only the
# capabilities the manifest gives it, on directories laid out as the kubelet makes them,
# and checks what the agent will find: its directories and a keyring it accepts.
#   tests/deploy/kubernetes.sh SOURCE_DIR
# Without yamllint, node or the checker's packages (scripts/setup.sh installs all three):
# skipped, or failed under scripts/test.sh (missing.sh).
set -euo pipefail
src=$1
dir=$src/deploy/kubernetes
. "$(dirname "$0")/../missing.sh"
command -v yamllint >/dev/null || missing "yamllint not installed"
command -v node >/dev/null || missing "node not installed"
need_npm "$dir/check" kubernetes-models
leave_ms=$(sed -n 's/^#define RD_LEAVE_TIMEOUT_MS \([0-9]*\).*/\1/p' "$src/agent/config.h")
[ -n "$leave_ms" ] || { echo "FAIL: RD_LEAVE_TIMEOUT_MS not found in agent/config.h"; exit 1; }
yamllint -s -c "$dir/.yamllint" "$dir"/*.yaml
echo "ok: yamllint"
node "$dir/check/check.js" "$leave_ms" "$dir"/*.yaml

[ "$(id -u)" = 0 ] || { echo "ok: (the init container's script needs root: not run)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$dir/check/init.js" "$dir/ringd.yaml" "$tmp" >"$tmp/init.sh"
caps=$(sed -n 's/^#caps //p' "$tmp/init.sh" | sed 's/\([a-z_]*\)/,+\1/g; s/ //g')
# the kubelet's layout: hostPath DirectoryOrCreate 0755 root, a Secret's file 0400 root,
# an emptyDir 0777 root
mkdir -m 0755 "$tmp/socket" "$tmp/state"
mkdir -m 0777 "$tmp/keyring"
mkdir -m 0755 "$tmp/keyring-secret"
echo "c2VjcmV0IGtleSBmb3IgYSB0ZXN0IG9ubHkgMDAwMDA=" >"$tmp/keyring-secret/keyring"
chmod 0400 "$tmp/keyring-secret/keyring"
for run in first again; do
  rm -f "$tmp/keyring/keyring" # a new pod, a new emptyDir
  setpriv --bounding-set=-all"$caps" --inh-caps=-all sh -e "$tmp/init.sh" ||
    { echo "FAIL: the init container's script failed ($run run, capabilities ${caps#,})"; exit 1; }
done
for d in socket state; do
  got=$(stat -c '%u:%g %a' "$tmp/$d")
  [ "$got" = "10001:10001 750" ] || { echo "FAIL: $d directory is $got"; exit 1; }
done
got=$(stat -c '%u:%g %a' "$tmp/keyring/keyring")
[ "$got" = "10001:10001 400" ] || { echo "FAIL: keyring copy is $got, the agent wants 0400 for it"; exit 1; }
cmp -s "$tmp/keyring/keyring" "$tmp/keyring-secret/keyring" || { echo "FAIL: keyring copy differs"; exit 1; }
echo "ok: init container's script, twice, with capabilities ${caps#,}"
