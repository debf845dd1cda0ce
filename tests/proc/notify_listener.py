#!/usr/bin/env python3
"""notify_listener.py ADDR OUT SECONDS — stands in for systemd's notification socket.

Binds a datagram Unix socket at ADDR (a path, or @name for the abstract namespace), writes
"listening" to OUT once bound, then one line per datagram received: the time in ms since
the epoch and the datagram, its newlines shown as '|'. Stops by itself after SECONDS.
"""
import socket
import sys
import time

addr, out, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
s.settimeout(0.2)
end = time.time() + limit
with open(out, "a", buffering=1) as f:
    f.write("listening\n")
    while time.time() < end:
        try:
            data = s.recv(8192)
        except socket.timeout:
            continue
        text = data.decode("utf-8", "replace").replace("\n", "|")
        f.write("%d %s\n" % (int(time.time() * 1000), text))
