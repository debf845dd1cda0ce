#!/bin/bash
# test_deb.sh SRC VERSION BUILD_DIR — the Debian package, built as scripts/package.sh
# builds it (a Release build of its own in BUILD_DIR, linked statically, prefix /usr), then
# read back with dpkg-deb:
#  - -I: package ringd, VERSION, amd64, Depends adduser, the config a conffile, and the
#    maintainer scripts (postinst makes the ringd user and group; all parse as sh);
#  - -c: /usr/bin/ringd, /lib/systemd/system/ringd.service, /etc/ringd/ringd.conf and
#    /usr/share/man/man1/ringd.1.gz, nothing under /usr/local;
#  - unpacked: the binary is static and `ringd --version` prints VERSION; the unit runs it
#    from /usr/bin with the /etc config; the man page came from --help with the agent's
#    options in it.
# Without help2man, dpkg-deb or cpack: skipped, or failed under scripts/test.sh (missing.sh). About 10 s (7 s of Release build when cold).
set -u
SRC=$1
VERSION=$2
BUILD=$3
. "$(dirname "$0")/../missing.sh"
for t in help2man dpkg-deb cpack; do
  command -v "$t" >/dev/null || missing "$t not found"
done
. "$(dirname "$0")/lib.sh" deb

deb=$(BUILD_DIR="$BUILD" nice -n 19 sh "$SRC/scripts/package.sh" 2>"$DIR/build.log")
rc=$?
check "scripts/package.sh built $deb (exit $rc)" \
  [ "$rc" = 0 -a "$(basename "$deb")" = "ringd_${VERSION}_amd64.deb" -a -f "$deb" ]
[ -f "$deb" ] || { cat "$DIR/build.log"; finish; exit 1; }

field() { dpkg-deb -f "$deb" "$1"; }
check "control: ringd $(field Version) $(field Architecture), Depends: $(field Depends)" \
  [ "$(field Package) $(field Version) $(field Architecture) $(field Depends)" = "ringd $VERSION amd64 adduser" ]
mkdir "$DIR/control" "$DIR/root"
dpkg-deb -e "$deb" "$DIR/control"
check "conffiles: /etc/ringd/ringd.conf" [ "$(cat "$DIR/control/conffiles")" = /etc/ringd/ringd.conf ]
check "postinst makes the ringd group and user" sh -c "
  grep -q 'addgroup --system --quiet ringd' '$DIR/control/postinst' &&
  grep -q 'adduser --system --quiet --ingroup ringd' '$DIR/control/postinst'"
for s in postinst prerm postrm; do
  check "$s parses as sh, mode $(stat -c %a "$DIR/control/$s")" \
    sh -c "sh -n '$DIR/control/$s' && [ \$(stat -c %a '$DIR/control/$s') = 755 ]"
done

dpkg-deb -c "$deb" | awk '{print $1, $6}' >"$DIR/list"
for f in "-rwxr-xr-x ./usr/bin/ringd" "-rw-r--r-- ./lib/systemd/system/ringd.service" \
  "-rw-r--r-- ./etc/ringd/ringd.conf" "-rw-r--r-- ./usr/share/man/man1/ringd.1.gz"; do
  check "contents: $f" grep -qxF -- "$f" "$DIR/list"
done
check "contents: nothing under /usr/local" sh -c "! grep -q '/usr/local' '$DIR/list'"

dpkg-deb -x "$deb" "$DIR/root"
out=$("$DIR/root/usr/bin/ringd" --version)
check "ringd --version: $out" [ "$out" = "ringd $VERSION" ]
check "the binary is static" sh -c "! readelf -l '$DIR/root/usr/bin/ringd' | grep -q INTERP"
check "the unit runs /usr/bin/ringd with /etc/ringd/ringd.conf" grep -qx \
  'ExecStart=/usr/bin/ringd agent --config /etc/ringd/ringd.conf' "$DIR/root/lib/systemd/system/ringd.service"
check "the config is the example" cmp -s "$SRC/deploy/systemd/ringd.conf" "$DIR/root/etc/ringd/ringd.conf"
gzip -dc "$DIR/root/usr/share/man/man1/ringd.1.gz" >"$DIR/ringd.1"
check "ringd(1): a help2man page with the commands and the agent's options" sh -c "
  grep -q '^.TH RINGD \"1\"' '$DIR/ringd.1' && grep -q 'help2man' '$DIR/ringd.1' &&
  grep -q '^.SH \"AGENT OPTIONS\"' '$DIR/ringd.1' && grep -q 'keyring\\\\-file' '$DIR/ringd.1' &&
  grep -q 'force\\\\-leave' '$DIR/ringd.1'"

finish
