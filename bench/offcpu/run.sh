#!/bin/sh
# run.sh -- what off-CPU time costs (issue 23; not a test): a program that
# switches about 10,000 times a second (tests/work/work_offcpu pingpong:
# two threads pass a byte back and forth over pipes, each working US
# microseconds before it answers), the same fixed work run bare, under
# `cpuprof record` with and without --off-cpu, and preloaded with and
# without CPUPROF_OFF_CPU=1, interleaved run after run so that the load of
# a shared machine falls on every configuration alike.  Prints a markdown
# page on stdout: per workload and configuration the medians of the
# program's wall and CPU time (its own clocks around the work) and of its
# system time, the switches a second it made (getrusage), record's own
# CPU, and the ratios that matter.
# Usage: sh bench/offcpu/run.sh [RUNS] > docs/benchmarks-offcpu.md
# Environment: WORK, the microseconds of work each side does a round, one
# workload each (default "100 80 25": one CPU busy at about 9,000 switches
# a second where nothing else runs, 10,000 or more, and a quarter of the
# first's work a switch).
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
B=${B:-build}
RUNS=${1:-7}
WORK=${WORK:-100 80 25}
make -s -j2 all tests >&2
W=$ROOT/$B/tests/work_offcpu
CP=$ROOT/$B/cpuprof
LIB=$ROOT/$B/libcpuprof.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_offcpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
CONFIGS="bare record record-offcpu preload preload-offcpu"

# median US CONFIG KEY
median() { for f in "$tmp/$1.$2".[0-9]*; do case $f in *.time) ;; *) field "$3" <"$f" ;; esac; done | sort -n |
	awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
verdict() { awk -v w="$1" -v c="$2" 'BEGIN { print ((w <= 1.05 && c <= 1.05) ? "**met**" : "**not met**") }'; }

load0=$(load)
t0=$(date +%s)
for run in $(seq "$RUNS"); do
	for us in $WORK; do
		rounds=$((1000000 / us))
		for c in $CONFIGS; do
			out=$tmp/$us.$c.$run
			case $c in
			bare) "$W" pingpong $rounds "$us" >"$out" ;;
			record) /usr/bin/time -f "tree %U %S" -o "$out.time" "$CP" record -o "$tmp/p.pb.gz" -- \
				"$W" pingpong $rounds "$us" >"$out" 2>/dev/null ;;
			record-offcpu) /usr/bin/time -f "tree %U %S" -o "$out.time" "$CP" record --off-cpu -o "$tmp/p.pb.gz" -- \
				"$W" pingpong $rounds "$us" >"$out" 2>/dev/null ;;
			preload) LD_PRELOAD=$LIB CPUPROF=$tmp/p.pb.gz "$W" pingpong $rounds "$us" >"$out" ;;
			preload-offcpu) LD_PRELOAD=$LIB CPUPROF=$tmp/p.pb.gz CPUPROF_OFF_CPU=1 "$W" pingpong $rounds "$us" >"$out" ;;
			esac
			if [ -e "$out.time" ]; then
				# record's own CPU: its tree's (record and its
				# reaped child) less the program's.
				awk -v p="$(field cpu_s <"$out")" '/^tree/ { printf "record_cpu_s %.3f\n", $2 + $3 - p }' \
					"$out.time" >>"$out"
			fi
			if [ "$c" = record-offcpu ] && [ "$run" -eq 1 ]; then
				go tool pprof -comments "$tmp/p.pb.gz" 2>/dev/null >"$tmp/comments.$us" || true
			fi
		done
	done
done
secs=$(($(date +%s) - t0))
load1=$(load)

cat <<HEAD
# Off-CPU time: what it costs

Written by \`sh bench/offcpu/run.sh $RUNS > docs/benchmarks-offcpu.md\` on $(date -u '+%Y-%m-%d %H:%M UTC'):
$(nproc) CPUs ($(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -1)), Linux $(uname -r),
perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid), run as uid $(id -u); load average $load0 at the start,
$load1 at the end ($secs s; other people's work shares this machine).  How off-CPU time is
measured: [off-cpu.md](off-cpu.md).

The program: \`work_offcpu pingpong ROUNDS US\`: two threads pass a byte back and forth over two
pipes, each doing US µs of work (by its thread CPU clock) before it answers, so that every round
trip is two switch-outs and, with nothing else running, one CPU is busy: with US = 100 the
program switches about 9,000 times a second (the switches themselves take the rest of the
CPU), with US = 80 about 10,700, the issue's 10,000 or more.  The work is fixed (ROUNDS = 1,000,000 / US), so a
slower run is the profiler's cost.  $RUNS runs of each configuration, interleaved (one of each,
then again); medians.  Wall and CPU are the program's own clocks around the work
(CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID: what the kernel spends taking a sample at each switch
is in its system time); record's CPU is its own (its tree's rusage less the program's).  Each
switch-out's sample copies $(sed -n 's/^#define CP_SWITCH_STACK_COPY //p' src/perf/switches.h) bytes of the stack (\`CP_SWITCH_STACK_COPY\`, src/perf/switches.h).
Judged in pairs, with intervals: \`sh bench/offcpu/paired.sh\`.
HEAD
for us in $WORK; do
	cat <<TAB

## $us µs of work a side a round

| configuration | switches/s | wall (s) | CPU (s) | system (s) | record's CPU (s) |
|---|---:|---:|---:|---:|---:|
TAB
	for c in $CONFIGS; do
		rc=$(median "$us" "$c" record_cpu_s)
		printf '| %s | %.0f | %s | %s | %s | %s |\n' "$c" "$(median "$us" "$c" switches_per_s)" \
			"$(median "$us" "$c" wall_s)" "$(median "$us" "$c" cpu_s)" "$(median "$us" "$c" sys_s)" "${rc:-–}"
	done
	m() { median "$us" "$1" "$2"; }
	w_r=$(ratio "$(m record-offcpu wall_s)" "$(m record wall_s)")
	c_r=$(ratio "$(m record-offcpu cpu_s)" "$(m record cpu_s)")
	w_b=$(ratio "$(m record-offcpu wall_s)" "$(m bare wall_s)")
	c_b=$(ratio "$(m record-offcpu cpu_s)" "$(m bare cpu_s)")
	w_p=$(ratio "$(m preload-offcpu wall_s)" "$(m preload wall_s)")
	c_p=$(ratio "$(m preload-offcpu cpu_s)" "$(m preload cpu_s)")
	w_0=$(ratio "$(m record wall_s)" "$(m bare wall_s)")
	c_0=$(ratio "$(m record cpu_s)" "$(m bare cpu_s)")
	# record's own CPU counted in, with the program's
	c_t=$(ratio "$(awk -v a="$(m record-offcpu cpu_s)" -v b="$(m record-offcpu record_cpu_s)" 'BEGIN { print a + b }')" \
		"$(awk -v a="$(m record cpu_s)" -v b="$(m record record_cpu_s)" 'BEGIN { print a + b }')")
	per=$(awk -v a="$(m record-offcpu sys_s)" -v b="$(m record sys_s)" -v s="$(m record-offcpu switches_per_s)" \
		-v w="$(m record-offcpu wall_s)" 'BEGIN { printf "%.1f", (s * w > 0 ? (a - b) / (s * w) * 1e6 : 0) }')
	cat <<TAB

| ratio of medians | wall | CPU | target: at most 5% slower |
|---|---:|---:|---|
| \`record --off-cpu\` / \`record\` (what --off-cpu adds) | $w_r | $c_r | $(verdict "$w_r" "$c_r") |
| the same, counting record's own CPU with the program's | – | $c_t | |
| \`record --off-cpu\` / bare | $w_b | $c_b | |
| \`record\` / bare (CPU profiling alone, for scale) | $w_0 | $c_0 | |
| preloaded: \`CPUPROF_OFF_CPU=1\` / without (the keeper thread that walks the samples is the program's) | $w_p | $c_p | $(verdict "$w_p" "$c_p") |

The kernel's part, in the program's system time: $per µs more a switch with --off-cpu.  What the
first run of \`record --off-cpu\` said of itself:

\`\`\`
$(grep -E "^ *(off_cpu|waiting_to_run_ns|off_cpu_switches|off_cpu_accounted|off_cpu_lost|lost|warning)=" "$tmp/comments.$us" | sed 's/^ *//')
\`\`\`
TAB
done
