#!/bin/sh
# The core must stay sans-I/O: lib/ may not include sockets, clocks, libuv or msgpack,
# and proto/ may not include libuv. Fails with the offending lines.
top=${1:-.}
bad=$(grep -nE '#include *[<"](uv\.h|msgpack|sys/socket\.h|netinet/|arpa/|time\.h|sys/time\.h|unistd\.h|pthread\.h)' "$top"/lib/*.[ch])
bad2=$(grep -nE '#include *[<"]uv\.h' "$top"/proto/*.[ch])
if [ -n "$bad$bad2" ]; then
  echo "layering violation:"; echo "$bad"; echo "$bad2"; exit 1
fi
echo "layering ok"
