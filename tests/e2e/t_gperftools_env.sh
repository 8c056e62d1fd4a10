#!/bin/sh
# t_gperftools_env.sh -- gperftools' environment on the drop-in, with a
# program built against gperftools' own library and run on ours:
# CPUPROFILE in a program that forks (the parent's file is the parent's,
# and nothing else is written) and one that forks and execs (the child
# writes FILE_<pid>); CPUPROFILESIGNAL's numbered profiles, beside what
# gperftools itself writes for the same program; CPUPROFILE_FREQUENCY in
# the header; CPUPROFILE_REALTIME's one line; CPUPROFILE_PER_THREAD_TIMERS
# and CPUPROFILE_TIMER_SIGNAL accepted; pprof by the name .pb.gz and by
# CPUPROFILE_FORMAT; a program with its own SIGPROF handler profiled;
# samples_gathered at 1 kHz being the CPU time, also with the tick-bound
# timer engine (samples of several periods).
. tests/gperftools/common.sh

build_gperf work
# only_profile_line ERR: stderr is gperftools' closing line(s) alone
only_profile_lines() {
	grep -v -e '^PROFILE: interrupts/evictions/bytes = [0-9]*/0/[0-9]*$' -e '^cpuprof: .*samples were lost' "$1" |
		grep -q . &&
		{ cat "$1"; fail "$2: stderr has more than gperftools' closing lines"; }
	:
}

# fork: no file but the parent's, which has the parent's work only.
mkdir fork && CPUPROFILE=$tmp/fork/f.prof ours ./work fork 200 >out 2>err || { rc=$?; cat err; fail "fork: status $rc"; }
grep -qx "work done" out && grep -q "^child [0-9]* done" out || fail "fork: output changed"
[ "$(ls fork)" = f.prof ] || fail "fork: expected fork/f.prof only, found: $(ls fork)"
read_prof work fork/f.prof
[ "$(gleader fork/f.prof)" = parent_work ] || { cat fork/f.prof.g; fail "fork: parent_work does not lead"; }
ghas fork/f.prof child_work && fail "fork: the child's work is in the parent's profile"
[ "$(lines err)" -eq 1 ] || { cat err; fail "fork: expected the parent's closing line only"; }

# fork+exec: the child, a program on our library too, writes FILE_<pid>.
mkdir exec && CPUPROFILE=$tmp/exec/x.prof ours ./work forkexec 200 >out 2>err || { rc=$?; cat err; fail "forkexec: status $rc"; }
child=$(sed -n 's/^child \([0-9]*\) exited 0$/\1/p' out)
[ -n "$child" ] || { cat out; fail "forkexec: the child failed"; }
[ "$(ls exec | tr '\n' ' ')" = "x.prof x.prof_$child " ] || fail "forkexec: expected x.prof and x.prof_$child, found: $(ls exec)"
read_prof work exec/x.prof
read_prof work "exec/x.prof_$child"
[ "$(gleader exec/x.prof)" = parent_work ] || { cat exec/x.prof.g; fail "forkexec: parent_work does not lead the parent's"; }
[ "$(gleader "exec/x.prof_$child")" = exec_child_work ] || { cat "exec/x.prof_$child.g"; fail "forkexec: the child's profile"; }
ghas exec/x.prof exec_child_work && fail "forkexec: the child's work is in the parent's profile"
only_profile_lines err forkexec

# The switch: start, stop, start, stop: FILE.0 and FILE.1, each with its
# phase's work; the same files as gperftools itself writes.
for lib in ours gperftools; do
	mkdir sw.$lib
	run=ours
	[ $lib = gperftools ] && run=
	CPUPROFILE=$tmp/sw.$lib/s.prof CPUPROFILESIGNAL=12 $run ./work switch 12 150 >out 2>err ||
		{ rc=$?; cat err; fail "switch, $lib: status $rc"; }
	grep -qx "work done" out || fail "switch, $lib: output changed"
	grep -qx "Using signal 12 as cpu profiling switch" err || { cat err; fail "switch, $lib: no 'Using signal' line"; }
	[ "$(ls sw.$lib | tr '\n' ' ')" = "s.prof.0 s.prof.1 " ] || fail "switch, $lib: files: $(ls sw.$lib)"
	read_prof work sw.$lib/s.prof.0
	read_prof work sw.$lib/s.prof.1
	echo "switch, $lib: s.prof.0 $(gtotal sw.$lib/s.prof.0) samples, s.prof.1 $(gtotal sw.$lib/s.prof.1)"
	# What is in gperftools' (a process-wide timer, samples while the
	# machine is busy landing where they will) is its own business.
	[ $lib = ours ] || continue
	[ "$(gleader sw.$lib/s.prof.0)" = switch_first ] && ! ghas sw.$lib/s.prof.0 switch_second &&
		! ghas sw.$lib/s.prof.0 unprofiled_work || { cat sw.$lib/s.prof.0.g; fail "switch, $lib: s.prof.0"; }
	[ "$(gleader sw.$lib/s.prof.1)" = switch_second ] && ! ghas sw.$lib/s.prof.1 switch_first &&
		! ghas sw.$lib/s.prof.1 unprofiled_work || { cat sw.$lib/s.prof.1.g; fail "switch, $lib: s.prof.1"; }
done

# The rate is in the header: gperftools' default, and as asked.
CPUPROFILE=$tmp/d.prof ours ./work env 0 50 >out 2>err || { rc=$?; fail "default rate: status $rc"; }
[ "$(period_us d.prof)" = 10000 ] || fail "default rate: period $(period_us d.prof) us, expected 10000 (100 Hz)"
CPUPROFILE=$tmp/r.prof CPUPROFILE_FREQUENCY=250 ours ./work env 0 50 >out 2>err || { rc=$?; fail "250 Hz: status $rc"; }
[ "$(period_us r.prof)" = 4000 ] || fail "250 Hz: period $(period_us r.prof) us"
only_profile_lines err "CPUPROFILE_FREQUENCY=250"

# CPUPROFILE_REALTIME: one line saying what it is instead, and a profile.
CPUPROFILE=$tmp/rt.prof CPUPROFILE_REALTIME=1 ours ./work env 1 100 >out 2>err || { rc=$?; fail "realtime: status $rc"; }
[ "$(grep -c '^cpuprof: ' err)" -eq 1 ] && grep -q '^cpuprof: CPUPROFILE_REALTIME: .*CPU time' err ||
	{ cat err; fail "realtime: expected one line on CPU time"; }
read_prof work rt.prof
[ "$(gleader rt.prof)" = hot_main ] || fail "realtime: hot_main does not lead"

# Per-thread timers and their signal: accepted, quietly.
CPUPROFILE=$tmp/pt.prof CPUPROFILE_PER_THREAD_TIMERS=1 CPUPROFILE_TIMER_SIGNAL=40 ours ./work env 2 100 >out 2>err ||
	{ rc=$?; fail "per-thread timers: status $rc"; }
only_profile_lines err "CPUPROFILE_TIMER_SIGNAL=40"
read_prof work pt.prof
[ "$(gleader pt.prof)" = hot_main ] && ghas pt.prof worker_a && ghas pt.prof worker_b ||
	{ cat pt.prof.g; fail "per-thread timers: the profile"; }

# pprof: by the name, by CPUPROFILE_FORMAT, in an exec'd child too; and
# the binary format asked for under a .pb.gz name.
CPUPROFILE=$tmp/p.pb.gz ours ./work env 1 100 >out 2>err || { rc=$?; fail "pprof: status $rc"; }
is_gzip p.pb.gz || fail "p.pb.gz is not a pprof profile"
[ "$(go tool pprof -top p.pb.gz 2>/dev/null | sed -n '/flat%/{n;p;q}' | awk '{ print $6 }')" = hot_main ] ||
	fail "p.pb.gz: hot_main does not lead"
go tool pprof -comments p.pb.gz 2>/dev/null | grep -q 'coverage=' || fail "p.pb.gz has no coverage comment"
# The program's two threads were sampled (and, with the perf engine,
# whose events every new thread inherits, the library's reader too).
threads=$(go tool pprof -comments p.pb.gz 2>/dev/null | sed -n 's/^ *threads=//p')
[ "${threads:-0}" -ge 2 ] || fail "p.pb.gz: $threads threads sampled, expected the program's 2 at least"
CPUPROFILE=$tmp/fp.prof CPUPROFILE_FORMAT=pprof ours ./work env 0 50 >out 2>err || { rc=$?; fail "FORMAT=pprof: status $rc"; }
is_gzip fp.prof || fail "CPUPROFILE_FORMAT=pprof: not a pprof profile"
CPUPROFILE=$tmp/fl.pb.gz CPUPROFILE_FORMAT=legacy ours ./work env 0 50 >out 2>err || { rc=$?; fail "FORMAT=legacy: status $rc"; }
[ "$(period_us fl.pb.gz)" = 10000 ] || fail "CPUPROFILE_FORMAT=legacy: not the binary format"
mkdir pexec && CPUPROFILE=$tmp/pexec/x.pb.gz ours ./work forkexec 100 >out 2>err || { rc=$?; fail "pprof forkexec: status $rc"; }
child=$(sed -n 's/^child \([0-9]*\) exited 0$/\1/p' out)
is_gzip pexec/x.pb.gz && is_gzip "pexec/x.pb.gz_$child" || fail "pprof forkexec: $(ls pexec)"

# A program with a SIGPROF handler of its own: profiled all the same (on
# another signal), and its handler sees none of the profiler's.
ours ./work ownsigprof "$tmp/own.prof" 200 >out 2>err || { rc=$?; cat err; fail "own SIGPROF: status $rc"; }
grep -qx "start: 1" out && grep -qx "own SIGPROF handler ran 0 times" out || { cat out; fail "own SIGPROF: output"; }
read_prof work own.prof
[ "$(gleader own.prof)" = hot_main ] && [ "$(gtotal own.prof)" -ge 15 ] || { cat own.prof.g; fail "own SIGPROF: profile"; }
./work ownsigprof "$tmp/own.gperftools.prof" 200 >out 2>err
read_prof work own.gperftools.prof
echo "own SIGPROF handler: ours $(gtotal own.prof) samples, gperftools itself $(gtotal own.gperftools.prof)"

# samples_gathered is the CPU time in periods: every sample counted, and
# with the timer engine (which fires at most once a tick, so each sample
# stands for several periods at 1 kHz) still the CPU time, less what came
# after the last sample, where one a sample would be a quarter to a
# third of it at a 250 Hz tick (best of four: a busy machine can keep the
# timer quiet for a while).
least=0.45
on_time work && least=0.85
for engine in auto timer; do
	[ $engine = timer ] && least=0.5
	best=0
	for run in 1 2 3 4; do
		CPUPROF_ENGINE=$engine CPUPROFILE_FREQUENCY=1000 ours ./work state "$tmp/st.prof" 1000 >out 2>err ||
			{ rc=$?; cat err; fail "state, $engine: status $rc"; }
		n=$(sed -n 's/^samples //p' out)
		cpu=$(sed -n 's/^profiled_cpu_ms //p' out)
		echo "engine $engine: samples_gathered $n for $cpu ms of CPU at 1 kHz"
		ratio "$n" "$cpu" 0 1.15 || fail "$engine: samples_gathered $n for $cpu ms at 1 kHz"
		ratio "$n" "$cpu" $least 1.15 && { best=1; break; }
	done
	[ $best = 1 ] || fail "$engine: samples_gathered $n for $cpu ms at 1 kHz"
done
echo "all environment checks passed"
