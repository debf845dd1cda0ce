#!/usr/bin/env python3
"""doc-tables.py — the tables in the docs that come from a CSV, generated from that CSV.

    scripts/doc-tables.py           rewrite every generated table in place
    scripts/doc-tables.py --check   exit 1 and name each table that differs from its CSV

A generated table sits between two markers in a Markdown file:

    <!-- table:NAME -->
    ...generated, do not edit by hand...
    <!-- /table -->

NAME picks one generator below. Each reads one CSV written by a measurement (the simulator
sweep, bench/socket, bench/cluster) and formats its numbers the way that script defines them:
the CSVs already hold the medians, and a ringd/Serf ratio is the quotient of the two medians,
as bench/cluster prints it. Why this shape: a number typed by hand drifts from its CSV at the
next re-measurement, and nothing notices; a ctest (doc_tables) runs --check.

Python 3 standard library only.
"""
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "bench/README.md", "tests/sim/README.md", "tests/net/README.md",
        "proto/PROTOCOL.md"]
SWEEP = "docs/sim/sweep.csv"
SOCKET = "docs/bench/socket.csv"
CLUSTER = "docs/bench/cluster.csv"
CLUSTER_ENCRYPT = "docs/bench/cluster_encrypt.csv"
CLUSTER_ENCRYPT_JOIN = "docs/bench/cluster_encrypt_join.csv"

# tests/sim/sweep.c: JOIN_MAX_MS, the default --join-max. A cell without agreement has no
# agree_ms in the CSV; this is the time it was given.
SWEEP_JOIN_MAX_S = 60
# bench/cluster: the ringd/Serf targets its ratio table checks.
CLUSTER_TARGETS = {"join_s": 0.5, "join_from_first_start_s": 0.5, "crash_all_s": 0.6,
                   "rss_mb": 0.1, "idle_cpu": 0.2}
# bench/cluster: what sealing may cost ringd (sealed / plain): idle CPU at every N, join at 50.
SEALING_TARGETS = {"cpu_exec_pct_per_agent": (1.25, None), "join_s": (1.1, {50})}

MARKER = re.compile(r"(<!-- table:([a-z0-9-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def read_csv(path):
    with open(os.path.join(ROOT, path), newline="") as f:
        return list(csv.DictReader(f))


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def bold(text, on):
    return f"**{text}**" if on else text


def sig2(x):
    """Two significant figures, no exponent (0.0043, 0.13, 4, 17)."""
    return "0" if x == 0 else format(float(format(x, ".2g")), "g")


# ---------------------------------------------------------------- the simulator sweep

def sweep_rows():
    rows = read_csv(SWEEP)
    for r in rows:
        r["n"], r["loss_pct"] = int(r["n"]), int(r["loss_pct"])
    return rows


def secs_rounds(ms, rounds):
    return f"{int(ms) / 1000:.2f} s ({float(rounds):g})"


def sweep_detect(r):
    text = f"{int(r['detect_ms']) / 1000:.1f} s"
    if int(r["detect_samples"]) > 1:
        text += f" (≤{int(r['detect_max_ms']) / 1000:.1f})"
    return text


def by_earlier_build(text, r):
    """text, marked when the row was measured by an earlier build (its note says so)."""
    return f"{text} (earlier build)" if r["note"].startswith("earlier build") else text


def sweep_n(r, spec=""):
    return by_earlier_build(format(r["n"], spec), r)


def sweep_skipped(rows):
    """Skipped cells, one line per N: the loss rates and the reason, from the note."""
    out = []
    for n in sorted({r["n"] for r in rows if r["status"] == "skipped"}):
        cells = [r for r in rows if r["n"] == n and r["status"] == "skipped"]
        losses = [r["loss_pct"] for r in cells]
        measured = [r for r in rows if r["n"] == n and r["status"] != "skipped"]
        span = "all" if not measured else (
            f"{min(losses)}–{max(losses)}%" if len(losses) > 1 else f"{losses[0]}%")
        note = cells[0]["note"]
        if note.startswith("CPU"):
            reason = "CPU time (see above)"
        else:
            reason = "memory, " + note.split(" (")[0]
        out.append((n, span, f"skipped: {reason}"))
    return out


def gen_sim_sweep():
    rows = sweep_rows()
    header = ["N", "loss", "ring agrees", "all alive, one checksum", "crash seen dead by all",
              "pkt/member/s", "false deaths (events/members)", "per member·h",
              "suspicions /member/s", "window"]
    body = []
    for r in rows:
        if r["status"] == "skipped":
            continue
        agree = (secs_rounds(r["agree_ms"], r["agree_rounds"]) if r["agree_ms"]
                 else f"**none in {SWEEP_JOIN_MAX_S} s**")
        ev, vic, total = int(r["fp_events"]), int(r["fp_victims"]), int(r["fp_total"])
        fd = f"{ev}/{vic}"
        if ev or total:
            fd = f"**{fd}** ({total} in the run)"
        body.append([sweep_n(r), f"{r['loss_pct']}%", secs_rounds(r["ring_ms"], r["ring_rounds"]),
                     agree, sweep_detect(r), f"{float(r['msgs_per_member_s']):.1f}", fd,
                     sig2(float(r["fp_per_member_hour"])),
                     sig2(float(r["suspects_per_member_hour"]) / 3600),
                     f"{float(r['window_s']):g} s"])
    for n, span, text in sweep_skipped(rows):
        body.append([n, span, text] + [""] * (len(header) - 3))
    return table(header, body)


def gen_sim_summary():
    rows = sweep_rows()
    by = {(r["n"], r["loss_pct"]): r for r in rows}
    header = ["N", "agreement after a mass join", "crash seen dead by all", "pkt/member/s",
              "false deaths /member·h at 10 / 20 / 30% loss"]
    body = []
    for n in sorted({r["n"] for r in rows}):
        quiet = by.get((n, 0))
        if not quiet or quiet["status"] == "skipped":
            continue
        fps = []
        for loss in (10, 20, 30):
            r = by.get((n, loss))
            fps.append("skipped" if not r or r["status"] == "skipped"
                       else by_earlier_build(sig2(float(r["fp_per_member_hour"])), r))
        body.append([sweep_n(quiet, ","), f"{int(quiet['agree_ms']) / 1000:.2f} s",
                     f"{int(quiet['detect_ms']) / 1000:.1f} s",
                     f"{float(quiet['msgs_per_member_s']):.1f}", " / ".join(fps)])
    return table(header, body)


# ---------------------------------------------------------------- bench/socket

def socket_label(case):
    return {"OWNER vs GET": "OWNER vs GET",
            "MOWNER10 vs MGET10": "MOWNER vs MGET (10 keys)",
            "OWNER vs GET RESP3": "OWNER vs GET, RESP3"}.get(case, case)


def gen_socket():
    header = ["case", "c", "P", "ringd req/s", "Redis req/s", "ratio",
              "p99 ringd / Redis (ms)", "server CPU µs/req ringd / Redis"]
    body = []
    for r in read_csv(SOCKET):
        rps_miss, p99_miss = r["rps_target_met"] != "yes", r["p99_target_met"] != "yes"
        body.append([socket_label(r["case"]), r["clients"], r["pipeline"],
                     bold(f"{int(r['ringd_rps']):,}", rps_miss), f"{int(r['redis_rps']):,}",
                     bold(f"{float(r['ratio']):.2f}", rps_miss),
                     bold(f"{float(r['ringd_p99_ms']):.3f} / {float(r['redis_p99_ms']):.3f}",
                          p99_miss),
                     f"{float(r['ringd_cpu_us_per_req']):.2f} / "
                     f"{float(r['redis_cpu_us_per_req']):.2f}"])
    return table(header, body)


def gen_socket_summary():
    rows = [r for r in read_csv(SOCKET) if r["case"] == "OWNER vs GET"]
    header = [""] + [f"-c {r['clients']} -P {r['pipeline']}" for r in rows]
    rps = ["requests/s, ringd / Redis"]
    p99 = ["p99, ringd / Redis (ms)"]
    cpu = ["server CPU per request, ringd / Redis (µs)"]
    for r in rows:
        rps.append(bold(f"{float(r['ratio']):.2f}×", r["rps_target_met"] != "yes"))
        p99.append(bold(f"{float(r['ringd_p99_ms']):.3f} / {float(r['redis_p99_ms']):.3f}",
                        r["p99_target_met"] != "yes"))
        cpu.append(f"{float(r['ringd_cpu_us_per_req']):.3g} / "
                   f"{float(r['redis_cpu_us_per_req']):.3g}")
    return table(header, [rps, p99, cpu])


# ---------------------------------------------------------------- bench/cluster

def with_idle_cpu(rows):
    """Each row's idle CPU as one field: from the nanosecond clock where the run measured it,
    else from the tick-based one (10 ms steps, which reads 0 over a short window)."""
    for r in rows:
        r["idle_cpu"] = r.get("cpu_exec_pct_per_agent") or r["cpu_pct_per_agent"]
    return rows


# bench/cluster --all: from this N on, ringd runs alone (the large-N table).
CLUSTER_LARGE_N = 500


def cluster_rows():
    return with_idle_cpu([r for r in read_csv(CLUSTER) if r["impl"] in ("ringd", "serf") and
                          int(r["n"]) < CLUSTER_LARGE_N])


def num(v, spec):
    """A cluster CSV cell: '' (not measured), '>T' (timed out after T s), or a number."""
    if v == "":
        return "–"
    if v.startswith(">"):
        return v
    return format(float(v), spec)


def impl_name(impl):
    return "Serf" if impl == "serf" else impl


def gen_cluster():
    header = ["impl", "N", "converged", "join (s)", "join from the first start (s)", "spawn (s)",
              "rings agree (s)", "RSS / PSS per agent (MB)", "idle CPU per agent",
              "UDP pkts/agent/s", "crash seen by all (s)",
              "leave seen by all (s)", "new agent seen by all (s)", "false deaths"]
    body = []
    for r in cluster_rows():
        done, reps = r["converged"].split("/")
        body.append([impl_name(r["impl"]), r["n"], bold(r["converged"], done != reps),
                     num(r["join_s"], ".3f"), num(r["join_from_first_start_s"], ".3f"),
                     num(r["spawn_s"], ".3f"), num(r["ring_s"], ".3f"),
                     f"{num(r['rss_mb'], '.2f')} / "
                     f"{num(r['pss_mb'], '.2f')}", num(r["idle_cpu"], ".3f") + "%",
                     num(r["udp_pkts_per_agent_s"], ".1f"), num(r["crash_all_s"], ".2f"),
                     num(r["leave_all_s"], ".2f"), num(r["new_all_s"], ".2f"),
                     r["false_deaths"] or "–"])
    return table(header, body)


def cluster_pairs():
    """(N, ringd row, Serf row) for every N both were measured at in the same run."""
    by = {(r["impl"], r["n"]): r for r in cluster_rows()}
    pairs = []
    for n in sorted({int(r["n"]) for r in by.values()}):
        a, b = by.get(("ringd", str(n))), by.get(("serf", str(n)))
        if a and b and a["run"] == b["run"]:
            pairs.append((n, a, b))
    return pairs


def ratio(a, b, key, spec):
    """ringd / Serf as bench/cluster defines it: the quotient of the medians; when Serf timed
    out ('>T'), ringd's figure over T, an upper bound. Bold when the target is missed."""
    x, y = a[key], b[key]
    if x == "" or y == "" or x.startswith(">"):
        return "–"
    if y.startswith(">"):
        return "<" + format(float(x) / float(y[1:]), spec)
    q = float(x) / float(y)
    return bold(format(q, spec), q > CLUSTER_TARGETS[key])


def gen_cluster_ratios():
    t = CLUSTER_TARGETS
    header = ["N", f"join (≤ {t['join_s']})",
              f"join from the first start (≤ {t['join_from_first_start_s']})",
              f"crash (≤ {t['crash_all_s']})", f"RSS (≤ {t['rss_mb']})",
              f"idle CPU (≤ {t['idle_cpu']})"]
    body = [[n, ratio(a, b, "join_s", ".2f"), ratio(a, b, "join_from_first_start_s", ".2f"),
             ratio(a, b, "crash_all_s", ".2f"), ratio(a, b, "rss_mb", ".3f"),
             ratio(a, b, "idle_cpu", ".3f")]
            for n, a, b in cluster_pairs()]
    return table(header, body)


def gen_cluster_summary():
    header = ["N", "join", "crash seen by all", "RSS per agent", "idle CPU per agent"]
    body = []
    for n, a, b in cluster_pairs():
        def pair(key, spec, unit):
            return (f"{num(a[key], spec)} / {num(b[key], spec)}{unit} "
                    f"({ratio(a, b, key, '.2f').replace('**', '')}×)")
        body.append([f"{n:,}", pair("join_s", ".2f", " s"), pair("crash_all_s", ".1f", " s"),
                     pair("rss_mb", ".1f", " MB"),
                     f"{ratio(a, b, 'idle_cpu', '.3f').replace('**', '')}×"])
    return table(header, body)


def gen_cluster_large():
    header = ["N", "ringd flags", "spawn (s)", "join (s)", "RSS per agent (MB)",
              "idle CPU per agent", "UDP pkts/agent/s", "crash seen by all (s)",
              "leave seen by all (s)", "new agent seen by all (s)", "false-death log lines"]
    body = []
    for r in with_idle_cpu(read_csv(CLUSTER)):
        if not (r["impl"].startswith("ringd ") or
                (r["impl"] == "ringd" and int(r["n"]) >= CLUSTER_LARGE_N)):
            continue
        flags = r["impl"][len("ringd "):]
        body.append([f"{int(r['n']):,}", f"`{flags}`" if flags else "(default: 512 vnodes)",
                     num(r["spawn_s"], ".0f"), num(r["join_s"], ".1f"), num(r["rss_mb"], ".2f"),
                     num(r["idle_cpu"], ".3f") + "%",
                     num(r["udp_pkts_per_agent_s"], ".1f"), num(r["crash_all_s"], ".1f"),
                     num(r["leave_all_s"], ".2f"), num(r["new_all_s"], ".2f"),
                     f"{int(r['false_deaths']):,}" if r["false_deaths"] else "–"])
    return table(header, body)


# ---------------------------------------------------------------- bench/cluster, sealed

def encrypt_rows():
    return read_csv(CLUSTER_ENCRYPT)


def gen_cluster_encrypt():
    header = ["impl", "sealed", "N", "converged", "join (s)", "RSS per agent (MB)",
              "idle CPU per agent (ns clock)", "idle CPU per agent (ticks)",
              "UDP bytes/agent/s", "crash seen by all (s)", "leave seen by all (s)",
              "new agent seen by all (s)", "false deaths", "load1"]
    body = []
    for r in encrypt_rows():
        kind, _, enc = r["impl"].partition("+")
        done, reps = r["converged"].split("/")
        body.append([impl_name(kind), "yes" if r["encrypted"] == "1" else "no", r["n"],
                     bold(r["converged"], done != reps), num(r["join_s"], ".3f"),
                     num(r["rss_mb"], ".2f"), num(r["cpu_exec_pct_per_agent"], ".4f") + "%",
                     num(r["cpu_pct_per_agent"], ".3f") + "%",
                     num(r["udp_bytes_per_agent_s"], ".0f"), num(r["crash_all_s"], ".2f"),
                     num(r["leave_all_s"], ".2f"), num(r["new_all_s"], ".2f"),
                     r["false_deaths"] or "–", num(r["load1"], ".1f")])
    return table(header, body)


def quotient(x, y, spec, tgt):
    """x / y with its target in the cell, bold when missed; '–' when either is missing."""
    if x == "" or y == "" or x.startswith(">") or y.startswith(">"):
        return "–"
    q = float(x) / float(y)
    return format(q, spec) if tgt is None else bold(f"{q:{spec}} (≤ {tgt})", q > tgt)


def gen_cluster_encrypt_ratios():
    by = {(r["impl"], int(r["n"])): r for r in encrypt_rows()}
    t = CLUSTER_TARGETS
    cases = [("sealed ringd / plain ringd", "ringd+enc", "ringd",
              {k: (lambda n, v=v: v[0] if v[1] is None or n in v[1] else None)
               for k, v in SEALING_TARGETS.items()}),
             ("sealed ringd / sealed Serf", "ringd+enc", "serf+enc",
              {"join_s": lambda n: t["join_s"], "crash_all_s": lambda n: t["crash_all_s"],
               "rss_mb": lambda n: t["rss_mb"],
               "cpu_exec_pct_per_agent": lambda n: t["idle_cpu"]}),
             ("plain ringd / plain Serf", "ringd", "serf",
              {"join_s": lambda n: t["join_s"], "crash_all_s": lambda n: t["crash_all_s"],
               "rss_mb": lambda n: t["rss_mb"],
               "cpu_exec_pct_per_agent": lambda n: t["idle_cpu"]}),
             ("sealed Serf / plain Serf", "serf+enc", "serf", {})]
    header = ["N", "ratio", "join", "crash seen by all", "RSS", "idle CPU (ns clock)"]
    body = []
    for n in sorted({n for _, n in by}):
        for title, num_, den, tg in cases:
            a, b = by.get((num_, n)), by.get((den, n))
            if not a or not b or a["run"] != b["run"]:
                continue
            body.append([n, title] + [
                quotient(a[k], b[k], ".3f" if k != "join_s" else ".2f",
                         tg[k](n) if k in tg else None)
                for k in ("join_s", "crash_all_s", "rss_mb", "cpu_exec_pct_per_agent")])
    return table(header, body)


def gen_cluster_encrypt_join():
    """Sealed against plain ringd, join only: the poller's figure and the logs' figure."""
    by = {(r["impl"], int(r["n"])): r for r in read_csv(CLUSTER_ENCRYPT_JOIN)}
    tgt, at = SEALING_TARGETS["join_s"]
    header = ["N", "runs", "join plain / sealed (s)", "ratio", "join from the logs (s)",
              "ratio (logs)", "idle CPU ratio (ns clock)"]
    body = []
    for n in sorted({n for _, n in by}):
        a, b = by.get(("ringd+enc", n)), by.get(("ringd", n))
        if not a or not b or a["run"] != b["run"]:
            continue
        t = tgt if at is None or n in at else None
        body.append([n, f"{b['reps']} + {a['reps']}",
                     f"{num(b['join_s'], '.3f')} / {num(a['join_s'], '.3f')}",
                     quotient(a["join_s"], b["join_s"], ".3f", t),
                     f"{num(b['join_log_s'], '.3f')} / {num(a['join_log_s'], '.3f')}",
                     quotient(a["join_log_s"], b["join_log_s"], ".3f", t),
                     quotient(a["cpu_exec_pct_per_agent"], b["cpu_exec_pct_per_agent"], ".3f",
                              SEALING_TARGETS["cpu_exec_pct_per_agent"][0])])
    return table(header, body)


GENERATORS = {
    "sim-sweep": gen_sim_sweep,
    "sim-summary": gen_sim_summary,
    "socket": gen_socket,
    "socket-summary": gen_socket_summary,
    "cluster": gen_cluster,
    "cluster-ratios": gen_cluster_ratios,
    "cluster-summary": gen_cluster_summary,
    "cluster-large": gen_cluster_large,
    "cluster-encrypt": gen_cluster_encrypt,
    "cluster-encrypt-ratios": gen_cluster_encrypt_ratios,
    "cluster-encrypt-join": gen_cluster_encrypt_join,
}


def render(text, path):
    """(the document with every generated table rewritten, the names of the tables that
    changed); exits on an unknown NAME."""
    changed = []

    def sub(m):
        name = m.group(2)
        if name not in GENERATORS:
            raise SystemExit(f"{path}: unknown table '{name}'")
        body = GENERATORS[name]()
        if body != m.group(3):
            changed.append(name)
        return m.group(1) + body + m.group(4)
    return MARKER.sub(sub, text), changed


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    stale, used = [], set()
    for rel in DOCS:
        path = os.path.join(ROOT, rel)
        with open(path, encoding="utf-8") as f:
            old = f.read()
        used.update(m.group(2) for m in MARKER.finditer(old))
        new, changed = render(old, rel)
        if not changed:
            continue
        stale += [(rel, name) for name in changed]
        if not check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"rewrote {rel}: {', '.join(changed)}")
    if check:
        unused = sorted(set(GENERATORS) - used)
        for name in unused:
            print(f"table '{name}' is in no document", file=sys.stderr)
        for rel, name in stale:
            print(f"{rel}: table '{name}' differs from its CSV (run scripts/doc-tables.py)",
                  file=sys.stderr)
        return 1 if stale or unused else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
