#!/usr/bin/env python3
"""bigprof.py -- writes a big profile, the same every time, for the
benchmark of `cpuprof report` and `cpuprof diff` at scale (bench/run.py,
part "bigreport"; docs/benchmarks.md, "Big profiles").

Usage: bigprof.py OUT [SAMPLES [STACKS [SEED]]]   (default 1000000 200000 1)

A profile as cpuprof writes one (gzipped profile.proto): sample types
samples/count and cpu/nanoseconds at 1 kHz, a "pid", "tid" and "thread"
label per Sample, each Sample's times (field 1001, profile/times.h) in
units of 1 ms.  Its stacks are random walks of 8 to 40 frames down a
random call graph of 5,000 functions, each with 4 call sites (20,000
Locations, one Line each, with a source file and line), from "main" or one
of 7 thread roots; STACKS distinct stacks share SAMPLES samples (each at
least one), on 8 threads.  Its own protobuf encoder, as
tests/tools/tool_mkprof.c has, so that the profile does not come from the
writer or the reader being measured.  A different SEED makes a profile of
the same shape with other stacks and weights (the other side of a diff)."""
import gzip
import random
import sys

FUNCS, SITES, THREADS, UNIT_NS, PERIOD_NS = 5000, 4, 8, 1000000, 1000000


def varint(v, out):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def key(field, wire, out):
    varint(field << 3 | wire, out)


def field_varint(field, v, out):
    if v:
        key(field, 0, out)
        varint(v, out)


def field_bytes(field, b, out):
    key(field, 2, out)
    varint(len(b), out)
    out += b


def packed(field, vals, out):
    b = bytearray()
    for v in vals:
        varint(v, b)
    field_bytes(field, b, out)


class Strings:
    def __init__(self):
        self.list, self.index = [""], {"": 0}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.list)
            self.list.append(s)
        return self.index[s]


def stacks_of(rng, nstacks):
    """nstacks distinct (thread, tuple of location ids leaf first)."""
    callees = [[rng.randrange(1, FUNCS) for _ in range(8)] for _ in range(FUNCS)]
    seen, out = set(), []
    while len(out) < nstacks:
        t = rng.randrange(THREADS)
        f, path = t, []  # function t roots thread t (0: main)
        for _ in range(rng.randint(8, 40)):
            site = rng.randrange(SITES)
            path.append(1 + f * SITES + site)
            f = callees[f][rng.randrange(8)]
        path.append(1 + f * SITES + rng.randrange(SITES))  # the leaf
        s = (t, tuple(reversed(path)))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    a = sys.argv[1:]
    if not 1 <= len(a) <= 4:
        sys.exit(__doc__.split("\n\n")[1])
    out = a[0]
    nsamples = int(a[1]) if len(a) > 1 else 1000000
    nstacks = int(a[2]) if len(a) > 2 else 200000
    seed = int(a[3]) if len(a) > 3 else 1
    if nsamples < nstacks:
        sys.exit("bigprof.py: fewer samples than stacks")
    rng = random.Random(seed)
    st = Strings()
    p = bytearray()
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        vt = bytearray()
        field_varint(1, st(t), vt)
        field_varint(2, st(u), vt)
        field_bytes(1, vt, p)
    stacks = stacks_of(rng, nstacks)
    # Each stack one sample, the rest spread with a skew (a few hot).
    counts = [1] * nstacks
    for _ in range(nsamples - nstacks):
        counts[min(int(rng.paretovariate(1.2)) - 1, nstacks - 1) if rng.random() < 0.3
               else rng.randrange(nstacks)] += 1
    duration_units = nsamples // THREADS + 1
    k_pid, k_tid, k_thread = st("pid"), st("tid"), st("thread")
    names = [st("main")] + [st("worker-%d" % i) for i in range(1, THREADS)]
    for (t, locs), n in zip(stacks, counts):
        s = bytearray()
        packed(1, locs, s)
        packed(2, (n, n * PERIOD_NS), s)
        for k, v, num in ((k_pid, 0, 4242), (k_tid, 0, 4242 + t), (k_thread, names[t], 0)):
            lb = bytearray()
            field_varint(1, k, lb)
            field_varint(2, v, lb)
            field_varint(3, num, lb)
            field_bytes(3, lb, s)
        times, prev = bytearray(), 0
        for at in sorted(rng.randrange(duration_units) for _ in range(n)):
            varint((at - prev) << 1, times)
            prev = at
        field_bytes(1001, times, s)
        field_bytes(2, s, p)
    m = bytearray()
    field_varint(1, 1, m)
    field_varint(2, 0x400000, m)
    field_varint(3, 0x400000 + FUNCS * 0x100, m)
    field_varint(5, st("/usr/bin/big"), m)
    for k in (7, 8, 9):
        field_varint(k, 1, m)
    field_bytes(3, m, p)
    for f in range(FUNCS):
        for site in range(SITES):
            loc = bytearray()
            field_varint(1, 1 + f * SITES + site, loc)
            field_varint(2, 1, loc)
            field_varint(3, 0x400000 + f * 0x100 + site * 0x10, loc)
            ln = bytearray()
            field_varint(1, 1 + f, ln)
            field_varint(2, 10 + f % 500 + site, ln)
            field_bytes(4, ln, loc)
            field_bytes(4, loc, p)
    for f in range(FUNCS):
        fn = bytearray()
        field_varint(1, 1 + f, fn)
        name = st("main" if f == 0 else "thread_root_%d" % f if f < THREADS else "ns%d::function_%d" % (f % 37, f))
        field_varint(2, name, fn)
        field_varint(3, name, fn)
        field_varint(4, st("src/module%d.cc" % (f % 97)), fn)
        field_varint(5, 10 + f % 500, fn)
        field_bytes(5, fn, p)
    field_varint(9, 1700000000 * 10**9, p)
    field_varint(10, duration_units * UNIT_NS, p)
    pt = bytearray()
    field_varint(1, st("cpu"), pt)
    field_varint(2, st("nanoseconds"), pt)
    field_bytes(11, pt, p)
    field_varint(12, PERIOD_NS, p)
    packed(13, [st("engine=perf"), st("hz=1000"), st("samples=%d" % nsamples)], p)
    field_varint(1001, UNIT_NS, p)
    for s in st.list:
        field_bytes(6, s.encode(), p)
    with gzip.open(out, "wb", compresslevel=1) as f:
        f.write(p)


if __name__ == "__main__":
    main()
