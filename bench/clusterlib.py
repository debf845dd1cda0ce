"""clusterlib.py — the pieces of bench/cluster: a minimal msgpack codec (Serf's RPC speaks
msgpack; python3-msgpack is not assumed), and a poller that keeps one connection per agent
open and asks every agent for its member counts in parallel rounds.

ringd: `INFO` over the agent's Unix socket -> members_alive/suspect/dead/left.
serf:  the RPC `stats` command over TCP (handshake once per connection) -> serf.members,
       serf.failed, serf.left; alive = members - failed - left (Serf counts failed and left
       members in `members` until they are reaped). This is what `serf info` prints, and far
       cheaper for the agent than `members`, whose reply grows with N.
"""
import errno
import os
import re
import selectors
import socket
import struct
import time


# ---------------------------------------------------------------- msgpack (subset)

class Need(Exception):
    """The buffer ends before the object does."""


def mp_pack(o):
    if o is None:
        return b"\xc0"
    if o is True:
        return b"\xc3"
    if o is False:
        return b"\xc2"
    if isinstance(o, int):
        if 0 <= o < 128:
            return bytes([o])
        if 0 <= o < 1 << 32:
            return b"\xce" + struct.pack(">I", o)
        return b"\xcf" + struct.pack(">Q", o)
    if isinstance(o, str):
        b = o.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xda" + struct.pack(">H", len(b)) + b
    if isinstance(o, dict):
        assert len(o) < 16
        return bytes([0x80 | len(o)]) + b"".join(mp_pack(k) + mp_pack(v) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        assert len(o) < 16
        return bytes([0x90 | len(o)]) + b"".join(mp_pack(v) for v in o)
    raise TypeError(type(o))


def _take(b, i, n):
    if i + n > len(b):
        raise Need()
    return b[i:i + n], i + n


def mp_unpack(b, i=0):
    """Decodes one object from b at i: (object, next index). Raises Need if incomplete."""
    if i >= len(b):
        raise Need()
    t = b[i]
    i += 1
    if t < 0x80:
        return t, i
    if t >= 0xE0:
        return t - 256, i
    if 0x80 <= t <= 0x8F:
        return _map(b, i, t & 0x0F)
    if 0x90 <= t <= 0x9F:
        return _arr(b, i, t & 0x0F)
    if 0xA0 <= t <= 0xBF:
        s, i = _take(b, i, t & 0x1F)
        return s.decode(errors="replace"), i
    if t == 0xC0:
        return None, i
    if t == 0xC2:
        return False, i
    if t == 0xC3:
        return True, i
    fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h",
             0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
    if t in fixed:
        f = fixed[t]
        s, i = _take(b, i, struct.calcsize(f))
        return struct.unpack(f, s)[0], i
    if t in (0xD9, 0xDA, 0xDB, 0xC4, 0xC5, 0xC6):
        w = {0xD9: 1, 0xC4: 1, 0xDA: 2, 0xC5: 2, 0xDB: 4, 0xC6: 4}[t]
        s, i = _take(b, i, w)
        n = int.from_bytes(s, "big")
        s, i = _take(b, i, n)
        return (s.decode(errors="replace") if t >= 0xD9 else bytes(s)), i
    if t in (0xDC, 0xDD):
        s, i = _take(b, i, 2 if t == 0xDC else 4)
        return _arr(b, i, int.from_bytes(s, "big"))
    if t in (0xDE, 0xDF):
        s, i = _take(b, i, 2 if t == 0xDE else 4)
        return _map(b, i, int.from_bytes(s, "big"))
    if t in (0xD4, 0xD5, 0xD6, 0xD7, 0xD8):  # fixext
        n = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}[t]
        s, i = _take(b, i, n + 1)
        return bytes(s), i
    if t in (0xC7, 0xC8, 0xC9):  # ext
        w = {0xC7: 1, 0xC8: 2, 0xC9: 4}[t]
        s, i = _take(b, i, w)
        s, i = _take(b, i, int.from_bytes(s, "big") + 1)
        return bytes(s), i
    raise ValueError("msgpack type 0x%02x" % t)


def _map(b, i, n):
    d = {}
    for _ in range(n):
        k, i = mp_unpack(b, i)
        v, i = mp_unpack(b, i)
        d[k] = v
    return d, i


def _arr(b, i, n):
    a = []
    for _ in range(n):
        v, i = mp_unpack(b, i)
        a.append(v)
    return a, i


# ---------------------------------------------------------------- poller

RINGD_INFO = b"*1\r\n$4\r\nINFO\r\n"
_RINGD_RE = re.compile(rb"(members_alive|members_suspect|members_dead|members_left|"
                       rb"ring_members|ring_checksum):([0-9a-f]+)")


class Conn:
    __slots__ = ("sock", "buf", "busy", "hs", "seq")

    def __init__(self):
        self.sock = None
        self.buf = bytearray()
        self.busy = False
        self.hs = False  # serf: handshake reply still expected
        self.seq = 0


class Poller:
    """endpoints: ringd -> Unix socket paths; serf -> (host, port) RPC addresses."""

    def __init__(self, impl, endpoints):
        self.impl = impl
        self.ep = list(endpoints)
        self.conns = [Conn() for _ in self.ep]
        self.sel = selectors.DefaultSelector()
        self.rounds = 0
        self.requests = 0
        self.round_time = 0.0

    def add(self, endpoint):
        self.ep.append(endpoint)
        self.conns.append(Conn())
        return len(self.ep) - 1

    def close(self, i):
        c = self.conns[i]
        if c.sock is not None:
            try:
                self.sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
        c.sock, c.busy, c.hs = None, False, False
        c.buf.clear()

    def close_all(self):
        for i in range(len(self.conns)):
            self.close(i)

    def _connect(self, i):
        c = self.conns[i]
        try:
            if self.impl == "ringd":
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(1.0)
            s.connect(self.ep[i])
            s.setblocking(False)
        except OSError:
            try:
                s.close()
            except Exception:
                pass
            return False
        c.sock = s
        c.buf.clear()
        self.sel.register(s, selectors.EVENT_READ, i)
        if self.impl == "serf":
            c.hs = True
            c.seq = 0
            self._send(i, mp_pack({"Command": "handshake", "Seq": 0}) + mp_pack({"Version": 1}))
        return c.sock is not None

    def _send(self, i, data):
        c = self.conns[i]
        try:
            n = c.sock.send(data)
        except OSError:
            n = -1
        if n != len(data):
            self.close(i)
            return False
        return True

    def _request(self, i):
        c = self.conns[i]
        if self.impl == "ringd":
            return self._send(i, RINGD_INFO)
        c.seq += 1
        return self._send(i, mp_pack({"Command": "stats", "Seq": c.seq}))

    def _parse(self, i):
        """A complete reply in the buffer: counts dict; incomplete: None."""
        c = self.conns[i]
        b = c.buf
        if self.impl == "ringd":
            if not b or b[0:1] != b"$":
                raise ValueError("unexpected reply %r" % bytes(b[:40]))
            e = b.find(b"\r\n")
            if e < 0:
                return None
            n = int(b[1:e])
            if len(b) < e + 2 + n + 2:
                return None
            body = bytes(b[e + 2:e + 2 + n])
            del b[:e + 2 + n + 2]
            d = {}
            for k, v in _RINGD_RE.findall(body):
                k = k.decode()
                if k == "ring_checksum":
                    d["checksum"] = v.decode()
                else:
                    d[k.replace("members_", "")] = int(v)
            return d
        try:
            j = 0
            if c.hs:
                hdr, j = mp_unpack(b, 0)
                if hdr.get("Error"):
                    raise ValueError("serf handshake: %s" % hdr["Error"])
                del b[:j]
                c.hs = False
                j = 0
            hdr, j = mp_unpack(b, 0)
            if hdr.get("Error"):
                raise ValueError("serf stats: %s" % hdr["Error"])
            body, j = mp_unpack(b, j)
        except Need:
            return None
        del b[:j]
        s = body.get("serf", {})
        members, failed, left = int(s["members"]), int(s["failed"]), int(s["left"])
        return {"alive": members - failed - left, "suspect": 0, "dead": failed, "left": left,
                "encrypted": s.get("encrypted")}

    def round(self, idxs, timeout=5.0):
        """Asks every agent in idxs at once; returns {i: (counts, t_reply)}; unreachable or
        late agents are absent (and their connection is reset)."""
        t0 = time.monotonic()
        out = {}
        waiting = set()
        for i in idxs:
            c = self.conns[i]
            if c.sock is None and not self._connect(i):
                continue
            if self._request(i):
                c.busy = True
                waiting.add(i)
            self.requests += 1
        end = t0 + timeout
        while waiting:
            left = end - time.monotonic()
            if left <= 0:
                break
            for key, _ in self.sel.select(left):
                i = key.data
                c = self.conns[i]
                try:
                    data = c.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.close(i)
                    waiting.discard(i)
                    continue
                if not c.busy:
                    continue  # nothing asked: ignore stray bytes
                c.buf += data
                try:
                    r = self._parse(i)
                except (ValueError, KeyError, TypeError):
                    self.close(i)
                    waiting.discard(i)
                    continue
                if r is not None:
                    c.busy = False
                    out[i] = (r, time.monotonic())
                    waiting.discard(i)
        for i in waiting:  # late: a reply may still come; start afresh next time
            self.close(i)
        self.rounds += 1
        self.round_time += time.monotonic() - t0
        return out


def wait_all(poller, idxs, pred, timeout, interval, observe=None):
    """Polls the agents in idxs until pred(counts) holds for every one of them, confirmed
    by one full round. Only agents not yet satisfied are asked in between, which keeps the
    polling cheap at large N. Returns (t_done, satisfied_count, laggards): t_done is the
    monotonic time at which the last agent was seen satisfied (None on timeout), laggards
    the last counts of the agents still unsatisfied at the timeout.
    observe(i, counts) sees every reply (for false-death tracking)."""
    idxs = list(idxs)
    t_end = time.monotonic() + timeout
    sat = {}  # i -> time first seen satisfied (since last seen unsatisfied)
    pending = set(idxs)
    last = {}  # i -> last counts seen
    while True:
        rs, cs = time.monotonic(), time.process_time()
        ask = sorted(pending) if pending else idxs
        res = poller.round(ask)
        for i in ask:
            r = res.get(i)
            last[i] = r[0] if r else None
            if r and observe:
                observe(i, r[0])
            if r and pred(r[0]):
                if i not in sat:
                    sat[i] = r[1]
                pending.discard(i)
            else:
                sat.pop(i, None)
                pending.add(i)
        if not pending and len(ask) == len(idxs):
            return max(sat.values()), len(idxs), {}  # a full round confirmed everyone
        if time.monotonic() > t_end:
            return None, len(idxs) - len(pending), {i: last.get(i) for i in sorted(pending)}
        if not pending:
            continue  # everyone satisfied once: confirm with a full round now
        el = time.monotonic() - rs
        cpu = time.process_time() - cs
        # the poller uses at most ~10% of one core, and asks no more often than `interval`
        # (waiting for slow replies costs no CPU, so it does not slow the polling down)
        time.sleep(max(interval - el, cpu * 9, 0))


def proc_cpu_ticks(pid):
    """utime + stime of the whole process (all threads, including exited ones), in ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def proc_exec_ns(pid):
    """CPU time of the process's live threads, in ns: the scheduler's sum_exec_runtime from
    /proc/PID/task/*/schedstat. Finer than the 10 ms ticks of proc_cpu_ticks, which matters
    for an idle agent; a thread that exits in between takes its time with it."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def proc_mem(pid):
    """RSS, PSS, anonymous (kB) from /proc/PID/smaps_rollup."""
    d = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                p = line.split()
                if len(p) >= 2 and p[0].endswith(":") and p[1].isdigit():
                    d[p[0][:-1]] = int(p[1])
    except OSError:
        return None
    return d


def udp_in_datagrams():
    with open("/proc/net/snmp") as f:
        lines = [l.split() for l in f if l.startswith("Udp:")]
    return int(lines[1][lines[0].index("InDatagrams")])
