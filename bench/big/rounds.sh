#!/bin/sh
# rounds.sh BEFORE AFTER [N] -- issue 32's measurements by hand
# (docs/benchmarks.md, "Big profiles (issue 32, by hand)"): N interleaved
# rounds (default 2), each of the two builds once per round in
# alternating order, BEFORE and AFTER each a build directory (build/ of a
# tree: libcpuprof.so and cpuprof).  Per build and round: bench/scale
# (4 threads, 110,000 paths, 10 kHz) under LD_PRELOAD, its exit's CPU and
# wall and peak RSS; then `report --format top`, `--format html` and
# `diff` over bench/bigprof.py's profiles (seeds 1 and 2), under
# /usr/bin/time.  Needs `make bench-build` (build-bench/bench/scale and
# spawn).  Work files in $TMPDIR.
set -e
[ $# -ge 2 ] || { echo "usage: $0 BEFORE AFTER [N]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); N=${3:-2}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
BB=$ROOT/build-bench/bench
python3 "$ROOT/bench/bigprof.py" "$W/big1.pb.gz" 1000000 200000 1
python3 "$ROOT/bench/bigprof.py" "$W/big2.pb.gz" 1000000 200000 2
load() { cut -d' ' -f1 /proc/loadavg; }
kv() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
scale() { # scale TAG BUILD
	LD_PRELOAD=$2/libcpuprof.so CPUPROF=$W/s.prof CPUPROF_HZ=10000 CPUPROF_ENGINE=auto \
		"$BB/spawn" "$W/r" 600 "$BB/scale" 4 110000 150 > "$W/o" 2> "$W/e"
	python3 -c "import sys; e, w, c, p, r = map(int, sys.argv[2:]); print('%s scale exit_cpu=%.3f exit=%.3f rss=%d' % (sys.argv[1], (c - p) / 1e9, (e - w) / 1e9, r))" \
		"$1" "$(kv end_mono_ns "$W/r")" "$(kv work_end_mono_ns "$W/o")" "$(kv cpu_ns "$W/r")" \
		"$(kv process_cpu_ns "$W/o")" "$(kv maxrss_kb "$W/r")"
	rm -f "$W/s.prof"
}
for r in $(seq "$N"); do
	if [ $((r % 2)) = 1 ]; then order="after before"; else order="before after"; fi
	for v in $order; do
		if [ "$v" = after ]; then L=$AFTER; else L=$BEFORE; fi
		echo "load $(load)"
		scale "$v" "$L"
		for f in top html; do
			/usr/bin/time -f "$v report-$f wall=%e cpu=%U+%S rss=%M" \
				"$L/cpuprof" report --format $f -o "$W/o.$f" "$W/big1.pb.gz"
		done
		/usr/bin/time -f "$v diff wall=%e cpu=%U+%S rss=%M" "$L/cpuprof" diff "$W/big1.pb.gz" "$W/big2.pb.gz" \
			> /dev/null || true # 1: the verdict "changed"
	done
done
