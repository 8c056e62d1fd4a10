#!/bin/sh
# t_bench_smoke.sh -- the benchmark cannot rot: `bench/run.py --smoke` runs
# the smallest cell of each part (accuracy, overhead, scale) for every
# profiler into a temporary directory, and must finish and write its
# document with every table filled.  Timings are not asserted: that is the
# benchmark's job, on a quiet machine.
BB=${BB:-build-bench}
PY=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -z "${ARCH:-}" ] || [ "$ARCH" = "$(uname -m)" ] || skip "the benchmark runs on the host only (ARCH=$ARCH)"
[ -x $PY ] || skip "python3 is not installed"
for f in spawn accuracy overhead scale tick; do
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

for h in "## Machine" "## Targets (cpuprof)" "## Accuracy" "## Overhead" "## Scale" "## Method"; do
	grep -qxF "$h" "$doc" || fail "section '$h' is missing"
done
grep -q '^| CONFIG_HZ | ' "$doc" || fail "machine table has no CONFIG_HZ row"
grep -q '^| measured tick | [0-9]' "$doc" || fail "no measured tick"

# Every cpuprof engine has a numeric accuracy row and overhead row.
for e in perf timer itimer auto; do
	grep -Eq "^\| cpuprof $e \| 1 \| 1000 \| [0-9]+\.[0-9]{3} \| [0-9]+ \|" "$doc" ||
		fail "accuracy row for cpuprof $e missing or not numeric"
	grep -Eq "^\| cpuprof $e \| 1 \| 1000 \| [0-9]+ \| [0-9.]+ \[" "$doc" ||
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
	grep -q "^| $p | 1 | 1000 | " "$doc" || fail "no accuracy row for $p"
	grep -Eq "^\| $p \| 1 \| 1000 \| [0-9]+ \| [0-9.]+ \[" "$doc" || fail "no overhead row for $p"
done

# The document can be rewritten from its results alone.
rm -f "$doc"
$PY bench/run.py --render --out "$doc" --work "$tmp/work" 2>"$tmp/log" || { cat "$tmp/log"; fail "--render failed"; }
grep -qxF "## Overhead" "$doc" || fail "--render wrote no overhead section"

# The verdict table judges every target.
n=$(grep -Ec '\*\*(met|not met|not measured)\*\* \|$' "$doc")
[ "$n" -ge 7 ] || fail "expected a verdict for each of 7 targets, found $n"
echo "benchmark smoke run passed"
