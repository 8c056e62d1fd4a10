#!/usr/bin/env python3
"""compare.py -- what an empty program's profile costs, library against
library (not a test): /bin/true run bare and with each LIB preloaded
(CPUPROF set, each profile to a new name in WORK, removed after), N
rounds, each way once a round in a rotating order so that the machine's
load falls on all alike, each run started by bench/spawn (static: the
child's CPU is wait4's rusage).  Prints per way the median [25th-75th
percentile] CPU of the child in ms and, paired with the bare run of its
round, its CPU over bare.

Usage: python3 bench/start/compare.py N LIB... (after `make bench-build`)
"""
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPAWN = os.path.join(ROOT, "build-bench", "bench", "spawn")
WORK = os.path.join(ROOT, "build-bench", "work", "start")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    n, ways = int(sys.argv[1]), ["bare"] + sys.argv[2:]
    os.makedirs(WORK, exist_ok=True)
    cpu = {w: [] for w in ways}
    for i in range(n):
        k = i % len(ways)
        for w in ways[k:] + ways[:k]:
            env = {"PATH": "/usr/bin:/bin"}
            out = os.path.join(WORK, "p%d.pb.gz" % i)
            if w != "bare":
                env.update(LD_PRELOAD=os.path.abspath(w), CPUPROF=out)
            res = os.path.join(WORK, "run.res")
            if subprocess.call([SPAWN, res, "60", "/bin/true"], env=env) != 0:
                sys.exit("compare.py: spawn failed for %s" % w)
            with open(res) as f:
                kv = dict(line.split() for line in f)
            if kv["status"] != "0":
                sys.exit("compare.py: /bin/true exited %s with %s" % (kv["status"], w))
            cpu[w].append(int(kv["cpu_ns"]) / 1e6)
            for f in os.listdir(WORK):
                if f.startswith("p%d." % i):
                    os.unlink(os.path.join(WORK, f))
    for w in ways:
        q = statistics.quantiles(cpu[w], n=4, method="inclusive")
        d = sorted(a - b for a, b in zip(cpu[w], cpu["bare"]))
        over = "" if w == "bare" else ", over bare %.3f ms [%.3f-%.3f]" % (
            statistics.median(d), d[len(d) // 4], d[3 * len(d) // 4])
        print("%s: CPU %.3f ms [%.3f-%.3f]%s" % (w, q[1], q[0], q[2], over))


if __name__ == "__main__":
    main()
