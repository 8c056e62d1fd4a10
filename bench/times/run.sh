#!/bin/sh
# run.sh -- what sample times cost in a profile's size (issue 31; not a
# test): each workload is recorded at 1 kHz, 4 threads, and its profile
# compared with the same profile rewritten by `go tool pprof -proto`,
# which drops the lists of times (fields pprof does not know) and so is
# the profile without them.  Prints a markdown table on stdout.
# Workloads: bench/scale (4 threads, PATHS distinct stacks, each thread
# busy for SECONDS of CPU: many stacks, as a large program has), and
# work_hot (4 threads, two stacks: the least a profile can hold).
# Usage: sh bench/times/run.sh [SECONDS]   (default 60: 4 threads of 60 s
# of CPU each, about 2 minutes on 2 CPUs per workload)
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
B=${B:-build}
BB=${BB:-build-bench}
S=${1:-60}
make -s -j2 all tests "$BB/bench/scale" >&2 2>/dev/null || make -s -j2 all tests bench-build >&2
CP=$ROOT/$B/cpuprof
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_times.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# row NAME CMD...: records CMD, prints its row
row() {
	name=$1
	shift
	"$CP" record -F 1000 -o "$tmp/p.pb.gz" -- "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	go tool pprof -proto "$tmp/p.pb.gz" >"$tmp/q.pb.gz" 2>/dev/null
	with=$(stat -c %s "$tmp/p.pb.gz") without=$(stat -c %s "$tmp/q.pb.gz")
	n=$(sed -n 's/.*: \([0-9]*\) samples.*/\1/p' "$tmp/err")
	awk -v name="$name" -v n="$n" -v a="$without" -v b="$with" 'BEGIN {
		printf "| %s | %d | %d B | %d B | %.2fx | %.2f B |\n", name, n, a, b, b / a, (b - a) / n }'
}
echo "| workload (1 kHz, 4 threads) | samples | without times | with times | ratio | per sample |"
echo "|---|---|---|---|---|---|"
# scale: 20,000 paths of 12 ms each per thread round: ~S s of CPU a thread.
paths=20000
us=$((S * 1000000 * 4 / paths))
row "bench/scale, $paths paths, ${S} s of CPU a thread" "$ROOT/$BB/bench/scale" 4 $paths $us
row "work_hot, two stacks, ${S} s of CPU a thread" "$ROOT/$B/tests/work_hot" 4 $((S * 1000))
