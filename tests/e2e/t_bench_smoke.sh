#!/bin/sh
# t_bench_smoke.sh -- the benchmark cannot rot: `bench/run.py --smoke` runs
# the smallest cell of each part (accuracy, overhead, scale; one process,
# a tree of ten, a build of a generated project, an attach, a run beside a
# busy process, the names of the C++ workload) for every
# profiler into a temporary directory, and must finish and write its
# document with every table filled, and numbers that are plausible: every
# cpuprof row of the accuracy table covers the CPU the workload measured
# within 3%: the profile's CPU (each sample weighs its thread's CPU clock
# since that thread's last one, and the [unsampled: ...] frames hold the
# CPU before the profile started and after each thread's last sample)
# against the process's CPU clock, read by the workload at the end of its
# work.  Both count the same CPU; what keeps them apart is the CPU between
# that reading and the profile's end (the exit path: well under 1% of the
# 600 ms; measured 0.9995-1.0034 here, beside a busy process).  3% leaves
# room for a loaded machine and fails a profile blind to CPU it cannot
# see: this test failed at 0.965 when the CPU before a preloaded
# profile's start was not counted.  Its share
# error is within four noise floors plus a point, the perf engine (and
# auto, which takes it) ran where the machine allows it and took at least
# 85% of the samples asked for; every cpuprof overhead row took samples
# and its work phase cost between 0.9 and 2 times the unprofiled one; every
# cpuprof scale row wrote at least half the distinct stacks there were;
# the parts of issues 21 and 22 ran without failing, what a profiler adds
# to one process or a tree is more than nothing (and under 0.5 s for
# /bin/true), the attached profile's coverage of what its own events
# counted is within 5% (a ratio of two counts of the same window, which
# load does not move), every run beside the busy process took samples,
# the names of the C++ workload under record were compared, and record
# --every wrote windows with samples, none lost, in far less than 64 MiB,
# and the memory part read every process's peak (bench/hwm): the program's
# bare and preloaded (what the library adds within the 8 MiB issue 32
# asks), record's (within 16 MiB: its peak grows when it falls behind on
# a loaded machine).
# Timings are not asserted: that is the benchmark's job, on a quiet
# machine.
BB=${BB:-build-bench}
PY=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -z "${ARCH:-}" ] || [ "$ARCH" = "$(uname -m)" ] || skip "the benchmark runs on the host only (ARCH=$ARCH)"
[ -x $PY ] || skip "python3 is not installed"
for f in spawn hwm accuracy overhead scale tick stacks; do
	[ -x "$BB/bench/$f" ] || fail "build first (make bench-build): $BB/bench/$f is missing"
done
[ -f "$BB/libcpuprof.so" ] || fail "build first (make bench-build): $BB/libcpuprof.so is missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_bench.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
doc=$tmp/benchmarks.md
$PY bench/run.py --smoke --out "$doc" --work "$tmp/work" 2>"$tmp/log" || { cat "$tmp/log"; fail "bench/run.py --smoke failed"; }
[ -s "$doc" ] || fail "no document written"
[ -s "$tmp/bench/results.json" ] || fail "no results.json written"
cat "$doc"
perf_ok=yes
why=$("$B/tests/tool_engine" perf) || perf_ok=
$PY - "$tmp/bench/results.json" "$perf_ok" "$why" <<'EOF' || fail "implausible numbers in the smoke run"
import json, math, sys
res = json.load(open(sys.argv[1]))
perf_ok, why = sys.argv[2] == "yes", sys.argv[3]
bad = []
if perf_ok and res["missing"].get("cpuprof perf"):
    bad.append("cpuprof perf could not run, and this machine allows perf: %s" % res["missing"]["cpuprof perf"])
if not perf_ok:
    print("perf not checked: %s" % why)
rows = [r for r in res["accuracy"] if r["profiler"].startswith("cpuprof ")]
if not rows:
    bad.append("no cpuprof row in the accuracy table")
for r in rows:
    name = "%s %s %d thr %d Hz" % (r["profiler"], r["pattern"], r["threads"], r["hz"])
    if "error" in r:
        bad.append("%s: %s" % (name, r["error"]))
        continue
    floor = 100 * math.sqrt(0.24 / max(r["samples"], 1))
    print("%s: coverage %.4f, share error %.2f pp (floor %.2f), %d samples, engine %s" % (
        name, r["coverage"], r["share_err"], floor, r["samples"], r.get("engine")))
    if not 0.97 <= r["coverage"] <= 1.03:
        bad.append("%s: coverage %.4f" % (name, r["coverage"]))
    if r["share_err"] is None or r["share_err"] > 4 * floor + 1:
        bad.append("%s: share error %s pp, floor %.2f" % (name, r["share_err"], floor))
    if r["profiler"] in ("cpuprof perf", "cpuprof auto") and perf_ok:
        if r.get("engine") != "perf":
            bad.append("%s: engine %s" % (name, r.get("engine")))
        asked = r["cpu_ns"] / 1e9 * r["hz"]
        if r["samples"] < 0.85 * asked:
            bad.append("%s: %d samples where %d Hz asks for %.0f" % (name, r["samples"], r["hz"], asked))
for r in res["overhead"]:
    if not r["profiler"].startswith("cpuprof "):
        continue
    name = "overhead %s %d thr %d Hz" % (r["profiler"], r["threads"], r["hz"])
    if "error" in r:
        bad.append("%s: %s" % (name, r["error"]))
    elif not r.get("samples") or not 0.9 <= r["work_cpu_ratio"][0] <= 2:
        bad.append("%s: %s samples, work CPU ratio %s" % (name, r.get("samples"), r["work_cpu_ratio"]))
for r in res["scale"]:
    if not r["profiler"].startswith("cpuprof "):
        continue
    if "error" in r or not r.get("stacks") or r["stacks"] < r["paths"] / 2:
        bad.append("scale %s: %s distinct stacks of %d paths %s" % (r["profiler"], r.get("stacks"), r["paths"],
                                                                   r.get("error", "")))
# The parts of issues 21 and 22, each run small.
def fine(part, name, r):
    if "error" in r:
        bad.append("%s %s: %s" % (part, name, r["error"]))
        return False
    return True
proc = {r["profiler"]: r for r in res["process"]}
for n in ("(none)", "cpuprof auto"):
    if n not in proc:
        bad.append("one process: no row for %s" % n)
for n, r in proc.items():
    if fine("one process", n, r) and n != "(none)" and not 0 < r["over_bare_ms"][0] < 500:
        bad.append("one process %s: %.2f ms over bare" % (n, r["over_bare_ms"][0]))
# CPU per sample at 100 Hz: each cpuprof way ran and its profile has
# samples (a run of the smoke mode is about 80 ms: 8 samples).
spr = {r["profiler"]: r for r in res["sample_rounds"]}
for n in ("cpuprof auto", "cpuprof record"):
    if n not in spr:
        bad.append("samples at 100 Hz: no row for %s" % n)
    elif fine("samples at 100 Hz", n, spr[n]) and not spr[n]["samples"] > 0:
        bad.append("samples at 100 Hz %s: %s samples" % (n, spr[n]["samples"]))
tree = {r["profiler"]: r for r in res["tree"]}
if "cpuprof record" not in tree:
    bad.append("trees: no row for cpuprof record")
for n, r in tree.items():
    if fine("trees", n, r) and n != "(none)" and not r["cpu_over_bare_s"][0] > 0:
        bad.append("trees %s: %s s of CPU over bare" % (n, r["cpu_over_bare_s"][0]))
build = {r["profiler"]: r for r in res["build"]}
for n, r in build.items():
    fine("build", n, r)
rec = build.get("cpuprof record", {})
if rec.get("coverage") is not None and not 0.5 <= float(rec["coverage"]) <= 1.05:
    bad.append("build: cpuprof record's coverage %s" % rec["coverage"])
if not res["attach"]:
    bad.append("attach: no row")
for r in res["attach"]:
    name = "%s %d thr" % (r["pattern"], r["threads"])
    if perf_ok and fine("attach", name, r):
        # coverage= is the profile against the events' own count of the
        # same window: load cannot move it.
        print("attach %s: coverage %.3f, / scheduler %s, / work %.3f, largest |z| %.2f, %d samples" % (
            name, r["coverage"], r["sched_ratio"], r["truth_ratio"], r["max_z"], r["samples"]))
        if not 0.95 <= r["coverage"] <= 1.05 or r["samples"] < 0.5 * r["cpu_ms"]:
            bad.append("attach %s: coverage %.3f, %d samples" % (name, r["coverage"], r["samples"]))
if not res["lost"]:
    bad.append("lost: no row")
for r in res["lost"]:
    if fine("lost", "%s %d thr" % (r["profiler"], r["threads"]), r) and not r["samples"] > 0:
        bad.append("lost %s: no samples" % r["profiler"])
# record --every (issue 31): windows written, each with samples but the
# last (which may be cut short), none lost, record's memory far from 64 MiB.
if not res["every"]:
    bad.append("every: no row")
for r in res["every"]:
    if perf_ok and fine("every", "%d thr %d s" % (r["threads"], r["seconds"]), r):
        w = r["windows"]
        print("every: %d windows, %d samples, %d lost, record's RSS at most %s KiB" % (
            len(w), sum(x["samples"] for x in w), sum(x["lost"] for x in w), max(x["rss_kib"] or 0 for x in w)))
        if len(w) < 2 or any(x["samples"] == 0 for x in w[:-1]) or sum(x["lost"] for x in w) or \
                max(x["rss_kib"] or 0 for x in w) > 64 * 1024:
            bad.append("every: %s" % w)
for r in res["memory"].get("rows", []):
    print("memory: %(threads)d thr %(hz)d Hz: program %(bare_kib)s KiB bare, %(preload_kib)s preloaded, "
          "record %(record_kib)s, lines children %(preload_child_kib)s and %(record_child_kib)s" % r)
    if r.get("error") or not r["bare_kib"] or not r["preload_kib"] or not r["record_kib"] or \
            not r["record_program_kib"] or r["preload_added_kib"] > 8192 or r["record_kib"] > 8192:
        bad.append("memory: %s" % r)
if not res["memory"].get("rows"):
    bad.append("memory: no row")
# Big profiles (issue 32): report and diff ran over the generated profiles.
big = {r["command"]: r for r in res["bigreport"]}
for n in ("report --format top", "report --format html", "diff"):
    if n not in big:
        bad.append("bigreport: no row for %s" % n)
    else:
        fine("bigreport", n, big[n])
skipped = [r for r in res["names"] if r.get("status") == 77]
if skipped:
    print("names not measured: %s" % skipped[0]["error"])
elif not any(r.get("path") == "record" and r.get("workload") == "names_cxx" and 0 <= r["ratio"] <= 1
             for r in res["names"]):
    bad.append("names: no agreement measured for record names_cxx: %s" % res["names"])
for b in bad:
    print("IMPLAUSIBLE: " + b)
sys.exit(1 if bad else 0)
EOF

for h in "## Machine" "## Targets (cpuprof)" "## Accuracy" "## Overhead" "## Scale" "## One process" \
	"## Trees of processes" "## A real build" "## Attaching" "## Lost samples beside a busy process" "## Names" \
	"## Long runs in windows (\`record --every\`)" "## Memory added, per cell" "## Big profiles: report and diff" "## Method"; do
	grep -qxF "$h" "$doc" || fail "section '$h' is missing"
done
grep -q '^| CONFIG_HZ | ' "$doc" || fail "machine table has no CONFIG_HZ row"
grep -q '^| measured tick | [0-9]' "$doc" || fail "no measured tick"

# Every cpuprof engine has a numeric accuracy row and overhead row.
for e in perf timer itimer auto record; do
	grep -Eq "^\| cpuprof $e \| [0-9]+ \| 1000 \| [0-9]+\.[0-9]{3} \| [0-9]+ \|" "$doc" ||
		fail "accuracy row for cpuprof $e missing or not numeric"
	grep -Eq "^\| cpuprof $e \| 1 \| 1000 \| [0-9]+ \| [0-9]\.[0-9]{3} \| [0-9]\.[0-9]{3} \| [0-9.]+ \[" "$doc" ||
		fail "overhead row for cpuprof $e missing or not numeric"
done
grep -Eq "^\| cpuprof auto \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9.]+ \|" "$doc" ||
	fail "scale row for cpuprof auto missing or not numeric"

# Each peer either has its rows or is named as not run, with the reason.
for p in gperftools "perf record"; do
	if grep -q "^Not run here:.*$p: " "$doc"; then
		echo "peer $p: not run here"
		continue
	fi
	grep -Eq "^\| $p \| [0-9]+ \| 1000 \| " "$doc" || fail "no accuracy row for $p"
	grep -Eq "^\| $p \| 1 \| 1000 \| [0-9]+ \| [^|]+ \| [^|]+ \| [0-9.]+ \[" "$doc" || fail "no overhead row for $p"
done

# The document can be rewritten from its results alone.
rm -f "$doc"
$PY bench/run.py --render --out "$doc" --work "$tmp/work" 2>"$tmp/log" || { cat "$tmp/log"; fail "--render failed"; }
grep -qxF "## Overhead" "$doc" || fail "--render wrote no overhead section"

# The verdict table judges every target.
n=$(grep -Ec '\*\*(met|not met|not measured)\*\* \|$' "$doc")
[ "$n" -ge 15 ] || fail "expected a verdict for each of 15 targets, found $n"
echo "benchmark smoke run passed"
