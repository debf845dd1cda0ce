#!/usr/bin/env python3
"""forger.py — forged gossip datagrams against real agents, for tests/proc/test_forgery.sh
and test_keyring_rotation.sh.

    forger.py MODE ARGS...

It speaks the gossip format of proto/PROTOCOL.md ("Gossip messages") from an address that is
not a member, the way an attacker on the network could, with no keyring (but `sealed`, which
holds a key). Every mode prints one line of `key=value` fields for the shell to check; pass
or fail is decided there. Python 3 standard library only; the MessagePack is written and
read by hand, and `sealed` calls the system's libsodium through ctypes (proto/PROTOCOL.md,
"Envelope").

Modes (PORT is an agent's gossip port on 127.0.0.1):
  record PORT NAME MPORT INC STATUS [WEIGHT]
                      one packet from "forger" carrying the record NAME at 127.0.0.1:MPORT,
                      incarnation INC, status 0..3
  namesake PORT NAME SECONDS
                      the remote stop: a record NAME alive at our own address with an old
                      incarnation, then an ACK to every PING that asks for NAME there
  heavy PORT COUNT FIRSTPORT
                      COUNT members "forged-K" of weight 100.0, alive at 127.0.0.1:FIRSTPORT+K
  crowd PORT COUNT FIRSTPORT PREFIX
                      COUNT members "PREFIX-K" of weight 1.0, alive at 127.0.0.1:FIRSTPORT+K
  hijack PORT[,PORT...] COUNT FIRSTPORT SECONDS [PREFIX WEIGHT]
                      the ring hijack: COUNT members "fake-K" of weight 100.0 that really
                      live at 127.0.0.1:FIRSTPORT+K for SECONDS, each announcing itself to
                      every PORT and answering every PING sent to it, so that they stay
                      alive (one process binds, announces and answers: no PING is missed);
                      with PREFIX and WEIGHT, members "PREFIX-K" of that weight (0: drained)
  ping PORT TARGET    the smallest PING (19 bytes with a two-letter TARGET): prints the bytes
                      sent and the bytes that came back within 1 s
  pingreq PORT TARGET a PING_REQ asking the agent to probe TARGET at a socket of ours:
                      prints what came back to us and to that socket within 1.5 s
  sealed PORT KEY LABEL TARGET
                      a PING for TARGET sealed with KEY (base64) under cluster LABEL ("" for
                      none), as a key holder would send it: prints the replies that came
                      back within 1 s and how many of them KEY opens into an ACK of our PING
  owned SOCK NAME NKEYS
                      asks an agent's query socket for the owners of NKEYS keys: prints how
                      many NAME owns
"""
import base64
import ctypes
import ctypes.util
import os
import socket
import struct
import sys
import time

from abuse_client import mp_str, mp_uint  # the same encoders as the watch flood

HOST = "127.0.0.1"


# ------------------------------------------------------------------ encoding

def mp_array(items):
    assert len(items) < 16
    return bytes([0x90 | len(items)]) + b"".join(items)


def mp_addr(port):
    if port is None:
        return b"\xc4\x00"
    return b"\xc4\x06" + socket.inet_aton(HOST) + struct.pack(">H", port)


def member(name, port, inc, status, weight=1000):
    return (b"\x98" + mp_str(name) + mp_addr(port) + mp_uint(inc) + mp_uint(status)
            + mp_uint(weight) + mp_str(b"") + mp_str(b"") + mp_str(b""))


def msg(mtype, seq, target=b"", target_port=None, checksum=0):
    return (b"\x96" + mp_uint(mtype) + mp_uint(0) + mp_uint(seq) + mp_uint(checksum)
            + mp_str(target) + mp_addr(target_port))


def packet(sender, msgs=(), members=()):
    return b"RD\x01\x00" + b"\x93" + mp_str(sender) + mp_array(list(msgs)) + mp_array(list(members))


# ------------------------------------------------------------------ decoding (what we need)

def mp_read(b, i):
    """(value, next index) of the MessagePack value at b[i]: uints, str, bin, arrays."""
    t = b[i]
    if t < 0x80:
        return t, i + 1
    if 0x90 <= t <= 0x9F:
        n, i = t & 0x0F, i + 1
        return mp_items(b, i, n)
    if 0xA0 <= t <= 0xBF:
        n = t & 0x1F
        return b[i + 1:i + 1 + n], i + 1 + n
    if t in (0xCC, 0xCD, 0xCE, 0xCF):
        w = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}[t]
        return int.from_bytes(b[i + 1:i + 1 + w], "big"), i + 1 + w
    if t in (0xD9, 0xC4):
        n = b[i + 1]
        return b[i + 2:i + 2 + n], i + 2 + n
    if t == 0xDC:
        n = int.from_bytes(b[i + 1:i + 3], "big")
        return mp_items(b, i + 3, n)
    raise ValueError("unexpected msgpack byte 0x%02x" % t)


def mp_items(b, i, n):
    out = []
    for _ in range(n):
        v, i = mp_read(b, i)
        out.append(v)
    return out, i


def decode(data):
    """(sender, [(type, seq, target)]) of a gossip packet, or None."""
    if data[:4] != b"RD\x01\x00":
        return None
    try:
        (sender, msgs, _members), _ = mp_read(data, 4)
    except (ValueError, IndexError):
        return None
    return sender, [(m[0], m[2], m[4]) for m in msgs]


def udp(port=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((HOST, port))
    return s


def out(**kw):
    print(" ".join("%s=%s" % (k, v) for k, v in kw.items()), flush=True)


# ------------------------------------------------------------------ modes

def mode_record(port, name, mport, inc, status, weight=1000):
    s = udp()
    s.sendto(packet(b"forger", members=[member(name.encode(), int(mport), int(inc), int(status),
                                               int(weight))]), (HOST, int(port)))
    out(sent=1)


def mode_namesake(port, name, seconds):
    s = udp()
    me = s.getsockname()[1]
    name = name.encode()
    s.sendto(packet(b"forger", members=[member(name, me, 1, 0)]), (HOST, int(port)))
    pings = acks = 0
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, src = s.recvfrom(65536)
        except socket.timeout:
            break
        got = decode(data)
        if not got:
            continue
        for mtype, seq, target in got[1]:
            if mtype == 1 and target == name:
                pings += 1
                s.sendto(packet(name, msgs=[msg(2, seq)]), src)
                acks += 1
    out(pings=pings, acks=acks)


def send_members(port, count, first, prefix, weight):
    s = udp()
    count, first = int(count), int(first)
    recs = [member(b"%s-%d" % (prefix, k), first + k, 1, 0, weight) for k in range(count)]
    for k in range(0, count, 12):
        s.sendto(packet(b"forger", members=recs[k:k + 12]), (HOST, int(port)))
        time.sleep(0.002)
    out(sent=count)


def mode_heavy(port, count, first):
    send_members(port, count, first, b"forged", 100000)


def mode_crowd(port, count, first, prefix):
    send_members(port, count, first, prefix.encode(), 1000)


def mode_hijack(port, count, first, seconds, prefix="fake", weight="100"):
    count, first, milli = int(count), int(first), round(float(weight) * 1000)
    socks = []
    for k in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((HOST, first + k))
        s.setblocking(False)
        name = b"%s-%d" % (prefix.encode(), k)
        for p in str(port).split(","):
            s.sendto(packet(name, members=[member(name, first + k, 1, 0, milli)]), (HOST, int(p)))
        socks.append((name, s))
    pings = 0
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        for name, s in socks:
            while True:
                try:
                    data, src = s.recvfrom(65536)
                except BlockingIOError:
                    break
                got = decode(data)
                for mtype, seq, target in (got[1] if got else ()):
                    if mtype == 1 and target == name:
                        pings += 1
                        s.sendto(packet(name, msgs=[msg(2, seq)]), src)
        time.sleep(0.005)
    out(pings=pings)


def mode_ping(port, target):
    s = udp()
    data = packet(b"x", msgs=[msg(1, 1, target.encode())])
    s.sendto(data, (HOST, int(port)))
    got = 0
    s.settimeout(1.0)
    try:
        while True:
            got += len(s.recvfrom(65536)[0])
            s.settimeout(0.2)
    except socket.timeout:
        pass
    out(sent=len(data), received=got)


def mode_pingreq(port, target):
    s, t = udp(), udp()
    tport = t.getsockname()[1]
    s.sendto(packet(b"x", msgs=[msg(3, 7, target.encode(), tport)]), (HOST, int(port)))
    got = {"requester": 0, "target": 0}
    end = time.monotonic() + 1.5
    for who, sock in (("requester", s), ("target", t)):
        sock.setblocking(False)
    while time.monotonic() < end:
        for who, sock in (("requester", s), ("target", t)):
            try:
                got[who] += len(sock.recvfrom(65536)[0])
            except BlockingIOError:
                pass
        time.sleep(0.01)
    out(to_requester=got["requester"], to_target=got["target"])


NONCE_LEN, TAG_LEN = 24, 16


def sodium():
    lib = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
    if lib.sodium_init() < 0:
        raise OSError("libsodium could not start")
    return lib


def envelope_ad(label):
    return b"RD\x01\x01" + bytes([len(label)]) + label


def seal(lib, key, label, plain):
    nonce = os.urandom(NONCE_LEN)
    ad = envelope_ad(label)
    out = ctypes.create_string_buffer(len(plain) + TAG_LEN)
    n = ctypes.c_ulonglong()
    lib.crypto_aead_xchacha20poly1305_ietf_encrypt(out, ctypes.byref(n), plain,
                                                   ctypes.c_ulonglong(len(plain)), ad,
                                                   ctypes.c_ulonglong(len(ad)), None, nonce, key)
    return b"RD\x01\x01" + nonce + out.raw[:n.value]


def unseal(lib, key, label, data):
    """The plain packet inside `data`, or None if `key` does not open it."""
    if len(data) < 4 + NONCE_LEN + TAG_LEN or data[:4] != b"RD\x01\x01":
        return None
    nonce, body, ad = data[4:4 + NONCE_LEN], data[4 + NONCE_LEN:], envelope_ad(label)
    out = ctypes.create_string_buffer(len(body))
    n = ctypes.c_ulonglong()
    rc = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(out, ctypes.byref(n), None, body,
                                                        ctypes.c_ulonglong(len(body)), ad,
                                                        ctypes.c_ulonglong(len(ad)), nonce, key)
    return out.raw[:n.value] if rc == 0 else None


def mode_sealed(port, key, label, target):
    lib, key, label = sodium(), base64.b64decode(key, validate=True), label.encode()
    s = udp()
    seq = 4242
    data = seal(lib, key, label, packet(b"x", msgs=[msg(1, seq, target.encode())]))
    s.sendto(data, (HOST, int(port)))
    replies = opened = acks = 0
    s.settimeout(1.0)
    try:
        while True:
            got = s.recvfrom(65536)[0]
            replies += 1
            plain = unseal(lib, key, label, got)
            if plain is None:
                continue
            opened += 1
            dec = decode(plain)
            if dec and any(t == 2 and q == seq for t, q, _ in dec[1]):
                acks += 1
            s.settimeout(0.2)
    except socket.timeout:
        pass
    out(sent=len(data), replies=replies, opened=opened, acks=acks)


def resp_read(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"*":
        return [resp_read(f) for _ in range(int(rest))]
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    return rest


def mode_owned(path, name, nkeys):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(10)
    c.connect(path)
    f = c.makefile("rb")
    owned, name, nkeys = 0, name.encode(), int(nkeys)
    for start in range(0, nkeys, 4000):
        keys = [b"key:%d" % k for k in range(start, min(nkeys, start + 4000))]
        req = b"*%d\r\n$6\r\nMOWNER\r\n" % (len(keys) + 1)
        req += b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)
        c.sendall(req)
        owned += sum(1 for o in resp_read(f) if o == name)
    out(owned=owned)


MODES = {"record": mode_record, "namesake": mode_namesake, "heavy": mode_heavy, "crowd": mode_crowd,
         "hijack": mode_hijack, "ping": mode_ping, "pingreq": mode_pingreq, "owned": mode_owned,
         "sealed": mode_sealed}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    MODES[sys.argv[1]](*sys.argv[2:])
