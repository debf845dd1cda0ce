#!/usr/bin/env python3
"""abuse_client.py — abusive clients of ringd's query socket, for tests/proc/test_abuse.sh.

    abuse_client.py MODE ARGS...

Every mode prints one line of `key=value` fields (values without spaces) for the shell to
check; nothing here decides pass or fail except where noted. Python 3 standard library only.

Modes:
  checker SOCK PID OUT      PING every 100 ms on one connection and sample the agent's VmRSS,
                            until SIGTERM; then writes the summary line to OUT.
  conns SOCK N              N connections open at once, PING on each, read every reply.
  bigbulk SOCK LEN          declare a LEN-byte bulk, then stream bytes until cut off.
  bigreq SOCK NARGS ARGLEN  one request of NARGS legal arguments of ARGLEN bytes.
  garbage SOCK BYTES SEED   random bytes; read every reply until the agent closes.
  midreq SOCK N             N connections that send half a frame and close.
  midreply SOCK N K         N connections that pipeline K MEMBERS and close unread.
  watchflood SOCK UDPPORT   a subscriber that never reads, while forged gossip flaps members
                            (see watchflood below).
"""
import errno
import os
import random
import select
import signal
import socket
import struct
import sys
import time


def connect(path, timeout=5.0):
    """A connection with `timeout` on every operation. A Unix socket whose accept queue is
    full refuses a connect that has a timeout with EAGAIN at once, where a blocking client
    would wait: retry for up to `timeout`, as such a client would wait."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.001)


def out(**kw):
    print(" ".join("%s=%s" % (k, v) for k, v in kw.items()), flush=True)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def info(path):
    """INFO as a dict, over a fresh connection."""
    s = connect(path)
    s.sendall(b"INFO\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
        if data.startswith(b"$"):
            head, _, rest = data.partition(b"\r\n")
            if len(rest) >= int(head[1:]) + 2:
                break
    s.close()
    body = data.partition(b"\r\n")[2].decode("latin-1")
    return dict(l.split(":", 1) for l in body.split("\r\n") if ":" in l)


def exchange(s, payload, deadline_s=10.0, total=None):
    """Writes payload (or, with total, payload repeated up to total bytes) while reading
    replies, non-blocking, so neither side can stall the other. Returns (bytes sent, bytes
    received, how it ended: 'eof' if the agent closed while we could still write,
    'epipe'/'reset' if a write failed because it had closed, 'open' if neither happened
    within the deadline)."""
    s.setblocking(False)
    total = len(payload) if total is None else total
    sent, got, end = 0, b"", "open"
    t_end = time.monotonic() + deadline_s
    writing = True
    view = memoryview(payload)
    while time.monotonic() < t_end:
        r, w, _ = select.select([s], [s] if writing else [], [], 0.05)
        if r:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                end = "reset"
                break
            except BlockingIOError:
                d = None
            if d == b"":
                end = "eof"
                break
            if d:
                got += d
        if w and writing:
            off = sent % len(payload)
            try:
                sent += s.send(view[off:off + min(65536, total - sent)])
                if sent >= total:
                    writing = False
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError) as e:
                end = "epipe" if isinstance(e, BrokenPipeError) else "reset"
                # the agent closed: collect what it wrote before closing
                s.setblocking(True)
                s.settimeout(2)
                try:
                    while True:
                        d = s.recv(65536)
                        if not d:
                            break
                        got += d
                except (OSError, socket.timeout):
                    pass
                break
    return sent, got, end


# ------------------------------------------------------------------ checker

def mode_checker(path, pid, outfile):
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    pings = late = errors = 0
    worst = 0.0
    max_rss = rss_kb(pid)
    s = None
    while not stop[0]:
        t0 = time.monotonic()
        try:
            if s is None:
                s = connect(path, 10.0)
            s.sendall(b"PING\r\n")
            buf = b""
            while not buf.endswith(b"\r\n"):
                d = s.recv(64)
                if not d:
                    raise ConnectionError("closed")
                buf += d
            dt = time.monotonic() - t0
            pings += 1
            if buf != b"+PONG\r\n":
                errors += 1
            worst = max(worst, dt)
            if dt > 1.0:
                late += 1
        except (OSError, ConnectionError, socket.timeout):
            errors += 1
            worst = max(worst, time.monotonic() - t0)
            if s:
                s.close()
            s = None
        max_rss = max(max_rss, rss_kb(pid))
        rest = 0.1 - (time.monotonic() - t0)
        if rest > 0 and not stop[0]:
            time.sleep(rest)
    with open(outfile, "w") as f:
        f.write("pings=%d late=%d errors=%d worst_ms=%d max_rss_kb=%d\n"
                % (pings, late, errors, worst * 1000, max_rss))


# ------------------------------------------------------------------ connections

def mode_conns(path, n):
    t0 = time.monotonic()
    socks = []
    for _ in range(n):
        socks.append(connect(path, 10.0))
    opened = time.monotonic()
    for s in socks:
        s.sendall(b"PING\r\n")
    ok = 0
    for s in socks:
        buf = b""
        try:
            while len(buf) < 7:
                d = s.recv(64)
                if not d:
                    break
                buf += d
        except OSError:
            pass
        ok += buf == b"+PONG\r\n"
    answered = time.monotonic()
    conns = int(info(path).get("connections", -1))  # ours are all still open
    for s in socks:
        s.close()
    out(opened=n, answered=ok, connections_while_open=conns,
        open_ms=int((opened - t0) * 1000), answer_ms=int((answered - opened) * 1000))


# ------------------------------------------------------------------ oversized input

def mode_bigbulk(path, length):
    s = connect(path)
    head = b"*2\r\n$4\r\nPING\r\n$%d\r\n" % length
    chunk = b"x" * 65536
    t0 = time.monotonic()
    s.sendall(head)
    # then stream the announced bytes, 64 MiB at most, until the agent cuts us off
    sent, got, end = exchange(s, chunk, deadline_s=10, total=64 << 20)
    out(sent=sent, reply=repr(got.decode("latin-1"))[1:-1].replace(" ", "_"), end=end,
        ms=int((time.monotonic() - t0) * 1000))


def mode_bigreq(path, nargs, arglen):
    arg = b"$%d\r\n%s\r\n" % (arglen, b"k" * arglen)
    req = b"*%d\r\n$6\r\nMOWNER\r\n" % (nargs + 1) + arg * nargs
    s = connect(path)
    t0 = time.monotonic()
    sent, got, end = exchange(s, req, deadline_s=10)
    out(request=len(req), sent=sent, reply=repr(got.decode("latin-1"))[1:-1].replace(" ", "_"),
        end=end, ms=int((time.monotonic() - t0) * 1000))


def mode_garbage(path, nbytes, seed):
    rnd = random.Random(seed)
    data = rnd.randbytes(nbytes)
    s = connect(path)
    sent, got, end = exchange(s, data, deadline_s=15)
    lines = got.split(b"\r\n")
    errs = sum(1 for l in lines if l.startswith(b"-ERR"))
    proto = [l for l in lines if l.startswith(b"-ERR Protocol error")]
    others = sum(1 for l in lines if l and not l.startswith(b"-ERR"))
    out(sent=sent, replies=errs, non_error_lines=others, end=end,
        first=repr(got[:5].decode("latin-1"))[1:-1].replace(" ", "_"),
        protocol_error=repr(proto[-1].decode("latin-1") if proto else "none")[1:-1].replace(" ", "_"))


# ------------------------------------------------------------------ vanishing clients

def mode_midreq(path, n):
    frames = [b"*2\r\n$5\r\nOWN", b"*3\r\n$6\r\nMOWNER\r\n$3\r\nab", b"*1\r\n$4\r\nPI",
              b"*2\r\n$4\r\nPING\r\n$100000\r\n" + b"y" * 5000, b"MOWNER a b c", b"*"]
    for i in range(n):
        s = connect(path)
        s.sendall(frames[i % len(frames)])
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    out(clients=n)


def mode_midreply(path, n, k):
    for i in range(n):
        s = connect(path)
        s.sendall(b"MEMBERS\r\n" * k)
        if i % 2:
            time.sleep(0.002)  # some replies are being written when we go
        s.close()
    out(clients=n, requests_each=k)


# ------------------------------------------------------------------ watch flood

def mp_str(b):
    if len(b) < 32:
        return bytes([0xA0 | len(b)]) + b
    return b"\xd9" + bytes([len(b)]) + b


def mp_uint(v):
    if v < 0x80:
        return bytes([v])
    if v < 1 << 16:
        return b"\xcd" + struct.pack(">H", v)
    if v < 1 << 32:
        return b"\xce" + struct.pack(">I", v)
    return b"\xcf" + struct.pack(">Q", v)


def mp_member(name, port, inc, status, accuser=b""):
    addr = socket.inet_aton("127.0.0.1") + struct.pack(">H", port)
    return (b"\x98" + mp_str(name) + b"\xc4\x06" + addr + mp_uint(inc) + mp_uint(status)
            + mp_uint(1000) + mp_str(b"") + mp_str(b"") + mp_str(accuser))


def mp_packet(sender, members):
    assert len(members) <= 15
    return (b"RD\x01\x00" + b"\x93" + mp_str(sender) + b"\x90"
            + bytes([0x90 | len(members)]) + b"".join(members))


def mode_watchflood(path, udp_port, fake_port, pid):
    """A subscriber (SUBSCRIBE members ring) that never reads. Membership events are made
    by forging gossip (the documented protocol, PROTOCOL.md): 15 fake members with 64-byte
    names flap suspect (incarnation k) -> alive (k+1); every record is one member event
    sent to each subscriber (a message of ~250 bytes). Real churn (agents started and
    stopped) makes a few events a second, far too few to fill 1 MiB plus the socket buffer
    within a test's time. Stops when INFO's connections_cut_off rises (or after 30 s), then
    retires the fake members (status left) so they do not linger in the cluster."""
    w = connect(path)
    w.sendall(b"SUBSCRIBE members ring\r\n")
    cut0 = int(info(path)["connections_cut_off"])
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = b"abuse-gossip"
    names = [(b"flap-%02d-" % i).ljust(64, b"x") for i in range(15)]
    inc = 1
    # introduce them alive
    u.sendto(mp_packet(sender, [mp_member(n, fake_port, inc, 0) for n in names]), ("127.0.0.1", udp_port))
    t0 = time.monotonic()
    datagrams = records = 0
    cut = cut0
    max_rss = rss_kb(pid)
    while time.monotonic() - t0 < 30:
        for _ in range(10):
            # suspect at inc, then alive at inc+1: two events per member
            u.sendto(mp_packet(sender, [mp_member(n, fake_port, inc, 1, sender) for n in names]),
                     ("127.0.0.1", udp_port))
            u.sendto(mp_packet(sender, [mp_member(n, fake_port, inc + 1, 0) for n in names]),
                     ("127.0.0.1", udp_port))
            inc += 1
            datagrams += 2
            records += 30
        time.sleep(0.02)
        max_rss = max(max_rss, rss_kb(pid))
        cut = int(info(path)["connections_cut_off"])
        if cut > cut0:
            break
    elapsed = time.monotonic() - t0
    # was the watcher closed? Drain what the agent had written, then expect EOF.
    w.settimeout(3)
    buffered, closed = 0, "open"
    try:
        while True:
            d = w.recv(1 << 20)
            if not d:
                closed = "eof"
                break
            buffered += len(d)
    except ConnectionResetError:
        closed = "reset"
    except socket.timeout:
        pass
    # retire the fake members
    for _ in range(3):
        u.sendto(mp_packet(sender, [mp_member(n, fake_port, inc + 5, 3) for n in names]),
                 ("127.0.0.1", udp_port))
    out(cut_off_before=cut0, cut_off_after=cut, datagrams=datagrams, records=records,
        watcher=closed, watcher_got=buffered, ms=int(elapsed * 1000), max_rss_kb=max_rss)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "checker":
        mode_checker(args[0], int(args[1]), args[2])
    elif mode == "conns":
        mode_conns(args[0], int(args[1]))
    elif mode == "bigbulk":
        mode_bigbulk(args[0], int(args[1]))
    elif mode == "bigreq":
        mode_bigreq(args[0], int(args[1]), int(args[2]))
    elif mode == "garbage":
        mode_garbage(args[0], int(args[1]), int(args[2]))
    elif mode == "midreq":
        mode_midreq(args[0], int(args[1]))
    elif mode == "midreply":
        mode_midreply(args[0], int(args[1]), int(args[2]))
    elif mode == "watchflood":
        mode_watchflood(args[0], int(args[1]), int(args[2]), int(args[3]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
