#!/bin/sh
# t_record_preload.sh -- `cpuprof record --preload -- CMD` over a tree of
# processes: every sample of every process reaches the one profile, under
# its own pid.  Inside each process the library samples into its own slot
# of record's shared memory, which record drains (cli/record/collect.c);
# t_record.sh and t_endings.sh take record's outside path, so this is the
# test of that collection for a tree.  The tree: a shell that starts a
# work_hot that forks a worker, one whose child execs work_hot again, and
# one with two threads, and waits for them (under qemu-user, one work_hot
# that forks: an emulated exec needs binfmt_misc).  Each work_hot process
# times its calls of hot_top and warm_top with the thread CPU clock and
# prints its pid with their CPU ("work_hot worked PID NS"); the profile's
# CPU in those calls under each pid (`cpuprof report --group-by process`)
# must be within 15% of it, and no other pid may hold any.
#
# TEST_ENGINES: perf timer
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot
TOOL=$ROOT/$B/tests/tool_engine

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$WORK" ] && [ -x "$TOOL" ] || fail "build first (make tests)"
engine=${CPUPROF_TEST_ENGINE:-perf}
why=$($EMU "$TOOL" "$engine") || skip "$why"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record_preload.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
cp "$WORK" ./work
if [ -n "$EMU" ]; then
	procs=2
	set -- $EMU ./work 1 300 0 fork
else
	procs=5
	set -- sh -c './work 1 300 0 fork & ./work 1 300 0 fork-exec & ./work 2 300 & wait'
fi
WORK_HOT_CPU=1 $EMU "$CP" record --preload --engine "$engine" -o p.pb.gz -- "$@" >out 2>err ||
	{ cat err; fail "record exited $?"; }
grep -q "cpuprof: wrote p.pb.gz: [0-9]* samples, engine=$engine" err || { cat err; fail "no summary line"; }
grep '^work_hot worked ' out | awk '{ print $3, $4 }' | LC_ALL=C sort -k1,1 >truth
[ "$(wc -l <truth)" -eq $procs ] || { cat out; fail "expected $procs work_hot processes to say what they worked"; }

# The profile's CPU in hot_top and warm_top, by pid.
$EMU "$CP" report --format folded --group-by process p.pb.gz >folded || fail "cpuprof report failed"
awk '/;(hot|warm)_top(;| )/ {
	if (match($0, /\(pid [0-9]+\)/)) { p = substr($0, RSTART + 5, RLENGTH - 6); ns[p] += $NF }
} END { for (p in ns) print p, ns[p] }' folded | LC_ALL=C sort -k1,1 >profiled
echo "pid, its own clocks' ns, the profile's:"
LC_ALL=C join -a 1 -a 2 -e 0 -o 0,1.2,2.2 truth profiled | tee both
[ "$(wc -l <both)" -eq $procs ] || fail "the profile has work under pids that did none (above)"
awk '{ if ($3 < $2 * 0.85 || $3 > $2 * 1.15) { print "pid " $1 ": the profile holds " $3 " ns of its " $2; bad = 1 } }
	END { exit bad }' both || fail "a process's work is not in the profile whole"
echo "ok: $procs processes, each with its work, under --preload --engine $engine"
