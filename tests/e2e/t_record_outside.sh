#!/bin/sh
# t_record_outside.sh -- `cpuprof record -- CMD` from outside (issue 22):
# record opens the events itself and nothing is preloaded, so what a
# preloaded library cannot reach is profiled too: a statically linked
# program, a program started with an empty environment (env -i), threads
# and processes however they are made.  Where the kernel refuses perf
# events (a seccomp filter stands in for perf_event_paranoid 3 and for a
# container without perf_event_open), record profiles inside each process
# instead and says so, in one line and in the profile.  Skips where this
# machine allows no perf events (tests/tools/tool_engine) and under
# emulation (qemu-user has no perf_event_open).
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_robust
HOT=$ROOT/$B/tests/work_hot
NO_PERF=$ROOT/$B/tests/no_perf

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] && [ -x "$HOT" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: record profiles inside each process there"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record_outside.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
has() { go tool pprof -traces "$1" 2>/dev/null | grep -q "[[:space:]]$2\$"; }
# covers FILE WHAT: the profile holds 90% to 110% of the tree's CPU.
covers() {
	cov=$(comment "$1" coverage)
	awk "BEGIN { exit !($cov >= 0.9 && $cov <= 1.1) }" || { go tool pprof -comments "$1"; fail "$2: coverage $cov"; }
}
# outside FILE WHAT: the profile was recorded from outside.
outside() {
	comment "$1" record | grep -q "^from outside" || { go tool pprof -comments "$1"; fail "$2: not recorded from outside"; }
}

# The command's environment is its own: nothing preloaded, no variable
# of record's.
LD_PRELOAD= "$CP" record -o e.pb.gz -- sh -c 'env >env' 2>err || { cat err; fail "env: status $?"; }
grep -q '^LD_PRELOAD=.' env && fail "record preloaded something: $(grep LD_PRELOAD env)"
grep -q '^CPUPROF_SHM=' env && fail "record put its shared memory in the environment"
outside e.pb.gz env

# A statically linked program: no dynamic loader, nothing to preload into.
if cc -O2 -g -fno-omit-frame-pointer -static -o hot_static "$ROOT/tests/work/work_hot.c" -pthread -lm 2>cc.log; then
	"$CP" record -o s.pb.gz -- ./hot_static 1 400 >out 2>err || { cat err; fail "static: status $?"; }
	outside s.pb.gz static
	has s.pb.gz hot_leaf || { go tool pprof -top s.pb.gz; fail "static: hot_leaf is not in the profile"; }
	covers s.pb.gz static
	top=$(go tool pprof -top s.pb.gz 2>/dev/null | awk '/flat%/ { getline; print $NF; exit }')
	[ "$top" = hot_leaf ] || { go tool pprof -top s.pb.gz; fail "static: $top leads, not hot_leaf"; }
	echo "static: coverage $(comment s.pb.gz coverage), $(comment s.pb.gz samples) samples, hot_leaf leads"
else
	cat cc.log
	echo "static: not tested (no static C library here: libc6-dev has libc.a)"
fi

# A program started with an empty environment, and a tree of them.
"$CP" record -o i.pb.gz -- env -i "$W" spin 2 300 >out 2>err || { cat err; fail "env -i: status $?"; }
grep -q "spin done" out || fail "env -i: output changed"
has i.pb.gz spin_work || { go tool pprof -top i.pb.gz; fail "env -i: spin_work is not in the profile"; }
covers i.pb.gz "env -i"
echo "env -i: coverage $(comment i.pb.gz coverage), $(comment i.pb.gz threads) threads"
"$CP" record -o t.pb.gz -- sh -c "env -i $W tree 3 exec; env -i $W spawn 8" >out 2>err || { cat err; fail "tree: status $?"; }
procs=$(comment t.pb.gz processes)
[ "$procs" -ge 12 ] || { go tool pprof -comments t.pb.gz; fail "tree: $procs process images, expected sh, 3 + 3 execs, spawn and 8"; }
covers t.pb.gz "env -i tree"
echo "env -i tree: $procs process images, coverage $(comment t.pb.gz coverage)"

# Refused: record says so and profiles inside each process.
if "$NO_PERF" -e EACCES true 2>/dev/null; then
	"$NO_PERF" -e EACCES "$CP" record -o r.pb.gz -- "$HOT" 1 300 >out 2>err || { cat err; fail "refused: status $?"; }
	grep -q "not from outside: .*perf_event_paranoid=.*CAP_PERFMON" err ||
		{ cat err; fail "refused: no word of what refused and what would allow it"; }
	comment r.pb.gz record | grep -q "^preloaded into each process: not from outside" ||
		{ go tool pprof -comments r.pb.gz; fail "refused: the profile does not say how it was taken"; }
	[ "$(comment r.pb.gz engine)" = timer ] || fail "refused: engine $(comment r.pb.gz engine), expected timer"
	has r.pb.gz hot_leaf || fail "refused: hot_leaf is not in the profile"
	echo "refused (EACCES): $(sed -n 's/^cpuprof record: //p' err | head -c 160)..."
else
	echo "refusals not tested: no seccomp filter can be installed here"
fi

# perf_event_paranoid 3, as Debian's and Ubuntu's own kernels set it:
# their kernels then refuse every unprivileged perf_event_open, which a
# seccomp filter stands in for (an upstream kernel treats 3 as 2).
# record -- CMD profiles inside each process, -p refuses, each saying
# which setting refused and what would allow it.  (As root, for a moment;
# the setting is put back however the test ends.)
par=/proc/sys/kernel/perf_event_paranoid
if [ "$(id -u)" -eq 0 ] && [ -w $par ] && "$NO_PERF" -e EACCES true 2>/dev/null; then
	old=$(cat $par)
	trap 'echo "$old" >$par; kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
	echo 3 >$par
	"$NO_PERF" -e EACCES "$CP" record -o u.pb.gz -- "$HOT" 1 300 >out 2>err || { cat err; fail "paranoid 3: status $?"; }
	"$HOT" 1 8000 >/dev/null 2>&1 &
	p=$!
	"$NO_PERF" -e EACCES "$CP" record -p $p -o u2.pb.gz >out 2>err2 && fail "paranoid 3, -p: status 0"
	rc=$?
	kill $p
	echo "$old" >$par
	grep -q "not from outside: .*perf_event_paranoid=3; .sysctl kernel.perf_event_paranoid=2., or CAP_PERFMON, would allow it" err ||
		{ cat err; fail "paranoid 3: no word of the setting that refused and what would allow it"; }
	[ "$(comment u.pb.gz engine)" = timer ] || fail "paranoid 3: engine $(comment u.pb.gz engine), expected timer"
	has u.pb.gz hot_leaf || fail "paranoid 3: hot_leaf is not in the profile"
	[ $rc -eq 2 ] || { cat err2; fail "paranoid 3, -p: status $rc, expected 2"; }
	grep -q "perf_event_paranoid=3; .sysctl kernel.perf_event_paranoid=2., or CAP_PERFMON, would allow it" err2 ||
		{ cat err2; fail "paranoid 3, -p: no word of the setting that refused"; }
	echo "paranoid 3: $(cat err2)"
fi
echo ok
