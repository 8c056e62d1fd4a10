#!/bin/sh
# t_cli_usage.sh -- the cpuprof command line: --help and --version, and
# that bad usage of the CLI, `record`, `top`, `report` and `diff` exits 2 with a message
# and never starts the command; `record` of a command that cannot be run
# exits 127.  Needs no libcpuprof: CPUPROF_LIB points at a stand-in file,
# so that a command wrongly started would still run (and be caught).
B=${B:-build}
CP=$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$CP" ] || fail "$CP is not built (make build/cpuprof)"
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_cli_usage.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
: >fake-lib.so
CPUPROF_LIB=$tmp/fake-lib.so
export CPUPROF_LIB

# run EXPECTED-STATUS ARGS...: runs cpuprof ARGS, checks the exit status
run() {
	want=$1
	shift
	$EMU "$CP" "$@" >out 2>err
	rc=$?
	[ "$rc" -eq "$want" ] ||
		{ cat out err >&2; fail "cpuprof $*: exit $rc, expected $want"; }
}

# bad EXPECTED-WORD ARGS...: cpuprof ARGS must exit 2, print a message with
# EXPECTED-WORD on stderr, nothing on stdout, and not create ./marker
bad() {
	word=$1
	shift
	rm -f marker
	run 2 "$@"
	[ -s out ] && { cat out >&2; fail "cpuprof $*: wrote to stdout"; }
	grep -q -- "$word" err || { cat err >&2; fail "cpuprof $*: no '$word' in the message"; }
	[ -e marker ] && fail "cpuprof $*: started the command"
	echo "ok: cpuprof $* -> $(head -n 1 err)"
}

# top level
run 0 --help
grep -q 'cpuprof record' out && grep -q 'cpuprof top' out && grep -q 'cpuprof report' out &&
	grep -q 'cpuprof diff' out || fail "--help does not describe record, top, report and diff"
run 0 --version
[ "$(cat out)" = "cpuprof 0.1.0" ] || fail "--version printed '$(cat out)'"
bad usage
bad "unknown command 'frobnicate'" frobnicate
bad "unknown command" --bogus

# report
run 0 report --help
grep -q 'cpuprof report' out || fail "report --help"
bad "no FILE" report
bad "--top" report --top
bad "--top" report --top x some-file
bad "--top" report --top=-1 some-file
bad "unknown option" report --bogus some-file
bad "no-such-a" report no-such-a no-such-b
bad "--format is one of" report --format bogus some-file
bad "--format is one of" report --format
bad "--min-share" report --min-share 101 some-file
bad "--min-share" report --min-share=x some-file
bad "--group-by" report --group-by cpu some-file
bad "--value" report --value
bad "-o needs" report -o
bad "-o needs" report -o '' some-file
bad "regular expression" report --list '[' some-file

# diff: bad usage is exit 2, which a CI gate tells from 1 (changed)
run 0 diff --help
grep -q 'cpuprof diff' out && grep -q 'threshold' out || fail "diff --help"
bad "needs BASE and at least one NEW" diff
bad "needs BASE and at least one NEW" diff only-one
bad "needs BASE and at least one NEW" diff --base a
bad "--base needs" diff --base
bad "--threshold" diff --threshold a b
bad "--threshold" diff --threshold 101 a b
bad "--threshold" diff --threshold -1 a b
bad "--threshold" diff --threshold=nan a b
bad "--alpha" diff --alpha 0 a b
bad "--alpha" diff --alpha 0.6 a b
bad "--alpha" diff --alpha=x a b
bad "--alpha" diff --alpha nan a b
bad "--alpha" diff --alpha
bad "--top" diff --top -1 a b
bad "--format is one of" diff --format tree a b
bad "--value" diff --value
bad "-o needs" diff -o
bad "unknown option" diff --bogus a b
bad "no-such-a" diff no-such-a no-such-b

# top: record's rules where they are record's flags, before anything runs
run 0 top --help
grep -q 'cpuprof top' out || fail "top --help"
bad "no command" top
bad "-p and a command" top -p 1 -- touch marker
bad "goes with -p" top -d 3 -- touch marker
bad "--grace is the time CMD has" top -p 1 --grace 3
bad "-i/--interval needs" top -i 0 -- touch marker
bad "-i/--interval needs" top -i x -- touch marker
bad "-i/--interval needs" top --interval=3601 -- touch marker
bad "from 1 to 100000" top -F 0 -- touch marker
bad "from 1 to 1024" top --depth 0 -- touch marker
bad "use one of auto, dwarf, fp" top --unwind frames -- touch marker
bad "-n/--rows needs" top -n 0 -- touch marker
bad "unknown option" top --engine perf -- touch marker
bad "cpuprof top: -p abc: not a process ID" top -p abc

# record: every bad option stops before the command runs
run 0 record --help
grep -q 'cpuprof record' out || fail "record --help"
bad "no command" record
bad "no command" record -F 100 --
bad "needs a value" record -o
# An option that would be ignored is refused.
bad "goes with --engine timer or itimer" record --signal 40 -- touch marker
bad "goes with --engine timer or itimer" record --engine perf --signal 40 -- touch marker
bad "--grace is the time CMD has" record -p 1 --grace 3
# one parser of id lists (flags_ids) for -p, --pid and --tid: an empty item is refused everywhere
bad "not a process ID" record -p 12,
bad "not a process ID" record -p 1,,2
bad "not a list of process ids" report --pid 12, x.pb.gz
bad "--group-by does not apply to top" report --group-by process x.pb.gz
bad "--group-by does not apply to speedscope" report --format speedscope --group-by thread x.pb.gz
bad "--format does not apply to --list" report --format tree --list main x.pb.gz
bad "--min-share does not apply to top" report --min-share 5 x.pb.gz
bad "--top does not apply to tree" report --format tree --top 3 x.pb.gz
bad "--intervals does not apply to folded" report --format folded --intervals x.pb.gz
# "-o -- CMD" is a missing value, not a profile named "--".
bad "needs a value" record -o -- touch marker
[ -e -- ] && fail "record -o -- CMD wrote a file named --"
bad "from 1 to 100000" record -F 0 -- touch marker
bad "from 1 to 100000" record -F 100001 -- touch marker
bad "from 1 to 100000" record -F abc -- touch marker
bad "from 1 to 100000" record -F 1.5 -- touch marker
bad "from 1 to 100000" record -F '' -- touch marker
bad "from 1 to 100000" record --hz=-5 -- touch marker
bad "use one of auto, perf, hw, timer, itimer" record --engine bogus -- touch marker
bad "use one of auto, perf, hw, timer, itimer" record --engine= -- touch marker
bad "from 1 to 1024" record --depth 0 -- touch marker
bad "from 1 to 1024" record --depth 1025 -- touch marker
bad "not a signal number" record --engine timer --signal 0 -- touch marker
bad "not a signal number" record --engine timer --signal 65 -- touch marker
bad "not a signal number" record --engine timer --signal PROF -- touch marker
# The library would refuse these too (src/profile/options.c: one description).
for s in 1 2 9 11 13 14 15 19; do
	bad "cannot sample" record --engine timer --signal $s -- touch marker
done
# The hw engine where no PMU counts cycles (most virtual machines): refused
# before the command runs, not run unprofiled in each process.
TE=${CP%/cpuprof}/tests/tool_engine
if [ -x "$TE" ] && ! $EMU "$TE" hw >/dev/null 2>&1; then
	bad "record: --engine hw: " record --engine hw -- touch marker
fi
bad "use one of auto, dwarf, fp" record --unwind frames -- touch marker
bad "use one of auto, dwarf, fp" record --unwind= -- touch marker
bad "unknown option" record --bogus -- touch marker
# One message for an empty value in every command (cli/flags.c).
bad "-o/--output needs a file name" record -o '' -- touch marker
bad "no-such-dir" record -o no-such-dir/p.pb.gz -- touch marker
mkdir adir
bad "directory" record -o adir -- touch marker
# The library is found only where it is preloaded (an engine that runs
# inside the process).
CPUPROF_LIB=$tmp/no-such-lib.so bad "CPUPROF_LIB" record --engine timer -- touch marker

# a command that cannot be run: 127 like a shell, and a message naming it
run 127 record -o p.pb.gz -- ./no/such/command
grep -q 'no/such/command' err || { cat err >&2; fail "no message for a missing command"; }
run 127 record -o p.pb.gz -- no-such-command-cpuprof-test
[ -e p.pb.gz ] && fail "a profile appeared for a command that never ran"
echo "ok"
