#!/bin/sh
# t_cli_record_env.sh -- `cpuprof record` as a process runner, with an
# empty stand-in for libcpuprof.so (via CPUPROF_LIB) so it needs nothing
# from the library where it preloads it (--engine timer; from outside,
# the default, nothing is preloaded): the environment the command gets,
# exit statuses, an
# earlier profile kept until a new one replaces it, what record says when nothing was profiled
# (and that it then writes nothing), an unwritable output refused before
# the command runs, signals the command sends record, and the command's
# own signal dispositions and mask.  Skips without cc.
B=${B:-build}
CP=$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] || fail "$CP is not built (make build/cpuprof)"
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
command -v cc >/dev/null 2>&1 || skip "no C compiler (cc) for the stand-in library"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_cli_record_env.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
tmp=$(pwd -P)
echo 'int cpuprof_stand_in;' >stub.c
cc -shared -fPIC -o libstub.so stub.c || fail "cannot build the stand-in library"
cp libstub.so libother.so
CPUPROF_LIB=$tmp/libstub.so
export CPUPROF_LIB
unset LD_PRELOAD CPUPROF CPUPROF_HZ CPUPROF_ENGINE CPUPROF_DEPTH CPUPROF_SIGNAL CPUPROF_UNWIND

# record EXPECTED-STATUS ARGS...: runs cpuprof record ARGS, checks the
# status; stderr is left in ./err
record() {
	want=$1
	shift
	$EMU "$CP" record "$@" 2>err
	rc=$?
	[ "$rc" -eq "$want" ] ||
		{ cat err >&2; fail "record $*: exit $rc, expected $want"; }
	sed 's/^/  /' err
}
has() { grep -qxF -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks the line '$2'"; }; }
lacks() { grep -q -- "$2" "$1" && { cat "$1" >&2; fail "$1 has '$2'"; }; :; }

# --- environment, with every option, and with none ---
record 0 -o p.pb.gz -F 250 --engine timer --depth 7 --signal 40 --unwind dwarf -- \
	sh -c 'env >env1'
has env1 "LD_PRELOAD=$tmp/libstub.so"
grep -q '^CPUPROF_SHM=/proc/[0-9]*/fd/[0-9]*$' env1 || { cat env1; fail "no CPUPROF_SHM in the environment"; }
has env1 "CPUPROF_HZ=250"
has env1 "CPUPROF_ENGINE=timer"
has env1 "CPUPROF_DEPTH=7"
has env1 "CPUPROF_SIGNAL=40"
has env1 "CPUPROF_UNWIND=dwarf"
# The library stand-in profiles nothing: record says so, writes nothing.
grep -q '^cpuprof: no profile written: sh was not profiled: it never loaded the profiler' err ||
	fail "no 'not profiled' line"
[ -e p.pb.gz ] && fail "a profile was written though nothing was profiled"
CPUPROF=$tmp/x.pb.gz CPUPROF_OWNER=1 LD_PRELOAD=$tmp/libother.so record 0 --engine timer -- sh -c 'env >env2'
has env2 "LD_PRELOAD=$tmp/libstub.so:$tmp/libother.so"
# LD_PRELOAD mode's own variables do not reach the command.
lacks env2 "^CPUPROF="
lacks env2 "^CPUPROF_OWNER="
for v in HZ DEPTH SIGNAL UNWIND; do lacks env2 "^CPUPROF_$v="; done
# The settings as record took them, and none record was not given, so
# that the library reads only what record checked.
CPUPROF_HZ=junk CPUPROF_DEPTH=0 record 0 --engine timer -F 0250 -- sh -c 'env >env4'
has env4 "CPUPROF_HZ=250"
lacks env4 "^CPUPROF_DEPTH="
# From outside nothing is added to the command's environment, and what
# the user preloads stays as it was.
CPUPROF=$tmp/x.pb.gz LD_PRELOAD=$tmp/libother.so record 0 -- sh -c 'env >env3'
if grep -q "^record=from outside" err 2>/dev/null || ! grep -q "not from outside" err; then
	has env3 "LD_PRELOAD=$tmp/libother.so"
	lacks env3 "^CPUPROF_SHM="
fi

# --- exit statuses, preloaded and from outside ---
record 3 -o p.pb.gz --engine timer -- sh -c 'exit 3'
record 143 -o p.pb.gz --engine timer -- sh -c 'kill -TERM $$'
grep -q 'no profile written: sh was not profiled' err || fail "no word of the unprofiled command"
record 3 -o p.pb.gz -- sh -c 'exit 3'
record 143 -o p.pb.gz -- sh -c 'kill -TERM $$'
record 137 -o p.pb.gz -- sh -c 'kill -KILL $$' 

# --- an earlier profile stays until the new one replaces it ---
echo earlier >p.pb.gz
record 127 -o p.pb.gz -- ./no-such-command
[ "$(cat p.pb.gz 2>/dev/null)" = earlier ] || fail "a command that could not run took the earlier profile"
record 2 -o p.pb.gz -p 999999999 -d 1
[ "$(cat p.pb.gz 2>/dev/null)" = earlier ] || fail "a refused -p took the earlier profile"
record 143 -o p.pb.gz --engine timer -- sh -c 'kill -TERM $$'
grep -q 'p.pb.gz is an earlier profile, left as it was' err || { cat err; fail "no word of the earlier profile"; }
# (From outside: the stand-in library profiles nothing, and under
# qemu-user there is no outside.)
if [ -z "${EMU:-}" ]; then
	record 0 -o p.pb.gz -- true
	[ "$(cat p.pb.gz 2>/dev/null)" = earlier ] && fail "the new profile did not replace the earlier one"
fi

# --- an unwritable output fails before the command runs ---
mkdir ro && chmod 555 ro
if [ "$(id -u)" -ne 0 ]; then
	record 2 -o ro/p.pb.gz -- touch ran
	[ -e ran ] && fail "the command ran though its profile could not be written"
	grep -q "cannot write in" err || fail "no word of the unwritable directory"
fi

# --- signals sent by the command to record: record keeps waiting ---
record 4 -o p.pb.gz -- sh -c 'kill -INT $PPID; kill -QUIT $PPID; sleep 1; exit 4'
# The command's signal dispositions and mask are its own: as the program
# it runs (grep) inherits them.  (Not the shell's own /proc/$$: dash
# blocks every signal while it forks, and a child quick enough to read
# the shell's status then sees that.)
sh -c 'grep -E "^Sig(Ign|Blk):" /proc/self/status' >sig.direct
$EMU "$CP" record -o p.pb.gz -- sh -c 'grep -E "^Sig(Ign|Blk):" /proc/self/status' >sig.record 2>/dev/null ||
	fail "record of grep failed"
if [ -n "$EMU" ]; then
	# qemu-user ignores some host real-time signals for its own use, and
	# every program an emulated one starts inherits that; record changes
	# only standard signals, so compare signals 1 to 32 (the last 8 digits).
	sed -i 's/\(Sig...:[[:space:]]*\).*\(........\)$/\1\2/' sig.direct sig.record
fi
cmp -s sig.direct sig.record ||
	fail "the command's signals differ: $(cat sig.direct) vs $(cat sig.record)"
echo "ok"
