#!/bin/sh
# t_offcpu.sh -- off-CPU time (issue 23): `cpuprof record --off-cpu`, from
# outside, on a command and attached to a running process.  The truth is
# tests/work/work_offcpu, whose threads time their own waits with
# CLOCK_MONOTONIC around the call that blocks: a nanosleep, a pipe read, a
# contended pthread mutex and a condition variable must each get, in the
# profile's off_cpu under their function, within 10% of what the thread
# measured; threads crowding 2 CPUs must find their waits for a CPU under
# [waiting to run], within 10% of their lifetimes less their CPU; and each
# thread's CPU plus off-CPU time must be its lifetime (the profile's
# off_cpu_accounted).  The same inside the process (LD_PRELOAD,
# CPUPROF_OFF_CPU=1, the perf engine); the timer engines say in one line
# that they have none.  The profile's values read in `go tool pprof
# -sample_index=off_cpu` and `cpuprof report --value off-cpu|wall`;
# without --off-cpu record opens no context-switch event and the profile
# is what it always was.  Where the kernel refuses (an unprivileged user
# at perf_event_paranoid 2, a seccomp filter), record says so in one line,
# records CPU only, and the profile's comments say why.  Skips where this
# machine allows no perf events or no kernel-mode context-switch samples,
# and under emulation.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_offcpu
NO_PERF=$ROOT/$B/tests/no_perf

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: no off-CPU time under it"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
why=$("$ROOT/$B/tests/tool_engine" off-cpu) || skip "$why"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_offcpu.XXXXXX") || fail mktemp
chmod 755 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
# cum FILE FUNC VALUE: the VALUE (off-cpu, wall, cpu) of the stacks that
# hold the frame FUNC, in ns, by report's folded stacks.
cum() {
	"$CP" report --value "$3" --format folded "$1" | awk -v f="$2" '{
		i = match($0, / [0-9]+$/); v = substr($0, i + 1); n = split(substr($0, 1, i - 1), fr, ";")
		for (k = 1; k <= n; k++) if (fr[k] == f) { s += v; break } } END { printf "%.0f", s }'
}
# near WHAT NS MS: NS is within 10% of MS milliseconds.
near() {
	awk "BEGIN { r = $2 / 1e6 / $3; printf \"%s: %.1f ms in the profile, %.1f ms measured (%.3f)\n\", \"$1\", $2 / 1e6, $3, r
		exit !(r >= 0.9 && r <= 1.1) }" || fail "$1: not within 10%"
}
# accounted FILE WHAT: each thread's CPU + off-CPU is 95% to 105% of its life.
accounted() {
	acc=$(comment "$1" off_cpu_accounted)
	echo "$2: off_cpu_accounted=$acc"
	echo "$acc" | awk '{ split($1, r, /\.\./); exit !(r[1] >= 0.95 && r[2] <= 1.05 && $3 >= 1) }' ||
		{ go tool pprof -comments "$1"; fail "$2: off_cpu_accounted=$acc"; }
}

# The four kinds of wait, each about 400 ms in all in four rounds.
"$CP" record --off-cpu -o k.pb.gz -- "$W" kinds 400 >k.out 2>k.err || { cat k.err; fail "kinds: status $?"; }
grep -q "no off-CPU time" k.err && { cat k.err; fail "kinds: record said something of off-CPU time where it has it"; }
comment k.pb.gz off_cpu | grep -q "^recorded" || { go tool pprof -comments k.pb.gz; fail "kinds: off_cpu= not recorded"; }
[ "$(wc -l <k.out)" -eq 4 ] || { cat k.out; fail "kinds: the program's output"; }
while read -r kind fn ms; do
	near "$kind ($fn)" "$(cum k.pb.gz "$fn" off-cpu)" "$ms"
done <k.out
accounted k.pb.gz kinds
n=$(comment k.pb.gz off_cpu_accounted | awk '{ print $3 }')
[ "$n" -ge 8 ] || fail "kinds: $n threads checked, the program has 8"
# The values in pprof: off_cpu by its index, wall the default.
go tool pprof -sample_index=off_cpu -top k.pb.gz 2>/dev/null | grep -q "block_sleep$" ||
	{ go tool pprof -sample_index=off_cpu -top k.pb.gz; fail "pprof -sample_index=off_cpu has no block_sleep"; }
go tool pprof -top k.pb.gz 2>/dev/null | grep -q "^Type: wall" || fail "pprof's default is not wall"
go tool pprof -sample_index=cpu -top k.pb.gz 2>/dev/null | grep -q "burn_cpu$" || fail "pprof -sample_index=cpu has no burn_cpu"
"$CP" report k.pb.gz | grep -q "Total wall:" || fail "report's default is not wall"
"$CP" report --value cpu k.pb.gz | grep -q "Total CPU:" || fail "report --value cpu"
"$CP" report --value off-cpu k.pb.gz | grep -q "Total off-CPU:" || fail "report --value off-cpu"
# Measured at every switch, not sampled: each share's interval is the share.
"$CP" report --value off-cpu --intervals --top 0 k.pb.gz | grep -q "\[\([0-9.]*\), \1\] *block_sleep$" ||
	{ "$CP" report --value off-cpu --intervals k.pb.gz; fail "report --intervals of off-CPU time: not exact"; }
# wall is cpu + off_cpu, stack by stack.
wall=$(cum k.pb.gz main wall) cpu=$(cum k.pb.gz main cpu) off=$(cum k.pb.gz main off-cpu)
[ "$wall" -eq $((cpu + off)) ] || fail "main: wall $wall is not cpu $cpu + off_cpu $off"
echo "kinds: $(comment k.pb.gz off_cpu_ns) ns off the CPU in $(comment k.pb.gz off_cpu_switches) switches"
# diff compares CPU by default; off-CPU time, measured rather than
# sampled, has no sampling noise for it to test against: refused, saying so.
"$CP" diff k.pb.gz k.pb.gz >d.out 2>&1 || { cat d.out; fail "diff of a profile of off-CPU time with itself: status $?"; }
grep -q "^Compared by share" d.out || { cat d.out; fail "diff did not compare CPU"; }
"$CP" diff --value off-cpu k.pb.gz k.pb.gz >d.out 2>&1
[ $? -eq 2 ] && grep -q "not sampled but measured" d.out || { cat d.out; fail "diff --value off-cpu: not refused"; }

# More threads than CPUs: each waits for one, and says how long.
"$CP" record --off-cpu -o c.pb.gz -- "$W" crowd 4 300 >c.out 2>c.err || { cat c.err; fail "crowd: status $?"; }
waited=$(awk '{ print $4 }' c.out)
near "crowd ([waiting to run] under crowd_burn)" "$("$CP" report --value off-cpu --format folded c.pb.gz |
	awk '/;crowd_burn;.*\[waiting to run\] [0-9]+$/ { s += $NF } END { printf "%.0f", s }')" "$waited"
accounted c.pb.gz crowd
"$CP" report --value off-cpu c.pb.gz | grep -q "\[waiting to run\]$" || fail "crowd: report has no [waiting to run]"

# A thread that leaves each CPU and comes back on another: its switch-out
# and switch-in are in different CPUs' rings, which must be read in time
# order.
"$CP" record --off-cpu -o h.pb.gz -- "$W" hop 300 >h.out 2>h.err || { cat h.err; fail "hop: status $?"; }
near "hop (hop_sleep)" "$(cum h.pb.gz hop_sleep off-cpu)" "$(awk '{ print $3 }' h.out)"
accounted h.pb.gz hop

# A stack deeper than a sample copies: the wait (and the CPU) still
# charged to where it happened, and the stack says it was cut.
"$CP" record --off-cpu -o deep.pb.gz -- "$W" deep 100 200 >deep.out 2>deep.err || { cat deep.err; fail "deep: status $?"; }
near "deep (deep_sleep)" "$(cum deep.pb.gz deep_sleep off-cpu)" "$(awk '{ print $3 }' deep.out)"
"$CP" report --value off-cpu --format folded deep.pb.gz | grep -q "^\[truncated\];deep_frame;.*;deep_sleep;" ||
	{ "$CP" report --value off-cpu --format folded deep.pb.gz | cut -c1-300; fail "deep: the stack is not cut where the copy ends"; }
"$CP" report --value cpu --format folded deep.pb.gz | grep -q "^\[truncated\];deep_frame;.*;deep_burn;" ||
	{ "$CP" report --value cpu --format folded deep.pb.gz | cut -c1-300; fail "deep: a CPU sample's stack is not cut where the copy ends"; }

# A wait under a few KiB of stack (6 frames of 256 bytes below main),
# where most threads block: the switch-out's copy holds all of it, so
# the off-CPU time has its whole stack, from _start down, none cut short
# (a copy of 2 KiB cuts it: CP_SWITCH_STACK_COPY, switches.h).
"$CP" record --off-cpu -o mid.pb.gz -- "$W" deep 6 100 >mid.out 2>mid.err || { cat mid.err; fail "deep 6: status $?"; }
"$CP" report --value off-cpu --format folded mid.pb.gz | grep ";deep_sleep" >mid.folded || true
grep -q "^_start;.*;main;deep_frame;.*;deep_sleep;" mid.folded && ! grep -q "^\[truncated\]" mid.folded ||
	{ cut -c1-300 mid.folded; fail "deep 6: the off-CPU stack under 6 frames is not whole"; }

# Without --off-cpu: no context-switch event opened, the profile as ever.
if command -v strace >/dev/null 2>&1; then
	strace -o s1.trace -e trace=perf_event_open "$CP" record -o n.pb.gz -- "$W" kinds 40 >/dev/null 2>&1 ||
		fail "strace of record"
	strace -o s2.trace -e trace=perf_event_open "$CP" record --off-cpu -o y.pb.gz -- "$W" kinds 40 >/dev/null 2>&1 ||
		fail "strace of record --off-cpu"
	grep -q "CONTEXT_SWITCHES" s1.trace && fail "record opened a context-switch event without --off-cpu"
	grep -q "CONTEXT_SWITCHES" s2.trace || fail "record --off-cpu opened no context-switch event (strace)"
	echo "events: $(grep -c 'perf_event_open(' s1.trace) opened without --off-cpu, $(grep -c 'perf_event_open(' s2.trace) with"
else
	"$CP" record -o n.pb.gz -- "$W" kinds 40 >/dev/null 2>&1 || fail "record without --off-cpu"
fi
go tool pprof -raw n.pb.gz 2>/dev/null | grep -q "^Samples:" || fail "record without --off-cpu: no samples"
[ "$(go tool pprof -raw n.pb.gz 2>/dev/null | sed -n '/^Samples:/{n;p;}' | tr -s ' ' | sed 's/^ //')" = "samples/count cpu/nanoseconds" ] ||
	fail "without --off-cpu the sample types are not samples/count and cpu/nanoseconds"
go tool pprof -comments n.pb.gz 2>/dev/null | grep -q "off_cpu" && fail "without --off-cpu the profile speaks of off-CPU time"
"$CP" report --value off-cpu n.pb.gz >/dev/null 2>err && fail "report --value off-cpu of a CPU profile: status 0"
grep -q "record --off-cpu" err || { cat err; fail "report --value off-cpu of a CPU profile: no word of how to get it"; }

# Inside the process (LD_PRELOAD, CPUPROF_OFF_CPU=1): the perf engine's
# own context-switch events, the same truth.
LD_PRELOAD=$ROOT/$B/libcpuprof.so CPUPROF=l.pb.gz CPUPROF_OFF_CPU=1 "$W" kinds 400 >l.out 2>l.err ||
	{ cat l.err; fail "preloaded: status $?"; }
grep -q "no off-CPU time" l.err && { cat l.err; fail "preloaded: the library said something of off-CPU time where it has it"; }
comment l.pb.gz off_cpu | grep -q "^recorded" || { go tool pprof -comments l.pb.gz; fail "preloaded: no off_cpu=recorded"; }
while read -r kind fn ms; do
	near "preloaded: $kind ($fn)" "$(cum l.pb.gz "$fn" off-cpu)" "$ms"
done <l.out
accounted l.pb.gz preloaded
LD_PRELOAD=$ROOT/$B/libcpuprof.so CPUPROF=lh.pb.gz CPUPROF_OFF_CPU=1 "$W" hop 300 >lh.out 2>lh.err ||
	{ cat lh.err; fail "preloaded hop: status $?"; }
near "preloaded: hop (hop_sleep)" "$(cum lh.pb.gz hop_sleep off-cpu)" "$(awk '{ print $3 }' lh.out)"
accounted lh.pb.gz "preloaded hop"
# A signal engine has no context-switch events: one line, CPU only.
LD_PRELOAD=$ROOT/$B/libcpuprof.so CPUPROF=t.pb.gz CPUPROF_OFF_CPU=1 CPUPROF_ENGINE=timer "$W" kinds 40 >/dev/null 2>t.err ||
	{ cat t.err; fail "timer engine: status $?"; }
[ "$(grep -c "off-CPU" t.err)" -eq 1 ] && grep -q "^cpuprof: no off-CPU time: .*timer engine samples with signals.*recording CPU only" t.err ||
	{ cat t.err; fail "timer engine: not one line of why there is no off-CPU time"; }
comment t.pb.gz off_cpu | grep -q "^absent: .*timer engine" || { go tool pprof -comments t.pb.gz; fail "timer engine: no off_cpu=absent"; }
go tool pprof -sample_index=off_cpu -top t.pb.gz >/dev/null 2>&1 && fail "timer engine: the profile has off_cpu"
LD_PRELOAD=$ROOT/$B/libcpuprof.so CPUPROF=x.pb.gz CPUPROF_OFF_CPU=2 "$W" kinds 40 >/dev/null 2>x.err
grep -q "CPUPROF_OFF_CPU=2: .*0 or 1" x.err || { cat x.err; fail "CPUPROF_OFF_CPU=2 is not refused"; }

# Attached to a process that already waits: its threads' waits from the
# attach on, those under way then in [off-CPU: since before the profile
# started].
"$W" kinds 2400 >a.out 2>&1 &
pid=$!
sleep 0.3
"$CP" record --off-cpu -p $pid -d 1 -o a.pb.gz >/dev/null 2>a.err || { cat a.err; fail "attach: status $?"; }
wait $pid || fail "attach: the program failed"
for fn in block_sleep block_read block_mutex block_cond; do
	v=$(cum a.pb.gz $fn off-cpu)
	[ "$v" -gt 0 ] || fail "attach: no off-CPU time under $fn"
done
"$CP" report --value off-cpu --format folded a.pb.gz | grep -q "^\[off-CPU: since before the profile started\] " ||
	fail "attach: no [off-CPU: since before the profile started]"
accounted a.pb.gz attach

# Refused: an unprivileged user at perf_event_paranoid 2 may sample from
# outside (or inside), but not the kernel-mode samples of switch-outs.
if [ "$(id -u)" -eq 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -eq 2 ] && command -v setpriv >/dev/null; then
	mkdir u && chmod 777 u && cp "$CP" "$W" u/ && chmod 755 u/cpuprof u/work_offcpu
	(cd u && setpriv --reuid=65534 --regid=65534 --clear-groups ./cpuprof record --off-cpu -o u.pb.gz -- \
		./work_offcpu kinds 40 >/dev/null 2>../u.err)
	rc=$?
	[ $rc -eq 0 ] || { cat u.err; fail "unprivileged: status $rc"; }
	mv u/u.pb.gz .
	[ "$(grep -c "off-CPU" u.err)" -eq 1 ] || { cat u.err; fail "unprivileged: not one line of why"; }
	grep -q "no off-CPU time: .*perf_event_paranoid=2.*CAP_PERFMON.*recording CPU only" u.err ||
		{ cat u.err; fail "unprivileged: the line does not say what refused and what would allow it"; }
	comment u.pb.gz off_cpu | grep -q "^absent: .*perf_event_paranoid=2" ||
		{ go tool pprof -comments u.pb.gz; fail "unprivileged: the profile does not say why it has no off-CPU time"; }
	comment u.pb.gz record | grep -q "^from outside" || fail "unprivileged: not recorded from outside"
	go tool pprof -sample_index=off_cpu -top u.pb.gz >/dev/null 2>&1 && fail "unprivileged: the profile has off_cpu"
	go tool pprof -sample_index=cpu -top u.pb.gz 2>/dev/null | grep -q "burn_cpu$" || fail "unprivileged: no CPU profile"
	echo "unprivileged: $(cat u.err)"
	# ... and inside the process, the library likewise.
	cp "$ROOT/$B/libcpuprof.so" u/ && chmod 755 u/libcpuprof.so
	(cd u && setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$tmp/u/libcpuprof.so" CPUPROF=v.pb.gz \
		CPUPROF_OFF_CPU=1 ./work_offcpu kinds 40 >/dev/null 2>../v.err) || { cat v.err; fail "unprivileged, preloaded: status"; }
	[ "$(grep -c "off-CPU" v.err)" -eq 1 ] && grep -q "^cpuprof: no off-CPU time: .*perf_event_paranoid=2.*CAP_PERFMON" v.err ||
		{ cat v.err; fail "unprivileged, preloaded: not one line of what refused"; }
	comment u/v.pb.gz off_cpu | grep -q "^absent: " || fail "unprivileged, preloaded: no off_cpu=absent"
	echo "unprivileged, preloaded: $(cat v.err)"
fi

# Refused by a seccomp filter (as in a container): no perf events at all,
# so record profiles inside each process, CPU only, and says both in one
# line.
if "$NO_PERF" -e EACCES true 2>/dev/null; then
	"$NO_PERF" -e EACCES "$CP" record --off-cpu -o f.pb.gz -- "$W" kinds 40 >/dev/null 2>f.err ||
		{ cat f.err; fail "seccomp: status $?"; }
	[ "$(grep -c "off-CPU" f.err)" -eq 1 ] || { cat f.err; fail "seccomp: not one line of why"; }
	grep -q "no off-CPU time: it is recorded from outside only.*profiling CPU inside each process" f.err ||
		{ cat f.err; fail "seccomp: the line does not say why"; }
	comment f.pb.gz off_cpu | grep -q "^absent: " || { go tool pprof -comments f.pb.gz; fail "seccomp: no off_cpu=absent"; }
	echo "seccomp: $(cat f.err)"
fi
echo ok
