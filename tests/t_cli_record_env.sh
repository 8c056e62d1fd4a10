#!/bin/sh
# t_cli_record_env.sh -- `cpuprof record` as a process runner, with an
# empty stand-in for libcpuprof.so (via CPUPROF_LIB) so it needs nothing
# from the library: the environment the command gets, exit statuses, the
# removal of a stale profile, the summary line for a good, corrupt or
# missing profile, the listing of new FILE.<pid> files, and SIGINT/SIGQUIT
# being ignored by record but not by the command.  Skips without cc.
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
has env1 "CPUPROF=$tmp/p.pb.gz"
has env1 "CPUPROF_HZ=250"
has env1 "CPUPROF_ENGINE=timer"
has env1 "CPUPROF_DEPTH=7"
has env1 "CPUPROF_SIGNAL=40"
has env1 "CPUPROF_UNWIND=dwarf"
grep -q '^cpuprof: no profile written (sh exited before' err ||
	fail "no 'no profile written' line"
LD_PRELOAD=$tmp/libother.so record 0 -- sh -c 'env >env2'
has env2 "LD_PRELOAD=$tmp/libstub.so:$tmp/libother.so"
has env2 "CPUPROF=$tmp/cpu.pb.gz"
for v in HZ ENGINE DEPTH SIGNAL UNWIND; do lacks env2 "^CPUPROF_$v="; done

# --- exit statuses ---
record 3 -o p.pb.gz -- sh -c 'exit 3'
record 143 -o p.pb.gz -- sh -c 'kill -TERM $$'
grep -q 'no profile written (sh killed by signal 15' err || fail "signal not reported"

# --- a stale profile is removed before the command starts ---
echo stale >p.pb.gz
record 0 -o p.pb.gz -- sh -c 'test ! -e p.pb.gz || echo still there >seen'
[ -e seen ] && fail "the stale profile was still there when the command ran"
[ -e p.pb.gz ] && fail "the stale profile is still there"

# --- summaries: a good profile (a string table and three comments) ---
printf '\062\000\062\011samples=5\062\013engine=perf\062\016coverage=0.990\150\001\150\002\150\003' >mini.pb
$EMU "$CP" report mini.pb >/dev/null || fail "report rejects the hand-made profile"
record 0 -o p.pb.gz -- sh -c 'cp mini.pb "$CPUPROF"'
has err "cpuprof: wrote p.pb.gz: 5 samples, engine=perf, coverage=0.990"
[ "$(grep -c '^cpuprof: wrote' err)" -eq 1 ] || fail "not one summary line"
record 5 -o p.pb.gz -- sh -c 'echo garbage >"$CPUPROF"; exit 5'
grep -q '^cpuprof: wrote p.pb.gz, but it is not a valid profile' err ||
	fail "a corrupt profile is not reported as such"

# --- FILE.<pid> files written during the run, and only those ---
echo old >p.pb.gz.111
record 0 -o p.pb.gz -- sh -c 'cp mini.pb "$CPUPROF"; cp mini.pb "$CPUPROF.4242";
	: >"$CPUPROF.tmp"; : >"$CPUPROF.12x"'
has err "cpuprof: also wrote p.pb.gz.4242"
lacks err '\.111'
lacks err '\.tmp'
lacks err '\.12x'

# --- SIGINT and SIGQUIT: ignored by record, default again in the command ---
record 4 -o p.pb.gz -- sh -c 'kill -INT $PPID; kill -QUIT $PPID; sleep 1; exit 4'
sh -c 'grep ^SigIgn: /proc/$$/status' >ign.direct
$EMU "$CP" record -o p.pb.gz -- sh -c 'grep ^SigIgn: /proc/$$/status' >ign.record 2>/dev/null ||
	fail "record of grep failed"
if [ -n "$EMU" ]; then
	# qemu-user ignores some host real-time signals for its own use, and
	# every program an emulated one starts inherits that; record changes
	# only standard signals, so compare signals 1 to 32 (the last 8 digits).
	sed -i 's/\(SigIgn:[[:space:]]*\).*\(........\)$/\1\2/' ign.direct ign.record
fi
cmp -s ign.direct ign.record ||
	fail "the command's ignored signals differ: $(cat ign.direct) vs $(cat ign.record)"
echo "ok"
