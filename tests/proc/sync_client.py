#!/usr/bin/env python3
"""sync_client.py — hostile clients of ringd's TCP sync port, for tests/proc/test_sync_limits.sh.

    sync_client.py MODE ARGS...

Every connection goes to 127.0.0.1:PORT from a loopback source address of our choosing
(127.0.0.2, 127.0.0.3, ... are all local on Linux), so that each attacker is a source of
its own and the agents, bound to 127.0.0.1, are another. Every mode prints one line of
`key=value` fields for the shell to check; nothing here decides pass or fail. Python 3
standard library only.

Modes:
  hold PORT SRCS PER SECONDS READY [reconnect]
        PER idle connections from each source in SRCS ("127.0.0.4", or a range of last
        octets "127.0.0.10-29"), none sending a byte, for SECONDS; writes READY (a file)
        once the first round is open and has had 0.5 s to be refused. With `reconnect`,
        every connection the agent closes is opened again 0.1 s later, so the attacker
        always asks for all its connections.
  idle PORT SRC           one connection that sends nothing: how long until the agent closes it.
  prefix PORT SRC LEN     one connection that sends only a length prefix announcing LEN bytes.
  trickle PORT SRC LEN MS a prefix announcing LEN bytes, then one byte of body every MS ms.
"""
import os
import select
import socket
import struct
import sys
import time

WAIT_S = 10.0  # longest wait for the agent to close a connection


def out(**kw):
    print(" ".join("%s=%s" % (k, v) for k, v in kw.items()), flush=True)


def sources(spec):
    if "-" not in spec.rsplit(".", 1)[1]:
        return [spec]
    base, last = spec.rsplit(".", 1)
    lo, hi = (int(x) for x in last.split("-"))
    return ["%s.%d" % (base, i) for i in range(lo, hi + 1)]


def connect(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, 0))
    s.settimeout(5.0)
    s.connect(("127.0.0.1", port))
    return s


def closed_by_peer(s):
    """True if the agent closed `s` (EOF or reset); reads and drops anything else."""
    try:
        return s.recv(65536) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (BlockingIOError, socket.timeout):
        return False


def wait_closed(s, t0):
    """Milliseconds from t0 until the agent closes `s`, or -1 if it is still open after WAIT_S."""
    deadline = t0 + WAIT_S
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return -1
        r, _, _ = select.select([s], [], [], left)
        if r and closed_by_peer(s):
            return int((time.monotonic() - t0) * 1000)


def hold(port, spec, per, seconds, ready, reconnect):
    srcs = sources(spec)
    want = [(src, k) for src in srcs for k in range(per)]
    conns = {}  # slot -> socket
    opened = closed = failed = 0
    reopen_at = {}  # slot -> when to open it again
    t0 = time.monotonic()
    first_round_closed = 0
    wrote_ready = False
    while time.monotonic() - t0 < seconds:
        now = time.monotonic()
        for slot in want:
            if slot in conns or reopen_at.get(slot, 0) > now:
                continue
            if slot in reopen_at and not reconnect:
                continue
            try:
                conns[slot] = connect(port, slot[0])
                conns[slot].setblocking(False)
                opened += 1
            except OSError:
                failed += 1
                reopen_at[slot] = now + 0.1
        socks = list(conns.items())
        r, _, _ = select.select([s for _, s in socks], [], [], 0.05) if socks else ([], [], [])
        for slot, s in socks:
            if s in r and closed_by_peer(s):
                s.close()
                del conns[slot]
                closed += 1
                reopen_at[slot] = time.monotonic() + 0.1
        if not wrote_ready and time.monotonic() - t0 >= 0.5:
            first_round_closed = closed
            with open(ready, "w") as f:
                f.write("open=%d refused=%d\n" % (len(conns), closed))
            wrote_ready = True
    still = len(conns)
    for s in conns.values():
        s.close()
    out(sources=len(srcs), per=per, opened=opened, closed_by_agent=closed, connect_failed=failed,
        refused_at_once=first_round_closed, open_at_end=still)


def one(port, src, send_prefix=None, trickle_ms=None):
    t0 = time.monotonic()
    s = connect(port, src)
    sent = 0
    if send_prefix is not None:
        s.sendall(struct.pack(">I", send_prefix))
    if trickle_ms is None:
        ms = wait_closed(s, t0)
    else:
        s.setblocking(False)
        ms = -1
        while time.monotonic() - t0 < WAIT_S:
            r, _, _ = select.select([s], [], [], trickle_ms / 1000.0)
            if r and closed_by_peer(s):
                ms = int((time.monotonic() - t0) * 1000)
                break
            try:
                s.send(b"\x93")  # any byte: the frame is never finished
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                ms = int((time.monotonic() - t0) * 1000)
                break
    s.close()
    out(closed_ms=ms, body_sent=sent)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "hold":
        hold(int(args[0]), args[1], int(args[2]), float(args[3]), args[4],
             len(args) > 5 and args[5] == "reconnect")
    elif mode == "idle":
        one(int(args[0]), args[1])
    elif mode == "prefix":
        one(int(args[0]), args[1], send_prefix=int(args[2]))
    elif mode == "trickle":
        one(int(args[0]), args[1], send_prefix=int(args[2]), trickle_ms=int(args[3]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
