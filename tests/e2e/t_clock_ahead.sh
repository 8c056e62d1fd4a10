#!/bin/sh
# t_clock_ahead.sh -- `cpuprof record -- CMD` from outside holds the
# tree's samples to the CPU the kernel charged to it.  The task clock that
# weighs them runs on while a virtual machine's host has taken its CPU
# (steal time), and the kernel's charge does not: on a 2-CPU VM whose host
# took 4-35% of its time (/proc/stat's steal, 10 s windows), a 500 ms
# process's profile held up to 22% more CPU than the process used.  Here
# every sample weighs half as much again as
# its count (CPUPROF_TEST_CLOCK_AHEAD_PCT=50, a test hook of the
# weigher record and the library's perf engines share, src/perf/events.c,
# there only in the test build: $B/hooks/cpuprof and the
# $B/hooks/libcpuprof.so beside it, src/base/testhooks.h), and
# the profile must still hold the process's CPU and say what it took off;
# also with the library's perf engine inside the process (--preload),
# which holds its samples to the threads' CPU clocks.  (A profile the
# library writes itself: tests/unit/unit_clock_ahead.c.)
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/hooks/cpuprof
W=$ROOT/$B/tests/work_robust

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -f "$ROOT/$B/hooks/libcpuprof.so" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: record profiles inside each process there"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_clock_ahead.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }

# record WHAT [RECORD OPTIONS]: the check, with record so started.
record() {
	what=$1
	shift
	rm -f p.pb.gz
	CPUPROF_TEST_CLOCK_AHEAD_PCT=50 "$CP" record -o p.pb.gz "$@" -- "$W" end exit >out 2>err ||
		{ cat err; fail "$what: record failed"; }
	cov=$(comment p.pb.gz coverage)
	ahead=$(comment p.pb.gz clock_ahead_ns | sed 's/ .*//')
	cpu=$(comment p.pb.gz process_cpu_ns)
	echo "$what: samples weighing 1.5 times their counts: coverage $cov, $ahead ns taken off," \
		"the process used $cpu ns"
	[ -n "$ahead" ] || { go tool pprof -comments p.pb.gz; fail "$what: no clock_ahead_ns"; }
	awk "BEGIN { exit !($cov >= 0.9 && $cov <= 1.05) }" || { go tool pprof -comments p.pb.gz; fail "$what: coverage $cov"; }
	# Half again of what the samples hold (most of the CPU) was taken off.
	awk "BEGIN { exit !($ahead > $cpu * 0.25) }" || fail "$what: $ahead ns taken off of $cpu"
	# The process's own line holds the same.
	comment p.pb.gz process | grep -Eq 'coverage=(0\.99[0-9]|1\.0[0-4])' ||
		{ comment p.pb.gz process; fail "$what: the process's coverage"; }
}
# From outside: held to the kernel's charge for the tree.
record "outside"
# Inside (the library's perf engine, its samples sent to record): held to
# the threads' CPU clocks.
record "preloaded" --preload --engine perf
echo "ok"
