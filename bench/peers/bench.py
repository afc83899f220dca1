#!/usr/bin/env python3
"""Runs the N-step workload for nexa and its peers, interleaved, and writes
results.json, results.md, peers.svg and (optionally) the section
"Against LangGraph JS and the OpenAI Agents SDK JS" of docs/benchmarks.md.

Called by run.sh, which builds nexa and installs the peers in a scratch
folder; see run.sh for the options. Standard library only.
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SECTION = "## Against LangGraph JS and the OpenAI Agents SDK JS"

KINDS = {
    "nexa": "nexa",
    "langgraph": "LangGraph JS + SqliteSaver",
    "agents": "Agents SDK JS, RunState saved each step",
    "agents-pause": "Agents SDK JS, RunState saved at pause/end only",
}
COLORS = {"nexa": "#1b7837", "langgraph": "#2166ac", "agents": "#b2182b", "agents-pause": "#f4a582"}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def floor(work):
    """The cost of one durable commit on this disk: a 4 KiB write + fsync,
    and one SQLite WAL commit with synchronous=FULL (what nexa's store and
    SqliteSaver make)."""
    path = os.path.join(work, "floor.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    buf = b"x" * 4096
    ts = []
    for i in range(500):
        t = time.perf_counter()
        os.pwrite(fd, buf, (i % 64) * 4096)
        os.fsync(fd)
        ts.append(time.perf_counter() - t)
    os.close(fd)
    os.remove(path)
    db = os.path.join(work, "floor.sqlite3")
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("pragma journal_mode=wal")
    con.execute("pragma synchronous=full")
    con.execute("create table t(id integer primary key, v blob)")
    cs = []
    for i in range(300):
        t = time.perf_counter()
        con.execute("begin")
        con.execute("insert into t(v) values(?)", (b"y" * 1600,))
        con.execute("commit")
        cs.append(time.perf_counter() - t)
    con.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    return {"fsync_ms": 1000 * statistics.median(ts), "fsync_p90_ms": 1000 * sorted(ts)[int(len(ts) * 0.9)],
            "sqlite_commit_ms": 1000 * statistics.median(cs)}


def script_file(work, n, confirm):
    path = os.path.join(work, f"script-{n}{'-confirm' if confirm else ''}.json")
    if not os.path.exists(path):
        turns = [{"tool_calls": [{"id": f"call_{i + 1}", "name": "add", "arguments": {"a": i, "b": 1}}]}
                 for i in range(n)]
        if confirm:
            turns.append({"tool_calls": [{"id": "call_confirm", "name": "confirm", "arguments": {}}]})
        turns.append({"content": "done"})
        with open(path, "w") as f:
            json.dump({"model": "scripted", "turns": turns}, f)
    return path


def store_bytes(d):
    total = 0
    for root, _, files in os.walk(d):
        for name in files:
            if name == "n":
                continue
            total += os.path.getsize(os.path.join(root, name))
    return total


def timed(cmd, cwd, work, ok=(0,)):
    """Runs cmd; returns (stdout, wall s, user+sys s, peak RSS KiB)."""
    tf = os.path.join(work, "time.out")
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-o", tf, "-f", "%U %S %M"] + cmd, cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    with open(tf) as f:
        last = f.read().strip().splitlines()[-1].split()
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    return p.stdout, wall, float(last[0]) + float(last[1]), int(last[2])


def nexa_cmd(a, n, d, confirm=False):
    return [a.nexa, "agent", os.path.join(HERE, "add.nx"), "Adder", "add", "--provider",
            "script:" + script_file(a.work, n, confirm), "--store", os.path.join(d, "runs.sqlite3"), "-q"]


def js_cmd(a, kind, *rest):
    if kind == "langgraph":
        return ["node", os.path.join(a.js, "langgraph.mjs")] + list(rest)
    save = "pause" if kind == "agents-pause" else "each"
    return ["node", os.path.join(a.js, "agents.mjs")] + list(rest) + ["--save", save]


def run_one(a, kind, n):
    d = os.path.join(a.work, f"{kind}-{n}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    load = loadavg()[0]
    if kind == "nexa":
        out, wall, cpu, rss = timed(nexa_cmd(a, n, d), d, a.work)
        j = json.loads(out)
        if j["status"] != "completed" or j["usage"]["tool_calls"] != n:
            raise RuntimeError(f"nexa N={n}: {j['status']}, {j['usage']['tool_calls']} tool calls")
    else:
        out, wall, cpu, rss = timed(js_cmd(a, kind, "run", str(n), d), d, a.work)
        j = json.loads(out.strip().splitlines()[-1])
        if j["output"] != "done" or j["steps"] != n:
            raise RuntimeError(f"{kind} N={n}: {j}")
    size = store_bytes(d)
    shutil.rmtree(d, ignore_errors=True)
    return {"kind": kind, "n": n, "wall_s": wall, "cpu_s": cpu, "rss_kib": rss, "store_bytes": size,
            "ms_per_step": 1000 * wall / n, "load1": load}


def resume_one(a, kind, n):
    """Runs n steps that end paused on an approval, then times the resume."""
    d = os.path.join(a.work, f"resume-{kind}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if kind == "nexa":
        out, _, _, _ = timed(nexa_cmd(a, n, d, confirm=True), d, a.work, ok=(3,))  # 3: waiting for approval
        j = json.loads(out)
        if j["status"] != "waiting_approval":
            raise RuntimeError(f"nexa resume setup: {j['status']}")
        call = j["pending_calls"][0]["call_id"]
        size = store_bytes(d)
        cmd = [a.nexa, "agent", os.path.join(HERE, "add.nx"), "Adder", "--resume", j["run_id"], "--approve", call,
               "--provider", "script:" + script_file(a.work, n, True), "--store", os.path.join(d, "runs.sqlite3"), "-q"]
        out, wall, cpu, rss = timed(cmd, d, a.work)
        j = json.loads(out)
        if j["status"] != "completed":
            raise RuntimeError(f"nexa resume: {j['status']}")
        load_ms = None
    else:
        out, _, _, _ = timed(js_cmd(a, kind, "run", str(n), d, "--confirm"), d, a.work)
        if json.loads(out.strip().splitlines()[-1])["output"] != "interrupted":
            raise RuntimeError(f"{kind} resume setup: {out}")
        size = store_bytes(d)
        out, wall, cpu, rss = timed(js_cmd(a, kind, "resume", d), d, a.work)
        j = json.loads(out.strip().splitlines()[-1])
        if j["output"] != "done":
            raise RuntimeError(f"{kind} resume: {j}")
        load_ms = j["load_ms"]
    shutil.rmtree(d, ignore_errors=True)
    return {"kind": kind, "n": n, "wall_s": wall, "cpu_s": cpu, "rss_kib": rss, "store_bytes": size,
            "load_ms": load_ms}


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def fmt_bytes(b):
    b = round(b)
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            return f"{b / div:.3g} {unit}"
    return f"{b} B"


def fmt_ratio(x):
    return f"{x:.2g}×" if x < 10 else f"{x:.0f}×"


def fmt_ms(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def summarize(res):
    """Median of each (kind, n) over the repetitions."""
    groups = {}
    for r in res["runs"]:
        groups.setdefault((r["kind"], r["n"]), []).append(r)
    out = {}
    for (kind, n), rows in groups.items():
        out[(kind, n)] = {k: med(rows, k) for k in ("wall_s", "cpu_s", "rss_kib", "store_bytes", "ms_per_step")}
        out[(kind, n)]["reps"] = len(rows)
        out[(kind, n)]["min_ms_per_step"] = min(r["ms_per_step"] for r in rows)
        out[(kind, n)]["max_ms_per_step"] = max(r["ms_per_step"] for r in rows)
    return out


def tables(res):
    s = summarize(res)
    kinds = [k for k in KINDS if any(k == kk for kk, _ in s)]
    ns = sorted({n for _, n in s})
    lines = ["| N | framework | wall per step (ms), median [min–max, runs] | CPU per step (ms) | peak RSS | store on disk | peer ÷ nexa: time / memory / store |",
             "| ---: | --- | --- | ---: | ---: | ---: | --- |"]
    for n in ns:
        base = s.get(("nexa", n))
        for k in kinds:
            v = s.get((k, n))
            if v is None:
                continue
            ratio = ""
            if base and k != "nexa":
                ratio = (f"{v['ms_per_step'] / base['ms_per_step']:.1f}× / {v['rss_kib'] / base['rss_kib']:.1f}× / "
                         f"{fmt_ratio(v['store_bytes'] / base['store_bytes'])}")
            lines.append(f"| {n} | {KINDS[k]} | {fmt_ms(v['ms_per_step'])} [{fmt_ms(v['min_ms_per_step'])}–"
                         f"{fmt_ms(v['max_ms_per_step'])}, {v['reps']}×] | {fmt_ms(1000 * v['cpu_s'] / n)} | "
                         f"{v['rss_kib'] / 1024:.0f} MiB | {fmt_bytes(v['store_bytes'])} | {ratio} |")
    rl = ["| framework | resume of a run paused after N steps: whole process | of which loading the state | peak RSS | store before resuming |",
          "| --- | ---: | ---: | ---: | ---: |"]
    groups = {}
    for r in res.get("resumes", []):
        groups.setdefault(r["kind"], []).append(r)
    for k in KINDS:
        rows = groups.get(k)
        if not rows:
            continue
        lm = "—" if rows[0]["load_ms"] is None else f"{med(rows, 'load_ms') / 1000:.3g} s"
        rl.append(f"| {KINDS[k]} (N = {rows[0]['n']}, {len(rows)} run{'s' if len(rows) > 1 else ''}) | "
                  f"{med(rows, 'wall_s'):.3g} s | {lm} | {med(rows, 'rss_kib') / 1024:.0f} MiB | "
                  f"{fmt_bytes(med(rows, 'store_bytes'))} |")
    ml = ["| framework | marginal wall per step | marginal CPU per step | between |",
          "| --- | ---: | ---: | --- |"]
    for k in kinds:
        kn = sorted(n for kk, n in s if kk == k)
        if len(kn) < 2:
            continue
        lo, hi = s[(k, kn[-2])], s[(k, kn[-1])]
        d = kn[-1] - kn[-2]
        ml.append(f"| {KINDS[k]} | {fmt_ms(1000 * (hi['wall_s'] - lo['wall_s']) / d)} ms | "
                  f"{fmt_ms(1000 * (hi['cpu_s'] - lo['cpu_s']) / d)} ms | N = {kn[-2]} and {kn[-1]} |")
    return "\n".join(lines), "\n".join(rl), "\n".join(ml)


def svg(res):
    """Three log-log panels: wall per step, peak RSS, store size against N."""
    s = summarize(res)
    kinds = [k for k in KINDS if any(k == kk for kk, _ in s)]
    panels = [("wall time per step (ms)", lambda v: v["ms_per_step"], lambda x: f"{x:g}"),
              ("peak RSS (MiB)", lambda v: v["rss_kib"] / 1024, lambda x: f"{x:g}"),
              ("store on disk", lambda v: v["store_bytes"], fmt_bytes)]
    import math
    W, H, pw, ph, ml, mt = 1140, 400, 300, 260, 70, 40
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>']
    ns = sorted({n for _, n in s})
    xlo, xhi = math.log10(min(ns)) - 0.1, math.log10(max(ns)) + 0.1
    for i, (title, f, label) in enumerate(panels):
        x0 = ml + i * (pw + ml + 10)
        vals = [f(v) for v in s.values() if f(v) > 0]
        ylo, yhi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
        if yhi == ylo:
            yhi += 1
        X = lambda n: x0 + (math.log10(n) - xlo) / (xhi - xlo) * pw
        Y = lambda y: mt + ph - (math.log10(y) - ylo) / (yhi - ylo) * ph
        o.append(f'<text x="{x0 + pw / 2}" y="{mt - 14}" text-anchor="middle" font-weight="bold">{title}</text>')
        o.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        for e in range(ylo, yhi + 1):
            y = Y(10 ** e)
            o.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" stroke="#ddd"/>')
            o.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{label(10 ** e)}</text>')
        for n in ns:
            x = X(n)
            o.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#eee"/>')
            o.append(f'<text x="{x:.1f}" y="{mt + ph + 16}" text-anchor="middle">{n}</text>')
        o.append(f'<text x="{x0 + pw / 2}" y="{mt + ph + 34}" text-anchor="middle">N (steps, log scale)</text>')
        for k in kinds:
            pts = [(X(n), Y(f(s[(k, n)]))) for n in ns if (k, n) in s and f(s[(k, n)]) > 0]
            if not pts:
                continue
            o.append(f'<polyline fill="none" stroke="{COLORS[k]}" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            for x, y in pts:
                o.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[k]}"/>')
    ly = H - 16
    lx = ml
    for k in kinds:
        o.append(f'<rect x="{lx}" y="{ly - 9}" width="14" height="4" fill="{COLORS[k]}"/>')
        o.append(f'<text x="{lx + 20}" y="{ly - 3}">{KINDS[k]}</text>')
        lx += 40 + 6.5 * len(KINDS[k])
    o.append("</svg>")
    return "\n".join(o) + "\n"


def baseline(res):
    """One paragraph setting this run's ratios beside issue 14's baseline."""
    s = summarize(res)
    peers = [k for k in ("langgraph", "agents-pause") if any(kk == k for kk, _ in s)]
    common = sorted(n for kk, n in s if kk == "nexa" and all((k, n) in s for k in peers))
    if not peers or not common:
        return "The peers did not run, so there are no ratios to set beside the baseline of issue 14."
    n = common[-1]
    b = s[("nexa", n)]
    tr = [s[(k, n)]["ms_per_step"] / b["ms_per_step"] for k in peers]
    mr = [s[(k, n)]["rss_kib"] / b["rss_kib"] for k in peers]
    out = (f"At N = {n} in this run nexa takes {min(tr):.1f}–{max(tr):.1f}× less wall time per step than "
           f"LangGraph and the Agents SDK (saving at pause/end only) and {min(mr):.1f}–{max(mr):.1f}× less "
           f"peak memory (baseline: 5–24× and 4–7×)")
    if ("langgraph", n) in s:
        out += (f"; LangGraph's store is {fmt_ratio(s[('langgraph', n)]['store_bytes'] / b['store_bytes'])} "
                f"nexa's (baseline 816× at 2,000 steps)")
    if ("agents-pause", n) in s:
        out += (f", the Agents SDK's one state file "
                f"{fmt_ratio(s[('agents-pause', n)]['store_bytes'] / b['store_bytes'])} (it keeps no journal "
                f"and no history of steps)")
    each = sorted(nn for kk, nn in s if kk == "agents" and ("nexa", nn) in s)
    if each:
        e = each[-1]
        out += (f". Saving the Agents SDK's state at every step costs "
                f"{s[('agents', e)]['ms_per_step'] / s[('nexa', e)]['ms_per_step']:.1f}× nexa's time at N = {e}")
    rs = {}
    for r in res.get("resumes", []):
        rs.setdefault(r["kind"], []).append(r)
    if "nexa" in rs:
        rn = rs["nexa"][0]["n"]
        out += f". Resuming a run paused after {rn} steps takes nexa {med(rs['nexa'], 'wall_s'):.2f} s"
        for k, name, what in (("langgraph", "LangGraph", "getState"), ("agents-pause", "the Agents SDK", "fromString")):
            if k in rs:
                out += (f", {name} {med(rs[k], 'wall_s'):.1f} s ({what} alone "
                        f"{med(rs[k], 'load_ms') / 1000:.2f} s)")
        out += " (baseline: 0.22 s against 49 s for the Agents SDK's deserialization)"
    ns = sorted(nn for kk, nn in s if kk == "nexa")
    if len(ns) >= 2:
        lo, hi = s[("nexa", ns[-2])], s[("nexa", ns[-1])]
        m = 1000 * (hi["wall_s"] - lo["wall_s"]) / (ns[-1] - ns[-2])
        c = res["floor"]["sqlite_commit_ms"]
        # a step of this workload (one call per reply) makes three durable
        # commits: the reply with its journal entry, started, the result
        out += (f". Against the floor: nexa's marginal step ({m:.2f} ms wall) makes three durable commits "
                f"and costs {m / (3 * c):.1f}× three fsync'd SQLite commits ({c:.2f} ms each) on this disk "
                f"at this load")
    return out + "."


def section(res):
    t, rt, mt = tables(res)
    fl = res["floor"]
    m = res["machine"]
    nl = list(res["notes"])
    if res.get("partial"):
        nl.append("This run was cut short (stopped before its end to meet a deadline): some rows have "
                  "fewer repetitions than planned (the count is beside each median) and a framework "
                  "missing from the resume table was not measured.")
    notes = "".join(f"\n- {x}" for x in nl)
    reps = res["reps"]
    return f"""{SECTION}

The same workload for each: a native `add` tool (nexa: an `@tool` with a native body,
`bench/peers/add.nx`; the peers: a JS function tool) and a scripted model, no network, that
calls `add` once per turn, N times, then answers. Each framework persists the run as it
does durably:

- **nexa**: its SQLite store, every step journaled before the next (`synchronous=FULL`).
- **LangGraph JS**: `SqliteSaver` (`@langchain/langgraph-checkpoint-sqlite`, WAL,
  `synchronous=FULL`: every commit fsync'd) with `durability: "sync"`, so each checkpoint is
  written before the next step starts, nexa's guarantee (LangGraph's default `"async"` writes
  it while the next step runs).
- **OpenAI Agents SDK JS**: it has no store; its documented resume boundary is `RunState`,
  serialized with `toString()` and restored with `RunState.fromString`. Two rows:
  *saved each step* writes the state after every tool result (the run is streamed; a
  temporary file, `fsync`, `rename`) — the only way to make every step resumable with this
  SDK, and a state saved after step k resumes at step k+1 in a new process; *saved at
  pause/end only* writes it once, when the run pauses for an approval or ends, as the SDK's
  human-in-the-loop examples do (a crash before that loses the run). The first is
  super-linear in N (each save serializes the whole run), so it runs only up to
  N = {res['agents_each_max']}.

Versions: {res['versions']}. Times are whole processes (start-up included, so N = 10 mostly
measures start-up), the median of {reps} interleaved repetitions (nexa, LangGraph, Agents,
nexa, …); "store on disk" is every file the run left (nexa: the SQLite file and its run
log; LangGraph: its SQLite file; Agents SDK: the state file).

Machine: {m['cpus']} cores, {m['kernel']}; load average (1 min) {m['load_start'][0]:.2f} at the start,
{m['load_end'][0]:.2f} at the end, {m['load_min']:.2f}–{m['load_max']:.2f} during the runs (other jobs shared
the cores). The floor, measured on the same disk just before: one 4 KiB write + `fsync`
{fl['fsync_ms']:.2f} ms (p90 {fl['fsync_p90_ms']:.2f} ms); one SQLite WAL commit with
`synchronous=FULL` {fl['sqlite_commit_ms']:.2f} ms. Measured {res['date']}.{notes}

![wall time per step, peak memory and store size against N](../bench/peers/results/peers.svg)

{t}

Without start-up: the difference of the median wall (and CPU) times of the two largest N,
divided by the steps between them.

{mt}

Resume: a run of N steps whose last call needs approval (nexa: `confirm` with
`requires_approval`; LangGraph: a tool that calls `interrupt()`; Agents SDK: a tool with
`needsApproval`) pauses; then a new process loads it, approves and finishes it
(`nexa agent … --resume RUN --approve CALL`; `graph.invoke(new Command({{resume: true}}))`;
`RunState.fromString`, `approve`, `run`). "Loading the state" is the peers' `getState` /
`fromString` alone.

{rt}

{baseline(res)}

To rerun (needs Go, python3, and for the peers node ≥ 20 with npm; the packages go into a
scratch folder, never into the repository):

```
bench/peers/run.sh                 # N = 10 100 500 2000, 3 repetitions, rewrites this section
bench/peers/run.sh -r 1 10 100     # a quick look
bench/peers/run.sh --no-docs       # results only in bench/peers/results/
bench/peers/run.sh --help
# tables, plot and this section again from the raw figures of this run:
python3 bench/peers/bench.py --from-json bench/peers/results/results.json \
    --out bench/peers/results --docs docs/benchmarks.md
```
"""


def write_docs(path, text):
    with open(path) as f:
        doc = f.read()
    i = doc.find(SECTION)
    if i < 0:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        j = doc.find("\n## ", i + len(SECTION))
        doc = doc[:i] + text + ("" if j < 0 else "\n" + doc[j + 1:])
    with open(path, "w") as f:
        f.write(doc)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nexa")
    p.add_argument("--js", default="")
    p.add_argument("--work")
    p.add_argument("--out", required=True)
    p.add_argument("--docs", default="")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--resume-n", type=int, default=2000)
    p.add_argument("--agents-each-max", type=int, default=100)
    p.add_argument("--note", action="append", default=[])
    p.add_argument("--versions", default="")
    p.add_argument("--from-json", default="", help="only write the reports from an earlier results.json")
    p.add_argument("ns", type=int, nargs="*")
    a = p.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            res = json.load(f)
        os.makedirs(a.out, exist_ok=True)
        if os.path.abspath(a.from_json) != os.path.abspath(os.path.join(a.out, "results.json")):
            save_json(a, res)
        report(a, res)
        return
    if not a.ns or not a.nexa or not a.work:
        p.error("give --nexa, --work and at least one N (or --from-json)")
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    kinds = ["nexa"] + (["langgraph", "agents", "agents-pause"] if a.js else [])
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "reps": a.reps, "notes": a.note,
           "agents_each_max": a.agents_each_max, "versions": a.versions,
           "machine": {"cpus": os.cpu_count(), "kernel": os.uname().sysname + " " + os.uname().release,
                       "load_start": loadavg()}}
    print(f"load {res['machine']['load_start']}; measuring the floor", file=sys.stderr)
    res["floor"] = floor(a.work)
    print(f"floor {res['floor']}", file=sys.stderr)
    res["runs"], res["resumes"] = [], []
    res["partial"] = True
    for rep in range(a.reps):
        for n in a.ns:
            for k in kinds:
                if k == "agents" and n > a.agents_each_max:
                    continue
                r = run_one(a, k, n)
                r["rep"] = rep
                res["runs"].append(r)
                save_json(a, res)
                print(f"rep {rep + 1} N={n} {k}: {r['ms_per_step']:.2f} ms/step, {r['rss_kib'] // 1024} MiB, "
                      f"{fmt_bytes(r['store_bytes'])}, load {r['load1']}", file=sys.stderr)
        if rep == 0 and a.resume_n > 0:
            # right after the first repetition, so that a run cut short still has them
            for k in kinds:
                if k == "agents":
                    continue  # the same resume as agents-pause: the state at the pause
                for _ in range(a.reps if k == "nexa" else 1):
                    r = resume_one(a, k, a.resume_n)
                    res["resumes"].append(r)
                    save_json(a, res)
                    print(f"resume {k} N={a.resume_n}: {r['wall_s']:.3f} s, load {r['load_ms']} ms", file=sys.stderr)
    res["partial"] = False
    res["machine"]["load_end"] = loadavg()
    save_json(a, res)
    report(a, res)


def save_json(a, res):
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)


def report(a, res):
    """Writes results.md, peers.svg and (with --docs) the docs section."""
    loads = [r["load1"] for r in res["runs"]]
    res["machine"]["load_min"], res["machine"]["load_max"] = min(loads), max(loads)
    res["machine"].setdefault("load_end", [res["runs"][-1]["load1"]])
    text = section(res)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "peers.svg"), "w") as f:
        f.write(svg(res))
    if a.docs:
        write_docs(a.docs, text)
    print(text)


if __name__ == "__main__":
    main()
