#!/usr/bin/python3
"""run.py -- the benchmark driver behind `make bench`: runs cpuprof (each
engine forced, and auto), gperftools and `perf record` on the workloads in
bench/ (accuracy, overhead, scale), reads their profiles back, and writes
docs/benchmarks.md with the tables, the machine, PNG plots (gnuplot) and a
verdict on each of cpuprof's targets.  Sections printed by
bench/unwind/run.sh and bench/vm/run.sh are embedded when those exist.

Usage: bench/run.py [--quick | --smoke] [--vm] [--out FILE] [--work DIR]
  --quick  a small subset (a few minutes); --smoke the smallest cell of
           each part (seconds; what CI runs); --vm also runs
           bench/vm/run.sh in --quick mode (a full run always does).
Python 3 standard library only; run from anywhere.
"""

import argparse
import datetime
import glob
import gzip
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.path.join(ROOT, os.environ.get("B", "build"))
BB = os.path.join(ROOT, os.environ.get("BB", "build-bench"))
GPERF_LIB = "/usr/lib/x86_64-linux-gnu/libprofiler.so.0"
LEAVES = ["leaf_a", "leaf_b", "leaf_c", "leaf_d"]

# What each mode runs.  cpu_ms: CPU time of one accuracy run (all threads;
# in smoke mode enough that the few ms a process uses before its profile
# starts stay under 1% of it, so that t_bench_smoke.sh can hold cpuprof's
# coverage to the ±3% band; two threads, as the main thread's CPU that its
# samples miss lands in [unsampled: ...], where a wrong weight hides);
# msteps: millions of LCG steps of one overhead run (about 1.3 ns each);
# floor_rounds: rounds of the 48-deep workload at 1 kHz against the ring
# floor, each round bare, profiled and the floor's two runs, interleaved;
# sample_rounds: rounds of the same workload at 100 Hz, bare and under
# cpuprof and gperftools, for the CPU per sample;
# scale: (paths, us of CPU per path, Hz); proc_runs: runs of /bin/true per
# way of running it; tree: (processes in the shell loop, rounds); build:
# the project, make's arguments beside -j2 and what they build, rounds;
# attach: (pattern, threads, CPU ms) of each attached run; lost: (threads
# of each run, CPU ms of each); names: (paths, workloads) of
# tests/e2e/t_names.sh, None for all of them; kernel: the cells of the part
# of that name (workload, threads, Hz, CPU ms per thread), its runs per
# cell and paths; every: (threads, seconds, --every's DURATION) of the run
# of `record --every` on bench/stacks.c; memory: the cells (threads, Hz)
# of the part of that name, the overhead workload's millions of steps in
# each run, and the rounds (each cell bare, preloaded and under record);
# bigreport: (samples, distinct stacks, rounds) of the profiles
# bench/bigprof.py writes for `report` and `diff`.
MODES = {
    "full": dict(acc_threads=[1, 4, 16], acc_rates=[100, 1000, 10000], patterns=["busy", "bursty"],
                 cpu_ms=3000, ovh_threads=[1, 4], ovh_rates=[100, 1000, 10000], pairs=6, msteps=1000, floor_rounds=12, sample_rounds=30,
                 scale=[(11000, 150, 10000), (110000, 150, 10000)],
                 proc_runs=200, tree=(100, 7),
                 build=dict(project="zstd", args=[], rounds=2,
                            what="the default target: libzstd, static and shared, and the zstd program"),
                 attach=[("busy", 1, 3000), ("busy", 4, 3000), ("bursty", 4, 3000)],
                 lost=([1, 2, 4], 10000), names=None,
                 kernel=dict(cells=[("syscalls", 1, 1000, 2000)] +
                             [("bursty", t, hz, 1000) for t in (2, 4) for hz in (1000, 2000, 10000)] +
                             [("bursty", 64, 1000, 60)], runs=3),
                 every=(4, 1800, "10s"), bigreport=(1000000, 200000, 5),
                 memory=dict(threads=[1, 4, 16, 64], rates=[100, 1000, 10000], msteps=300, rounds=3)),
    "quick": dict(acc_threads=[1, 4], acc_rates=[1000, 10000], patterns=["busy", "bursty"],
                  cpu_ms=1000, ovh_threads=[1, 4], ovh_rates=[1000, 10000], pairs=5, msteps=300, floor_rounds=6, sample_rounds=6,
                  scale=[(20000, 150, 10000)],
                  proc_runs=30, tree=(100, 3),
                  build=dict(project="zstd", args=["-C", "lib", "libzstd.a", "ZSTD_LIB_COMPRESSION=0",
                                                   "ZSTD_LIB_DICTBUILDER=0"], rounds=1,
                             what="a subset: the static library's decompressor only"),
                  attach=[("busy", 4, 1500)], lost=([1, 4], 3000), names=None,
                  kernel=dict(cells=[("syscalls", 1, 1000, 1000), ("bursty", 2, 2000, 1000), ("bursty", 4, 10000, 500),
                                     ("bursty", 64, 1000, 30)], runs=1),
                  every=(4, 180, "10s"), bigreport=(1000000, 200000, 2),
                  memory=dict(threads=[1, 4, 64], rates=[1000, 10000], msteps=150, rounds=1)),
    "smoke": dict(acc_threads=[2], acc_rates=[1000], patterns=["busy"], cpu_ms=600,
                  ovh_threads=[1], ovh_rates=[1000], pairs=1, msteps=60, floor_rounds=1, sample_rounds=1,
                  scale=[(500, 200, 10000)],
                  proc_runs=3, tree=(10, 1),
                  build=dict(project="tiny", args=[], rounds=1,
                             what="a stand-in: five generated C files, not zstd"),
                  attach=[("busy", 2, 300)], lost=([1], 300), names=("record", "names_cxx"),
                  kernel=dict(cells=[("bursty", 2, 2000, 300)], runs=1),
                  every=(4, 6, "2s"), bigreport=(20000, 4000, 1),
                  memory=dict(threads=[4], rates=[10000], msteps=30, rounds=1)),
}
PARTS = ["accuracy", "overhead", "samples", "scale", "process", "tree", "build", "attach", "lost", "names", "kernel",
         "every", "memory", "bigreport"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- pprof --

def _varint(b, i):
    x = s = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        if c < 0x80:
            return x, i
        s += 7


def _fields(b):
    """Yields (field number, wire type, value) of one protobuf message:
    value is an int for varints, bytes for everything else."""
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            ln, i = _varint(b, i)
            v = b[i:i + ln]
            i += ln
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("bad wire type %d" % wt)
        yield f, wt, v


def _ints(wt, v):
    """A repeated integer field, packed (bytes) or not (one int)."""
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def read_pprof(path, root=None):
    """Summarises a pprof file: total samples and CPU ns, per leaf function
    (the function whose code the innermost frame of each sample is in: the
    last Line of its Location, into which any inlined callees, like the
    workloads' spin(), are folded, as the ground truth counts them) its CPU
    ns, the number of distinct stacks, and the `key=value` comments; with
    `root`, per leaf function the CPU ns of its samples whose stack has a
    frame of function `root` (root_ns)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, types, samples, locs, funcs, comments = [], [], [], {}, {}, []
    for f, wt, v in _fields(data):
        if f == 1:
            t = {k: x for k, _, x in _fields(v)}
            types.append((t.get(1, 0), t.get(2, 0)))
        elif f == 2:
            ids, vals = [], []
            for k, w, x in _fields(v):
                if k == 1:
                    ids.extend(_ints(w, x))
                elif k == 2:
                    vals.extend(_ints(w, x))
            samples.append((tuple(ids), vals))
        elif f == 4:
            lid, fids = 0, []
            for k, w, x in _fields(v):
                if k == 1:
                    lid = x
                elif k == 4:
                    fids.append({a: y for a, _, y in _fields(x)}.get(1, 0))
            locs[lid] = fids
        elif f == 5:
            d = {k: x for k, _, x in _fields(v)}
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif f == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif f == 13:
            comments.extend(_ints(wt, v))
    names = [strings[t] if t < len(strings) else "" for t, _ in types]
    icount = names.index("samples") if "samples" in names else None
    icpu = names.index("cpu") if "cpu" in names else len(names) - 1
    out = dict(samples=0, cpu_ns=0, leaf_ns={}, stacks=len(set(s for s, _ in samples)), comments={},
               root_ns={})
    fname = lambda fid: strings[funcs.get(fid, 0)] if fid in funcs else "?"
    for ids, vals in samples:
        # Values are int64: a varint above 2^63 is negative.
        vals = [x - (1 << 64) if x >= 1 << 63 else x for x in vals]
        ns = vals[icpu] if icpu < len(vals) else 0
        out["samples"] += vals[icount] if icount is not None and icount < len(vals) else 1
        out["cpu_ns"] += ns
        leaf = locs.get(ids[0]) if ids else None
        name = fname(leaf[-1]) if leaf else "?"
        out["leaf_ns"][name] = out["leaf_ns"].get(name, 0) + ns
        # With `root`: the CPU of each leaf's samples whose stack reaches
        # a frame of `root` (the walk got all the way up).
        if root and any(fname(f) == root for i in ids for f in locs.get(i) or ()):
            out["root_ns"][name] = out["root_ns"].get(name, 0) + ns
    for c in comments:
        s = strings[c] if c < len(strings) else ""
        k, _, v = s.partition("=")
        out["comments"][k.strip()] = v.strip()
    return out


# ------------------------------------------------------------ profilers --

class Profiler:
    """One way of profiling a command: how to run it, how to read what it
    wrote.  `kind` is "cpuprof", "gperftools", "perf" or "none"."""

    def __init__(self, name, kind, engine=None, lib=None):
        self.name, self.kind, self.engine = name, kind, engine
        self.lib = lib or os.path.join(B, "libcpuprof.so")
        self.missing = None  # why it cannot run here, or None

    def command(self, argv, hz, out):
        """(argv, extra environment) that profiles argv at hz into out."""
        if self.kind == "record":
            return [os.path.join(B, "cpuprof"), "record", "-o", out, "-F", str(hz), "--"] + argv, {}
        if self.kind == "cpuprof":
            return argv, {"LD_PRELOAD": self.lib, "CPUPROF": out, "CPUPROF_HZ": str(hz),
                          "CPUPROF_ENGINE": self.engine}
        if self.kind == "gperftools":
            return argv, {"LD_PRELOAD": GPERF_LIB, "CPUPROFILE": out, "CPUPROFILE_FREQUENCY": str(hz)}
        if self.kind == "perf":
            return ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-g", "-o", out, "--"] + argv, {}
        return argv, {}

    def read(self, out, binary, root=None):
        """The profile's summary (read_pprof's dict), or raises."""
        if self.kind in ("cpuprof", "record"):
            return read_pprof(out, root)
        if self.kind == "gperftools":
            pb = out + ".pb.gz"
            with open(pb, "wb") as f:
                subprocess.run(["go", "tool", "pprof", "-proto", binary, out], stdout=f,
                               stderr=subprocess.DEVNULL, check=True, timeout=600)
            return read_pprof(pb, root)
        if self.kind == "perf":
            return read_perf(out)
        raise ValueError(self.kind)


def read_perf(path):
    """Summarises a perf.data file from `perf report`: per symbol its
    samples and summed period (ns of cpu-clock)."""
    r = subprocess.run(["perf", "report", "-i", path, "--stdio", "--no-children", "-g", "none",
                        "--sort", "sym", "-F", "sample,period,sym", "--percent-limit", "0"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("perf report: " + r.stderr.strip()[:300])
    out = dict(samples=0, cpu_ns=0, leaf_ns={}, stacks=None, comments={})
    for line in r.stdout.splitlines():
        m = re.match(r"^# Total Lost Samples: (\d+)", line)
        if m:
            out["comments"]["lost"] = m.group(1)
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+\[[^\]]*\]\s+(.*?)\s*$", line)
        if m:
            n, ns, sym = int(m.group(1)), int(m.group(2)), m.group(3)
            out["samples"] += n
            out["cpu_ns"] += ns
            out["leaf_ns"][sym] = out["leaf_ns"].get(sym, 0) + ns
    return out


def profilers(bench_lib=False):
    lib = os.path.join(BB, "libcpuprof.so") if bench_lib else None
    ps = [Profiler("cpuprof " + e, "cpuprof", e, lib) for e in ("perf", "timer", "itimer", "auto")]
    ps += [Profiler("cpuprof record", "record")]
    ps += [Profiler("gperftools", "gperftools"), Profiler("perf record", "perf")]
    return ps


# --------------------------------------------------------------- runner --

class Runner:
    """Runs commands under bench/spawn, each with its own files in work/."""

    def __init__(self, work):
        self.work = work
        self.spawn = os.path.join(BB, "bench", "spawn")
        self.n = 0

    def run(self, argv, env_extra, timeout):
        """Runs argv; returns spawn's report merged with the "key value"
        lines the workload printed (leaf lines go to result["leaf"])."""
        self.n += 1
        res = os.path.join(self.work, "run%d.res" % self.n)
        outp = os.path.join(self.work, "run%d.out" % self.n)
        env = clean_env()
        env.update(env_extra)
        with open(outp, "w") as out, open(os.path.join(self.work, "run%d.err" % self.n), "w") as err:
            rc = subprocess.call([self.spawn, res, str(int(timeout))] + argv, stdout=out, stderr=err, env=env)
        if rc != 0:
            raise RuntimeError("spawn failed (%d)" % rc)
        r = parse_kv(res)
        wl = parse_kv(outp)
        r["leaf"] = wl.pop("leaf", {})
        r["wl"] = wl
        if r["status"] != 0:
            with open(os.path.join(self.work, "run%d.err" % self.n)) as f:
                tail = f.read().strip().splitlines()[-3:]
            raise RuntimeError("%s exited %d: %s" % (os.path.basename(argv[0]), r["status"], " / ".join(tail)))
        return r


def clean_env():
    """This process's environment less what would change what the
    commands do: a preloaded library, and `make bench`'s own make flags
    (its jobserver), which a make under test would take."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    return env


def parse_kv(path):
    """Reads "key value" lines (integers where they parse) and "leaf NAME
    NS" lines (into d["leaf"])."""
    d = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and p[0] == "leaf":
                d.setdefault("leaf", {})[p[1]] = int(p[2])
            elif len(p) == 2:
                try:
                    d[p[0]] = int(p[1])
                except ValueError:
                    d[p[0]] = p[1]
    return d


class CpuBooks:
    """The machine's busy CPU time (/proc/stat) against what this driver and
    its children used: the rest is other people's load."""

    def __init__(self):
        self.t0, self.busy0, self.steal0, self.ours0 = self._now()

    @staticmethod
    def _now():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        steal = v[7] if len(v) > 7 else 0
        busy = (sum(v[:8]) - idle - steal) / hz
        t = os.times()
        return time.monotonic(), busy, steal / hz, t.user + t.system + t.children_user + t.children_system

    def since(self):
        t, busy, steal, ours = self._now()
        dt = max(t - self.t0, 1e-9)
        return dict(wall_s=dt, others_cpus=max(busy - self.busy0 - (ours - self.ours0), 0) / dt,
                    ours_cpus=(ours - self.ours0) / dt, steal_cpus=(steal - self.steal0) / dt)


# ---------------------------------------------------------------- parts --

def probe_profilers(runner, work):
    """Marks the profilers that cannot run here, with the reason."""
    ps = profilers()
    wl = os.path.join(BB, "bench", "accuracy")
    for p in ps:
        if p.kind == "gperftools":
            if not os.path.exists(GPERF_LIB):
                p.missing = GPERF_LIB + " is missing (Debian package libgoogle-perftools4)"
                continue
            if not shutil.which("go"):
                p.missing = "`go tool pprof` is missing (Debian package golang-go)"
                continue
        if p.kind == "perf" and not shutil.which("perf"):
            p.missing = "perf is missing (Debian package linux-perf)"
            continue
        out = os.path.join(work, "probe-%s" % p.name.replace(" ", "-"))
        argv, env = p.command([wl, "busy", "1", "30"], 100, out)
        try:
            runner.run(argv, env, 60)
            p.read(out, wl)
        except Exception as e:  # noqa: BLE001 -- any failure means "cannot run here"
            p.missing = "does not run here: %s" % str(e)[:200]
    return ps


def share_error(prof, leaf_true, cpu_ns):
    """Largest |profile share - true share| over the leaves, in percentage
    points.  True share: the leaf's CPU / the process's CPU; profile share:
    the leaf's profiled CPU / all profiled CPU."""
    if prof["cpu_ns"] <= 0:
        return None
    return max(abs(prof["leaf_ns"].get(l, 0) / prof["cpu_ns"] - leaf_true.get(l, 0) / cpu_ns) * 100
               for l in LEAVES)


def accuracy(cfg, runner, ps, work):
    wl = os.path.join(BB, "bench", "accuracy")
    rows = []
    cells = [(p, pat, t, hz) for pat in cfg["patterns"] for t in cfg["acc_threads"]
             for hz in cfg["acc_rates"] for p in ps if not p.missing]
    for i, (p, pat, t, hz) in enumerate(cells):
        out = os.path.join(work, "acc%d.prof" % i)
        argv, env = p.command([wl, pat, str(t), str(cfg["cpu_ms"])], hz, out)
        row = dict(profiler=p.name, pattern=pat, threads=t, hz=hz)
        try:
            r = runner.run(argv, env, 120 + cfg["cpu_ms"] / 100)
            prof = p.read(out, wl)
            cpu = r["wl"]["process_cpu_ns"]
            row.update(coverage=prof["cpu_ns"] / cpu, samples=prof["samples"], cpu_ns=cpu,
                       share_err=share_error(prof, r["leaf"], cpu), eff_hz=prof["samples"] / (cpu / 1e9),
                       lost=prof["comments"].get("lost"), engine=prof["comments"].get("engine"),
                       leaf_true={l: r["leaf"].get(l, 0) / cpu for l in LEAVES},
                       leaf_prof={l: prof["leaf_ns"].get(l, 0) / max(prof["cpu_ns"], 1) for l in LEAVES})
            log("[accuracy %d/%d] %-16s %-6s %2d thr %5d Hz: coverage %.3f, share error %s pp, %d samples" % (
                i + 1, len(cells), p.name, pat, t, hz, row["coverage"], fmt(row["share_err"], 2), row["samples"]))
        except Exception as e:  # noqa: BLE001 -- a failed cell is reported, not fatal
            row["error"] = str(e)[:300]
            log("[accuracy %d/%d] %s %s %d %d: FAILED: %s" % (i + 1, len(cells), p.name, pat, t, hz, e))
        for f in os.listdir(work):
            if f.startswith("acc%d.prof" % i):
                os.unlink(os.path.join(work, f))
        rows.append(row)
    return rows


def overhead(cfg, runner, ps, work):
    """Alternating unprofiled / profiled runs of the 48-deep workload."""
    wl = os.path.join(BB, "bench", "overhead")
    rows = []
    bench_libs = {p.name: p for p in profilers(bench_lib=True)}
    cells = [(p, t, hz) for t in cfg["ovh_threads"] for hz in cfg["ovh_rates"] for p in ps if not p.missing]
    base_argv = lambda t: [wl, str(t), str(cfg["msteps"])]
    timeout = 120 + cfg["msteps"] / 10
    for i, (p, t, hz) in enumerate(cells):
        row = dict(profiler=p.name, threads=t, hz=hz, pairs=[])
        try:
            out = os.path.join(work, "ovh%d.prof" % i)
            for _ in range(cfg["pairs"]):
                base = runner.run(base_argv(t), {}, timeout)
                # Each profile to a name no file has: on ext4 a file
                # written over (renamed over, or truncated) an old one has
                # its blocks written back at once (auto_da_alloc), a cost
                # of the file system, not of the profiler.
                remove(out)
                argv, env = p.command(base_argv(t), hz, out)
                prof = runner.run(argv, env, timeout)
                row["pairs"].append(dict(
                    base_cpu=base["cpu_ns"], prof_cpu=prof["cpu_ns"], base_wall=base["wall_ns"],
                    prof_wall=prof["wall_ns"], base_work_cpu=base["wl"]["work_cpu_ns"],
                    prof_work_cpu=prof["wl"]["work_cpu_ns"], base_rss=base["maxrss_kb"],
                    prof_rss=prof["maxrss_kb"], prof_wl_rss=prof["wl"]["maxrss_kb"]))
            summary = p.read(out, wl, root="worker")
            row["samples"] = summary["samples"]
            cov = summary["comments"].get("coverage")
            row["coverage"] = float(cov) if cov else None
            # Full call chains: the part of hot()'s CPU whose stacks reach
            # worker(), 48 frames up (perf report gives leaves only).
            hot = summary["leaf_ns"].get("hot")
            row["chains"] = summary["root_ns"].get("hot", 0) / hot if hot and p.kind != "perf" else None
            pr = row["pairs"]
            row["cpu_ratio"] = spread([x["prof_cpu"] / x["base_cpu"] for x in pr])
            row["wall_ratio"] = spread([x["prof_wall"] / x["base_wall"] for x in pr])
            row["work_cpu_ratio"] = spread([x["prof_work_cpu"] / x["base_work_cpu"] for x in pr])
            row["us_per_sample"] = spread([(x["prof_cpu"] - x["base_cpu"]) / 1e3 / max(row["samples"], 1) for x in pr])
            if p.kind == "perf":
                # perf is its own process: spawn's maxrss is the larger of perf
                # and the workload, which is perf's own peak whenever it is
                # above the workload's.  All of it is added memory.
                own = [x["prof_rss"] for x in pr if x["prof_rss"] > x["base_rss"]]
                row["rss_added_kb"] = statistics.median(own) if own else None
            else:
                row["rss_added_kb"] = statistics.median(x["prof_rss"] - x["base_rss"] for x in pr)
            if p.kind == "cpuprof":
                bp = bench_libs[p.name]
                argv, env = bp.command(base_argv(t), hz, out + ".bench")
                runner.run(argv, env, timeout)
                c = read_pprof(out + ".bench")["comments"]
                calls = int(c.get("handler_calls", 0))
                row["handler_us"] = int(c.get("handler_ns", 0)) / 1e3 / calls if calls else None
                row["handler_preempted"] = int(c.get("handler_preempted", 0))
            log("[overhead %d/%d] %-16s %d thr %5d Hz: CPU x%.4f [%.4f-%.4f], wall x%.3f, %s us/sample, "
                "RSS +%s KiB" % (i + 1, len(cells), p.name, t, hz, *row["cpu_ratio"], row["wall_ratio"][0],
                                 fmt(row["us_per_sample"][0], 2), fmt(row["rss_added_kb"], 0)))
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e)[:300]
            log("[overhead %d/%d] %s %d %d: FAILED: %s" % (i + 1, len(cells), p.name, t, hz, e))
        for f in os.listdir(work):
            if f.startswith("ovh%d.prof" % i):
                os.unlink(os.path.join(work, f))
        rows.append(row)
    return rows


def sigfloor(cfg, runner, work):
    """The kernel's own cost per sampling signal: fixed work with no timer,
    with a perf task-clock event and with a thread CPU-clock timer, each
    signalling an empty handler, in alternating rounds."""
    wl = os.path.join(BB, "bench", "sigfloor")
    rows = []
    for hz in cfg["ovh_rates"]:
        runs = {"none": [], "perf": [], "timer": [], "ring": []}
        try:
            for _ in range(cfg["pairs"]):
                for mode in runs:
                    r = runner.run([wl, mode, str(hz), str(cfg["msteps"])], {}, 120 + cfg["msteps"] / 10)
                    runs[mode].append((r["wl"]["work_cpu_ns"], r["wl"]["signals"]))
        except Exception as e:  # noqa: BLE001
            rows.append(dict(hz=hz, error=str(e)[:300]))
            continue
        for mode in ("perf", "timer", "ring"):
            per = [(c - b[0]) / 1e3 / max(n, 1) for (c, n), b in zip(runs[mode], runs["none"])]
            sig = statistics.median(n for _, n in runs[mode])
            rows.append(dict(hz=hz, mode=mode, signals=sig, us_per_signal=spread(per),
                             cpu_ratio=spread([c / b[0] for (c, _), b in zip(runs[mode], runs["none"])])))
            log("[signal floor] %-5s %5d Hz: %d signals, %.2f us each, CPU x%.4f" % (
                mode, hz, sig, rows[-1]["us_per_signal"][0], rows[-1]["cpu_ratio"][0]))
    return rows


def floor_rounds(cfg, runner, ps, work):
    """The 48-deep workload at 1 kHz, 1 thread, over the ring floor, from
    interleaved rounds: each round runs it bare and profiled and the floor
    workload without and with its ring, so that the machine's drift, which
    moves the separate overhead and floor tables by a percent or two
    between them, cancels in each round's quotient."""
    wl, fl = os.path.join(BB, "bench", "overhead"), os.path.join(BB, "bench", "sigfloor")
    timeout = 120 + cfg["msteps"] / 10
    mine = [p for p in ps if p.name in ("cpuprof auto", "cpuprof record") and not p.missing]
    rows = []
    for p in mine:
        q = []
        try:
            out = os.path.join(work, "floor.prof")
            for _ in range(cfg["floor_rounds"]):
                base = runner.run([wl, "1", str(cfg["msteps"])], {}, timeout)
                remove(out)
                argv, env = p.command([wl, "1", str(cfg["msteps"])], 1000, out)
                prof = runner.run(argv, env, timeout)
                none = runner.run([fl, "none", "1000", str(cfg["msteps"])], {}, timeout)
                ring = runner.run([fl, "ring", "1000", str(cfg["msteps"])], {}, timeout)
                q.append((prof["cpu_ns"] / base["cpu_ns"]) / (ring["wl"]["work_cpu_ns"] / none["wl"]["work_cpu_ns"]))
            rows.append(dict(profiler=p.name, rounds=len(q), over_floor=spread(q)))
            log("[floor rounds] %-16s x%.4f [%.4f-%.4f] over the ring floor, %d rounds" % (
                p.name, *rows[-1]["over_floor"], len(q)))
        except Exception as e:  # noqa: BLE001
            rows.append(dict(profiler=p.name, error=str(e)[:300]))
            log("[floor rounds] %s: FAILED: %s" % (p.name, e))
        remove(os.path.join(work, "floor.prof"))
    return rows


def sample_rounds(cfg, runner, ps, work):
    """CPU per sample at 100 Hz, 1 thread, 48-deep, of cpuprof (auto,
    record) and gperftools, from interleaved rounds: each round runs the
    workload bare and under each of them, in an order that turns by one
    every round.  At 100 Hz a run takes about 130 samples, so a 1%
    wobble in the run's CPU is 100 µs a sample: the overhead table's
    6 pairs per profiler, minutes apart, cannot tell 50 µs from 150."""
    wl = os.path.join(BB, "bench", "overhead")
    timeout = 120 + cfg["msteps"] / 10
    argv0 = [wl, "1", str(cfg["msteps"])]
    mine = [p for p in ps if p.name in ("cpuprof auto", "cpuprof record", "gperftools") and not p.missing]
    per = {p.name: [] for p in mine}
    samples = {p.name: [] for p in mine}
    try:
        for k in range(cfg["sample_rounds"]):
            base = runner.run(argv0, {}, timeout)
            for j in range(len(mine)):
                p = mine[(j + k) % len(mine)]
                out = os.path.join(work, "spr%d.prof" % j)
                remove(out)
                argv, env = p.command(argv0, 100, out)
                prof = runner.run(argv, env, timeout)
                n = p.read(out, wl, root="worker")["samples"]
                samples[p.name].append(n)
                per[p.name].append((prof["cpu_ns"] - base["cpu_ns"]) / 1e3 / max(n, 1))
            log("[sample rounds %d/%d] %s" % (k + 1, cfg["sample_rounds"], ", ".join(
                "%s %.0f us" % (p.name, per[p.name][-1]) for p in mine)))
    except Exception as e:  # noqa: BLE001
        log("[sample rounds] FAILED: %s" % e)
        return [dict(profiler="(all)", error=str(e)[:300])]
    finally:
        for f in os.listdir(work):
            if f.startswith("spr"):
                os.unlink(os.path.join(work, f))
    g = per.get("gperftools")
    return [dict(profiler=p.name, rounds=len(per[p.name]), samples=statistics.median(samples[p.name]),
                 us_per_sample=spread(per[p.name]),
                 quartiles=quartiles(per[p.name])[1:],
                 vs_gperftools=quartiles([a - b for a, b in zip(per[p.name], g)]) if g and p.name != "gperftools"
                 else None) for p in mine]


def spread(xs):
    """(median, min, max)."""
    return (statistics.median(xs), min(xs), max(xs))


def scale(cfg, runner, ps, work):
    """Profiles with many distinct stacks: time from the end of the work to
    the process's exit (the profile is written then) and peak RSS."""
    wl = os.path.join(BB, "bench", "scale")
    rows = []
    chosen = [p for p in ps if not p.missing and p.name in ("cpuprof auto", "gperftools", "perf record")]
    for paths, us, hz in cfg["scale"]:
        argv0 = [wl, "4", str(paths), str(us)]
        timeout = 300 + paths * us / 1e5
        try:
            base = runner.run(argv0, {}, timeout)
        except Exception as e:  # noqa: BLE001
            rows.append(dict(profiler="(none)", paths=paths, error=str(e)[:300]))
            continue
        base_exit = (base["end_mono_ns"] - base["wl"]["work_end_mono_ns"]) / 1e9
        rows.append(dict(profiler="(none)", paths=paths, hz=hz, exit_s=base_exit, rss_kb=base["maxrss_kb"],
                         cpu_s=base["wl"]["process_cpu_ns"] / 1e9))
        for p in chosen:
            out = os.path.join(work, "scale.prof")
            argv, env = p.command(argv0, hz, out)
            row = dict(profiler=p.name, paths=paths, hz=hz)
            try:
                r = runner.run(argv, env, timeout)
                row.update(exit_s=(r["end_mono_ns"] - r["wl"]["work_end_mono_ns"]) / 1e9,
                           exit_cpu_s=(r["cpu_ns"] - r["wl"]["process_cpu_ns"]) / 1e9,
                           rss_kb=r["maxrss_kb"], rss_added_kb=r["maxrss_kb"] - base["maxrss_kb"],
                           cpu_s=r["wl"]["process_cpu_ns"] / 1e9, size=os.path.getsize(out))
                prof = p.read(out, wl)
                row.update(samples=prof["samples"], stacks=prof["stacks"])
                log("[scale] %-16s %6d paths: %s stacks, %s samples, exit %.3f s, RSS %d KiB (+%d)" % (
                    p.name, paths, row["stacks"], row["samples"], row["exit_s"], row["rss_kb"], row["rss_added_kb"]))
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e)[:300]
                log("[scale] %s %d: FAILED: %s" % (p.name, paths, e))
            for f in os.listdir(work):
                if f.startswith("scale.prof"):
                    os.unlink(os.path.join(work, f))
            rows.append(row)
    return rows


def bigreport(cfg, runner, work):
    """`cpuprof report` (every format) and `cpuprof diff` (every format)
    over profiles of SAMPLES samples and STACKS distinct stacks with times
    (bench/bigprof.py, seeds 1 and 2), in rounds, each command once per
    round in a rotating order: wall, CPU (user + system) and peak RSS."""
    samples, stacks, rounds = cfg["bigreport"]
    a, b = os.path.join(work, "big1.pb.gz"), os.path.join(work, "big2.pb.gz")
    for path, seed in ((a, 1), (b, 2)):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bigprof.py"), path, str(samples), str(stacks),
                        str(seed)], check=True)
    cli = os.path.join(B, "cpuprof")
    out = os.path.join(work, "big.out")
    cmds = [("report --format %s" % f, [cli, "report", "--format", f, "-o", out, a])
            for f in ("top", "folded", "tree", "html", "speedscope")]
    cmds += [("diff" + (" --format %s" % f if f != "top" else ""), [cli, "diff", "--format", f, "-o", out, a, b])
             for f in ("top", "folded", "html")]
    per = {name: [] for name, _ in cmds}
    for k in range(rounds):
        for name, argv in cmds[k % len(cmds):] + cmds[:k % len(cmds)]:
            try:
                r = runner.run(argv, {}, 600)
            except RuntimeError as e:
                if not name.startswith("diff") or "exited 1:" not in str(e):  # 1: diff's verdict "changed"
                    log("[bigreport] %s: FAILED: %s" % (name, e))
                    per[name].append(None)
                    continue
                r = parse_kv(os.path.join(runner.work, "run%d.res" % runner.n))
            per[name].append((r["wall_ns"] / 1e9, r["cpu_ns"] / 1e9, r["maxrss_kb"]))
            log("[bigreport] %-22s wall %.2f s, CPU %.2f s, RSS %d KiB, load %s" % (
                (name,) + per[name][-1] + (open("/proc/loadavg").read().split()[0],)))
    for f in (a, b, out):
        if os.path.exists(f):
            os.unlink(f)
    rows = []
    for name, _ in cmds:
        ok = [x for x in per[name] if x]
        if not ok:
            rows.append(dict(command=name, error="every run failed"))
            continue
        rows.append(dict(command=name, runs=len(ok), samples=samples, stacks=stacks,
                         wall_s=spread([x[0] for x in ok]), cpu_s=spread([x[1] for x in ok]),
                         rss_kb=spread([x[2] for x in ok])))
    return rows


def md_bigreport(res, w):
    rows = res.get("bigreport") or []
    w("## Big profiles: report and diff")
    w("")
    w("`cpuprof report` and `cpuprof diff` in each of their formats (diff: the first profile against a second "
      "of the same shape) over profiles written by `bench/bigprof.py OUT SAMPLES STACKS SEED` (seeds 1 and 2): "
      "random walks of 8-40 frames down a random call graph of 5,000 functions, 8 threads, each Sample with "
      "its times; so few stacks share more than their first frames that the call tree has about as many "
      "nodes as the stacks have frames, a worst case for the page. Each command once per round, in a "
      "rotating order; median [min-max]. Target (issue 32): at most 2 s and 256 MiB each.")
    w("")
    if not rows:
        w("(Not run this time.)")
        w("")
        return
    w("| command | samples | stacks | runs | wall (s) | CPU (s) | peak RSS (MiB) |")
    w("|---|---:|---:|---:|---|---|---|")
    for r in rows:
        if "error" in r:
            w("| %s | | | failed: %s | | | |" % (r["command"], md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %d | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] | %.0f [%.0f-%.0f] |" % (
            r["command"], r["samples"], r["stacks"], r["runs"], *r["wall_s"], *r["cpu_s"],
            *[x / 1024 for x in r["rss_kb"]]))
    w("")


# ------------------------ processes, trees, a build, attaching, losses --

def quartiles(xs):
    """(median, 25th, 75th percentile)."""
    if len(xs) < 2:
        return (xs[0],) * 3 if xs else (None,) * 3
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[1], q[0], q[2])


def remove(path):
    """Removes a profile and anything written beside it (PATH.*)."""
    d, base = os.path.split(path)
    for f in os.listdir(d):
        if f == base or f.startswith(base + "."):
            p = os.path.join(d, f)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)


def paired(runs, base):
    """The differences run - base of the rounds both have: runs and base
    map a round to a number."""
    return [v - base[k] for k, v in runs.items() if k in base]


def per_process(cfg, runner, ps, work):
    """What one short process pays for its profile (issue 21): /bin/true
    bare, with libcpuprof preloaded, under `cpuprof record`, with
    gperftools preloaded and under `perf record -g`, cfg["proc_runs"]
    rounds of each, every round running each way once in a rotating order,
    each profile written to a new name (a new file renamed over an old one
    makes ext4 write the old one's blocks back at the rename) and removed
    after.  The child's CPU (wait4's rusage) and wall time."""
    ways = [None] + [p for p in ps if not p.missing and p.name in
                     ("cpuprof auto", "cpuprof record", "gperftools", "perf record")]
    names = [w.name if w else "(none)" for w in ways]
    cpu, wall, errors = {n: {} for n in names}, {n: {} for n in names}, {}
    for i in range(cfg["proc_runs"]):
        k = i % len(ways)
        for j in list(range(k, len(ways))) + list(range(k)):
            w, n = ways[j], names[j]
            if n in errors:
                continue
            out = os.path.join(work, "proc%d-%d.prof" % (i, j))
            argv, env = w.command(["/bin/true"], 1000, out) if w else (["/bin/true"], {})
            try:
                r = runner.run(argv, env, 60)
                if w and not os.path.exists(out):
                    raise RuntimeError("no profile written")
                cpu[n][i], wall[n][i] = r["cpu_ns"] / 1e6, r["wall_ns"] / 1e6
            except Exception as e:  # noqa: BLE001 -- that way's row says it failed
                errors[n] = str(e)[:300]
                log("[per process] %s: FAILED: %s" % (n, e))
            remove(out)
    rows = []
    for n in names:
        if n in errors:
            rows.append(dict(profiler=n, error=errors[n]))
            continue
        c = list(cpu[n].values())
        rows.append(dict(profiler=n, runs=len(c), cpu_ms=quartiles(c), wall_ms=quartiles(list(wall[n].values())),
                         over_bare_ms=quartiles(paired(cpu[n], cpu["(none)"])) if n != "(none)" else None,
                         wall_over_bare_ms=quartiles(paired(wall[n], wall["(none)"])) if n != "(none)" else None))
        log("[per process] %-16s %d runs: CPU %.2f ms [%.2f-%.2f], over bare %s ms" % (
            n, len(c), *rows[-1]["cpu_ms"], fmt(rows[-1]["over_bare_ms"] and rows[-1]["over_bare_ms"][0], 2)))
    return rows


def trees(cfg, runner, ps, work):
    """A tree of short processes (issues 21, 22): a shell loop of N
    /bin/true, bare, under `cpuprof record` (from outside), `cpuprof
    record --preload` (the library in each process) and `perf record -g`,
    at 1 kHz, in interleaved rounds; each profile to a new name."""
    n, rounds = cfg["tree"]
    loop = ["sh", "-c", "for i in $(seq %d); do /bin/true; done" % n]
    have = {p.name: p for p in ps if not p.missing}
    ways = [("(none)", lambda out: (loop, {}))]
    if "cpuprof record" in have:
        rec = have["cpuprof record"]
        ways.append(("cpuprof record", lambda out: rec.command(loop, 1000, out)))

        def preload(out):
            argv, env = rec.command(loop, 1000, out)
            return argv[:2] + ["--preload"] + argv[2:], env
        ways.append(("cpuprof record --preload", preload))
    if "perf record" in have:
        ways.append(("perf record", lambda out: have["perf record"].command(loop, 1000, out)))
    cpu, wall, errors = {w: {} for w, _ in ways}, {w: {} for w, _ in ways}, {}
    for i in range(rounds):
        for j, (name, cmd) in enumerate(ways):
            if name in errors:
                continue
            out = os.path.join(work, "tree%d-%d.prof" % (i, j))
            try:
                r = runner.run(*cmd(out), 600)
                if name != "(none)" and not os.path.exists(out):
                    raise RuntimeError("no profile written")
                cpu[name][i], wall[name][i] = r["cpu_ns"] / 1e9, r["wall_ns"] / 1e9
            except Exception as e:  # noqa: BLE001
                errors[name] = str(e)[:300]
                log("[tree] %s: FAILED: %s" % (name, e))
            remove(out)
    rows = []
    for name, _ in ways:
        if name in errors:
            rows.append(dict(profiler=name, processes=n, error=errors[name]))
            continue
        per = [cpu[name][k] / cpu["perf record"][k] for k in cpu[name] if k in cpu.get("perf record", {})]
        rows.append(dict(profiler=name, processes=n, rounds=len(cpu[name]), cpu_s=spread(list(cpu[name].values())),
                         wall_s=spread(list(wall[name].values())),
                         cpu_over_bare_s=spread(paired(cpu[name], cpu["(none)"])) if name != "(none)" else None,
                         vs_perf=spread(per) if per and name not in ("(none)", "perf record") else None))
        log("[tree] %-24s %d x /bin/true: wall %.3f s, CPU %.3f s, CPU / perf record's %s" % (
            name, n, rows[-1]["wall_s"][0], rows[-1]["cpu_s"][0], fmt(rows[-1]["vs_perf"] and rows[-1]["vs_perf"][0])))
    return rows


def zstd_source(ext):
    """The unpacked source of Debian's zstd, fetched once into ext/ with
    `apt-get source` (a deb-src line is needed: scripts/deb-src.sh) and
    kept there for the next run.  Where the newest version's files are not
    on the mirror, the older versions apt knows are tried."""
    def found():
        return next((os.path.dirname(m) for m in sorted(glob.glob(os.path.join(ext, "libzstd-*", "Makefile")))), None)
    if found():
        return found()
    os.makedirs(ext, exist_ok=True)
    r = subprocess.run(["apt-cache", "showsrc", "zstd"], capture_output=True, text=True)
    cmds = [["apt-get", "source", "-qq", "zstd"]] + [["apt-get", "source", "-qq", "zstd=" + v] for v in
                                                      re.findall(r"^Version: (\S+)$", r.stdout, re.M)]
    why = "apt-cache showsrc zstd: nothing (no deb-src line?)"
    for cmd in cmds:
        log("[build] %s" % " ".join(cmd))
        r = subprocess.run(cmd, cwd=ext, capture_output=True, text=True, timeout=900)
        if r.returncode == 0 and found():
            return found()
        why = "%s: %s" % (" ".join(cmd), (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    raise RuntimeError(why)


def tiny_project(d):
    """The smoke run's stand-in for zstd: five C files and a Makefile."""
    os.makedirs(d, exist_ok=True)
    for k in range(4):
        with open(os.path.join(d, "f%d.c" % k), "w") as f:
            f.write("int f%d(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * %d; return s; }\n" % (k, k + 1))
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write("".join("int f%d(int);\n" % k for k in range(4)) +
                "int main(void) { return (f0(3) + f1(3) + f2(3) + f3(3)) & 1; }\n")
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("CFLAGS = -O2\nprog: main.o f0.o f1.o f2.o f3.o\n\t$(CC) -o $@ $^\nclean:\n\trm -f prog *.o\n")
    return d


def build_what(mode):
    """What the build part builds in this mode, in words."""
    b = MODES[mode]["build"]
    return "%s (%s)" % ("`make -j2%s` of zstd" % "".join(" " + x for x in b["args"]) if b["project"] == "zstd"
                        else "`make -j2` of a generated project", b["what"])


def build(cfg, runner, ps, work):
    """A real build (issue 22): `make -j2` of Debian's zstd from a fresh
    copy of its source each time, bare, under `cpuprof record` and under
    `perf record --call-graph dwarf`, both at 1 kHz."""
    b = cfg["build"]
    rows = []
    try:
        src = zstd_source(os.path.join(work, "ext")) if b["project"] == "zstd" else \
            tiny_project(os.path.join(work, "tiny"))
    except Exception as e:  # noqa: BLE001
        log("[build] no source: %s" % e)
        return [dict(profiler="(none)", error="no zstd source: %s" % str(e)[:300])]
    have = {p.name for p in ps if not p.missing}
    tree = os.path.join(work, "build-tree")
    make = ["make", "-C", tree, "-j2"] + b["args"]
    ways = [("(none)", lambda out: make)]
    if "cpuprof record" in have:
        ways.append(("cpuprof record", lambda out: [os.path.join(B, "cpuprof"), "record", "-o", out, "-F", "1000",
                                                    "--"] + make))
    if "perf record" in have:
        ways.append(("perf record --call-graph dwarf", lambda out: ["perf", "record", "-q", "-e", "cpu-clock", "-F",
                                                                    "1000", "--call-graph", "dwarf", "-o", out,
                                                                    "--"] + make))
    runs = {name: [] for name, _ in ways}
    errors = {}
    # Rounds of each way in turn, every other round in reverse order (bare,
    # record, perf, perf, record, bare), so that a drift of the machine's
    # speed falls on all alike; the bare build ends the part in any case:
    # its runs before and after the others say how far the machine moved.
    order = [w for i in range(b["rounds"]) for w in (ways if i % 2 == 0 else ways[::-1])]
    if order[-1] != ways[0]:
        order.append(ways[0])
    for name, cmd in order:
        if name in errors:
            continue
        out = os.path.join(work, "build.prof")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(src, tree, symlinks=True)
        try:
            r = runner.run(cmd(out), {}, 7200)
            run = dict(cpu_s=r["cpu_ns"] / 1e9, wall_s=r["wall_ns"] / 1e9)
            if name != "(none)":
                run["file_mib"] = os.path.getsize(out) / 2**20
            if name == "cpuprof record":
                c = read_pprof(out)["comments"]
                run.update(coverage=c.get("coverage"), processes=c.get("processes"), samples=c.get("samples"))
            runs[name].append(run)
            log("[build] %-30s wall %.1f s, CPU %.1f s%s" % (name, run["wall_s"], run["cpu_s"],
                                                             ", file %.1f MiB" % run["file_mib"]
                                                             if "file_mib" in run else ""))
        except Exception as e:  # noqa: BLE001
            errors[name] = str(e)[:300]
            log("[build] %s: FAILED: %s" % (name, e))
        remove(out)
    shutil.rmtree(tree, ignore_errors=True)
    base = runs["(none)"]
    for name, _ in ways:
        if name in errors:
            rows.append(dict(profiler=name, error=errors[name]))
            continue
        rs = runs[name]
        row = dict(profiler=name, rounds=len(rs), cpu_s=statistics.median(x["cpu_s"] for x in rs),
                   wall_s=statistics.median(x["wall_s"] for x in rs), walls=[x["wall_s"] for x in rs],
                   cpus=[x["cpu_s"] for x in rs])
        if name != "(none)" and base:
            row["cpu_over"] = row["cpu_s"] / statistics.median(x["cpu_s"] for x in base)
            row["wall_over"] = row["wall_s"] / statistics.median(x["wall_s"] for x in base)
            row["file_mib"] = statistics.median(x["file_mib"] for x in rs)
        for k in ("coverage", "processes", "samples"):
            if rs and rs[-1].get(k) is not None:
                row[k] = rs[-1][k]
        rows.append(row)
    return rows


def perf_fds(pid):
    """How many perf events process pid has open."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def wait_for(what, test, timeout=60):
    """Polls test() every 20 ms until it is true; raises after timeout s."""
    end = time.monotonic() + timeout
    while not test():
        if time.monotonic() > end:
            raise RuntimeError("%s: not within %d s" % (what, timeout))
        time.sleep(0.02)


def attach(cfg, ps, work):
    """`cpuprof record -p` (issue 22) on the accuracy workload, attached
    for the whole of its work: the workload makes its threads and waits
    (READY mode), record attaches (the window opens when record has an
    event open for each of its threads), SIGUSR1 starts the work; when the
    work is reported, SIGINT ends record while the threads are still there
    (so that the scheduler's count of them at the detach exists), and a
    second SIGUSR1 lets the workload end."""
    wl = os.path.join(BB, "bench", "accuracy")
    why = next((p.missing for p in ps if p.name == "cpuprof record"), "not among the profilers chosen")
    if why:
        return [dict(pattern=pat, threads=t, hz=1000, cpu_ms=ms, error="cpuprof record: %s" % why)
                for pat, t, ms in cfg["attach"]]
    rows = []
    for i, (pat, t, ms) in enumerate(cfg["attach"]):
        row = dict(pattern=pat, threads=t, hz=1000, cpu_ms=ms)
        ready, out = os.path.join(work, "attach%d.ready" % i), os.path.join(work, "attach%d.pb.gz" % i)
        wl_out, rec_err = os.path.join(work, "attach%d.out" % i), os.path.join(work, "attach%d.err" % i)
        w = rec = None
        try:
            with open(wl_out, "w") as o:
                w = subprocess.Popen([wl, pat, str(t), str(ms), ready], stdout=o, env=clean_env())
            wait_for("the workload's READY file", lambda: os.path.exists(ready) or w.poll() is not None)
            with open(ready) as f:
                pid = int(f.read())
            with open(rec_err, "w") as e:
                rec = subprocess.Popen([os.path.join(B, "cpuprof"), "record", "-p", str(pid), "-F", "1000", "-o", out],
                                       stdout=subprocess.DEVNULL, stderr=e, env=clean_env())
            seen = []

            def attached():
                if rec.poll() is not None:
                    with open(rec_err) as f:
                        raise RuntimeError("record ended: " + f.read().strip()[-300:])
                seen.append(perf_fds(rec.pid))
                return seen[-1] >= len(os.listdir("/proc/%d/task" % pid)) and seen[-5:] == [seen[-1]] * 5
            wait_for("record's events on every thread", attached)
            os.kill(pid, signal.SIGUSR1)
            wait_for("the end of the work", lambda: "work_end_mono_ns" in open(wl_out).read() or w.poll() is not None,
                     600 + ms / 100)
            rec.send_signal(signal.SIGINT)
            if rec.wait(600) != 0:
                with open(rec_err) as f:
                    raise RuntimeError("record exited %d: %s" % (rec.returncode, f.read().strip()[-300:]))
            os.kill(pid, signal.SIGUSR1)
            if w.wait(60) != 0:
                raise RuntimeError("the workload exited %d" % w.returncode)
            truth = parse_kv(wl_out)
            prof = read_pprof(out)
            c = prof["comments"]
            work_cpu, n = truth["work_cpu_ns"], prof["samples"]
            sched = int(c.get("scheduler_cpu_ns", 0))
            row.update(samples=n, coverage=float(c["coverage"]), profile_cpu_ns=int(c["profile_cpu_ns"]),
                       scheduler_cpu_ns=sched, work_cpu_ns=work_cpu,
                       sched_ratio=int(c["profile_cpu_ns"]) / sched if sched > 0 else None,
                       truth_ratio=int(c["profile_cpu_ns"]) / work_cpu, leaves={})
            for leaf in LEAVES:
                p = truth["leaf"].get(leaf, 0) / work_cpu
                q = prof["leaf_ns"].get(leaf, 0) / max(prof["cpu_ns"], 1)
                sigma = (p * (1 - p) / max(n, 1)) ** 0.5
                row["leaves"][leaf] = dict(true=p, profile=q, z=(q - p) / sigma if sigma else None)
            row["max_z"] = max(abs(v["z"]) for v in row["leaves"].values() if v["z"] is not None)
            log("[attach] %s %d thr: coverage %.3f, profile / scheduler %s, profile / work %.3f, largest |z| %.2f" % (
                pat, t, row["coverage"], fmt(row["sched_ratio"]), row["truth_ratio"], row["max_z"]))
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e)[:300]
            log("[attach] %s %d: FAILED: %s" % (pat, t, e))
        finally:
            for p in (rec, w):
                if p and p.poll() is None:
                    p.kill()
                    p.wait()
        remove(out)
        rows.append(row)
    return rows


def lost(cfg, runner, ps, work):
    """Samples lost at 1 kHz while another CPU-bound process runs (issue
    22): the accuracy workload, busy, on 1, 2 and 4 threads under `cpuprof
    record` and with libcpuprof preloaded, beside `sh -c 'while :; do :;
    done'` started for the part and killed after it."""
    wl = os.path.join(BB, "bench", "accuracy")
    threads, ms = cfg["lost"]
    chosen = [p for p in ps if not p.missing and p.name in ("cpuprof record", "cpuprof auto")]
    rows = []
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"], env=clean_env())
    try:
        for t in threads:
            for p in chosen:
                out = os.path.join(work, "lost.prof")
                row = dict(profiler=p.name, threads=t, hz=1000)
                try:
                    r = runner.run(*p.command([wl, "busy", str(t), str(ms)], 1000, out), 600 + ms / 100)
                    prof = read_pprof(out)
                    c = prof["comments"]
                    row.update(samples=prof["samples"], lost=int(c.get("lost", 0)),
                               coverage=prof["cpu_ns"] / r["wl"]["process_cpu_ns"])
                    log("[lost] %-16s %d thr: %d lost, %d samples, coverage %.3f" % (
                        p.name, t, row["lost"], row["samples"], row["coverage"]))
                except Exception as e:  # noqa: BLE001
                    row["error"] = str(e)[:300]
                    log("[lost] %s %d: FAILED: %s" % (p.name, t, e))
                remove(out)
                rows.append(row)
    finally:
        hog.kill()
        hog.wait()
    return rows


def proc_kib(pid, key):
    """A process's /proc/PID/status value `key` (VmRSS, VmHWM) in KiB, or
    None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def every(cfg, work):
    """`cpuprof record --every` over a long run (issue 31): bench/stacks.c,
    whose threads' stacks keep changing, at 1 kHz, each window a file.
    record's VmRSS is read every 200 ms, each reading put in the window
    being recorded then (by the time since record started: windows end on
    the clock alone here); the windows' writers (record's children other
    than the workload) are read too.  Each window's samples, lost samples
    and coverage come from its file's comments."""
    threads, seconds, period = cfg["every"]
    d = os.path.join(work, "every")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    out = os.path.join(d, "every.pb.gz")
    wl = os.path.join(BB, "bench", "stacks")
    period_s = float(re.match(r"[0-9.]+", period).group(0)) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600}[
        re.sub(r"[0-9.]+", "", period) or "s"]
    row = dict(threads=threads, seconds=seconds, every=period, windows=[])
    books = CpuBooks()
    rec = None
    try:
        with open(os.path.join(d, "stacks.out"), "w") as o, open(os.path.join(d, "record.err"), "w") as e:
            rec = subprocess.Popen([os.path.join(B, "cpuprof"), "record", "--every", period, "-F", "1000", "-o",
                                    out, "--", wl, str(threads), str(seconds)], stdout=o, stderr=e,
                                   env=clean_env())
        t0 = time.monotonic()
        rss, writer_peak, wl_pid = {}, 0, None
        while rec.poll() is None:
            k = int((time.monotonic() - t0) / period_s) + 1
            v = proc_kib(rec.pid, "VmRSS")
            if v:
                rss[k] = max(rss.get(k, 0), v)
            for c in children(rec.pid):
                exe = os.path.realpath("/proc/%d/exe" % c) if os.path.exists("/proc/%d/exe" % c) else ""
                if exe == os.path.realpath(wl):
                    wl_pid = c
                elif c != wl_pid:
                    writer_peak = max(writer_peak, proc_kib(c, "VmRSS") or 0)
            time.sleep(0.2)
        if rec.returncode != 0:
            raise RuntimeError("record exited %d: %s" % (rec.returncode,
                                                         open(os.path.join(d, "record.err")).read()[-300:]))
        files = sorted(glob.glob(os.path.join(d, "every.*.pb.gz")))
        for i, f in enumerate(files):
            p = read_pprof(f)
            c = p["comments"]
            row["windows"].append(dict(window=i + 1, samples=p["samples"], stacks=p["stacks"],
                                       lost=int(c.get("lost", 0)), coverage=float(c.get("coverage", 0)),
                                       cpu_ns=p["cpu_ns"], rss_kib=rss.get(i + 1)))
        wlo = parse_kv(os.path.join(d, "stacks.out"))
        row.update(process_cpu_ns=wlo.get("process_cpu_ns", 0), writer_peak_kib=writer_peak,
                   load=books.since())
        w = row["windows"]
        log("[every] %d windows of %s, %d thr, %d s: %d samples, %d lost, coverage %.3f–%.3f, record's RSS "
            "%.1f–%.1f MiB, writers' peak %.1f MiB" % (
                len(w), period, threads, seconds, sum(x["samples"] for x in w), sum(x["lost"] for x in w),
                min(x["coverage"] for x in w), max(x["coverage"] for x in w),
                min(x["rss_kib"] or 0 for x in w) / 1024, max(x["rss_kib"] or 0 for x in w) / 1024,
                writer_peak / 1024))
    except Exception as e:  # noqa: BLE001
        row["error"] = str(e)[:300]
        log("[every] FAILED: %s" % e)
    finally:
        if rec and rec.poll() is None:
            rec.kill()
            rec.wait()
        shutil.rmtree(d, ignore_errors=True)
    return [row]


def lsq(rows):
    """Least squares: the coefficients b of y ~ b0*x0 + b1*x1 + ... over
    rows of (x0, x1, ..., y), by the normal equations."""
    k = len(rows[0]) - 1
    a = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    y = [sum(r[i] * r[k] for r in rows) for i in range(k)]
    for i in range(k):
        for j in range(i + 1, k):
            f = a[j][i] / a[i][i]
            a[j] = [x - f * z for x, z in zip(a[j], a[i])]
            y[j] -= f * y[i]
    b = [0.0] * k
    for i in reversed(range(k)):
        b[i] = (y[i] - sum(a[i][j] * b[j] for j in range(i + 1, k))) / a[i][i]
    return b


def hwm_run(work, n, argv, env_extra, timeout):
    """Runs argv under bench/hwm: (its report, {pid: (ppid, name, peak KiB,
    KiB at the first stop)} of every process that ended)."""
    res = os.path.join(work, "mem%d.res" % n)
    env = clean_env()
    env.update(env_extra)
    with open(os.path.join(work, "mem%d.out" % n), "w") as out, \
            open(os.path.join(work, "mem%d.err" % n), "w") as err:
        rc = subprocess.call([os.path.join(BB, "bench", "hwm"), res, str(int(timeout))] + argv, stdout=out,
                             stderr=err, env=env)
    procs, r = {}, {}
    with open(res) as f:
        for line in f:
            p = line.split()
            if p and p[0] == "proc" and len(p) == 6:
                procs[int(p[1])] = (int(p[2]), p[3], int(p[4]), int(p[5]))
            elif len(p) == 2:
                r[p[0]] = int(p[1])
    if rc != 0 or r.get("status") != 0:
        with open(os.path.join(work, "mem%d.err" % n)) as f:
            tail = f.read().strip().splitlines()[-3:]
        raise RuntimeError("%s exited %s: %s" % (os.path.basename(argv[0]), r.get("status"), " / ".join(tail)))
    return r, procs


def memory(cfg, work):
    """What cpuprof adds to memory (issue 32): bench/overhead.c in each cell
    (threads, Hz), bare, with libcpuprof.so preloaded (CPUPROF=FILE) and
    under `cpuprof record`, the three one after the other in each round,
    their order turned every round.  Each process's peak resident set is
    read by bench/hwm (VmHWM at its exit, under ptrace), apart: the program,
    the lines child the library or record forks at the end (its peak, and
    that less what it shared with its parent at the fork), record itself."""
    m = cfg["memory"]
    wl = os.path.join(BB, "bench", "overhead")
    lib = os.path.join(B, "libcpuprof.so")
    cells = [(t, hz) for t in m["threads"] for hz in m["rates"]]
    runs = {c: dict(bare=[], preload=[], record=[]) for c in cells}
    # cpuprof's caches (lines, symbols, unwind tables) of this part alone,
    # warmed by its first runs: what the lines child is asked depends on
    # what they hold, which other users of ~/.cache would change.
    cache = os.path.join(work, "memcache")
    shutil.rmtree(cache, ignore_errors=True)
    books = CpuBooks()
    n = 0
    timeout = 120 + m["msteps"] / 10
    for rnd in range(m["rounds"]):
        for ci, (t, hz) in enumerate(cells):
            ways = ["bare", "preload", "record"]
            k = (rnd + ci) % 3
            for way in ways[k:] + ways[:k]:
                n += 1
                out = os.path.join(work, "mem%d.prof" % n)
                argv = [wl, str(t), str(m["msteps"])]
                env = {"XDG_CACHE_HOME": cache}
                if way == "preload":
                    env.update({"LD_PRELOAD": lib, "CPUPROF": out, "CPUPROF_HZ": str(hz)})
                elif way == "record":
                    argv = [os.path.join(B, "cpuprof"), "record", "-o", out, "-F", str(hz), "--"] + argv
                try:
                    r, procs = hwm_run(work, n, argv, env, timeout)
                except Exception as e:  # noqa: BLE001 -- a failed run is reported, not fatal
                    runs[(t, hz)].setdefault("errors", []).append(str(e)[:300])
                    log("[memory] %d thr %d Hz %s: FAILED: %s" % (t, hz, way, e))
                    continue
                root = [pid for pid, p in procs.items() if p[0] not in procs]
                root = root[0] if len(root) == 1 else None
                x = dict(lost=0)
                if way == "record":
                    kids = [p for p in procs.values() if p[0] == root]
                    x["record"] = procs[root][2] if root else None
                    x["program"] = max((p[2] for p in kids if p[1] == "overhead"), default=None)
                    helpers = [p for p in kids if p[1] != "overhead"]
                else:
                    x["program"] = procs[root][2] if root else None
                    helpers = [p for pid, p in procs.items() if pid != root]
                x["child"] = max((p[2] for p in helpers), default=0)
                x["child_added"] = max((p[2] - p[3] for p in helpers), default=0)
                if way != "bare":
                    x["lost"] = int(read_pprof(out)["comments"].get("lost", 0))
                    remove(out)
                runs[(t, hz)][way].append(x)
        log("[memory] round %d/%d done" % (rnd + 1, m["rounds"]))
    med = lambda xs: statistics.median(xs) if xs else None
    rows = []
    for (t, hz) in cells:
        c = runs[(t, hz)]
        bare = med([x["program"] for x in c["bare"] if x["program"]])
        pre = [x for x in c["preload"] if x["program"]]
        rec = [x for x in c["record"] if x["record"]]
        row = dict(threads=t, hz=hz, rounds=m["rounds"], bare_kib=bare,
                   preload_kib=med([x["program"] for x in pre]),
                   preload_added_kib=med([x["program"] - bare for x in pre]) if bare and pre else None,
                   preload_child_kib=med([x["child"] for x in pre]),
                   preload_child_added_kib=med([x["child_added"] for x in pre]),
                   record_kib=med([x["record"] for x in rec]),
                   record_program_kib=med([x["program"] for x in rec if x["program"]]),
                   record_child_kib=med([x["child"] for x in rec]),
                   record_child_added_kib=med([x["child_added"] for x in rec]),
                   lost_preload=sum(x["lost"] for x in c["preload"]), lost_record=sum(x["lost"] for x in c["record"]))
        if c.get("errors"):
            row["error"] = c["errors"][0]
        rows.append(row)
        log("[memory] %2d thr %5d Hz: program bare %s KiB, preloaded %s (+%s), its lines child %s (+%s); "
            "record %s, its lines child %s (+%s); lost %d and %d" % (
                t, hz, fmt(bare, 0), fmt(row["preload_kib"], 0), fmt(row["preload_added_kib"], 0),
                fmt(row["preload_child_kib"], 0), fmt(row["preload_child_added_kib"], 0), fmt(row["record_kib"], 0),
                fmt(row["record_child_kib"], 0), fmt(row["record_child_added_kib"], 0), row["lost_preload"],
                row["lost_record"]))
    return dict(rows=rows, msteps=m["msteps"], load=books.since())


def memory_largest(mem):
    """The largest added memory over the cells: (KiB, what, cell) for the
    program's own (preloaded) and record's own, and for the lines child."""
    own, child = None, None
    for r in mem.get("rows", []):
        for kib, what in ((r.get("preload_added_kib"), "added to the program (preloaded)"),
                          (r.get("record_kib"), "record's own peak")):
            if kib is not None and (own is None or kib > own[0]):
                own = (kib, what, r)
        for kib, what in ((r.get("preload_child_added_kib"), "the library's lines child"),
                          (r.get("record_child_added_kib"), "record's lines child")):
            if kib and (child is None or kib > child[0]):
                child = (kib, what, r)
    return own, child


def every_summary(r):
    """Of a run of part `every`: record's RSS after the first window, the
    most after it, and its growth in KiB per window, by least squares on
    the window's number and on the most samples a window had held so far
    (the stack tables keep the memory of the busiest window for the next,
    so a load that eases lets record's RSS rise to that once; what grows
    with the number of windows alone is what a leak would be), from the
    second window to the last but one (the last is partial)."""
    w = [x for x in r["windows"] if x.get("rss_kib")]
    later = w[1:-1] if len(w) > 2 else w[1:]
    first = w[0]["rss_kib"] if w else 0
    top = max((x["rss_kib"] for x in later), default=first)
    slope, most, rows = 0.0, max((x["samples"] for x in w[:1]), default=0), []
    for x in later:
        most = max(most, x["samples"])
        rows.append((1.0, x["window"], most, x["rss_kib"]))
    if len(rows) >= 4 and len({x[2] for x in rows}) > 1:
        slope = lsq(rows)[1]
    elif len(rows) >= 2:
        slope = lsq([(1.0, x[1], x[3]) for x in rows])[1]
    return first, top, slope


KERNEL_FUNCS = dict(syscalls=["sys_pipe", "user_spin"], bursty=["burst_a", "burst_b", "burst_c"])
KERNEL_FRAME = "[kernel: unsampled, user-mode samples only]"


def kernel_run(path, workload, threads, hz, ms, out, work, unprivileged=False):
    """One run of tests' work_kernel under `cpuprof record` by `path`
    ("outside", "preload" or "attach"), as root or as nobody; returns the
    workload's "truth NAME NS" lines and its process_cpu_ns."""
    wl = os.path.join(B, "tests", "work_kernel")
    rec = [os.path.join(B, "cpuprof"), "record", "-F", str(hz), "-o", out]
    who = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if unprivileged else []
    argv = [wl, workload] + ([str(threads)] if workload == "bursty" else []) + [str(ms)]
    wl_out, err = os.path.join(work, "kernel.out"), os.path.join(work, "kernel.err")
    if path != "attach":
        with open(wl_out, "w") as o, open(err, "w") as e:
            rc = subprocess.call(who + rec + (["--preload", "--engine", "perf"] if path == "preload" else []) +
                                 ["--"] + argv, stdout=o, stderr=e, env=clean_env(), timeout=600)
        if rc != 0:
            raise RuntimeError("record exited %d: %s" % (rc, open(err).read().strip()[-300:]))
        return open(wl_out).read()
    ready = os.path.join(work, "kernel.ready")
    remove(ready)
    env = clean_env()
    env["READY"] = ready
    w = r = None
    try:
        with open(wl_out, "w") as o:
            w = subprocess.Popen(who + argv, stdout=o, env=env)
        wait_for("the workload's READY file", lambda: os.path.exists(ready) or w.poll() is not None)
        pid = int(open(ready).read())
        with open(err, "w") as e:
            r = subprocess.Popen(who + rec[:2] + ["-p", str(pid)] + rec[2:], stdout=subprocess.DEVNULL, stderr=e,
                                 env=clean_env())
        seen = []

        def attached():
            if r.poll() is not None:
                raise RuntimeError("record ended: " + open(err).read().strip()[-300:])
            seen.append(perf_fds(r.pid))
            return seen[-1] >= len(os.listdir("/proc/%d/task" % pid)) and seen[-5:] == [seen[-1]] * 5
        wait_for("record's events on every thread", attached)
        os.kill(pid, signal.SIGUSR1)
        wait_for("the end of the work", lambda: "process_cpu_ns" in open(wl_out).read() or w.poll() is not None, 600)
        r.send_signal(signal.SIGINT)
        if r.wait(600) != 0:
            raise RuntimeError("record exited %d: %s" % (r.returncode, open(err).read().strip()[-300:]))
        os.kill(pid, signal.SIGUSR1)
        if w.wait(60) != 0:
            raise RuntimeError("the workload exited %d" % w.returncode)
        return open(wl_out).read()
    finally:
        for p in (r, w):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def kernel_time(cfg, work):
    """Time in the kernel and threads that wake often (issue 34): tests'
    work_kernel, whose functions time their own CPU, under `record` from
    outside, attached (-p) and preloaded; each function's share of the
    profile against its CPU over the process's, and the profile's
    coverage.  As root (kernel-mode samples) and, for the system calls, as
    an unprivileged user where perf_event_paranoid is 2 (user-mode samples
    only: the kernel's part is then in its own frame, judged as stated)."""
    k = cfg["kernel"]
    rows = []
    try:
        paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    except (OSError, ValueError):
        paranoid = None
    work_u = os.path.join(work, "kernel-u")
    os.makedirs(work_u, exist_ok=True)
    os.chmod(work_u, 0o777)
    for workload, threads, hz, ms in k["cells"]:
        who = [False]
        if workload == "syscalls" and os.geteuid() == 0 and paranoid == 2 and shutil.which("setpriv"):
            who.append(True)
        for unpriv in who:
            for path in ("outside", "attach", "preload"):
                for run in range(k["runs"]):
                    row = dict(workload=workload, threads=threads, hz=hz, path=path, unprivileged=unpriv, run=run)
                    out = os.path.join(work_u if unpriv else work, "kernel.pb.gz")
                    try:
                        text = kernel_run(path, workload, threads, hz, ms, out, work_u if unpriv else work, unpriv)
                        truth = {}
                        cpu = 0
                        for line in text.splitlines():
                            f = line.split()
                            if len(f) == 3 and f[0] == "truth":
                                truth[f[1]] = int(f[2])
                            elif len(f) == 2 and f[0] == "process_cpu_ns":
                                cpu = int(f[1])
                        prof = read_pprof(out)
                        n, total = prof["samples"], max(prof["cpu_ns"], 1)
                        errs, sig = {}, 0.0
                        for fn in KERNEL_FUNCS[workload]:
                            got = sum(read_pprof(out, fn)["root_ns"].values()) / total
                            want = truth.get(fn, 0) / max(cpu, 1)
                            errs[fn] = 100 * (got - want)
                            sig = max(sig, 100 * (want * (1 - want) / max(n, 1)) ** 0.5)
                        c = prof["comments"]
                        row.update(samples=n, coverage=float(c.get("coverage", 0)), errs=errs, sigma=sig,
                                   err=max(abs(v) for v in errs.values()),
                                   kernel_frame=prof["leaf_ns"].get(KERNEL_FRAME, 0) / total,
                                   switch_unseen=int(c.get("switch_unseen_cpu_ns", "0").split()[0]) / total)
                        log("[kernel] %s %d thr %5d Hz %-7s%s: coverage %.3f, share error %.2f pp (3 sigma %.2f)" % (
                            workload, threads, hz, path, " unprivileged" if unpriv else "", row["coverage"],
                            row["err"], 3 * sig))
                    except Exception as e:  # noqa: BLE001
                        row["error"] = str(e)[:300]
                        log("[kernel] %s %d %d %s: FAILED: %s" % (workload, threads, hz, path, e))
                    remove(out)
                    rows.append(row)
    return rows


# What tests/e2e/t_names.sh prints for each cell it measures.
NAMES_LINE = re.compile(r"^(\S+) (\S+): (\d+) of (\d+) names agree with addr2line -C -f -i: ([0-9.]+) \((\d+) unnamed")


def names(cfg, work):
    """Names against `addr2line -C -f -i` (issue 21): runs
    tests/e2e/t_names.sh, which builds the C++ and Rust (legacy and v0
    mangling) workloads, profiles each under `cpuprof record`, LD_PRELOAD
    and the gperftools drop-in and compares every Line's name, with
    NAMES_MIN=0 so that it measures every cell however low; its lines are
    the rows."""
    env = dict(clean_env(), B=os.path.relpath(B, ROOT), NAMES_MIN="0", TMPDIR=work)
    if cfg["names"]:
        env.update(NAMES_PATHS=cfg["names"][0], NAMES_WORKLOADS=cfg["names"][1])
    r = subprocess.run(["sh", "tests/e2e/t_names.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    rows = []
    for line in r.stdout.splitlines():
        m = NAMES_LINE.match(line)
        if m:
            rows.append(dict(path=m.group(1), workload=m.group(2), agree=int(m.group(3)), total=int(m.group(4)),
                             ratio=float(m.group(5)), unnamed=int(m.group(6))))
            log("[names] %s %s: %s" % (m.group(1), m.group(2), m.group(5)))
    why = next((l for l in (r.stderr + r.stdout).splitlines() if l.startswith(("skip: ", "FAIL: "))), None)
    if r.returncode != 0:
        rows.append(dict(error="t_names.sh exited %d: %s" % (r.returncode, why or ""), status=r.returncode))
        log("[names] %s" % rows[-1]["error"])
    return rows


# The sections other harnesses print: bench/unwind/run.sh prints its own
# "## Unwinding" section; bench/vm/run.sh takes cells and prints the VM's
# facts and a table, which go under a heading of ours.
def vm_cells(quick, arch):
    """The cells of bench/vm/run.sh's @profilers set: each profiler on the
    busy and sleepy patterns, 1 and 4 threads, 100 Hz (2 CPU seconds per
    thread, so one thread still expects ~200 samples) and 1 kHz (1 s);
    QUICK halves the CPU.  hw only where the VM has a PMU (aarch64)."""
    profs = ("perf",) + (("hw",) if arch == "aarch64" else ()) + ("timer", "itimer", "auto", "gperf")
    return ["ticks"] + ["%s:%s:%d:%d:%g" % (p, pat, t, hz, (2 if hz == 100 else 1) * (0.5 if quick else 1))
                        for pat in ("busy", "sleepy") for t in (1, 4) for hz in (100, 1000) for p in profs]


# The VMs: (section name, VM_ARCH, heading).
VMS = [("vm", "x86_64", "The seed's kernel (tick-only timers)",
        "Debian 12's own kernel booted under `qemu-system-x86_64 -accel tcg` with `highres=off nohz=off`, so "
        "every timer fires only from the 250 Hz tick, as on the seed's machine; no PMU."),
       ("vm-aarch64", "aarch64", "The seed's kernel on aarch64, with a PMU",
        "Debian 12's own arm64 kernel booted under `qemu-system-aarch64 -M virt -cpu max -accel tcg` with "
        "`highres=off nohz=off`: timers only from the 250 Hz tick as on x86-64, and an emulated PMU whose "
        "cycle counter's overflow interrupt does not wait for the tick (the hw engine).")]
VM_HEADING = """## %s

%s `%ssh bench/vm/run.sh %s`, that is PROFILER:PATTERN:THREADS:HZ:CPU_S for PROFILER in cpuprof's engines and
auto, and gperf (gperftools), PATTERN busy and sleepy (the bursty pattern there: ~240 µs of work, then a
200 µs sleep that ends at the next tick), THREADS 1 and 4, HZ 100 (CPU_S %g per thread) and 1000 (%g).
docs/vm.md explains the harness and the columns.
"""


def external(name, quick, work, vm_arch=None, vm_title=None, vm_intro=None):
    """Runs bench/NAME/run.sh if it exists and returns its markdown, or
    None.  It runs from the repository root with QUICK=1 or 0, B and BB
    (build directories relative to the root) and BENCH_WORK (a scratch
    directory) in the environment; its stdout is the markdown, its stderr
    progress; a non-zero exit is noted under the section.
    BENCH_EXT_TIMEOUT (s, default 6000) bounds it."""
    script = os.path.join(ROOT, "bench", "vm" if vm_arch else name, "run.sh")
    if not os.path.exists(script):
        return None
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, QUICK="1" if quick else "0", B=os.path.relpath(B, ROOT), BB=os.path.relpath(BB, ROOT),
               BENCH_WORK=d)
    env.pop("LD_PRELOAD", None)
    args, head = [], ""
    if vm_arch:
        env["VM_ARCH"] = vm_arch
        args = vm_cells(quick, vm_arch)
        head = VM_HEADING % (vm_title, vm_intro, "VM_ARCH=aarch64 " if vm_arch == "aarch64" else "",
                             "@profilers" if not quick else "CELL... (@profilers at half the CPU)",
                             1 if quick else 2, 0.5 if quick else 1)
    log("[%s] sh %s %s" % (name, os.path.relpath(script, ROOT), " ".join(args)))
    # In a session of its own, so that a timeout takes its children (a
    # qemu busy on both CPUs) down with it.
    p = subprocess.Popen(["sh", script] + args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        md, _ = p.communicate(timeout=int(os.environ.get("BENCH_EXT_TIMEOUT", "6000")))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        md, _ = p.communicate()
        rc = "a timeout"
    if rc != 0:
        md = md.rstrip() + "\n\n(%s ended with %s: this section may be incomplete.)\n" % (
            os.path.relpath(script, ROOT), "exit %s" % rc if isinstance(rc, int) else rc)
    return (head + "\n" if head else "") + md


# --------------------------------------------------------------- output --

def fmt(x, nd=3):
    if x is None:
        return "–"
    if isinstance(x, int):
        return str(x)
    return "%.*f" % (nd, x)


def machine_info(runner):
    info = dict(kernel=platform.release(), cpus=os.cpu_count(),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            info["cpu"] = m.group(1) if m else "?"
        with open("/proc/meminfo") as f:
            info["mem_gib"] = int(f.readline().split()[1]) / 2**20
    except OSError:
        pass
    hz = None
    for path in ("/boot/config-" + platform.release(), "/proc/config.gz"):
        try:
            op = gzip.open if path.endswith(".gz") else open
            with op(path, "rt") as f:
                m = re.search(r"^CONFIG_HZ=(\d+)$", f.read(), re.M)
                if m:
                    hz = "%s (%s)" % (m.group(1), path)
                    break
        except OSError:
            continue
    info["config_hz"] = hz
    try:
        r = subprocess.run([os.path.join(BB, "bench", "tick")], capture_output=True, text=True, timeout=60)
        info["tick_hz"] = r.stdout.split()[1]
    except Exception:  # noqa: BLE001
        info["tick_hz"] = None
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            info["paranoid"] = f.read().strip()
    except OSError:
        info["paranoid"] = "?"
    info["uid"] = os.getuid()
    vers = {}
    for pkg in ("libgoogle-perftools4", "linux-perf", "golang-go", "gcc", "gnuplot-nox"):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
        vers[pkg] = r.stdout.strip() if r.returncode == 0 else "not installed"
    info["versions"] = vers
    return info


def judge(res):
    """The targets of issue 6 for cpuprof, then those of issues 21 and 22:
    (target, what was measured, verdict)."""
    acc = [r for r in res["accuracy"] if "error" not in r]
    ovh = [r for r in res["overhead"] if "error" not in r]
    out = []

    cells = [r for r in acc if r["profiler"] in ("cpuprof perf", "cpuprof timer")]
    bad = [r for r in cells if not 0.98 <= r["coverage"] <= 1.02]
    if cells:
        lo, hi = min(r["coverage"] for r in cells), max(r["coverage"] for r in cells)
        out.append(("coverage 0.98–1.02 in every cell, perf and timer engines",
                    "%d cells, coverage %.3f–%.3f; outside: %s" % (len(cells), lo, hi, cell_list(bad) or "none"),
                    "met" if not bad else "not met"))

    cells = [r for r in acc if r["profiler"].startswith("cpuprof") and r["samples"] >= 20000]
    bad = [r for r in cells if r["share_err"] is None or r["share_err"] > 1.0]
    out.append(("share error ≤ 1 pp wherever a run has ≥ 20,000 samples",
                "%d cpuprof cells with ≥ 20,000 samples; largest error %s pp; above 1 pp: %s" % (
                    len(cells), fmt(max((r["share_err"] or 0 for r in cells), default=None), 2),
                    ", ".join("%s (%s pp, %d samples)" % (cell_name(r), fmt(r["share_err"], 2), r["samples"])
                              for r in bad) or "none") if cells else "no cell had 20,000 samples",
                ("met" if not bad else "not met") if cells else "not measured"))

    for hz, lim in ((1000, 1.003), (10000, 1.03)):
        r = next((r for r in ovh if r["profiler"] == "cpuprof perf" and r["threads"] == 1 and r["hz"] == hz), None)
        if r:
            m, a, b = r["cpu_ratio"]
            w = r["work_cpu_ratio"][0]
            floor = next((f for f in res.get("sigfloor", []) if f.get("mode") == "perf" and f["hz"] == hz), None)
            why = ""
            if floor:
                why = ("; the kernel alone, an empty handler on a perf task-clock event: %.2f µs per signal, "
                       "CPU ratio %.4f (signal floor table)" % (floor["us_per_signal"][0], floor["cpu_ratio"][0]))
            out.append(("CPU ratio ≤ %g at %d Hz (48-deep, 1 thread, perf engine)" % (lim, hz),
                        "%.4f (%.4f–%.4f over %d pairs; work phase alone %.4f; handler %s µs per sample%s)" % (
                            m, a, b, len(r["pairs"]), w, fmt(r.get("handler_us"), 2), why),
                        "met" if m <= lim else "not met"))
        else:
            out.append(("CPU ratio ≤ %g at %d Hz (48-deep, 1 thread, perf engine)" % (lim, hz), "not run", "not measured"))

    # The signal-free default engine's goal: at most 1.015x CPU at 1 kHz,
    # with coverage 0.98-1.02 and whole call chains.
    r = next((r for r in ovh if r["profiler"] == "cpuprof auto" and r["threads"] == 1 and r["hz"] == 1000), None)
    if r:
        ok = r["cpu_ratio"][0] <= 1.015 and r.get("coverage") is not None and 0.98 <= r["coverage"] <= 1.02 \
            and (r.get("chains") or 0) >= 0.99
        out.append(("default engine at 1 kHz: CPU ratio ≤ 1.015, coverage 0.98–1.02, full call chains (48-deep, 1 thread)",
                    "CPU ratio %.4f [%.4f–%.4f], coverage %s, %s of hot()'s CPU in stacks that reach worker()" % (
                        *r["cpu_ratio"], fmt(r.get("coverage")), fmt(r.get("chains"))), "met" if ok else "not met"))
    else:
        out.append(("default engine at 1 kHz: CPU ratio ≤ 1.015, coverage 0.98–1.02, full call chains (48-deep, 1 thread)",
                    "not run", "not measured"))

    # Never worse than a peer: coverage and share error per accuracy cell,
    # CPU per sample per overhead cell (which normalises the rate).
    worse = []
    for r in acc:
        if r["profiler"] != "cpuprof auto":
            continue
        for q in acc:
            if q["profiler"] in ("gperftools", "perf record") and all(
                    q[k] == r[k] for k in ("pattern", "threads", "hz")):
                if abs(r["coverage"] - 1) > abs(q["coverage"] - 1) + 0.01:
                    worse.append("coverage %s vs %s %.3f" % (cell_name(r), q["profiler"], q["coverage"]))
                floor = noise_floor(r["samples"])
                if r["share_err"] is not None and q["share_err"] is not None and \
                        r["share_err"] > q["share_err"] + 2 * floor * 100:
                    worse.append("share error %s vs %s %.2f pp" % (cell_name(r), q["profiler"], q["share_err"]))
    for r in ovh:
        if r["profiler"] != "cpuprof auto":
            continue
        for q in ovh:
            # Worse only beyond the run-to-run spread: cpuprof's best pair
            # costs more per sample than the peer's worst.
            if q["profiler"] in ("gperftools", "perf record") and q["threads"] == r["threads"] and q["hz"] == r["hz"] \
                    and r["us_per_sample"][1] > q["us_per_sample"][2]:
                worse.append("CPU per sample %d thr %d Hz: %.2f µs [%.2f–%.2f] vs %s %.2f µs [%.2f–%.2f]" % (
                    r["threads"], r["hz"], *r["us_per_sample"], q["profiler"], *q["us_per_sample"]))
    out.append(("never worse than a peer at the same effective rate",
                "cpuprof auto vs gperftools and perf record: distance of coverage from 1 (≤ peer's + 0.01), share error "
                "(≤ peer's + 2 noise floors), CPU per sample (the ranges over the pairs overlap, or cpuprof's is lower); worse: " +
                ("; ".join(worse) if worse else "nowhere"), "met" if not worse else "not met"))

    rss = [(r["rss_added_kb"], r) for r in ovh if r["profiler"].startswith("cpuprof") and r["rss_added_kb"] is not None]
    own, child = memory_largest(res.get("memory") or {})
    if own:
        out.append(("RSS added ≤ 8 MiB", "part memory, largest median over its cells: %.1f MiB, %s (%d thr, %d Hz); "
                    "the lines child forked at the end: %s" % (
                        own[0] / 1024, own[1], own[2]["threads"], own[2]["hz"],
                        "%.1f MiB of its own, %s (%d thr, %d Hz)" % (child[0] / 1024, child[1], child[2]["threads"],
                                                                     child[2]["hz"]) if child else "none"),
                    "met" if own[0] <= 8192 and (not child or child[0] <= 8192) else
                    "met for the program and record, not for the lines child" if own[0] <= 8192 else "not met"))
    elif rss:
        mx, r = max(rss, key=lambda x: x[0])
        out.append(("RSS added ≤ 8 MiB", "largest median over the overhead cells: %.1f MiB (%s, %d thr, %d Hz)" % (
            mx / 1024, r["profiler"], r["threads"], r["hz"]), "met" if mx <= 8192 else "not met"))
    sc = [r for r in res["scale"] if r["profiler"] == "cpuprof auto" and "error" not in r]
    big = [r for r in sc if (r.get("stacks") or 0) >= 100000]
    if big:
        r = big[-1]
        out.append(("100k stacks written ≤ 1 s", "%d distinct stacks: end of work to exit %.3f s, peak RSS +%.1f MiB" % (
            r["stacks"], r["exit_s"], r["rss_added_kb"] / 1024), "met" if r["exit_s"] <= 1.0 else "not met"))
    else:
        most = max(sc, key=lambda r: r.get("stacks") or 0, default=None)
        out.append(("100k stacks written ≤ 1 s", "this run wrote at most %s distinct stacks (%s s)" % (
            most.get("stacks") if most else "no", fmt(most.get("exit_s")) if most else "–"), "not measured"))
    out.append(judge_bigreport(res.get("bigreport") or []))
    return out + judge_21_22(res) + judge_34(res) + judge_31(res)


def judge_bigreport(rows):
    """Issue 32's target for report and diff at scale: each format within
    2 s of CPU and 256 MiB, the worst of its runs, on 1M samples."""
    name = "`report` and `diff`, every format, 1M samples, 200k stacks: ≤ 2 s of CPU and ≤ 256 MiB each"
    ok = [r for r in rows if "error" not in r and r["samples"] >= 1000000]
    if not ok:
        return (name, "not run at that size", "not measured")
    cpu = max(ok, key=lambda r: r["cpu_s"][2])
    rss = max(ok, key=lambda r: r["rss_kb"][2])
    failed = [r["command"] for r in rows if "error" in r]
    met = cpu["cpu_s"][2] <= 2.0 and rss["rss_kb"][2] <= 256 * 1024 and not failed
    return (name, "%d commands, the worst of %d runs each: CPU %.2f s (%s), peak RSS %.0f MiB (%s)%s" % (
        len(ok), min(r["runs"] for r in ok), cpu["cpu_s"][2], cpu["command"], rss["rss_kb"][2] / 1024,
        rss["command"], "; failed: " + ", ".join(failed) if failed else ""), "met" if met else "not met")


def kernel_cell(r):
    return "%s %d thr %d Hz %s%s" % (r["workload"], r["threads"], r["hz"], r["path"],
                                     " unprivileged" if r.get("unprivileged") else "")


def judge_34(res):
    """The targets of issue 34 (time in the kernel, threads that wake
    often): (target, what was measured, verdict)."""
    out = []
    rows = [r for r in res.get("kernel", []) if "error" not in r]
    failed = [r for r in res.get("kernel", []) if "error" in r]
    if not rows:
        t = "kernel-mode time and bursts: coverage 0.99–1.01, shares ≤ max(1 pp, 3σ)"
        out.append((t, failed[0]["error"] if failed else "not run", "not measured"))
        return out
    for title, pick, lo, hi in (
            ("bursts of 2–4 threads at 1–10 kHz: coverage 0.99–1.01, each share ≤ max(1 pp, 3σ), every path",
             lambda r: r["workload"] == "bursty" and r["threads"] <= 4, 0.99, 1.01),
            ("64 bursty threads at 1 kHz: coverage 0.98–1.02", lambda r: r["threads"] == 64, 0.98, 1.02),
            ("system calls as root: the call's share ≤ max(1 pp, 3σ) off, coverage 0.99–1.01",
             lambda r: r["workload"] == "syscalls" and not r["unprivileged"], 0.99, 1.01)):
        cells = [r for r in rows if pick(r)]
        if not cells:
            continue
        shares = r"σ" in title
        bad = [r for r in cells if not lo <= r["coverage"] <= hi or
               (shares and r["err"] > max(1.0, 3 * r["sigma"]))]
        out.append((title, "%d run(s): coverage %.3f–%.3f, largest share error %.2f pp; outside: %s" % (
            len(cells), min(r["coverage"] for r in cells), max(r["coverage"] for r in cells),
            max(r["err"] for r in cells), ", ".join("%s (%.3f, %.2f pp)" % (kernel_cell(r), r["coverage"], r["err"])
                                                     for r in bad) or "none"), "met" if not bad else "not met"))
    un = [r for r in rows if r["unprivileged"]]
    if un:
        stated = [r for r in un if r["kernel_frame"] > 0]
        out.append(("system calls unprivileged (user-mode samples only): the kernel's part stated in the profile",
                    "%d of %d run(s) have [kernel: unsampled ...], %.1f–%.1f%% of their CPU; the user function's "
                    "share error %.2f pp at most" % (len(stated), len(un), 100 * min(r["kernel_frame"] for r in un),
                                                     100 * max(r["kernel_frame"] for r in un),
                                                     max(abs(r["errs"].get("user_spin", 0)) for r in un)),
                    "met" if len(stated) == len(un) else "not met"))
    return out


def judge_31(res):
    """The target of issue 31 (record --every over a long run)."""
    rows = res.get("every", [])
    t = ("`record --every 10s`, 4 threads whose stacks keep changing, 1 kHz, 30 min: record's RSS flat after the "
         "first window and ≤ 64 MiB, 0 samples lost, every window's coverage 0.99–1.01")
    if not rows or "error" in rows[0]:
        return [(t, rows[0]["error"] if rows else "not run", "not measured")]
    r = rows[0]
    w = r["windows"]
    first, top, slope = every_summary(r)
    peak = max(x["rss_kib"] or 0 for x in w)
    lost = sum(x["lost"] for x in w)
    bad = [x for x in w if not 0.99 <= x["coverage"] <= 1.01]
    full = r["seconds"] >= 1800 and r["every"] == "10s" and r["threads"] == 4
    ok = peak <= 64 * 1024 and slope <= 4 and lost == 0 and not bad
    return [(t, "%s%d windows of %s over %d s: record's RSS %.1f MiB after the first, %.1f MiB at most after it, "
             "%+.1f KiB a window beside the busiest window's tables (least squares; flat: ≤ 4), peak %.1f MiB; the "
             "writers' peak %.1f MiB; %d of %d samples lost; coverage %.3f–%.3f%s" % (
                 "" if full else "(a shorter run than the target's) ", len(w), r["every"], r["seconds"], first / 1024, top / 1024,
                 slope, peak / 1024, r["writer_peak_kib"] / 1024, lost, sum(x["samples"] for x in w),
                 min(x["coverage"] for x in w), max(x["coverage"] for x in w),
                 "; outside: " + ", ".join("window %d (%.3f)" % (x["window"], x["coverage"]) for x in bad)
                 if bad else ""),
             "met" if ok else "not met")]


def judge_21_22(res):
    """The targets of issues 21 and 22 (the start, trees of processes, a
    build, attaching, losses, names; the CPU per sample at 100 Hz and the
    ring mechanism's floor): (target, what was measured, verdict)."""
    out = []
    ok = lambda r: r and "error" not in r
    rows = {r["profiler"]: r for r in res.get("process", [])}
    t = "empty program (/bin/true) with libcpuprof preloaded: CPU over bare (start + write) ≤ 2 ms"
    r = rows.get("cpuprof auto")
    if ok(r):
        peers = "; ".join("%s %.2f ms" % (n, rows[n]["over_bare_ms"][0]) for n in
                          ("cpuprof record", "gperftools", "perf record") if ok(rows.get(n)))
        out.append((t, "%.2f ms [%.2f–%.2f] over %d runs (bare %.2f ms); %s" % (
            *r["over_bare_ms"], r["runs"], rows["(none)"]["cpu_ms"][0], peers),
            "met" if r["over_bare_ms"][0] <= 2 else "not met"))
    else:
        out.append((t, r["error"] if r else "not run", "not measured"))

    rows = {r["profiler"]: r for r in res.get("tree", [])}
    t = "100 × /bin/true under `cpuprof record`: CPU ≤ 1.0 × `perf record -g`'s"
    r, q = rows.get("cpuprof record"), rows.get("cpuprof record --preload")
    if ok(r) and r.get("vs_perf"):
        out.append((t, "%d × /bin/true, %d round(s): ×%.3f [%.3f–%.3f] (CPU %.3f s vs %.3f s; wall %.3f s vs %.3f s, "
                    "bare %.3f s); --preload ×%s" % (
                        r["processes"], r["rounds"], *r["vs_perf"], r["cpu_s"][0], rows["perf record"]["cpu_s"][0],
                        r["wall_s"][0], rows["perf record"]["wall_s"][0], rows["(none)"]["wall_s"][0],
                        fmt(q["vs_perf"][0]) if ok(q) and q.get("vs_perf") else "–"),
                    "met" if r["vs_perf"][0] <= 1.0 else "not met"))
    else:
        out.append((t, (r or {}).get("error") or "perf record did not run", "not measured"))

    ovh = [r for r in res.get("overhead", []) if "error" not in r]
    cell = lambda n, hz: next((r for r in ovh if r["profiler"] == n and r["threads"] == 1 and r["hz"] == hz), None)
    t = "CPU per sample at 100 Hz, 1 thread (48-deep): ≤ gperftools'"
    sr = {r["profiler"]: r for r in res.get("sample_rounds", []) if "error" not in r}
    g = sr.get("gperftools")
    mine = [sr[n] for n in ("cpuprof auto", "cpuprof record") if n in sr]
    if g and mine:
        out.append((t, "; ".join("%s %.1f µs [%.1f–%.1f]%s" % (
            r["profiler"], r["us_per_sample"][0], *r["quartiles"],
            " (less gperftools' of the same round: %+.1f [%+.1f – %+.1f])" % tuple(r["vs_gperftools"])
            if r.get("vs_gperftools") else "") for r in mine + [g]) +
                    " (median [quartiles] of %d interleaved rounds, each the profiled run's CPU, its profiler's "
                    "processes included, less the round's bare run's, over the profile's samples)" % g["rounds"],
                    "met" if all(r["us_per_sample"][0] <= g["us_per_sample"][0] for r in mine) else "not met"))
    else:
        err = next((r["error"] for r in res.get("sample_rounds", []) if "error" in r), None)
        out.append((t, err or ("gperftools did not run" if mine else "not run"), "not measured"))

    t = "48-deep workload at 1 kHz, 1 thread: CPU ratio over the ring mechanism's floor ≤ ×1.01"
    floor = next((f for f in res.get("sigfloor", []) if f.get("mode") == "ring" and f["hz"] == 1000), None)
    mine = [r for r in (cell("cpuprof auto", 1000), cell("cpuprof record", 1000)) if r]
    rounds = [r for r in res.get("floor_rounds", []) if "error" not in r]
    if rounds:
        out.append((t, "; ".join("%s ×%.4f [%.4f–%.4f]" % (r["profiler"], *r["over_floor"]) for r in rounds) +
                    " (median [min–max] of %d interleaved rounds, each the profiled run's CPU over the bare run's, "
                    "over the ring floor's run with and without its ring: a task-clock event copying registers and "
                    "16 KiB of stack into a ring nobody reads)" % rounds[0]["rounds"],
                    "met" if all(r["over_floor"][0] <= 1.01 for r in rounds) else "not met"))
    elif floor and mine:
        x = [(r, r["cpu_ratio"][0] / floor["cpu_ratio"][0]) for r in mine]
        out.append((t, "; ".join("%s ×%.4f (CPU ratio %.4f; its work phase alone %.4f, ×%.4f over the floor)" % (
            r["profiler"], v, r["cpu_ratio"][0], r["work_cpu_ratio"][0],
            r["work_cpu_ratio"][0] / floor["cpu_ratio"][0]) for r, v in x) +
            "; the floor: a task-clock event copying registers and 16 KiB of stack into a ring nobody reads, "
            "CPU ratio %.4f [%.4f–%.4f]" % tuple(floor["cpu_ratio"]), "met" if all(v <= 1.01 for _, v in x) else "not met"))
    else:
        out.append((t, "not run", "not measured"))

    t = "names agreeing with `addr2line -C -f -i` (C++, Rust legacy and v0; record, LD_PRELOAD, the gperftools " \
        "drop-in) ≥ 0.95 everywhere"
    cells = [r for r in res.get("names", []) if "error" not in r]
    err = next((r["error"] for r in res.get("names", []) if "error" in r), None)
    if cells:
        low = min(cells, key=lambda r: r["ratio"])
        bad = [r for r in cells if r["ratio"] < 0.95]
        out.append((t, "%d cell(s), lowest %.3f (%s %s); below 0.95: %s%s" % (
            len(cells), low["ratio"], low["path"], low["workload"],
            ", ".join("%s %s %.3f" % (r["path"], r["workload"], r["ratio"]) for r in bad) or "none",
            "; " + err if err else ""), "met" if not bad and not err else "not met"))
    else:
        skipped = any(r.get("status") == 77 for r in res.get("names", []))
        out.append((t, err or "not run", "not met" if err and not skipped else "not measured"))

    rows = {r["profiler"]: r for r in res.get("build", [])}
    t = "a real build (`make -j2` of Debian's zstd) under `cpuprof record`: wall and CPU over bare ≤ `perf record " \
        "--call-graph dwarf`'s"
    r, q = rows.get("cpuprof record"), rows.get("perf record --call-graph dwarf")
    if ok(r) and ok(q) and "cpu_over" in r:
        # The bare build runs before and after the others: how far apart
        # its runs are is the noise of the machine over the part, and a
        # difference within it does not count against cpuprof.
        bare = rows["(none)"]
        noise = {k: (max(bare[k + "s"]) - min(bare[k + "s"])) / bare[k + "_s"] for k in ("wall", "cpu")}
        worse = [k for k in ("wall", "cpu") if r[k + "_over"] > q[k + "_over"] + noise[k]]
        out.append((t, "%s: cpuprof record wall ×%.3f, CPU ×%.3f; perf record --call-graph dwarf wall ×%.3f, CPU ×%.3f "
                    "(bare: wall %s s, CPU %s s: its runs %.1f%% and %.1f%% apart, the noise a difference must exceed)" % (
                        build_what(res["mode"]), r["wall_over"], r["cpu_over"], q["wall_over"], q["cpu_over"],
                        ", ".join("%.1f" % x for x in bare["walls"]), ", ".join("%.1f" % x for x in bare["cpus"]),
                        100 * noise["wall"], 100 * noise["cpu"]),
                    "not measured" if MODES[res["mode"]]["build"]["project"] != "zstd" else
                    "met" if not worse else "not met"))
    else:
        out.append((t, next((x["error"] for x in res.get("build", []) if "error" in x), "not run"), "not measured"))

    t = "attach (`cpuprof record -p`): coverage over the window 0.95–1.05, each leaf's share within 2 sampling σ"
    att = [r for r in res.get("attach", []) if "error" not in r]
    err = [r for r in res.get("attach", []) if "error" in r]
    if att:
        rng = lambda k: "%.3f–%.3f" % (min(r[k] for r in att), max(r[k] for r in att)) \
            if all(r.get(k) is not None for r in att) else "not known in every run"
        worst = max(att, key=lambda r: r["max_z"])
        good = all(0.95 <= r["coverage"] <= 1.05 and r["sched_ratio"] is not None and
                   0.95 <= r["sched_ratio"] <= 1.05 and r["max_z"] <= 2 for r in att) and not err
        out.append((t, "%d run(s): coverage %s, profile / scheduler %s, profile / the work's own CPU %s; largest |share "
                    "− true share| %.2f σ (%s %d thr)%s" % (
                        len(att), rng("coverage"), rng("sched_ratio"), rng("truth_ratio"), worst["max_z"],
                        worst["pattern"], worst["threads"], "; failed: " + err[0]["error"] if err else ""),
                    "met" if good else "not met"))
    else:
        out.append((t, err[0]["error"] if err else "not run", "not measured"))

    t = "samples lost at 1 kHz, 1–4 busy threads, one other CPU-bound process running: 0"
    ls = [r for r in res.get("lost", []) if "error" not in r]
    err = [r for r in res.get("lost", []) if "error" in r]
    if ls:
        out.append((t, "%d run(s) (%s): %d lost of %d samples%s%s" % (
            len(ls), ", ".join(sorted({r["profiler"] for r in ls})), sum(r["lost"] for r in ls),
            sum(r["samples"] for r in ls),
            "; " + ", ".join("%s %d thr: %d" % (r["profiler"], r["threads"], r["lost"]) for r in ls if r["lost"])
            if any(r["lost"] for r in ls) else "", "; failed: " + err[0]["error"] if err else ""),
            "met" if not any(r["lost"] for r in ls) and not err else "not met"))
    else:
        out.append((t, err[0]["error"] if err else "not run", "not measured"))
    return out


def noise_floor(n, p=0.4):
    return (p * (1 - p) / n) ** 0.5 if n else 1.0


def cell_name(r):
    return "%s %s %dthr %dHz" % (r["profiler"], r["pattern"], r["threads"], r["hz"])


def cell_list(rows):
    return ", ".join("%s (%.3f)" % (cell_name(r), r["coverage"]) if "coverage" in r else cell_name(r) for r in rows)


# One look per profiler in every plot.
STYLE = {"cpuprof perf": "lc rgb '#1b9e77' lw 2 pt 7", "cpuprof timer": "lc rgb '#d95f02' lw 2 pt 5",
         "cpuprof itimer": "lc rgb '#7570b3' lw 2 pt 9", "cpuprof auto": "lc rgb '#e7298a' lw 2 dt 2 pt 6",
         "gperftools": "lc rgb '#66a61e' lw 2 pt 13", "perf record": "lc rgb '#333333' lw 2 dt 3 pt 2"}


def plots(res, outdir, work):
    """Writes coverage.png and overhead.png with gnuplot; returns the file
    names written (none if gnuplot is missing)."""
    if not shutil.which("gnuplot"):
        return []
    acc = [r for r in res["accuracy"] if "error" not in r]
    ovh = [r for r in res["overhead"] if "error" not in r]
    names = [p for p in res["profilers"] if not res["missing"].get(p)]
    written = []
    pats = sorted({r["pattern"] for r in acc}, key=["busy", "bursty"].index)
    thr = sorted({r["threads"] for r in acc})
    if acc and len({r["hz"] for r in acc}) > 1:
        script = ["set terminal pngcairo size %d,%d font 'sans,9'" % (420 * len(thr), 330 * len(pats)),
                  "set output '%s'" % os.path.join(outdir, "coverage.png"),
                  "set multiplot layout %d,%d title 'Coverage (profiled CPU / process CPU) against the requested rate'"
                  % (len(pats), len(thr)),
                  "set logscale x", "set xlabel 'Hz'", "set ylabel 'coverage'", "set yrange [0:1.3]",
                  "set key bottom left", "set grid"]
        for pat in pats:
            for t in thr:
                plot = []
                for k, n in enumerate(names):
                    pts = sorted((r["hz"], r["coverage"]) for r in acc
                                 if r["profiler"] == n and r["pattern"] == pat and r["threads"] == t)
                    if not pts:
                        continue
                    f = os.path.join(work, "cov-%s-%d-%d.dat" % (pat, t, k))
                    with open(f, "w") as fh:
                        fh.writelines("%d %f\n" % x for x in pts)
                    plot.append("'%s' using 1:2 with linespoints %s title '%s'" % (f, STYLE.get(n, ""), n))
                script.append("set title '%s, %d thread%s'" % (pat, t, "s" if t > 1 else ""))
                script.append("set key bottom left" if pat == pats[0] and t == thr[0] else "unset key")
                script.append("plot 1 with lines dt 2 lc 'gray' notitle, " + ", ".join(plot))
        script.append("unset multiplot")
        if run_gnuplot(script, work, "coverage"):
            written.append("coverage.png")
    othr = sorted({r["threads"] for r in ovh})
    if ovh and len({r["hz"] for r in ovh}) > 1:
        script = ["set terminal pngcairo size %d,360 font 'sans,9'" % (480 * len(othr)),
                  "set output '%s'" % os.path.join(outdir, "overhead.png"),
                  "set multiplot layout 1,%d title 'CPU time profiled / unprofiled, 48-deep fixed work (median of pairs)'"
                  % len(othr),
                  "set logscale x", "set yrange [0.95:*]", "set xlabel 'Hz'", "set ylabel 'CPU ratio'",
                  "set key top left", "set grid"]
        for t in othr:
            plot = []
            for k, n in enumerate(names):
                pts = sorted((r["hz"], r["cpu_ratio"][0], r["cpu_ratio"][1], r["cpu_ratio"][2]) for r in ovh
                             if r["profiler"] == n and r["threads"] == t)
                if not pts:
                    continue
                f = os.path.join(work, "ovh-%d-%d.dat" % (t, k))
                with open(f, "w") as fh:
                    fh.writelines("%d %f %f %f\n" % x for x in pts)
                plot.append("'%s' using 1:2:3:4 with yerrorlines %s title '%s'" % (f, STYLE.get(n, ""), n))
            script.append("set title '%d thread%s'" % (t, "s" if t > 1 else ""))
            script.append("set key top left" if t == othr[0] else "unset key")
            script.append("plot " + ", ".join(plot))
        script.append("unset multiplot")
        if run_gnuplot(script, work, "overhead"):
            written.append("overhead.png")
    return written


def run_gnuplot(lines, work, name):
    path = os.path.join(work, name + ".gp")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run(["gnuplot", path], capture_output=True, text=True)
    if r.returncode != 0:
        log("gnuplot %s: %s" % (name, r.stderr.strip()[:300]))
    return r.returncode == 0


# Sections of the document measured by hand, apart from this run (their
# commands are in them): a rewrite keeps them as they are.
KEPT_SECTIONS = ("## The page's timeline", "## Sample times in the profile", "## Big profiles (issue 32, by hand)")


def kept_sections(path):
    """The sections of KEPT_SECTIONS in the document at path, as text."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    out = []
    for head in KEPT_SECTIONS:
        at = text.find("\n" + head + "\n")
        if at < 0:
            continue
        end = text.find("\n## ", at + 1)
        out.append(text[at + 1:end if end >= 0 else len(text)].rstrip() + "\n")
    return "\n".join(out)


def markdown(res, figs, ext, kept=""):
    m, mode, cfg = res["machine"], res["mode"], MODES[res["mode"]]
    L = []
    w = L.append
    w("# Benchmarks")
    w("")
    w("Written by `make bench%s` (bench/run.py, mode `%s`) on %s. Every number below comes from that one "
      "run; rerun it to check them. How each number is measured is at the end." % (
          {"full": "", "quick": " QUICK=1", "smoke": " (smoke)"}[mode], mode, m["date"]))
    w("")
    w("What off-CPU time (`record --off-cpu`) costs is measured apart, by `sh bench/offcpu/run.sh`: "
      "[benchmarks-offcpu.md](benchmarks-offcpu.md).  Where an empty program's start and write go, and "
      "what each change to them saved, library against library: [benchmarks-start.md](benchmarks-start.md).  "
      "What source lines cost the 100-process loop below when it meets addresses the lines cache does not hold, "
      "cold and warm, before and after the cache kept spans (issue 32): [benchmarks-lines.md](benchmarks-lines.md).")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    w("| kernel | %s |" % m["kernel"])
    w("| CONFIG_HZ | %s |" % (m["config_hz"] or "not readable"))
    w("| measured tick | %s Hz (ITIMER_PROF asked for 10 kHz, signals per CPU second: bench/tick.c) |" % m["tick_hz"])
    w("| CPUs | %s × %s |" % (m["cpus"], m.get("cpu", "?")))
    w("| memory | %.1f GiB |" % m.get("mem_gib", 0))
    w("| perf_event_paranoid | %s (benchmark run as uid %d) |" % (m["paranoid"], m["uid"]))
    w("| versions | %s |" % ", ".join("%s %s" % kv for kv in m["versions"].items()))
    n = res["noise"]
    w("| load from others | %.2f of %d CPUs busy with other processes on average during the run (%.0f s; "
      "steal %.2f CPUs) |" % (n["others_cpus"], m["cpus"], n["wall_s"], n["steal_cpus"]))
    w("")
    if n["others_cpus"] > 0.1:
        w("**The machine was shared while this ran**: other processes used %.2f CPUs on average, so timings "
          "(overhead ratios, wall times) are noisier than on a quiet machine. Coverage and share error are "
          "ratios of CPU time and suffer much less." % n["others_cpus"])
        w("")
    missing = {k: v for k, v in res["missing"].items() if v}
    if missing:
        w("Not run here: " + "; ".join("%s: %s" % kv for kv in missing.items()) + ".")
        w("")

    w("## Targets (cpuprof)")
    w("")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    for t, meas, v in res["targets"]:
        w("| %s | %s | **%s** |" % (t, meas, v))
    w("")

    w("## Accuracy")
    w("")
    w("Workload `bench/accuracy.c`: four leaf functions costing 1:2:3:4 units (about 10/20/30/40%% of the "
      "time), picked at random, each call timed with the thread CPU clock: the ground truth. *busy*: calls "
      "back to back; *bursty*: about 200 µs of CPU, then a 100 µs sleep. %d ms of CPU per run in all threads. "
      "**coverage** = the profile's CPU time / the process's CPU time (CLOCK_PROCESS_CPUTIME_ID at the end of "
      "the work). **share error** = the largest |profile share − true share| over the four leaves, in "
      "percentage points; its noise floor for the 40%% leaf is about 100·sqrt(0.24/samples) pp (column "
      "*floor*). **Hz eff.** = samples per CPU second actually taken. **outside leaves**: the CPU time not in the four "
      "leaves (clock reads, sleeping, thread start, the profiler itself) by the ground truth and in the profile; a "
      "profiler that charges kernel time to the user code that runs next shows too little here and too much in "
      "every leaf." % cfg["cpu_ms"])
    w("")
    w("A thread's CPU time after its last sample (on average half a period per thread, perf engine, or about "
      "half a tick, timer engines: with %d ms of CPU split among 16 threads at 100 Hz, 16 × 5 ms / %d ms = %.1f%% "
      "of the run) is in cpuprof's profiles under the frame `[unsampled: after each thread's last sample]`: it "
      "counts in coverage and, being in no leaf, in *outside leaves*." % (cfg["cpu_ms"], cfg["cpu_ms"],
                                                                           100 * 16 * 5 / cfg["cpu_ms"]))
    w("")
    if "coverage.png" in figs:
        w("![coverage against rate](bench/coverage.png)")
        w("")
    if not res["accuracy"]:
        w("(Not run this time.)")
        w("")
    for pat in cfg["patterns"]:
        rows = [r for r in res["accuracy"] if r["pattern"] == pat]
        if not rows:
            continue
        w("### %s" % pat)
        w("")
        w("| profiler | threads | Hz | coverage | samples | Hz eff. | share error (pp) | floor (pp) | outside leaves: true / profile (%) |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if "error" in r:
                w("| %s | %d | %d | failed: %s | | | | | |" % (r["profiler"], r["threads"], r["hz"], md_cell(r["error"])))
                continue
            w("| %s | %d | %d | %.3f | %d | %.0f | %s | %.2f | %.1f / %.1f |" % (
                r["profiler"], r["threads"], r["hz"], r["coverage"], r["samples"], r["eff_hz"],
                fmt(r["share_err"], 2), 100 * noise_floor(r["samples"]),
                100 * (1 - sum(r["leaf_true"].values())), 100 * (1 - sum(r["leaf_prof"].values()))))
        w("")

    w("## Overhead")
    w("")
    w("Workload `bench/overhead.c`: fixed work (%d million LCG steps split among the threads) done 48 calls "
      "deep. Each cell is %d pairs of an unprofiled run followed by a profiled one; ratios are profiled / "
      "unprofiled per pair, shown as median [min–max]. **CPU** is the whole run as the kernel accounted it "
      "(wait4: user + system of the command and its children, so perf's own process is included, and so are "
      "start-up and writing the profile at exit); **work CPU** is the workload's own process CPU during its "
      "work loop only (without start-up, the write at exit, and perf's process). **µs/sample** = median extra "
      "CPU per pair / samples in the profile: the cost of one sample, comparable across effective rates. "
      "**handler µs** = cpuprof's signal handler's own time per call (CLOCK_MONOTONIC around it; calls over "
      "200 µs were preempted and are left out), from the benchmark build (`-DCPUPROF_BENCH`, build-bench/), "
      "in one extra run per cell. Each profiled run writes its profile where no file is (the last run's is "
      "removed first: on ext4 a file written over an old one has its blocks written back at once). **RSS added** = "
      "median peak RSS profiled − unprofiled (perf: its own "
      "process's peak)." % (cfg["msteps"], cfg["pairs"]))
    w("")
    if "overhead.png" in figs:
        w("![overhead against rate](bench/overhead.png)")
        w("")
    if not res["overhead"]:
        w("(Not run this time.)")
        w("")
    w("| profiler | threads | Hz | samples | coverage | chains | CPU ratio | work CPU ratio | wall ratio | µs/sample | handler µs | RSS added (KiB) |")
    w("|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|")
    for r in res["overhead"]:
        if "error" in r:
            w("| %s | %d | %d | failed: %s | | | | | | | | |" % (r["profiler"], r["threads"], r["hz"], md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["profiler"], r["threads"], r["hz"], r["samples"], fmt(r.get("coverage")), fmt(r.get("chains")),
            ratio(r["cpu_ratio"]), ratio(r["work_cpu_ratio"]),
            ratio(r["wall_ratio"]), "%.1f [%.1f–%.1f]" % r["us_per_sample"], fmt(r.get("handler_us"), 2),
            "%.0f" % r["rss_added_kb"] if r["rss_added_kb"] is not None else "≤ workload's"))
    w("")
    w("**coverage**: the profile's own `coverage=` comment (cpuprof's profiles only). **chains**: the part "
      "of hot()'s CPU in the profile whose stacks reach worker(), 48 frames up: 1.000 is every call chain "
      "whole (perf report is read for leaves only).")
    w("")
    per = []
    for r in res["overhead"]:
        q = next((q for q in res["overhead"] if q["profiler"] == r["profiler"] and q["hz"] == r["hz"]
                  and q["threads"] > r["threads"] and "error" not in q), None)
        if "error" not in r and q and r.get("rss_added_kb") is not None and q.get("rss_added_kb") is not None:
            per.append((r, q, (q["rss_added_kb"] - r["rss_added_kb"]) / (q["threads"] - r["threads"])))
    if per:
        w("Memory per thread: the RSS a profiler adds with %d threads less what it adds with %d, per extra "
          "thread (medians; the two runs' noise is a few hundred KiB, so small values are noise)." % (
              per[0][1]["threads"], per[0][0]["threads"]))
        w("")
        w("| profiler | Hz | RSS added, %d thread(s) (KiB) | %d threads (KiB) | per thread (KiB) |" % (
            per[0][0]["threads"], per[0][1]["threads"]))
        w("|---|---:|---:|---:|---:|")
        for r, q, d in per:
            w("| %s | %d | %.0f | %.0f | %.0f |" % (r["profiler"], r["hz"], r["rss_added_kb"], q["rss_added_kb"], d))
        w("")

    if res.get("sigfloor"):
        w("### The floor: the kernel's cost per signal")
        w("")
        w("Workload `bench/sigfloor.c`: the same fixed work with an **empty** SIGPROF handler, signalled by a perf "
          "task-clock event (an hrtimer interrupt and a signal per sample) or by a timer_create "
          "timer on the thread CPU clock (the timer engine's mechanism: checked at the tick), and with **no "
          "signal**: a task-clock event writing each sample with the user registers and a 16 KiB stack copy into "
          "a ring whose tail a second thread only moves on (the perf engine's mechanism, without its "
          "unwinding), against no timer, %d rounds. No profiler built on one of these mechanisms can cost less "
          "per sample than its row on this machine." % cfg["pairs"])
        w("")
        w("| mechanism | Hz | samples | µs per sample | CPU ratio |")
        w("|---|---:|---:|---|---|")
        for r in res["sigfloor"]:
            if "error" in r:
                w("| failed: %s | %d | | | |" % (md_cell(r["error"]), r["hz"]))
                continue
            w("| %s | %d | %d | %.2f [%.2f–%.2f] | %s |" % (
                {"perf": "perf task-clock event, signal", "timer": "timer_create, thread CPU clock, signal",
                 "ring": "perf task-clock event, ring (no signal)"}[r["mode"]], r["hz"],
                r["signals"], *r["us_per_signal"], ratio(r["cpu_ratio"])))
        w("")
    if res.get("floor_rounds"):
        w("Against the ring floor, interleaved: the 48-deep workload (1 thread, 1 kHz) in %d rounds, each "
          "running it bare and profiled and the floor workload without and with its ring, one after the other; "
          "each round's figure is the profiled run's CPU over the bare run's (the profiler's own processes "
          "included), over the ring's CPU over no timer's. The tables above come from separate phases, minutes "
          "apart, between which this machine's speed drifts by more than the 1%% asked." % cfg["floor_rounds"])
        w("")
        w("| profiler | over the ring floor (median [min–max]) |")
        w("|---|---|")
        for r in res["floor_rounds"]:
            w("| %s | %s |" % (r["profiler"], md_cell(r["error"]) if "error" in r else
                              "×%.4f [%.4f–%.4f]" % tuple(r["over_floor"])))
        w("")

    if res.get("sample_rounds"):
        w("CPU per sample at 100 Hz, interleaved: the 48-deep workload (1 thread) in %d rounds, each running it "
          "bare and under each profiler below, in an order that turns by one every round; each round's figure is "
          "the profiled run's CPU (the profiler's own processes included) less the bare run's, over the "
          "profile's samples. At about 130 samples a run, 1%% of a run's CPU is 100 µs a sample: the overhead "
          "table's 100 Hz cells, 6 pairs each and minutes apart, cannot tell the profilers apart." % cfg["sample_rounds"])
        w("")
        w("| profiler | µs per sample: median | quartiles | min–max | less gperftools' of the same round: median [quartiles] |")
        w("|---|---:|---:|---:|---:|")
        for r in res["sample_rounds"]:
            if "error" in r:
                w("| %s | failed: %s | | | |" % (r["profiler"], md_cell(r["error"])))
                continue
            v = r.get("vs_gperftools")
            w("| %s | %.1f | %.1f–%.1f | %.1f–%.1f | %s |" % (
                r["profiler"], r["us_per_sample"][0], *r["quartiles"], *r["us_per_sample"][1:],
                "%+.1f [%+.1f – %+.1f]" % tuple(v) if v else "–"))
        w("")

    w("## Scale")
    w("")
    w("Workload `bench/scale.c`: 4 threads walk PATHS distinct call paths (about 30 frames deep), %s µs of CPU "
      "each, sampled at the rate shown, so the profile holds about PATHS distinct stacks. **exit** = time from "
      "the end of the work (the workload's last CLOCK_MONOTONIC reading) to the process being reaped: the "
      "profile is written in that time (perf: perf's own post-processing). **stacks** = distinct stacks in "
      "the profile it wrote. **exit CPU** = the CPU of the process (and of the children it waited for) less "
      "the workload's at the end of its work: what writing the profile cost, which the machine's load does not "
      "stretch as it does the exit's wall time." % ", ".join(sorted({str(x[1]) for x in cfg["scale"]})))
    w("")
    if not res["scale"]:
        w("(Not run this time.)")
        w("")
    w("| profiler | paths | Hz | samples | stacks | exit (s) | exit CPU (s) | peak RSS (KiB) | added (KiB) | file (KiB) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in res["scale"]:
        if "error" in r:
            w("| %s | %d | | failed: %s | | | | | | |" % (r["profiler"], r["paths"], md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %s | %s | %.3f | %s | %d | %s | %s |" % (
            r["profiler"], r["paths"], r["hz"], fmt(r.get("samples")), fmt(r.get("stacks")), r["exit_s"],
            fmt(r.get("exit_cpu_s")), r["rss_kb"], fmt(r.get("rss_added_kb")), fmt(r["size"] // 1024) if "size" in r else "–"))
    w("")
    w("A 10-minute run at 1 kHz on 4 threads (on 2 CPUs: about 1.2 million samples) with the same number of "
      "distinct stacks writes the same table: cpuprof aggregates samples by stack as they arrive, so its "
      "memory and its write time grow with the distinct stacks, not with the run's length; a longer run only "
      "makes each stack's counts larger (a few more bytes of varint per stack). The rows above are therefore "
      "the 10-minute-equivalent, extrapolated on that argument, not measured over 10 minutes.")
    w("")

    md_bigreport(res, w)

    md_processes(res, w)

    for name, md in ext:
        w(md.rstrip())
        w("")
    if not any(n == "vm" for n, _ in ext):
        w("## The seed's kernel (tick-only timers)")
        w("")
        w("Not run in this mode: bench/vm/run.sh %s." % (
            "does not exist yet" if not os.path.exists(os.path.join(ROOT, "bench", "vm", "run.sh"))
            else "runs in a full `make bench`, or with `make bench QUICK=1 VM=1`"))
        w("")

    if kept:
        w(kept.rstrip())
        w("")
    w("## Method")
    w("")
    w("- Profilers: cpuprof via `LD_PRELOAD=build/libcpuprof.so CPUPROF=FILE CPUPROF_HZ=HZ CPUPROF_ENGINE=E`, "
      "and `cpuprof record -o FILE -F HZ -- CMD` (\"cpuprof record\": the default engine, its samples drained by "
      "record's own process, whose CPU and memory are counted); "
      "gperftools via `LD_PRELOAD=%s CPUPROFILE=FILE CPUPROFILE_FREQUENCY=HZ`, read with `go tool pprof -proto "
      "BINARY FILE` (gperftools caps the frequency at 4000 Hz and uses one process-wide ITIMER_PROF); "
      "`perf record -e cpu-clock -F HZ -g`, read with `perf report --no-children --sort sym -F sample,period,sym` "
      "(period = ns of cpu-clock, so coverage uses perf's own weights)." % GPERF_LIB)
    w("- Every command is started by `bench/spawn` (static, so children inherit almost no RSS), which "
      "reports wait4's rusage and the wall time.")
    w("- The workloads are built with `-O2 -fno-omit-frame-pointer`; every profiler compared walks frame "
      "pointers (gperftools may also use libunwind).")
    w("- The ground truth's clock reads cost about 0.6 µs per leaf call (calls last 80–320 µs); a sample taken "
      "inside one is not in a leaf, which biases true shares up by at most about 0.3% of their value.")
    w("- One process, trees, the build, attaching and the losses are at 1 kHz, cpuprof's default rate; perf there "
      "is `perf record -e cpu-clock -F 1000` with `-g`, or `--call-graph dwarf` for the build.")
    w("- Raw numbers: `docs/bench/results.json`.")
    w("")
    return "\n".join(L)


def md_processes(res, w):
    """The sections of issues 21 and 22: one process, trees of them, a
    build, attaching, losses, names."""
    cfg = MODES[res["mode"]]
    q3 = lambda t: "%.2f [%.2f–%.2f]" % tuple(t) if t else "–"
    failed = lambda r, cols: "| %s | failed: %s |%s" % (r.get("profiler", ""), md_cell(r["error"]), " |" * cols)

    w("## One process")
    w("")
    w("An empty program, `/bin/true`, run %d times bare and as many under each profiler, in rounds (each way once "
      "per round, in a rotating order, so that a change in the machine's load falls on all alike), each run "
      "started by bench/spawn: the CPU of the child as wait4's rusage counts it (user + system of the command "
      "and of the children it waited for: perf's own process is in it) and the wall time, median [25th–75th "
      "percentile]. **over bare** = a run's CPU (wall) less the bare run's of the same round. *cpuprof auto*: "
      "`LD_PRELOAD=libcpuprof.so CPUPROF=FILE` (default engine, 1 kHz): what it adds is the profile's start and "
      "its write; *cpuprof record*: `cpuprof record -o FILE -F 1000 -- /bin/true`; *gperftools*: "
      "`LD_PRELOAD=libprofiler.so.0 CPUPROFILE=FILE CPUPROFILE_FREQUENCY=1000`; *perf record*: `perf record -e "
      "cpu-clock -F 1000 -g -o FILE`. Each run writes its profile to a new name, removed after it: on ext4 a new "
      "file renamed over an existing one has the kernel write the old one's blocks back at the rename "
      "(auto_da_alloc), which on this VM costs more than the profile." % cfg["proc_runs"])
    w("")
    w("| profiler | runs | CPU (ms) | CPU over bare (ms) | wall (ms) | wall over bare (ms) |")
    w("|---|---:|---|---|---|---|")
    for r in res.get("process", []):
        if "error" in r:
            w(failed(r, 4))
            continue
        w("| %s | %d | %s | %s | %s | %s |" % (r["profiler"], r["runs"], q3(r["cpu_ms"]), q3(r["over_bare_ms"]),
                                              q3(r["wall_ms"]), q3(r["wall_over_bare_ms"])))
    if not res.get("process"):
        w("| (not run this time) | | | | | |")
    w("")

    n, rounds = cfg["tree"]
    w("## Trees of processes")
    w("")
    w("A shell loop of %d `/bin/true` (`sh -c 'for i in $(seq %d); do /bin/true; done'`), bare and under each "
      "profiler at 1 kHz, %d round(s), each way once per round; wall time and CPU (wait4's rusage: the whole tree "
      "and the profiler's own process), median [min–max]. *cpuprof record* samples from outside (perf events "
      "inherited through the tree, read by record's process); *cpuprof record --preload* has libcpuprof in each "
      "process instead (the way record worked before); *perf record*: `perf record -e cpu-clock -F 1000 -g`. "
      "**CPU / perf record's**: the two runs of the same round." % (n, n, rounds))
    w("")
    w("| profiler | processes | wall (s) | CPU (s) | CPU over bare (s) | CPU / perf record's |")
    w("|---|---:|---|---|---|---|")
    for r in res.get("tree", []):
        if "error" in r:
            w(failed(r, 4))
            continue
        w("| %s | %d | %s | %s | %s | %s |" % (
            r["profiler"], r["processes"], ratio(r["wall_s"], 3), ratio(r["cpu_s"], 3),
            ratio(r["cpu_over_bare_s"], 3) if r["cpu_over_bare_s"] else "–",
            ratio(r["vs_perf"], 3) if r.get("vs_perf") else "–"))
    if not res.get("tree"):
        w("| (not run this time) | | | | | |")
    w("")

    b = cfg["build"]
    w("## A real build")
    w("")
    w("%s, %s, a fresh copy of the source for each run: bare, under `cpuprof record -F 1000` and under `perf record -e "
      "cpu-clock -F 1000 --call-graph dwarf`, %d round(s) of each in turn (every other round in reverse order), "
      "and the bare build first and last (its runs, in parentheses, say how far the machine moved meanwhile: the "
      "verdict counts a difference within that spread as none); wall time and CPU (the whole tree and the "
      "profiler's own process), the median where there are several, and their ratios to the bare build's. perf copies 8 KiB of stack per sample into "
      "its file and unwinds only when `perf report` reads it, which is not counted here; cpuprof's numbers include "
      "its unwinding and symbolizing, and its profile is the finished one. **file**: the profile's size; "
      "**coverage**: cpuprof's `coverage=` comment, of the whole tree." % (
          build_what(res["mode"])[0].upper() + build_what(res["mode"])[1:],
          "from Debian's source package (`apt-get source zstd`, unpacked once into the bench's work/ext/ and kept)"
          if b["project"] == "zstd" else "written by bench/run.py",
          b["rounds"]))
    w("")
    w("| profiler | wall (s) | CPU (s) | wall over bare | CPU over bare | file (MiB) | coverage |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    for r in res.get("build", []):
        if "error" in r:
            w(failed(r, 5))
            continue
        runs = lambda x, xs: "%.1f" % x + (" (%s)" % ", ".join("%.1f" % v for v in xs) if len(xs or ()) > 1 else "")
        w("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["profiler"], runs(r["wall_s"], r.get("walls")), runs(r["cpu_s"], r.get("cpus")), fmt(r.get("wall_over")),
            fmt(r.get("cpu_over")), fmt(r.get("file_mib"), 1), r.get("coverage", "–")))
    if not res.get("build"):
        w("| (not run this time) | | | | | | |")
    w("")

    w("## Attaching")
    w("")
    w("`cpuprof record -p PID -F 1000` on the accuracy workload (above), started in its READY mode: its threads "
      "are made and wait; record attaches (the run goes on when record holds an open perf event for every "
      "thread), SIGUSR1 starts the work; when the work is done and reported, SIGINT stops record while the "
      "threads still exist, then the workload ends. **coverage**: the profile's `coverage=` comment, its CPU over "
      "what the events counted in the window; **/ scheduler**: its `profile_cpu_ns` over its `scheduler_cpu_ns` "
      "(the threads' schedstat as record attached and as it detached); **/ work**: over the workload's own CPU "
      "in its work phase (CLOCK_PROCESS_CPUTIME_ID, the ground truth; the window is a few ms longer). Per leaf: "
      "(profile share − true share) / σ, σ = sqrt(p(1−p)/samples) the sampling noise of a share p. By sampling "
      "alone, all four leaves of a run fall within 2 σ in about 84% of runs (multinomial draws of 10/20/30/40%), "
      "so one leaf beyond 2 σ in one run of several is to be expected now and then; a bias would show as the same "
      "leaf off the same way in every run.")
    w("")
    w("| pattern | threads | CPU (ms) | samples | coverage | / scheduler | / work | leaf_a | leaf_b | leaf_c | "
      "leaf_d | largest |σ| |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in res.get("attach", []):
        if "error" in r:
            w("| %s | %d | %d | failed: %s | | | | | | | | |" % (r["pattern"], r["threads"], r["cpu_ms"],
                                                               md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %d | %.3f | %s | %.3f | %s | %.2f |" % (
            r["pattern"], r["threads"], r["cpu_ms"], r["samples"], r["coverage"], fmt(r["sched_ratio"]),
            r["truth_ratio"], " | ".join("%+.2f" % r["leaves"][l]["z"] for l in LEAVES), r["max_z"]))
    if not res.get("attach"):
        w("| (not run this time) | | | | | | | | | | | |")
    w("")

    threads, ms = cfg["lost"]
    w("## Lost samples beside a busy process")
    w("")
    w("The accuracy workload, busy, %d ms of CPU in all its threads, at 1 kHz, while `sh -c 'while :; do :; "
      "done'` runs beside it (started for this part, ended after it): under `cpuprof record` (its own process "
      "reads the kernel's rings) and with libcpuprof preloaded (*cpuprof auto*: cpuprof's thread in the "
      "process reads them). **lost**: the profile's `lost=` comment, samples the kernel could not write because a "
      "ring was full; **coverage**: as in the accuracy tables." % ms)
    w("")
    w("| profiler | threads | samples | lost | lost / samples | coverage |")
    w("|---|---:|---:|---:|---:|---:|")
    for r in res.get("lost", []):
        if "error" in r:
            w("| %s | %d | failed: %s | | | |" % (r["profiler"], r["threads"], md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %d | %.4f | %.3f |" % (r["profiler"], r["threads"], r["samples"], r["lost"],
                                                   r["lost"] / max(r["samples"], 1), r["coverage"]))
    if not res.get("lost"):
        w("| (not run this time) | | | | | |")
    w("")

    md_kernel(res, w)
    md_every(res, w)
    md_memory(res, w)

    w("## Names")
    w("")
    w("`tests/e2e/t_names.sh`, run by the benchmark (with NAMES_MIN=0, so that it measures every cell however "
      "low): a C++ workload (templates, namespaces, a lambda, inlined methods, the standard library's) built with "
      "`g++ -O2 -g`, and a Rust one built with `rustc -O -g` with legacy and with v0 symbol mangling, each "
      "profiled at 2 kHz under `cpuprof record`, with libcpuprof preloaded and with the gperftools drop-in "
      "preloaded; every Line of every Location of the profile is compared with the name `addr2line -C -f -i` "
      "gives that level of the address's inline chain. Each cell: Lines whose names agree / Lines compared (Lines "
      "of addresses no symbol covers are left out, *unnamed*).")
    w("")
    cells = {(r["workload"], r["path"]): r for r in res.get("names", []) if "error" not in r}
    paths = [("record", "cpuprof record"), ("preload", "LD_PRELOAD"), ("gperftools", "gperftools drop-in")]
    w("| workload | " + " | ".join(t for _, t in paths) + " |")
    w("|---|---:|---:|---:|")
    for wl, title in (("names_cxx", "C++"), ("names_legacy", "Rust, legacy mangling"), ("names_v0", "Rust, v0 mangling")):
        c = [cells.get((wl, p)) for p, _ in paths]
        if any(c):
            w("| %s | %s |" % (title, " | ".join("%.3f (%d of %d, %d unnamed)" % (x["ratio"], x["agree"], x["total"],
                                                                                x["unnamed"]) if x else "–" for x in c)))
    for r in res.get("names", []):
        if "error" in r:
            w("")
            w("(%s)" % md_cell(r["error"]))
    if not res.get("names"):
        w("| (not run this time) | | | |")
    w("")


def md_kernel(res, w):
    w("## Time in the kernel, and threads that wake often")
    w("")
    w("Tests' `work_kernel`, whose functions time their own CPU with the thread's clock: *syscalls*, one thread "
      "alternating `sys_pipe` (32 KiB written into a pipe and read back, twice: almost all in the kernel) with "
      "`user_spin` (about 50 µs in user mode); *bursty*, threads working 100, 200 or 300 µs in `burst_a`, `burst_b` "
      "or `burst_c` between 100 µs sleeps. Under `cpuprof record` from outside, attached (`-p`, the threads kept "
      "until record detaches) and with `--preload`; as root (kernel-mode samples) and, for the system calls where "
      "`perf_event_paranoid` is 2, as an unprivileged user (user-mode samples only). **share error**: the largest "
      "|function's share of the profile (cumulative) − its CPU over the process's| in percentage points; σ: the "
      "sampling error of that share at the profile's samples. *kernel frame*: `[kernel: unsampled, user-mode "
      "samples only]`'s share; *switches*: `[kernel: switching threads in, not counted by perf's clock]`'s.")
    w("")
    w("| workload | threads | Hz | path | user | coverage | samples | share error (pp) | 3σ (pp) | kernel frame | switches |")
    w("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for r in res.get("kernel", []):
        if "error" in r:
            w("| %s | %d | %d | %s | %s | failed: %s | | | | | |" % (r["workload"], r["threads"], r["hz"], r["path"],
                                                                 "nobody" if r["unprivileged"] else "root",
                                                                 md_cell(r["error"])))
            continue
        w("| %s | %d | %d | %s | %s | %.3f | %d | %.2f | %.2f | %.1f%% | %.1f%% |" % (
            r["workload"], r["threads"], r["hz"], r["path"], "nobody" if r["unprivileged"] else "root",
            r["coverage"], r["samples"], r["err"], 3 * r["sigma"], 100 * r["kernel_frame"],
            100 * r["switch_unseen"]))
    if not res.get("kernel"):
        w("| (not run this time) | | | | | | | | | | |")
    w("")


def md_every(res, w):
    w("## Long runs in windows (`record --every`)")
    w("")
    rows = res.get("every", [])
    if not rows:
        w("(not run this time)")
        w("")
        return
    r = rows[0]
    if "error" in r:
        w("Failed: %s" % md_cell(r["error"]))
        w("")
        return
    first, top, slope = every_summary(r)
    w("`cpuprof record --every %s -F 1000 -- stacks %d %d`: bench/stacks.c, %d threads each walking down a chain of "
      "1–48 calls through 64 functions drawn at random (nearly every sample a stack no window had before), for %d s. "
      "**RSS**: record's VmRSS (/proc/PID/status), read every 200 ms, the most in each window; the windows' writers "
      "(copies of record, one a window while it writes) peaked at %.1f MiB. **lost** and **coverage**: each file's "
      "comments. record's RSS after the first window: %.1f MiB; the most after it: %.1f MiB; %+.1f KiB a window "
      "beside what the busiest window so far holds (least squares on the window's number and the most samples a "
      "window had held, the last, partial window left out: the stack tables keep the busiest window's memory for "
      "the next). Load from others while it ran: %.2f CPUs (steal %.2f)." % (
          r["every"], r["threads"], r["seconds"], r["threads"], r["seconds"], r["writer_peak_kib"] / 1024,
          first / 1024, top / 1024, slope, r["load"]["others_cpus"], r["load"]["steal_cpus"]))
    w("")
    w("| window | samples | distinct stacks | lost | coverage | RSS (MiB) |")
    w("|---:|---:|---:|---:|---:|---:|")
    for x in r["windows"]:
        w("| %d | %d | %d | %d | %.3f | %s |" % (x["window"], x["samples"], x["stacks"], x["lost"], x["coverage"],
                                              "%.1f" % (x["rss_kib"] / 1024) if x.get("rss_kib") else "–"))
    w("")


def md_memory(res, w):
    w("## Memory added, per cell")
    w("")
    mem = res.get("memory") or {}
    rows = mem.get("rows", [])
    if not rows:
        w("(not run this time)")
        w("")
        return
    w("bench/overhead.c (%d million steps in all, split among the threads; a 48-deep stack) in each cell, bare, "
      "with libcpuprof.so preloaded (`CPUPROF=FILE`, auto engine) and under `cpuprof record`, the three in turn "
      "in each of %d rounds, their order turned every round; medians.  Each process's peak resident set is "
      "VmHWM of /proc/PID/status read at its exit by bench/hwm (ptrace's exit stop), so that each is its own: "
      "wait4's ru_maxrss gives the largest of a process and its children.  cpuprof's caches are the part's own "
      "(XDG_CACHE_HOME), empty at its start: the lines child runs where a profile has an address in an object "
      "that they do not answer (at 10 kHz, a few new ones in libc in every run).  **program**: the workload's peak, "
      "bare and preloaded (**+**: over bare, round by round); **lines child**: the process the library (and "
      "record) forks at the end to read DWARF with libdw, short-lived, its peak, and **+** that less what it "
      "shared with its parent at the fork (its resident set at its first stop); **record**: record's own "
      "process (the program under it stays at its bare size: median %s KiB in the 10 kHz cells). The perf "
      "rings are not in any of these: the kernel maps their pages without counting them in a resident set "
      "(Linux 6.18 here). **lost**: the profiles' `lost=` comments, all runs of the cell, preloaded / record. Load from others "
      "while it ran: %.2f CPUs (steal %.2f)." % (
          mem["msteps"], rows[0]["rounds"],
          fmt(statistics.median([r["record_program_kib"] for r in rows if r["hz"] == 10000 and
                                 r.get("record_program_kib")] or [0]), 0),
          mem["load"]["others_cpus"], mem["load"]["steal_cpus"]))
    w("")
    w("| threads | Hz | program bare (KiB) | preloaded (KiB) | + | its lines child (KiB) | + | record (KiB) | "
      "its lines child (KiB) | + | lost |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        w("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d |%s" % (
            r["threads"], r["hz"], fmt(r["bare_kib"], 0), fmt(r["preload_kib"], 0), fmt(r["preload_added_kib"], 0),
            fmt(r["preload_child_kib"], 0), fmt(r["preload_child_added_kib"], 0), fmt(r["record_kib"], 0),
            fmt(r["record_child_kib"], 0), fmt(r["record_child_added_kib"], 0), r.get("lost_preload", 0),
            r.get("lost_record", 0), " failed once: " + md_cell(r["error"]) if r.get("error") else ""))
    w("")


def md_cell(s):
    return s.replace("|", "/").replace("\n", " ")


def ratio(t, nd=4):
    """median [min–max] (a tuple, or a list from results.json)."""
    return "%.*f [%.*f–%.*f]" % (nd, t[0], nd, t[1], nd, t[2])


# ----------------------------------------------------------------- main --

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true")
    g.add_argument("--smoke", action="store_true")
    ap.add_argument("--vm", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--work", default=os.path.join(BB, "work"))
    ap.add_argument("--profilers", help="comma-separated subset, e.g. 'cpuprof perf,perf record'")
    ap.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset of: " + ", ".join(PARTS))
    ap.add_argument("--render", action="store_true",
                    help="measure nothing: rewrite the document and plots from its results.json")
    a = ap.parse_args()
    mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    outdir = os.path.join(os.path.dirname(os.path.abspath(a.out)), "bench")
    if a.render:
        with open(os.path.join(outdir, "results.json")) as f:
            res = json.load(f)
        for r in res["overhead"]:
            for k in ("cpu_ratio", "wall_ratio", "work_cpu_ratio", "us_per_sample"):
                if k in r:
                    r[k] = tuple(r[k])
        for r in res["sigfloor"]:
            for k in ("us_per_signal", "cpu_ratio"):
                if k in r:
                    r[k] = tuple(r[k])
        os.makedirs(a.work, exist_ok=True)
        res["targets"] = judge(res)
        figs = plots(res, outdir, a.work)
        kept = kept_sections(a.out)
        with open(a.out, "w") as f:
            f.write(markdown(res, figs, res.get("external", []), kept))
        log("rewrote %s from results.json" % a.out)
        return
    cfg = MODES[mode]
    for f in ("spawn", "hwm", "accuracy", "overhead", "scale", "tick", "sigfloor"):
        if not os.access(os.path.join(BB, "bench", f), os.X_OK):
            sys.exit("bench/run.py: %s/bench/%s is missing: run `make bench-build` first" % (BB, f))
    # A clean work directory, but for ext/: what was downloaded (zstd's
    # source) stays for the next run.
    os.makedirs(a.work, exist_ok=True)
    for f in os.listdir(a.work):
        if f != "ext":
            p = os.path.join(a.work, f)
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    os.makedirs(outdir, exist_ok=True)

    t0 = time.monotonic()
    books = CpuBooks()
    runner = Runner(a.work)
    res = dict(mode=mode, machine=machine_info(runner), accuracy=[], overhead=[], sigfloor=[], scale=[],
               process=[], tree=[], build=[], attach=[], lost=[], names=[], kernel=[], every=[], memory={},
               bigreport=[])
    ps = probe_profilers(runner, a.work)
    if a.profilers:
        want = [x.strip() for x in a.profilers.split(",")]
        ps = [p for p in ps if p.name in want]
    parts = [x.strip() for x in a.parts.split(",")]
    if set(parts) - set(PARTS):
        sys.exit("bench/run.py: --parts: unknown %s (the parts: %s)" % (", ".join(set(parts) - set(PARTS)),
                                                                      ", ".join(PARTS)))
    res["profilers"] = [p.name for p in ps]
    res["missing"] = {p.name: p.missing for p in ps}
    for p in ps:
        if p.missing:
            log("%s: %s" % (p.name, p.missing))

    def save(figs=(), ext=()):
        """Writes results.json and the document as they stand: a run that
        is stopped early still leaves what it measured."""
        res["noise"] = books.since()
        res["targets"] = judge(res)
        with open(os.path.join(outdir, "results.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        kept = kept_sections(a.out)
        with open(a.out, "w") as f:
            f.write(markdown(res, figs, ext, kept))

    if "accuracy" in parts:
        res["accuracy"] = accuracy(cfg, runner, ps, a.work)
        save()
    if "overhead" in parts:
        res["overhead"] = overhead(cfg, runner, ps, a.work)
        res["sigfloor"] = sigfloor(cfg, runner, a.work)
        res["floor_rounds"] = floor_rounds(cfg, runner, ps, a.work)
        save()
    if "samples" in parts:
        res["sample_rounds"] = sample_rounds(cfg, runner, ps, a.work)
        save()
    if "scale" in parts:
        res["scale"] = scale(cfg, runner, ps, a.work)
        save()
    if "bigreport" in parts:
        res["bigreport"] = bigreport(cfg, runner, a.work)
        save()
    if "process" in parts:
        res["process"] = per_process(cfg, runner, ps, a.work)
        save()
    if "tree" in parts:
        res["tree"] = trees(cfg, runner, ps, a.work)
        save()
    if "build" in parts:
        res["build"] = build(cfg, runner, ps, a.work)
        save()
    if "attach" in parts:
        res["attach"] = attach(cfg, ps, a.work)
        save()
    if "lost" in parts:
        res["lost"] = lost(cfg, runner, ps, a.work)
        save()
    if "names" in parts:
        res["names"] = names(cfg, a.work)
        save()
    if "kernel" in parts:
        res["kernel"] = kernel_time(cfg, a.work)
        save()
    if "every" in parts:
        res["every"] = every(cfg, a.work)
        save()
    if "memory" in parts:
        res["memory"] = memory(cfg, a.work)
        save()
    ext = []
    if mode != "smoke" and not a.profilers and set(parts) == set(PARTS):
        for name in ("unwind", "top"):
            md = external(name, mode != "full", a.work)
            if md is not None:
                ext.append((name, md))
        for name, arch, title, intro in VMS:
            if mode == "quick" and not a.vm:
                continue
            md = external(name, mode != "full", a.work, arch, title, intro)
            if md is not None:
                ext.append((name, md))
    res["external"] = ext
    figs = plots(res, outdir, a.work)
    save(figs, ext)
    log("wrote %s (%s) in %.0f s" % (a.out, ", ".join(["results.json"] + figs), time.monotonic() - t0))
    for t, meas, v in res["targets"]:
        log("target: %s: %s -- %s" % (t, meas, v))


if __name__ == "__main__":
    main()
