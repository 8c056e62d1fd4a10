#!/bin/sh
# loop.sh -- what source lines cost a tree of short processes (issue 32),
# not a test: `cpuprof record -o FILE -- sh -c 'for i in $(seq 100); do
# /bin/true; done'`, the CPU of record and of everything it waited for
# (bench/spawn: wait4's rusage, so the lines child that reads the DWARF
# is in it), for each cpuprof given (a build before a change and one
# after), against `perf record -e cpu-clock -F 1000 -g` of the same loop.
# Each cpuprof runs two ways, with its own cache directory:
#   cold: the lines cache empty at every run (XDG_CACHE_HOME a copy of a
#         directory its first run filled, less lines/: the symbol and
#         unwind table caches stay warm, so that only lines are cold;
#         COLD_DROP="lines inflated" leaves out the inflated debug
#         copies too, as on the first run of a new build ID);
#   warm: one directory kept across the rounds, first filled by WARM
#         runs of the loop, as a machine that has run it before has it.
# In rounds, each way once per round in turn (A-cold A-warm B-cold
# B-warm perf, A B A B ...), so that the load of a machine shared with
# other work falls on all alike.  Prints a markdown table: per way, the
# median and the worst CPU over the rounds, the median and the worst of
# its ratio to perf's run of the same round, and (warm) in how many
# rounds the lines cache changed, that is the DWARF was read.
# Usage: sh bench/lines/loop.sh ROUNDS WARM CPUPROF [CPUPROF...] >> docs/benchmarks.md
set -e
cd "$(dirname "$0")/../.."
B=${B:-build}
[ $# -ge 3 ] || { echo "usage: loop.sh ROUNDS WARM CPUPROF [CPUPROF...]" >&2; exit 2; }
ROUNDS=$1 WARM=$2
shift 2
mkdir -p "$B/bench"
SPAWN=$(pwd -P)/$B/bench/spawn
[ -x "$SPAWN" ] || ${CC:-cc} -O2 -static -o "$SPAWN" bench/spawn.c
command -v perf >/dev/null || { echo "loop.sh: perf is not installed" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_loop.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
LOOP='for i in $(seq 100); do /bin/true; done'

# run WAY CACHEDIR CMD...: one run, its CPU (s) appended to $tmp/WAY.
run() {
	way=$1 dir=$2
	shift 2
	XDG_CACHE_HOME=$dir "$SPAWN" "$tmp/res" 600 "$@" >/dev/null 2>&1 </dev/null
	awk '$1 == "status" && $2 != 0 { exit 1 } $1 == "cpu_ns" { printf "%.4f\n", $2 / 1e9 }' "$tmp/res" >>"$tmp/$way" ||
		{ echo "loop.sh: $way: $* failed" >&2; exit 1; }
	rm -f "$tmp/out.prof" "$tmp/perf.data"
}
# state DIR: a digest of the lines cache under DIR.
state() { cat "$1"/cpuprof/lines/* 2>/dev/null | cksum; }

k=0
for cp in "$@"; do
	k=$((k + 1))
	[ -x "$cp" ] || { echo "loop.sh: $cp is not a program" >&2; exit 2; }
	mkdir -p "$tmp/dir.base$k" "$tmp/dir.warm$k"
	run prep "$tmp/dir.base$k" "$cp" record -o "$tmp/out.prof" -- sh -c "$LOOP"
	for c in ${COLD_DROP:-lines}; do rm -rf "$tmp/dir.base$k/cpuprof/$c"; done
	cp -a "$tmp/dir.base$k/cpuprof" "$tmp/dir.warm$k/"
	for i in $(seq "$WARM"); do
		run prep "$tmp/dir.warm$k" "$cp" record -o "$tmp/out.prof" -- sh -c "$LOOP"
	done
	: >"$tmp/read$k"
done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
	k=0
	for cp in "$@"; do
		k=$((k + 1))
		rm -rf "$tmp/dir.cold"
		cp -a "$tmp/dir.base$k" "$tmp/dir.cold"
		run "cold$k" "$tmp/dir.cold" "$cp" record -o "$tmp/out.prof" -- sh -c "$LOOP"
		before=$(state "$tmp/dir.warm$k")
		run "warm$k" "$tmp/dir.warm$k" "$cp" record -o "$tmp/out.prof" -- sh -c "$LOOP"
		[ "$before" = "$(state "$tmp/dir.warm$k")" ] || echo "$r" >>"$tmp/read$k"
	done
	run perf "$tmp" perf record -q -e cpu-clock -F 1000 -g -o "$tmp/perf.data" -- sh -c "$LOOP"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# stats FILE: "median worst" of its numbers.
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2, v[NR] }'; }
# ratio WAY: each round's CPU over perf's of the same round.
ratio() { paste "$tmp/$1" "$tmp/perf" | awk '{ printf "%.4f\n", $1 / $2 }' >"$tmp/$1.ratio"; stats "$tmp/$1.ratio"; }

echo
echo "\`${COLD_DROP:+COLD_DROP=\"$COLD_DROP\" }sh bench/lines/loop.sh $ROUNDS $WARM $*\` ($(date -u +%Y-%m-%d), load average $load0 before and $load1 after):"
echo "CPU of \`record\` and its children over $ROUNDS interleaved rounds."
echo
echo "| way | CPU median (s) | CPU worst (s) | / perf median | / perf worst | rounds that read DWARF |"
echo "|---|---:|---:|---:|---:|---:|"
k=0
for cp in "$@"; do
	k=$((k + 1))
	set -- $(stats "$tmp/cold$k") $(ratio "cold$k")
	echo "| $cp, lines cache cold | $1 | $2 | $3 | $4 | $ROUNDS |"
	set -- $(stats "$tmp/warm$k") $(ratio "warm$k")
	echo "| $cp, lines cache warm ($WARM runs before) | $1 | $2 | $3 | $4 | $(wc -l <"$tmp/read$k") |"
done
set -- $(stats "$tmp/perf")
echo "| perf record -g | $1 | $2 | – | – | – |"
