#!/bin/sh
# t_gperftools_bad.sh -- bad input to the gperftools drop-in never stops
# the program: an unwritable CPUPROFILE (gperftools aborts), empty or
# absurd CPUPROFILE_FREQUENCY (gperftools quietly takes its default or
# its limit), bad CPUPROFILESIGNAL values (gperftools aborts), a signal
# the program already disposes of, the other variables' bad values: each
# gives one warning line, and the program's output and exit status are
# what they are without a profiler.  The calls gperftools answers quietly
# (ProfilerStart twice, ProfilerStop and ProfilerFlush without a profile,
# a start into a missing directory) print exactly what they print under
# gperftools itself; ProfilerFlush() in signal handlers, in the thread
# that stops the profile (in the middle of its stop) and in another, 30
# profiles over, finishes (within a minute) and leaves a profile.
. tests/gperftools/common.sh

build_gperf work
# warned CASE ERR PATTERN: ERR has exactly one cpuprof line, matching
warned() {
	[ "$(grep -c '^cpuprof: ' "$2")" -eq 1 ] && grep -q "^cpuprof: $3" "$2" ||
		{ cat "$2"; fail "$1: expected one warning line matching '$3'"; }
}
# unchanged CASE: the program ran as it does unprofiled (status 7)
unchanged() {
	[ "$rc" -eq 7 ] || { cat err; fail "$1: exit status $rc, expected the program's 7"; }
	grep -qx "work done" out || fail "$1: the program's output changed"
}

# An unwritable CPUPROFILE: one line, no profile, the program runs on.
CPUPROFILE=/nonexistent-dir/x.prof ours ./work env 1 50 7 >out 2>err
rc=$?
unchanged "unwritable CPUPROFILE"
[ "$(lines err)" -eq 1 ] || { cat err; fail "unwritable CPUPROFILE: more than the warning on stderr"; }
warned "unwritable CPUPROFILE" err \
	"cannot turn on CPU profiling for '/nonexistent-dir/x.prof': No such file or directory; profiling disabled$"
CPUPROFILE=/nonexistent-dir/x.prof ./work env 1 50 7 >/dev/null 2>&1
echo "unwritable CPUPROFILE under gperftools itself: exit status $?"

# CPUPROFILE_FREQUENCY: one line, then gperftools' choice: its default
# (100 Hz) for what is not a positive number, its limit above 4000.
for v in "" abc 0 -5 1e3 "100 " 99999999999999999999 5000; do
	rm -f f.prof
	CPUPROFILE=$tmp/f.prof CPUPROFILE_FREQUENCY="$v" ours ./work env 1 50 7 >out 2>err
	rc=$?
	unchanged "CPUPROFILE_FREQUENCY='$v'"
	warned "CPUPROFILE_FREQUENCY='$v'" err "CPUPROFILE_FREQUENCY="
	case $v in
	5000 | 999*) want=250 ;;
	*) want=10000 ;;
	esac
	[ "$(period_us f.prof)" = $want ] || fail "CPUPROFILE_FREQUENCY='$v': period $(period_us f.prof) us, expected $want"
done

# CPUPROFILESIGNAL: what is no signal, cannot be caught, or is the
# program's (an inherited "ignore"); and without CPUPROFILE.
for v in abc 0 99 9 12; do
	rm -rf sig && mkdir sig
	if [ "$v" = 12 ]; then
		(trap '' USR2 && CPUPROFILE=$tmp/sig/s.prof CPUPROFILESIGNAL=$v ours ./work env 1 50 7 >out 2>err)
	else
		CPUPROFILE=$tmp/sig/s.prof CPUPROFILESIGNAL=$v ours ./work env 1 50 7 >out 2>err
	fi
	rc=$?
	unchanged "CPUPROFILESIGNAL=$v"
	[ "$(lines err)" -eq 1 ] || { cat err; fail "CPUPROFILESIGNAL=$v: more than one line on stderr"; }
	warned "CPUPROFILESIGNAL=$v" err "CPUPROFILESIGNAL.*profiling disabled$"
	[ -z "$(ls sig)" ] || fail "CPUPROFILESIGNAL=$v: wrote $(ls sig)"
done
CPUPROFILESIGNAL=12 ours ./work env 1 50 7 >out 2>err
rc=$?
unchanged "CPUPROFILESIGNAL without CPUPROFILE"
warned "CPUPROFILESIGNAL without CPUPROFILE" err "CPUPROFILESIGNAL is set but CPUPROFILE names no file"

# The other variables: one line each, and the profile is taken.
# SIGTERM (15) is a signal, but not one the library samples with
# (cp_signal_unusable): cpuprof's choice, not a profile refused.
for bad in CPUPROFILE_TIMER_SIGNAL=9 CPUPROFILE_TIMER_SIGNAL=15 CPUPROFILE_TIMER_SIGNAL=x CPUPROFILE_FORMAT=xml CPUPROF_ENGINE=fast; do
	rm -f o.prof
	env "$bad" CPUPROFILE=$tmp/o.prof CPUPROFILE_FREQUENCY=1000 LD_LIBRARY_PATH="$LIB" ./work env 1 50 7 >out 2>err
	rc=$?
	unchanged "$bad"
	warned "$bad" err "${bad%%=*}="
	read_prof work o.prof
	[ "$(gleader o.prof)" = hot_main ] || fail "$bad: no profile"
done

# The quiet calls: the same text as under gperftools, and on stderr only
# the closing line of the one profile.
./work api "$tmp/a.prof" 100 >api.gperftools 2>/dev/null || { rc=$?; fail "api under gperftools: status $rc"; }
ours ./work api "$tmp/a.prof" 100 >api.ours 2>err || { rc=$?; fail "api: status $rc"; }
diff api.gperftools api.ours || fail "ProfilerStart twice, Stop and Flush without a profile: not what gperftools says"
[ "$(lines err)" -eq 1 ] && grep -q '^PROFILE: ' err || { cat err; fail "api: stderr is not one closing line"; }

# ProfilerFlush in a signal handler while another thread stops.
CPUPROFILE_FREQUENCY=1000 ours timeout -k 5 60 ./work flushrace "$tmp/race.prof" 30 >out 2>err ||
	{ rc=$?; cat err; fail "flushrace: status $rc"; }
grep -qx "flushrace done: 30 rounds, many flushes" out || { cat out; fail "flushrace: did not finish, or flushed little"; }
[ "$(grep -c '^PROFILE: ' err)" -eq 30 ] && [ "$(grep -vc -e '^PROFILE: ' -e 'samples were lost' err)" -eq 0 ] ||
	{ cat err; fail "flushrace: stderr"; }
# The last profile is whole: the main thread's 20 ms of race_work, and
# the flushing thread's handlers.
read_prof work race.prof
[ "$(gtotal race.prof)" -ge 10 ] && ghas race.prof race_work || { cat race.prof.g; fail "flushrace: the last profile"; }
echo "all bad-input checks passed"
