#!/bin/sh
# t_record.sh -- cpuprof record end to end with the real library: the hot
# function leads in `go tool pprof -top` (names present with the binary
# gone), for every engine, with 4 threads; exit statuses pass through
# (return, exit() from a thread, death by signal); a workload that
# scribbles on its frame-pointer register does not crash; bad settings
# leave the program's output and status unchanged.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
[ -x "$CP" ] && [ -x "$WORK" ] || fail "build first (make tests)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

# The workload runs from a copy that is deleted before pprof reads the
# profile: names must come from the profile itself.
cp "$WORK" ./work
top() { go tool pprof -top "$1" 2>/dev/null | sed -n '/flat%/,$p' | sed 1d; }
comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }

# leader FILE: the first function of the flat table
leader() { top "$1" | awk 'NR == 1 { print $6 }'; }

for engine in perf timer itimer auto; do
	"$CP" record -o $engine.pb.gz -F 1000 --engine $engine -- ./work 4 400 >out 2>err
	rc=$?
	if [ $rc -ne 0 ] && grep -q "no sampling engine" err; then
		echo "engine $engine does not work here"
		continue
	fi
	[ $rc -eq 0 ] || { cat err; fail "$engine: record exited $rc"; }
	grep -qx "work_hot done" out || fail "$engine: the program's output changed"
	grep -q "cpuprof: wrote $engine.pb.gz: [0-9]* samples, engine=" err || { cat err; fail "$engine: no summary line"; }
done
rm -f ./work
for engine in perf timer itimer auto; do
	[ -f $engine.pb.gz ] || continue
	l=$(leader $engine.pb.gz)
	[ "$l" = hot_leaf ] || { top $engine.pb.gz; fail "$engine: leader is '$l', not hot_leaf"; }
	top $engine.pb.gz | grep -q warm_leaf || fail "$engine: warm_leaf missing"
	e=$(comment $engine.pb.gz engine)
	[ "$engine" = auto ] || [ "$e" = "$engine" ] || fail "$engine: profile says engine=$e"
	cov=$(comment $engine.pb.gz coverage)
	threads=$(comment $engine.pb.gz threads)
	echo "$engine: engine=$e coverage=$cov threads=$threads"
	# Generous bands: on a loaded machine the tick-driven timer engine
	# fires seldom, and the CPU after each thread's last sample is lost.
	case $e in
	perf) awk "BEGIN { exit !($cov > 0.8 && $cov < 1.25) }" || fail "$engine: coverage $cov" ;;
	timer) awk "BEGIN { exit !($cov > 0.4 && $cov < 1.25) }" || fail "$engine: coverage $cov" ;;
	itimer) awk "BEGIN { exit !($cov > 0.05 && $cov < 1.25) }" || fail "$engine: coverage $cov" ;;
	*) fail "unknown engine '$e'" ;;
	esac
	[ "$threads" -ge 5 ] || fail "$engine: $threads threads armed, expected main + 4"
done

cp "$WORK" ./work
# Exit statuses pass through.
"$CP" record -o s.pb.gz -- ./work 1 50 7 >/dev/null 2>err; rc=$?
[ $rc -eq 7 ] || fail "exit status 7 came back as $rc"
[ -s s.pb.gz ] || fail "no profile after exit(7)"
"$CP" record -o t.pb.gz -- ./work 2 100 5 exit-thread >/dev/null 2>err; rc=$?
[ $rc -eq 5 ] || fail "exit() from a thread: status $rc"
[ "$(leader t.pb.gz)" = hot_leaf ] || fail "exit() from a thread: profile not written right"
"$CP" record -o k.pb.gz -- sh -c 'kill -9 $$' >/dev/null 2>err; rc=$?
[ $rc -eq 137 ] || fail "killed by SIGKILL: status $rc, expected 137"
grep -q "no profile" err || { cat err; fail "killed: record did not say no profile was written"; }

# Children: fork+exec is profiled into FILE.<pid>, listed by record; a
# forked child that exits writes nothing (the parent's FILE is its own).
"$CP" record -o fx.pb.gz -- ./work 1 100 0 fork-exec >out 2>err || { cat err; fail "fork-exec: status $?"; }
[ "$(grep -c 'work_hot done' out)" -eq 2 ] || fail "fork-exec: output changed"
set -- fx.pb.gz.*
[ $# -eq 1 ] && [ -s "$1" ] || fail "fork-exec: expected one FILE.<pid>, found $*"
grep -q "also wrote $1" err || { cat err; fail "fork-exec: record did not list $1"; }
[ "$(leader "$1")" = hot_leaf ] && [ "$(leader fx.pb.gz)" = hot_leaf ] || fail "fork-exec: profiles wrong"
"$CP" record -o fk.pb.gz -- ./work 1 100 0 fork >out 2>err || { cat err; fail "fork: status $?"; }
[ "$(grep -c 'work_hot done' out)" -eq 1 ] || fail "fork: output changed"
set -- fk.pb.gz.*
[ ! -e "$1" ] || fail "fork without exec wrote $*"
[ "$(leader fk.pb.gz)" = hot_leaf ] || fail "fork: parent profile wrong"

# A program that scribbles on rbp while sampled, every engine.
for engine in perf timer itimer; do
	"$CP" record -o f.pb.gz --engine $engine -F 5000 -- ./work 2 300 0 scribble >/dev/null 2>err; rc=$?
	grep -q "no sampling engine" err && continue
	[ $rc -eq 0 ] || { cat err; fail "scribble, $engine: exit $rc"; }
	[ "$(leader f.pb.gz)" = hot_leaf ] || fail "scribble, $engine: leader $(leader f.pb.gz)"
done

# Bad settings: one warning line, program output and status unchanged.
lib=$ROOT/$B/libcpuprof.so
for bad in "CPUPROF_HZ=0" "CPUPROF_HZ=abc" "CPUPROF_HZ=1000000" "CPUPROF_ENGINE=fast" \
	"CPUPROF_DEPTH=0" "CPUPROF_SIGNAL=9999" "CPUPROF_SIGNAL=9"; do
	env LD_PRELOAD="$lib" CPUPROF=$tmp/bad.pb.gz "$bad" ./work 1 20 3 >out 2>err; rc=$?
	[ $rc -eq 3 ] || fail "$bad: status $rc, expected 3"
	grep -qx "work_hot done" out || fail "$bad: output changed"
	[ "$(wc -l <err)" -eq 1 ] || { cat err; fail "$bad: expected exactly one warning line"; }
	grep -q "^cpuprof: .*profiling disabled" err || { cat err; fail "$bad: warning does not say profiling is off"; }
	[ ! -e bad.pb.gz ] || fail "$bad: a profile was written"
done
# An unwritable output: the program still runs and exits as it would.
env LD_PRELOAD="$lib" CPUPROF=/nonexistent/dir/x.pb.gz ./work 1 20 4 >out 2>err; rc=$?
[ $rc -eq 4 ] && grep -qx "work_hot done" out || fail "unwritable path: status $rc"
grep -q "cannot write" err || { cat err; fail "unwritable path: no message"; }
echo "all record checks passed"
