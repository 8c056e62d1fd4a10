#!/bin/sh
# t_record_every.sh -- `cpuprof record --every DURATION` (issue 31): one
# whole profile per window.  A run of ~3.5 s of CPU at --every 1s gives
# FILE.0001.pb.gz, FILE.0002.pb.gz, ... (at least three, no gap, no FILE),
# each read by `go tool pprof` and `cpuprof report`, each window with
# enough samples led by hot_leaf, its coverage in a generous band (the
# machine is loaded) and its samples about what its CPU asks for (a window
# that kept the samples of the ones before would have too many); together
# they hold the CPU the program's own clock counted, once, and their spans
# follow one another and add up to the run.  SIGUSR1 sent to record ends a
# window at once (a file each time); a process that ended in a window is
# gone from the windows after it.  Attached (-p) too.  The names keep the
# extension.  Bad durations, and --every beside what it cannot go with,
# are refused with exit 2 before the command runs.  Skips where this
# machine allows no perf events, and under emulation.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$WORK" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: --every records from outside only"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record_every.XXXXXX") || fail mktemp
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
# spans FILE...: their duration_nanos added up, in seconds (cpuprof
# report's merged header).
spans() {
	"$CP" report "$@" 2>/dev/null | sed -n 's/^Duration: \([0-9.]*\)\([mu]*s\),.*/\1 \2/p' |
		awk '{ print $1 / ($2 == "ms" ? 1e3 : $2 == "us" ? 1e6 : 1) }'
}
now() { date +%s.%N; }
# waitfor FILE: until FILE exists (at most 30 s).
waitfor() {
	for i in $(seq 300); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 never appeared"
}
# read FILE: go tool pprof -raw's reading of it into raw.out, and cpuprof
# report's into report.out (one run of each: a loaded machine may cut a
# run into fifty windows).  c KEY: a comment of raw.out's.
read_both() {
	go tool pprof -raw "$1" >raw.out 2>&1 && grep -q '^Samples:' raw.out || { cat raw.out; fail "$1: go tool pprof cannot read it"; }
	"$CP" report "$1" >report.out 2>&1 || { cat report.out; fail "$1: cpuprof report cannot read it"; }
}
c() { sed -n "s/^Comment: $1=//p" raw.out; }
# start, span: the profile of raw.out's time_nanos, report.out's duration
# (to 10 ms), in seconds.
start() { date -d "$(sed -n 's/^Time: \(.*\) UTC$/\1/p' raw.out)" +%s.%N; }
span() {
	sed -n 's/^Duration: \([0-9.]*\)\([mu]*s\),.*/\1 \2/p' report.out |
		awk '{ print $1 / ($2 == "ms" ? 1e3 : $2 == "us" ? 1e6 : 1) }'
}
# window FILE: reads it (read_both); what every window with enough samples
# (50 expected: then warm_leaf, a quarter of the work, leads by chance
# less than once in 10,000 windows) must be: led by hot_leaf, its coverage
# within 0.8-1.2, its samples 0.7-1.3 of what its CPU asks for at 1 kHz;
# cpuprof report says the samples go tool pprof does.  Sets n to its
# samples, and counts it in `checked` if it was checked.
window() {
	read_both "$1"
	n=$(c samples)
	grep -q "samples=$n " report.out || { cat report.out; fail "$1: cpuprof report says other samples than $n"; }
	exp=$(c expected_samples)
	if [ "$exp" -ge 50 ]; then
		lead=$(sed -n '/flat%/,$p' report.out | sed 1d | awk '$6 !~ /^\[/ { print $6; exit }')
		[ "$lead" = hot_leaf ] || { cat report.out; fail "$1: $lead leads, not hot_leaf"; }
		cov=$(c coverage)
		awk "BEGIN { exit !($cov >= 0.8 && $cov <= 1.2) }" || { cat raw.out; fail "$1: coverage $cov"; }
		awk "BEGIN { exit !($n >= 0.7 * $exp && $n <= 1.3 * $exp) }" ||
			{ cat raw.out; fail "$1: $n samples for $exp expected of its CPU"; }
		checked=$((checked + 1))
	fi
}

cp "$WORK" ./work

# --every 1s on one thread of 3.5 s of CPU (3.5 s of wall time at least).
t0=$(now)
WORK_HOT_CPU=1 "$CP" record --every 1s -o cpu.pb.gz -- ./work 1 3500 >out 2>err || { cat err; fail "every 1s: status $?"; }
t1=$(now)
nwin=$(ls cpu.*.pb.gz | wc -l)
[ "$nwin" -ge 3 ] || { ls; cat err; fail "every 1s: $nwin windows of a 3.5 s run"; }
[ ! -e cpu.pb.gz ] || fail "every 1s: FILE itself written"
grep -q "^cpuprof: $nwin windows of --every 1s: cpu.0001.pb.gz to $(printf 'cpu.%04d.pb.gz' $nwin)\$" err ||
	{ cat err; fail "every 1s: no word of the windows written"; }
checked=0 samples=0 cpu=0 prev= first=
for i in $(seq "$nwin"); do
	f=$(printf 'cpu.%04d.pb.gz' "$i")
	[ -f "$f" ] || { ls; fail "every 1s: $f missing among $nwin"; }
	grep -q "^cpuprof: wrote $f: " err || { cat err; fail "every 1s: $f written without a word"; }
	window "$f"
	[ "$(c window)" = "$i" ] || fail "$f: window=$(c window)"
	samples=$((samples + n))
	cpu=$((cpu + $(c profile_cpu_ns)))
	# Its samples' times count from its own start: its first half has
	# samples (a window timed from the run's start would have none past
	# the first).
	[ "$n" -lt 50 ] || "$CP" report --to "$(awk "BEGIN { print $(span) / 2 }")" "$f" >/dev/null 2>report.err ||
		{ cat report.err; fail "$f: no samples in its first half: its times do not count from its start"; }
	# Each window begins where the one before ended (its span is said to
	# 10 ms).
	s=$(start)
	[ -z "$prev" ] || awk "BEGIN { g = $s - $prev - $d; exit !(g > -0.006 && g < 0.006) }" ||
		fail "$f begins at $s, the window before at $prev, $d s long"
	prev=$s d=$(span)
	first=${first:-$s}
done
[ "$checked" -ge 3 ] || fail "every 1s: only $checked windows with 50 samples expected"
last=$(printf 'cpu.%04d.pb.gz' "$nwin")
[ "$(comment "$last" window_ended)" = "the command ended" ] || fail "$last: window_ended=$(comment "$last" window_ended)"
[ "$(comment cpu.0001.pb.gz window_ended)" = "--every 1s" ] || fail "cpu.0001.pb.gz: window_ended=$(comment cpu.0001.pb.gz window_ended)"
# Together, the CPU the program's clock counted (at the end of its main:
# its exit is after), each sample once.
truth=$(sed -n 's/^work_hot cpu \([0-9]*\) .*/\1/p' out)
[ -n "$truth" ] || { cat out; fail "every 1s: the program's own count is missing"; }
awk "BEGIN { r = $cpu / $truth; exit !(r >= 0.95 && r <= 1.05) }" ||
	fail "every 1s: the windows hold $cpu ns of CPU, the program counted $truth ns"
awk "BEGIN { r = $samples / ($truth / 1e6); exit !(r >= 0.8 && r <= 1.2) }" ||
	fail "every 1s: $samples samples in the windows for $truth ns of CPU at 1 kHz"
# Their spans add up: at least from the first's start to the last's, and
# the CPU of the work's one thread; at most the run.
spans=$(spans cpu.*.pb.gz)
awk "BEGIN { exit !($spans >= $prev - $first && $spans >= 3.5 - 0.01 && $spans <= $t1 - $t0 + 0.01) }" ||
	fail "every 1s: the windows span $spans s in all, from $first to $prev and on; the run took $(awk "BEGIN { print $t1 - $t0 }") s"
echo "every 1s: $nwin windows, $checked checked, $samples samples, $cpu ns of CPU (the program's clock: $truth), spans $spans s"

# SIGUSR1 ends a window at once: none before it, one more after each.  The
# command is a shell whose work ends in the first window, then sleeps
# (processes of their own) until told to end.
"$CP" record --every 1h -o sig.pb.gz -- sh -c './work 1 600; touch worked; while [ ! -e end ]; do sleep 0.05; done' \
	>/dev/null 2>sig.err &
rec=$!
waitfor worked
sleep 0.2
[ "$(ls sig.*.pb.gz 2>/dev/null | wc -l)" -eq 0 ] || fail "SIGUSR1: a window before the first signal"
kill -USR1 $rec
waitfor sig.0001.pb.gz
sleep 0.5
kill -USR1 $rec
waitfor sig.0002.pb.gz
[ "$(ls sig.*.pb.gz | wc -l)" -eq 2 ] || { ls; fail "SIGUSR1: $(ls sig.*.pb.gz | wc -l) windows after two signals"; }
touch end
wait $rec || { cat sig.err; fail "SIGUSR1: record's status $?"; }
[ "$(ls sig.*.pb.gz | wc -l)" -eq 3 ] || { ls; cat sig.err; fail "SIGUSR1: not three windows"; }
checked=0
for i in 2 1; do
	window sig.000$i.pb.gz
	[ "$(c window_ended)" = SIGUSR1 ] || fail "sig.000$i.pb.gz: window_ended=$(c window_ended)"
done
[ "$checked" -ge 1 ] || fail "SIGUSR1: the first window has too little CPU to check"
# The work's process ended in the first window: the third knows it no more.
wpid=$(c process | sed -n 's/^\([0-9]*\) work ended=.*/\1/p')
[ -n "$wpid" ] || { cat raw.out; fail "SIGUSR1: the work is not in the first window"; }
read_both sig.0003.pb.gz
! grep -q "process=$wpid " raw.out || { cat raw.out; fail "SIGUSR1: process $wpid, ended in the first window, is in the third"; }
echo "SIGUSR1: a window at each of two signals, and the last"

# Attached: -p with --every 800ms for 3 s.
./work 2 20000 >/dev/null 2>&1 &
w=$!
sleep 0.3
"$CP" record -p $w --every 800ms -d 3 -o att.pb.gz >/dev/null 2>att.err || { cat att.err; fail "-p: status $?"; }
kill $w 2>/dev/null
natt=$(ls att.*.pb.gz | wc -l)
[ "$natt" -ge 3 ] || { ls; cat att.err; fail "-p: $natt windows of 3 s at --every 800ms"; }
checked=0
for i in $(seq "$natt"); do
	window "$(printf 'att.%04d.pb.gz' "$i")"
done
[ "$checked" -ge 2 ] || fail "-p: only $checked windows with 50 samples expected"
echo "-p: $natt windows, $checked checked"

# The names keep the extension, or go at the end where there is none.
"$CP" record --every 1s -o out.pprof -- true 2>/dev/null && [ -f out.0001.pprof ] || { ls; fail "-o out.pprof"; }
"$CP" record --every 1s -o prof -- true 2>/dev/null && [ -f prof.0001 ] || { ls; fail "-o prof"; }

# Refused before the command runs: bad durations, and what --every does
# not go with.
for d in 0 10x -1s 1.5.s '' 99ms 1d 10sec 1e3 inf; do
	"$CP" record --every "$d" -o bad.pb.gz -- touch ran >/dev/null 2>bad.err
	rc=$?
	[ $rc -eq 2 ] || fail "--every '$d': status $rc, not 2"
	[ ! -e ran ] || fail "--every '$d': the command ran"
	grep -q "cpuprof record: --every needs a length of time" bad.err || { cat bad.err; fail "--every '$d': no clear message"; }
done
for extra in --per-process --off-cpu --preload "--engine timer"; do
	# shellcheck disable=SC2086
	"$CP" record --every 1s $extra -o bad.pb.gz -- touch ran >/dev/null 2>bad.err
	rc=$?
	[ $rc -eq 2 ] || fail "--every with $extra: status $rc, not 2"
	[ ! -e ran ] || fail "--every with $extra: the command ran"
	grep -q "cpuprof record: --every" bad.err || { cat bad.err; fail "--every with $extra: no clear message"; }
done
[ ! -e bad.pb.gz ] && [ ! -e bad.0001.pb.gz ] || fail "a refused run wrote a profile"
echo "refusals: exit 2, nothing run"
echo "ok"
