#!/bin/sh
# t_endings.sh -- every sample reaches a profile, however the program ends
# or forks (issue 12), through `cpuprof record`: exit, exit() from a thread,
# _exit, death by SIGINT, SIGTERM, SIGSEGV, SIGABRT and SIGKILL, an exec of
# another program; a fork tree three levels deep with and without exec; 64
# processes forked at once; a process that outlives CMD; a library loaded
# and unloaded between samples; Ctrl-C as a terminal sends it (SIGINT to
# the process group of a session);
# timeout(1) stopping record; record told to stop while the program ignores
# SIGTERM; record stopped while its shared memory fills; a program that
# writes over the header of record's shared memory; a child that execs
# with an empty environment.  Each profile must exist, name the functions
# that burned the CPU, hold at least 90% of the CPU the kernel charged to
# the tree (its coverage), and say how each process ended.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_robust
LIB=$ROOT/$B/tests/libunwind_dl.so

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] && [ -f "$LIB" ] || fail "build first (make tests)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_endings.XXXXXX") || fail mktemp
# Nothing of a failed run is left running.
trap 'pkill -KILL -f "$W server" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
# has FILE FUNC: FUNC is in the profile's call stacks.
has() { go tool pprof -traces "$1" 2>/dev/null | grep -q "[[:space:]]$2\$"; }
# covers FILE WHAT [MIN]: the profile holds MIN (default 90%) to 110% of
# the tree's CPU.
covers() {
	cov=$(comment "$1" coverage)
	awk "BEGIN { exit !($cov >= ${3:-0.9} && $cov <= 1.1) }" || { go tool pprof -comments "$1"; fail "$2: coverage $cov"; }
}
# each_covers FILE WHAT [MIN]: so does each process's own line (process=...
# coverage=), where it has samples.
each_covers() {
	comment "$1" process | awk -v what="$2" -v min="${3:-0.9}" '
		{ for (i = 1; i <= NF; i++) { if ($i ~ /^samples=/) s = substr($i, 9); if ($i ~ /^coverage=/) c = substr($i, 10) } }
		s > 0 && (c < min + 0 || c > 1.1) { print what ": process coverage " c ": " $0; bad = 1 }
		END { exit bad }' || fail "$2: a process's coverage is off"
}
# npids FILE: how many processes the profile's samples come from.
npids() { go tool pprof -tags "$1" 2>/dev/null | awk '/^ *pid:/ { on = 1; next } on && /^ *[a-z]+:/ { on = 0 } on && $NF ~ /^[0-9]+$/ { n++ } END { print n + 0 }'; }

# ending HOW STATUS ENDED: `work_robust end HOW` exits with STATUS through
# record, and the profile says its process ended ENDED.
ending() {
	rm -f p.pb.gz
	$EMU "$CP" record -o p.pb.gz -- $EMU "$W" end "$1" >out 2>err
	rc=$?
	[ $rc -eq "$2" ] || { cat err; fail "end $1: status $rc, expected $2"; }
	[ -s p.pb.gz ] || { cat err; fail "end $1: no profile"; }
	has p.pb.gz end_work || fail "end $1: end_work not in the profile"
	covers p.pb.gz "end $1"
	each_covers p.pb.gz "end $1"
	comment p.pb.gz process | grep -q "ended=$3" ||
		{ comment p.pb.gz process; fail "end $1: no process ended=$3"; }
	echo "end $1: status $rc, coverage $(comment p.pb.gz coverage) of the tree's CPU, ended=$3"
}
ending exit 0 "exit:0"
ending thread-exit 0 "exit:0"
ending _exit 0 "exit:0"
ending INT 130 "signal:2"
ending TERM 143 "signal:15"
ending SEGV 139 "signal:11"
ending ABRT 134 "signal:6"
ending KILL 137 "signal:9"
if [ -z "$EMU" ]; then
	# exec of /proc/self/exe needs binfmt_misc under qemu-user.
	ending exec 0 "exec"
	comment p.pb.gz process | grep -q "ended=exit:0" || fail "end exec: the program it exec'd did not end with exit:0"
fi

# A fork tree three levels deep, with and without exec.
for how in fork exec; do
	[ -n "$EMU" ] && [ $how = exec ] && continue
	$EMU "$CP" record -o t.pb.gz -- $EMU "$W" tree 3 $how >out 2>err || { cat err; fail "tree $how: status $?"; }
	[ "$(npids t.pb.gz)" -eq 3 ] || { go tool pprof -tags t.pb.gz; fail "tree $how: expected 3 processes"; }
	has t.pb.gz tree_work || fail "tree $how: tree_work not in the profile"
	covers t.pb.gz "tree $how"
	each_covers t.pb.gz "tree $how"
	echo "tree 3 $how: $(npids t.pb.gz) processes, coverage $(comment t.pb.gz coverage)"
done

# One file per process image: each covers its own process.
rm -f q.pb.gz*
$EMU "$CP" record --per-process -o q.pb.gz -- $EMU "$W" tree 2 fork >out 2>err || { cat err; fail "per-process: status $?"; }
n=0
for f in q.pb.gz q.pb.gz.*; do
	[ -f "$f" ] || continue
	covers "$f" "per-process $f"
	n=$((n + 1))
done
[ $n -eq 2 ] || { ls q.pb.gz*; fail "per-process: $n files, expected 2 (the command's and its child's)"; }
echo "per-process: $n files, each covering its process"
# A process that works little more than its profile took to start: the
# start's CPU is in its numbers on both sides.  Under qemu-user such a
# process covers less of itself: 0.917 to 0.931 in 6 runs beside a test
# suite (natively 0.989), too near 0.9 for a loaded machine.
short_min=0.9
[ -n "$EMU" ] && short_min=0.85
rm -f r.pb.gz*
$EMU "$CP" record --per-process -o r.pb.gz -- $EMU "$W" spin 1 5 >out 2>err || { cat err; fail "short: status $?"; }
covers r.pb.gz "short, per-process" $short_min
$EMU "$CP" record -o r.pb.gz -- $EMU "$W" spin 1 5 >out 2>err || { cat err; fail "short: status $?"; }
each_covers r.pb.gz "short" $short_min
echo "short: coverage $(comment r.pb.gz coverage), before the start $(comment r.pb.gz before_start_cpu_ns) ns"

# 64 processes forked at once: all in the profile.
$EMU "$CP" record -o s.pb.gz -- $EMU "$W" spawn 64 >out 2>err || { cat err; fail "spawn 64: status $?"; }
grep -q "spawn done" out || fail "spawn 64: output changed"
[ "$(comment s.pb.gz processes)" -eq 65 ] || fail "spawn 64: $(comment s.pb.gz processes) processes, expected 65"
covers s.pb.gz "spawn 64"
echo "spawn 64: $(npids s.pb.gz) processes sampled, coverage $(comment s.pb.gz coverage)"

# A process that outlives CMD: record ends with CMD, says the process was
# still running, and counts the CPU it had used by then (counted, it
# covered 10 times itself).  Its samples lag that count by what its own
# thread had not yet moved into record's memory: 0.937 to 0.990 of 100
# ms, quiet and loaded; it has about 300 ms here.
$EMU "$CP" record -o b.pb.gz -- $EMU "$W" orphan 1500 >out 2>err || { cat err; fail "orphan: status $?"; }
grep -q "1 process was still running when the command ended" err || { cat err; fail "orphan: no word of the process left running"; }
has b.pb.gz orphan_work || { go tool pprof -top b.pb.gz; fail "orphan: orphan_work is not in the profile"; }
covers b.pb.gz "orphan"
each_covers b.pb.gz "orphan" 0.8
echo "orphan: coverage $(comment b.pb.gz coverage), $(comment b.pb.gz process | tr '\n' ' ')"
for i in $(seq 200); do grep -q "orphan done" out && break; sleep 0.1; done

# A library loaded and unloaded between samples: its frames are named.
$EMU "$CP" record -o d.pb.gz -- $EMU "$W" dlchurn "$LIB" 20 >out 2>err || { cat err; fail "dlchurn: status $?"; }
has d.pb.gz dl_hot || { go tool pprof -top d.pb.gz; fail "dlchurn: the unloaded library's dl_hot is not named"; }

# A fork that maps code of its own (a library, anonymous code) without an
# exec: record's copy of its parent's objects grows.  MALLOC_PERTURB_ fills
# record's fresh memory, so an entry it left unset is garbage, not zero.
MALLOC_PERTURB_=165 $EMU "$CP" record -o k.pb.gz -- $EMU "$W" fork-code "$LIB" >out 2>err ||
	{ cat err; fail "fork-code: status $?"; }
has k.pb.gz fork_code_work || { go tool pprof -top k.pb.gz; fail "fork-code: the child's fork_code_work is not named"; }

# A program that writes over the layout in the header of record's shared
# memory (where the library is preloaded: an engine inside the process):
# record neither crashes nor follows it; the program's status and output
# are its own, and what was sampled is kept.
$EMU "$CP" record --engine timer -o w.pb.gz -- $EMU "$W" scribble >out 2>err || { cat err; fail "scribble: status $?"; }
grep -q "scribble: done" out || { cat out err; fail "scribble: output changed"; }
has w.pb.gz scribble_work || { go tool pprof -top w.pb.gz; fail "scribble: scribble_work is not in the profile"; }
echo "scribble: $(comment w.pb.gz samples) samples, coverage $(comment w.pb.gz coverage)"

# A child that execs with an empty environment: where the library is
# preloaded, named as not profiled (the environment carried it); from
# outside, profiled as any other.
if [ -z "$EMU" ]; then
	"$CP" record --engine timer -o e.pb.gz -- "$W" clearenv >out 2>err || { cat err; fail "clearenv: status $?"; }
	grep -q "exec'd a program that was not profiled" err || { cat err; fail "clearenv: no word of the unprofiled exec"; }
	if "$CP" record -o e.pb.gz -- "$W" clearenv >out 2>err && ! grep -q "not from outside" err; then
		has e.pb.gz end_work || { go tool pprof -top e.pb.gz; fail "clearenv, from outside: the program it exec'd is not in the profile"; }
		covers e.pb.gz "clearenv, from outside"
		comment e.pb.gz process | grep -q "ended=exit:0" || fail "clearenv, from outside: its end is not said"
		echo "clearenv, from outside: coverage $(comment e.pb.gz coverage)"
	fi
fi

# waitfor FILE TEXT: until FILE has TEXT (at most 20 s).
waitfor() {
	for i in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$2 never appeared in $1"
}

if [ -z "$EMU" ] && command -v setsid >/dev/null; then
	# Ctrl-C as a terminal sends it: SIGINT to the whole foreground
	# process group, record and the program alike.
	rm -f pg rc
	setsid sh -c 'echo $$ >pg; trap "" INT; env --default-signal "$0" record -o c.pb.gz -- "$1" server >out 2>err
		echo $? >rc' "$CP" "$W" &
	waitfor out "server ready"
	sleep 0.5
	[ -s pg ] || fail "Ctrl-C: no process group"
	kill -INT "-$(cat pg)"
	wait
	[ "$(cat rc 2>/dev/null)" = 130 ] || { cat err; fail "Ctrl-C: record's status $(cat rc 2>/dev/null), expected 130"; }
	has c.pb.gz server_work || { cat err; fail "Ctrl-C: no profile of the server"; }
	covers c.pb.gz "Ctrl-C"
	echo "Ctrl-C: coverage $(comment c.pb.gz coverage)"

	# timeout(1) stops record: the program is not left running, and the
	# profile is written.
	timeout 1 "$CP" record -o o.pb.gz -- "$W" server >out 2>err
	rc=$?
	[ $rc -eq 124 ] || { cat err; fail "timeout: status $rc"; }
	sleep 0.2
	pgrep -f "work_robust server" >/dev/null && { pkill -f "work_robust server"; fail "timeout: the server was left running"; }
	has o.pb.gz server_work || { cat err; fail "timeout: no profile of the server"; }
	echo "timeout: coverage $(comment o.pb.gz coverage), $(comment o.pb.gz process)"

	# Told to stop while the program ignores SIGTERM: record waits --grace
	# seconds, kills it, and writes the profile.
	"$CP" record --grace 1 -o g.pb.gz -- "$W" server ignore >out 2>err &
	rp=$!
	waitfor out "server ready"
	kill -TERM $rp
	wait $rp
	rc=$?
	[ $rc -eq 137 ] || { cat err; fail "grace: status $rc, expected 137 (killed)"; }
	grep -q "did not end within 1 s of signal 15: killing it" err || { cat err; fail "grace: no word of the kill"; }
	has g.pb.gz server_work || fail "grace: no profile of the server"
	comment g.pb.gz process | grep -q "ended=signal:9" || fail "grace: the profile does not say it was killed"

	# record stopped while the program samples at 10 kHz: its rings fill;
	# the samples are counted as lost, never waited for.
	"$CP" record -F 10000 -o l.pb.gz -- "$W" spin 2 2500 >out 2>err &
	rp=$!
	sleep 0.5
	kill -STOP $rp
	sleep 2
	kill -CONT $rp
	wait $rp || { cat err; fail "lost: status $?"; }
	lost=$(comment l.pb.gz lost)
	[ "$lost" -gt 0 ] || fail "lost: record was stopped 2 s and nothing was lost"
	grep -q "samples were lost" err || { cat err; fail "lost: no warning"; }
	covers l.pb.gz "lost"
	echo "record stopped 2 s at 10 kHz: $lost samples lost, coverage $(comment l.pb.gz coverage)"
else
	echo "Ctrl-C, timeout, grace and a stopped record not tested here: need setsid and a native build"
fi
echo "ok"
