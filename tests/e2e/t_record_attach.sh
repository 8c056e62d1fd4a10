#!/bin/sh
# t_record_attach.sh -- `cpuprof record -p PID` (issue 22): attaching to
# processes that already run, every thread of them and the threads and
# processes they start while attached, until -d runs out, record is
# interrupted or they end; then detaching and leaving them to run on,
# unchanged.  A busy multi-threaded process (its work leads, the window's
# CPU covered, and it runs to its normal end afterwards), a sleep-heavy
# one (no sleep cut short), one that forks and execs while attached, one
# that exits while attached (record ends with it), a PID that does not
# exist, a process of another user, and a kernel that refuses (a seccomp
# filter).  Skips where this machine allows no perf events, and under
# emulation.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_robust
NO_PERF=$ROOT/$B/tests/no_perf

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: there is no attaching under it"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record_attach.XXXXXX") || fail mktemp
chmod 755 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
has() { go tool pprof -traces "$1" 2>/dev/null | grep -q "[[:space:]]$2\$"; }
npids() { go tool pprof -tags "$1" 2>/dev/null | awk '/^ *pid:/ { on = 1; next } on && /^ *[a-z]+:/ { on = 0 } on && $NF ~ /^[0-9]+$/ { n++ } END { print n + 0 }'; }
# waitfor FILE TEXT: until FILE has TEXT (at most 20 s).
waitfor() {
	for i in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$2 never appeared in $1"
}


# A busy process of 4 threads (8 s of CPU each, so that it outlives the
# window on 2 CPUs): attached for 2 s.  The profile's CPU over the
# window's, by the events' own counts and by the scheduler's, and its
# work leads; the process runs on after the detach.
"$W" spin 4 8000 >spin.out 2>&1 &
spin=$!
sleep 0.3
"$CP" record -p $spin -d 2 -o a.pb.gz >out 2>err || { cat err; fail "busy: status $?"; }
kill -0 $spin 2>/dev/null || fail "busy: the process did not survive the detach"
grep -q "recorded process $spin from outside until the time given with -d ran out" err || { cat err; fail "busy: no word of how it ended"; }
has a.pb.gz spin_work || { go tool pprof -top a.pb.gz; fail "busy: spin_work is not in the profile"; }
cov=$(comment a.pb.gz coverage)
awk "BEGIN { exit !($cov >= 0.95 && $cov <= 1.05) }" || { go tool pprof -comments a.pb.gz; fail "busy: coverage $cov"; }
threads=$(comment a.pb.gz threads)
[ "$threads" -ge 5 ] || fail "busy: $threads threads, expected main and 4"
cpu=$(comment a.pb.gz profile_cpu_ns)
# 2 s of 4 busy threads: at least half a CPU-second, even where other work holds most of the CPUs.
[ "$cpu" -ge 500000000 ] || fail "busy: $cpu ns of CPU in a 2 s window of 4 busy threads"
# The scheduler's own count over the window (record reads the threads'
# schedstat as it attaches and as it detaches): another clock than the
# events' that weigh the samples.
sched_ns=$(comment a.pb.gz scheduler_cpu_ns)
sched=$(awk "BEGIN { printf \"%.3f\", $cpu / $sched_ns }")
awk "BEGIN { exit !($sched >= 0.95 && $sched <= 1.05) }" || fail "busy: the profile holds $cpu ns, the scheduler counted $sched_ns ns: $sched"
kill $spin
wait $spin 2>/dev/null
echo "busy: coverage $cov, the profile over the scheduler's count $sched ($cpu ns), $(comment a.pb.gz samples) samples, $threads threads"

# A sleep-heavy process: no sleep ends early because it was attached to.
"$W" sleeps 4 2500 >sleeps.out 2>&1 &
sl=$!
sleep 0.2
"$CP" record -p $sl -o s.pb.gz >out 2>err || { cat err; fail "sleeps: status $?"; }
wait $sl
rc=$?
[ $rc -eq 0 ] || { cat sleeps.out; fail "sleeps: the program's status $rc (3: waits cut short)"; }
grep -q "sleeps: 0 of 10000 waits ended early" sleeps.out || { cat sleeps.out; fail "sleeps: output changed"; }
grep -q "until the processes ended" err || { cat err; fail "sleeps: record did not end with the process"; }
echo "sleeps: $(cat sleeps.out), $(comment s.pb.gz samples) samples"

# A shell that forks and execs while attached: its children are profiled.
sh -c "sleep 0.5; $W tree 3 exec; $W spawn 4" >tree.out 2>&1 &
sh=$!
"$CP" record -p $sh -o t.pb.gz >out 2>err || { cat err; fail "tree: status $?"; }
wait $sh || fail "tree: the shell failed"
n=$(npids t.pb.gz)
[ "$n" -ge 5 ] || { go tool pprof -comments t.pb.gz; fail "tree: samples of $n processes, expected the 3 of the tree and 4 spawned"; }
has t.pb.gz tree_work || fail "tree: tree_work is not in the profile"
echo "tree: samples of $n processes, $(comment t.pb.gz processes) process images"

# Two processes at once, one of which ends first.
"$W" spin 1 600 >/dev/null 2>&1 &
p1=$!
"$W" spin 1 1500 >/dev/null 2>&1 &
p2=$!
"$CP" record -p $p1,$p2 -d 30 -o two.pb.gz >out 2>err || { cat err; fail "two: status $?"; }
grep -q "until the processes ended" err || { cat err; fail "two: record did not end when both had"; }
[ "$(npids two.pb.gz)" -eq 2 ] || fail "two: samples of $(npids two.pb.gz) processes"
wait

# A process that does not exist; a process of another user.
"$CP" record -p 999999999 -o x.pb.gz >out 2>err && fail "no such process: status 0"
[ $? -eq 2 ] || fail "no such process: status $?, expected 2"
grep -q "no such process" err || { cat err; fail "no such process: no word of it"; }
[ -e x.pb.gz ] && fail "no such process: a profile was written"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	sleep 30 &
	mine=$!
	cp "$CP" ./cpuprof && chmod 755 ./cpuprof
	setpriv --reuid=65534 --regid=65534 --clear-groups ./cpuprof record -p $mine -o /tmp/x$$.pb.gz >out 2>err &&
		fail "another user's process: status 0"
	[ $? -eq 2 ] || { cat err; fail "another user's process: status $?, expected 2"; }
	grep -q "belongs to another user.*CAP_PERFMON" err || { cat err; fail "another user's process: no word of why"; }
	kill $mine
	echo "another user's: $(cat err)"
fi

# Refused by the kernel: said plainly, exit 2, no fall back.
if "$NO_PERF" -e EACCES true 2>/dev/null; then
	"$W" spin 1 2000 >/dev/null 2>&1 &
	p=$!
	"$NO_PERF" -e EACCES "$CP" record -p $p -o r.pb.gz >out 2>err && fail "refused: status 0"
	[ $? -eq 2 ] || { cat err; fail "refused: status $?, expected 2"; }
	grep -q "perf_event_paranoid=.*CAP_PERFMON" err ||
		{ cat err; fail "refused: no word of what refused and what would allow it"; }
	kill $p
	echo "refused: $(cat err)"
fi

# A process whose memory map may not be read (PID 1 in some sandboxes,
# even for root): refused as such (exit 2), not taken for a setuid program.
if [ "$(id -u)" = 0 ] && ! cat /proc/1/maps >/dev/null 2>&1; then
	"$CP" record -p 1 -d 1 -o one.pb.gz >out 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -q "memory map" err && ! grep -q setuid err ||
		{ cat err; fail "PID 1: exit $rc, or the wrong reason"; }
	echo "PID 1: $(tail -1 err)"
fi
echo ok
