#!/usr/bin/env python3
"""stopgo.py MEAN MAX SECONDS PID... -- processes starved of CPU by signals.

Every PID is stopped (SIGSTOP) and let run (SIGCONT) for 5 ms at a time, with gaps uniform
with mean MEAN ms and at most MAX ms, from a fixed seed, each with its own phase, for
SECONDS; then all run again. That is the simulator's starvation (sim_set_starve) on real
processes: a stopped agent's datagrams wait in its socket and its timer fires late, and
when it runs, libuv fires the overdue timer before it reads the socket. Used by
bench/starve.sh and tests/proc/test_storm.sh.
"""
import heapq
import os
import random
import signal
import sys
import time

RUN_S = 0.005


def main():
    mean, most, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    pids = [int(p) for p in sys.argv[4:]]
    lo, hi = (2 * mean - most, most) if 2 * mean > most else (0, 2 * mean)
    rng = random.Random(1)
    try:
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        t0 = time.monotonic()
        events = [(t0 + rng.uniform(0, hi) / 1000, "run", p) for p in pids]
        heapq.heapify(events)
        while time.monotonic() - t0 < secs:
            t, what, p = heapq.heappop(events)
            if t > time.monotonic():
                time.sleep(t - time.monotonic())
            if what == "run":
                os.kill(p, signal.SIGCONT)
                heapq.heappush(events, (time.monotonic() + RUN_S, "stop", p))
            else:
                os.kill(p, signal.SIGSTOP)
                heapq.heappush(events, (time.monotonic() + rng.uniform(lo, hi) / 1000, "run", p))
    finally:
        for p in pids:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
