#!/usr/bin/env python3
"""http_abuse.py PORT MODE — hostile clients of a ringd metrics endpoint on 127.0.0.1:PORT.

Prints one line of results for test_prometheus.sh to check; never asserts itself.

  garbage   binary bytes that end in an empty line: prints the status line of the answer
  oversize  a header of 9,000 bytes: prints the status line of the answer
  http2     a request for HTTP/2.0: prints the status line of the answer
  noread    4 connections from 127.0.0.3 each send a whole GET and never read or close;
            a 5th from 127.0.0.3 is tried at once (closed: "refused", else "kept"), then a
            GET from 127.0.0.3 every 0.25 s until one is answered 200:
            prints "refused|kept freed SECONDS"
  flood     4 idle connections from each of 127.0.0.10-17 (32, the limit); then one from
            127.0.0.18 ("refused" or "kept"), then a GET from 127.0.0.19 every 0.25 s until
            one is answered 200: prints "refused|kept freed SECONDS"
"""
import socket
import sys
import time

PORT = int(sys.argv[1])
MODE = sys.argv[2]
GET = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


def conn(src, timeout=3.0, rcvbuf=0):
    s = socket.socket()
    s.settimeout(timeout)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s


def answer(s):
    """Everything the server sends until it closes (or 3 s pass)."""
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    return out


def status(data):
    return data.split(b"\r\n", 1)[0].decode("latin-1") if data else "nothing"


def closed_at_once(src):
    """True when a fresh connection from src is closed by the server within 1 s."""
    try:
        s = conn(src, timeout=1.0)
    except OSError:
        return True
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True
    finally:
        s.close()


def until_served(src, limit=15.0):
    t0 = time.time()
    while time.time() - t0 < limit:
        try:
            s = conn(src)
            s.sendall(GET)
            if status(answer(s)) == "HTTP/1.1 200 OK":
                return "%.1f" % (time.time() - t0)
        except OSError:
            pass
        time.sleep(0.25)
    return "never"


if MODE == "garbage":
    s = conn("127.0.0.1")
    s.sendall(bytes(range(256)) * 4 + b"\r\n\r\n")
    print(status(answer(s)))
elif MODE == "oversize":
    s = conn("127.0.0.1")
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
    except OSError:
        pass
    print(status(answer(s)))
elif MODE == "http2":
    s = conn("127.0.0.1")
    s.sendall(b"GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n")
    print(status(answer(s)))
elif MODE == "noread":
    held = []
    for _ in range(4):
        s = conn("127.0.0.3", rcvbuf=1024)
        s.sendall(GET)
        held.append(s)
    time.sleep(0.2)
    verdict = "refused" if closed_at_once("127.0.0.3") else "kept"
    print(verdict, "freed", until_served("127.0.0.3"))
elif MODE == "flood":
    held = []
    for i in range(10, 18):
        for _ in range(4):
            held.append(conn("127.0.0.%d" % i))
    time.sleep(0.5)
    verdict = "refused" if closed_at_once("127.0.0.18") else "kept"
    print(verdict, "freed", until_served("127.0.0.19"))
else:
    sys.exit("unknown mode " + MODE)
