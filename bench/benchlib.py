"""benchlib.py — shared helpers for bench/socket and bench/cluster (python3 stdlib only).

Process hygiene: every process a benchmark starts is registered here and killed (by PID,
never by name) when the script exits, however it exits.
"""
import atexit
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_BUILD = "/tmp/build-bench"

_children = []  # Popen objects we started


def spawn(argv, **kw):
    """Popen that registers the child for cleanup. New session: the child gets no
    terminal signals (^C is handled by us, and we kill it by PID)."""
    kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("start_new_session", True)
    p = subprocess.Popen(argv, **kw)
    _children.append(p)
    return p


def forget(p):
    if p in _children:
        _children.remove(p)


def kill_children():
    """SIGKILL every child we started that is still running (no waiting)."""
    for p in list(_children):
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass


def kill_all():
    kill_children()
    for p in list(_children):
        try:
            p.wait(timeout=5)
        except Exception:
            pass
    _children.clear()


atexit.register(kill_all)


def _sig(signum, frame):
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _sig)
signal.signal(signal.SIGINT, _sig)
signal.signal(signal.SIGHUP, _sig)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg, code=1):
    log("error: " + msg)
    sys.exit(code)


def find_ringd(path=None):
    """--ringd, else $RINGD, else /tmp/build-bench/ringd (built in Release if missing)."""
    path = path or os.environ.get("RINGD")
    if path:
        if not os.access(path, os.X_OK):
            die(f"ringd not found at {path}")
        return os.path.abspath(path)
    path = os.path.join(DEFAULT_BUILD, "ringd")
    if not os.access(path, os.X_OK):
        log(f"# building a Release ringd in {DEFAULT_BUILD}")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", DEFAULT_BUILD,
                               "-DCMAKE_BUILD_TYPE=Release"], stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", DEFAULT_BUILD, "-j2", "--target", "ringd"],
                              stdout=subprocess.DEVNULL)
    return path


def need(tool, package):
    if not shutil.which(tool):
        die(f"{tool} not found: apt-get install {package}")


def port_free(port):
    """True if both TCP and UDP 127.0.0.1:port can be bound right now."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def free_port_block(count, lo=10000, hi=20000, seed=None):
    """A block of `count` consecutive ports in [lo, hi) (below the ephemeral range and below
    the 20000-39999 block tests/proc/lib.sh picks from), all free
    for TCP and UDP. The start is derived from the PID so parallel runs spread out."""
    span = hi - lo - count
    if span <= 0:
        die(f"cannot fit {count} ports in {lo}..{hi}")
    start = lo + ((seed if seed is not None else os.getpid()) * 37) % span
    for attempt in range(200):
        base = lo + (start - lo + attempt * (count + 7)) % span
        if all(port_free(p) for p in range(base, base + count)):
            return base
    die(f"no block of {count} free ports found")


def loadavg():
    return os.getloadavg()


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release()}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(header, rows):
    """Plain text table, right-aligned, first column left-aligned."""
    cols = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cols) for i in range(len(header))]
    out = []
    for k, r in enumerate(cols):
        cells = [r[0].ljust(w[0])] + [r[i].rjust(w[i]) for i in range(1, len(r))]
        out.append("  ".join(cells))
        if k == 0:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)


def write_csv(path, header, rows):
    import csv
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(header)
        for r in rows:
            wr.writerow(["" if c is None else c for c in r])


def wait_until(pred, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def raise_nofile(want):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, want), hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def resp_encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def resp_call(path, *args, timeout=2.0):
    """One request on a fresh Unix-socket connection; returns the decoded reply
    (str, int, None, list) or raises. For set-up and checks, not for polling."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(resp_encode(*args))
        f = s.makefile("rb")
        return _resp_read(f)
    finally:
        s.close()


def _resp_read(f):
    line = f.readline()
    if not line:
        raise ConnectionError("closed")
    t, body = line[:1], line[1:-2]
    if t == b"+":
        return body.decode()
    if t == b"-":
        raise RuntimeError(body.decode())
    if t == b":":
        return int(body)
    if t == b"$":
        n = int(body)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode()
    if t == b"*":
        n = int(body)
        return None if n < 0 else [_resp_read(f) for _ in range(n)]
    raise RuntimeError("bad reply %r" % line)


def info_fields(text):
    d = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            d[k] = v.strip()
    return d


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 1 << 30


class MemGuard:
    """On a shared machine, never push it into the OOM killer: a thread watches
    MemAvailable and, below `floor_mb`, kills every process we started (ours only)."""

    def __init__(self, floor_mb=1024):
        import threading
        self.floor = floor_mb
        self.tripped = None
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            avail = mem_available_mb()
            if avail < self.floor and self.tripped is None:
                self.tripped = avail
                log(f"# MEMORY GUARD: MemAvailable {avail} MB < {self.floor} MB: "
                    "killing our agents")
                kill_children()
            time.sleep(0.25)


def confine_cpus(cpus):
    """Runs this process, and so every process it starts from now on, in a cgroup of its own
    whose CPU quota is `cpus` CPUs: the same work on a smaller machine. cgroup v2 (cpu.max)
    or v1 (the cpu controller's CFS quota); needs root. At exit our children are killed and
    the cgroup removed."""
    period = 100000
    quota = max(1000, int(cpus * period))
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        root = "/sys/fs/cgroup"
        files = [("../cgroup.subtree_control", "+cpu"), ("cpu.max", f"{quota} {period}")]
    elif os.path.isdir("/sys/fs/cgroup/cpu"):
        root = "/sys/fs/cgroup/cpu"
        files = [("cpu.cfs_period_us", str(period)), ("cpu.cfs_quota_us", str(quota))]
    else:
        die("--cpus: no cgroup CPU controller under /sys/fs/cgroup")
    d = os.path.join(root, f"ringd-bench-{os.getpid()}")
    try:
        os.mkdir(d)
        for name, value in files + [("cgroup.procs", str(os.getpid()))]:
            with open(os.path.join(d, name), "w") as f:
                f.write(value)
    except OSError as e:
        die(f"--cpus: cannot set up the cgroup {d}: {e}")

    def release():  # atexit runs it before kill_all (registered first): kill here
        kill_all()
        try:
            with open(os.path.join(root, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass
        for _ in range(50):  # killed children leave the cgroup as they are reaped
            try:
                os.rmdir(d)
                return
            except OSError:
                time.sleep(0.1)
        log(f"# could not remove the cgroup {d}")

    atexit.register(release)


# ---------------------------------------------------------------- fast mass start

class Proc:
    """A child started by spawn_many(): the Popen subset the benchmarks use."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                pid, st = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(st)
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:  # not reaped: the PID is still our child's
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.01)
        return self.returncode


_subreaper = False


def _become_subreaper():
    global _subreaper
    if _subreaper:
        return True
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except Exception:
        _subreaper = False
    return _subreaper


def spawn_many(jobs, tmpdir):
    """Starts many processes at once: jobs = [(argv, logfile)]. One /bin/sh forks them all
    (`cmd & echo $!`), far faster than one Popen each on a loaded machine, since nothing
    waits for each exec; we are their subreaper, so they become our children when the shell
    exits and we reap and kill them by PID. Returns ([Proc], seconds the shell took)."""
    import shlex
    if not _become_subreaper():
        t = time.monotonic()
        procs = []
        for argv, logf in jobs:
            with open(logf, "w") as f:
                procs.append(spawn(argv, stdout=f, stderr=subprocess.STDOUT))
        return procs, time.monotonic() - t
    script = os.path.join(tmpdir, "launch.sh")
    with open(script, "w") as f:
        for argv, logf in jobs:
            f.write(" ".join(shlex.quote(a) for a in argv) +
                    f" </dev/null >{shlex.quote(logf)} 2>&1 & echo $!\n")
    t = time.monotonic()
    sh = subprocess.Popen(["/bin/sh", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          start_new_session=True)
    out, _ = sh.communicate()
    took = time.monotonic() - t
    procs = [Proc(int(x)) for x in out.split()]
    _children.extend(procs)
    if len(procs) != len(jobs):
        die(f"launcher started {len(procs)} of {len(jobs)} processes")
    return procs, took
