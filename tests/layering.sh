#!/bin/sh
# Dependencies point one way. Three checks, each failing with the offending lines:
# - The core must stay sans-I/O: lib/ may not include sockets, clocks, libuv or msgpack,
#   and proto/ may not include libuv.
# - client/ includes nothing of agent/ or cli/, and lib/ and proto/ nothing of client/.
# - Within one folder (lib/, proto/, agent/, cli/, client/), no two modules include each other:
#   when a.c or a.h includes b.h, neither b.c nor b.h may include a.h. Such a pair is one
#   module in two files, or a dependency that should go through an interface (query.c is
#   handed a host struct instead of including agent.h). A module's private header,
#   x_internal.h (the seams its tests use), is part of module x.
top=${1:-.}
bad=$(grep -nE '#include *[<"](uv\.h|msgpack|sys/socket\.h|netinet/|arpa/|time\.h|sys/time\.h|unistd\.h|pthread\.h)' "$top"/lib/*.[ch])
bad2=$(grep -nE '#include *[<"]uv\.h' "$top"/proto/*.[ch])
if [ -n "$bad$bad2" ]; then
  echo "layering violation:"; echo "$bad"; echo "$bad2"; exit 1
fi

# - client/ (the library applications link) may depend on lib/ and proto/ only: none of its
#   files includes a header of agent/ or cli/, and nothing of lib/ or proto/ includes its.
bad3=""
for f in "$top"/client/*.[ch]; do
  [ -e "$f" ] || continue
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    for d in agent cli; do
      [ -e "$top/$d/$inc" ] && bad3="$bad3  $f includes $d/$inc
"
    done
  done
done
bad4=$(grep -nE '#include *"ringd_client\.h"' "$top"/lib/*.[ch] "$top"/proto/*.[ch])
if [ -n "$bad3$bad4" ]; then
  echo "layering violation: client/ depends on lib/ and proto/ only"; printf '%s' "$bad3"
  [ -n "$bad4" ] && echo "$bad4"
  exit 1
fi

# Prints "a b" for every module a of folder $1 that includes b.h of the same folder.
edges() {
  for f in "$1"/*.[ch]; do
    [ -e "$f" ] || continue
    m=$(basename "$f"); m=${m%.*}; m=${m%_internal}
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"/]*\)\.h".*/\1/p' "$f" |
      while read -r inc; do
        [ -e "$1/$inc.h" ] || continue
        inc=${inc%_internal}
        if [ "$inc" != "$m" ]; then echo "$m $inc"; fi
      done
  done | sort -u
}

cycles=""
for d in lib proto agent cli client; do
  [ -d "$top/$d" ] || continue
  found=$(edges "$top/$d" | awk -v d="$d" '
    { e[$1 " " $2] = 1 }
    END { for (k in e) { split(k, p, " "); if (p[1] < p[2] && ((p[2] " " p[1]) in e))
            print "  " d "/: " p[1] " and " p[2] " include each other" } }')
  [ -n "$found" ] && cycles="$cycles$found
"
done
if [ -n "$cycles" ]; then
  echo "layering violation: modules that depend on each other"; printf '%s' "$cycles"; exit 1
fi
echo "layering ok"
