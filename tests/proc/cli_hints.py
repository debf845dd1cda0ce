"""cli_hints.py — redis-cli's interactive mode against an agent: hints and HELP come from
COMMAND DOCS.

    python3 cli_hints.py SOCKET

Runs redis-cli -s SOCKET in a pseudo-terminal of 100 columns (answering its cursor
position queries as a terminal does), types "OWNERS " and expects the grey hint of the
arguments ("key n"), runs it with arguments and expects an owner, then "HELP MOWNER" and
expects the usage and summary COMMAND DOCS gave. Exits 0, or 1 saying what was missing
and showing what the terminal received. Stdlib only; redis-cli is ended by its PID.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

DEADLINE_S = 10


def plain(data):
    """The bytes without terminal escapes (colours, cursor moves)."""
    return re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", data)


class Term:
    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            # linenoise turns hints off on a "dumb" terminal, which CI and chroots often have
            os.execvpe(argv[0], argv, {**os.environ, "TERM": "xterm"})
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        self.out = b""

    def pump(self, until, seconds=DEADLINE_S):
        """Reads until `until` (bytes, regex) is in what arrived since the call, as it came
        or without escapes; True if so."""
        start, end = len(self.out), time.time() + seconds
        while time.time() < end:
            if re.search(until, self.out[start:]) or re.search(until, plain(self.out[start:])):
                return True
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if not r:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return False
            self.out += data
            for _ in range(data.count(b"\x1b[6n")):  # where is the cursor? at the start
                os.write(self.fd, b"\x1b[1;1R")
        return False

    def type(self, text):
        for ch in text:
            os.write(self.fd, ch.encode())
            time.sleep(0.02)

    def end(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def main():
    t = Term(["redis-cli", "-s", sys.argv[1]])
    checks = []
    try:
        checks.append(("prompt", t.pump(rb"> ")))
        t.type("OWNERS ")
        checks.append(("hint 'key n' after OWNERS", t.pump(rb"OWNERS \x1b\[[0-9;]*mkey n")))
        t.type("k 1\r")
        checks.append(("OWNERS k 1 answered", t.pump(rb'1\) "[^"]+"')))
        t.type("HELP MOWNER\r")
        checks.append(("HELP MOWNER: usage and summary",
                       t.pump(rb"MOWNER key \[key \.\.\.\]\s+summary: Returns the owner of each key")))
    finally:
        t.end()
    bad = [name for name, ok in checks if not ok]
    if bad:
        print("missing: " + ", ".join(bad))
        print(plain(t.out).decode(errors="replace")[-2000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
