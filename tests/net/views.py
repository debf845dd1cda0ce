#!/usr/bin/env python3
"""views.py DIR I... - one INFO from each listed host's agent, through its query socket
(DIR/hI/ringd.sock), in one process: a poll of the whole cluster costs one start-up, not
four processes per host. One line per host:

    I alive suspect dead left ring_checksum members_checksum ring_members

or `I down` when the socket does not answer a well-formed INFO within 3 s.
"""
import socket
import sys

FIELDS = ("members_alive", "members_suspect", "members_dead", "members_left",
          "ring_checksum", "members_checksum", "ring_members")


def info(path):
    """The INFO bulk string of the agent at `path`, or None."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(path)
        s.sendall(b"*1\r\n$4\r\nINFO\r\n")
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return None
            buf += chunk
        head, rest = buf.split(b"\r\n", 1)
        if not head.startswith(b"$"):
            return None
        n = int(head[1:])
        while len(rest) < n + 2:
            chunk = s.recv(65536)
            if not chunk:
                return None
            rest += chunk
        return rest[:n].decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    finally:
        s.close()


def main():
    top, hosts = sys.argv[1], sys.argv[2:]
    out = []
    for i in hosts:
        text = info(f"{top}/h{i}/ringd.sock")
        v = {}
        for line in (text or "").splitlines():
            k, sep, val = line.partition(":")
            if sep:
                v[k] = val.strip()
        if all(f in v for f in FIELDS):
            out.append(" ".join([i] + [v[f] for f in FIELDS]))
        else:
            out.append(f"{i} down")
    print("\n".join(out))


if __name__ == "__main__":
    main()
