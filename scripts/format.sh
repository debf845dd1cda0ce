#!/bin/sh
# format.sh — every C source and header of the project as .clang-format says, with Debian's
# clang-format 14 (a newer one formats some constructs differently: use the one CI has).
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; lists each file that differs and fails
# ctest runs the check as `format`.
set -eu
cd "$(dirname "$0")/.."
case ${1:-} in
'') mode=fix ;;
--check) mode=check ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format not found (apt-get install clang-format)" >&2
  exit 1
fi
# The project's own folders, not build directories (a checkout need not be a git clone).
files=$(find lib proto agent cli client tests bench -name '*.[ch]' | sort)
if [ "$mode" = fix ]; then
  echo "$files" | xargs clang-format -i
  exit 0
fi
bad=0
total=0
for f in $files; do
  total=$((total + 1))
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format: $f differs from clang-format (scripts/format.sh fixes it)"
    bad=$((bad + 1))
  fi
done
echo "format: $bad of $total files differ"
[ "$bad" = 0 ]
