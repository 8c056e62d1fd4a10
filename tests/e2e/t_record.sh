#!/bin/sh
# t_record.sh -- cpuprof record end to end with the real library and the
# default engine: call chains (with --unwind auto, its tables built and
# then read from the cache, and fp); exit statuses pass through (return, exit() from a
# thread, death by signal); children with and without exec are in the one
# profile, each under its own pid (and, under LD_PRELOAD without the CLI, a
# program the profiled one starts writes FILE.<pid>); bad settings leave
# the program's output and status unchanged.  Each engine, its numbers and `cpuprof report` on
# its profiles: t_record_engine.sh.
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

top() { go tool pprof -top "$1" 2>/dev/null | sed -n '/flat%/,$p' | sed 1d; }
comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }

# leader FILE: the first function of the flat table that is the program's.
# The frames in brackets are the profile's accounting of CPU no sample saw:
# [unsampled: before the profile started] (the loader and constructors of
# each preloaded process) is 100 ms under qemu-user, as much as the work
# of a short case here.
leader() { top "$1" | awk '$6 !~ /^\[/ { print $6; exit }'; }

cp "$WORK" ./work
# Call chains, with main and 3 threads each running worker -> hot_top ->
# hot_mid -> hot_leaf (and the warm_* chain).  traces FILE prints one line
# per stack of `go tool pprof -traces`: its sample count, a space, and its
# functions leaf first, joined by ";".
traces() {
	go tool pprof -traces -sample_index=samples "$1" 2>/dev/null | awk '
		/^-+\+-+$/ { if (s != "") print s; s = ""; on = 1; next }
		!on { next }
		$1 ~ /:$/ { next }  # a label: "thread:  work", "pid:  1234"
		s == "" && NF == 2 { s = $1 " " $2; next }
		s != "" && NF == 1 { s = s ";" $1 }
		END { if (s != "") print s }'
}
# chain MODE: checks the stacks of a profile taken with --unwind MODE.
chain() {
	$EMU "$CP" record -o chain.pb.gz -F 1000 --unwind "$1" -- $EMU ./work 3 400 0 main-too >/dev/null 2>err ||
		{ cat err; fail "main-too, --unwind $1: record failed"; }
	traces chain.pb.gz >chains
	# The summary line says what the file says (record prints it from
	# what it wrote, not by reading it back).
	sum=$(sed -n 's/^cpuprof: wrote chain.pb.gz: \([0-9]*\) samples, engine=\([a-z]*\), coverage=\([0-9.]*\).*/\1 \2 \3/p' err)
	[ "$sum" = "$(comment chain.pb.gz samples) $(comment chain.pb.gz engine) $(comment chain.pb.gz coverage)" ] ||
		{ cat err; go tool pprof -comments chain.pb.gz; fail "--unwind $1: the summary is not the profile's"; }
	# A frame of ours twice in a row would be a return address taken twice.
	awk -F'[ ;]' '{ for (i = 3; i <= NF; i++) if ($i == $(i - 1) && $i ~ /^(hot|warm)_|^worker$|^main$/) { print; exit 1 } }' \
		chains || fail "--unwind $1: a function follows itself in a stack"
	if [ "$1" = auto ] || [ "$ARCH" = aarch64 ]; then
		# The leaf's caller: from the tables; or, on aarch64 with frame
		# pointers only, from the link register, where it is the only
		# place it is.  In nearly every sample of hot_leaf.
		grep -q ' hot_leaf;hot_mid;hot_top;worker;main;' chains ||
			{ cat chains; fail "--unwind $1: no stack hot_leaf <- hot_mid <- hot_top <- worker <- main"; }
		grep -Eq ' hot_leaf;hot_mid;hot_top;worker;[^m]' chains ||
			{ cat chains; fail "--unwind $1: no thread's stack hot_leaf <- hot_mid <- hot_top <- worker"; }
		awk -v m="$1" '$2 ~ /^hot_leaf(;|$)/ { all += $1; if ($2 ~ /^hot_leaf;hot_mid;/) mid += $1 }
			END { printf "--unwind %s: hot_leaf samples: %d, %d of them with hot_mid as caller\n", m, all, mid
			      exit !(all > 0 && mid >= 0.9 * all) }' chains ||
			{ cat chains; fail "--unwind $1: hot_leaf's caller hot_mid is missing from many samples"; }
	else
		# Frame pointers alone cannot see the caller of a frameless leaf
		# whose return address is on the stack: hot_mid may be missing.
		grep -Eq ' hot_leaf;(hot_mid;)?hot_top;worker;main;' chains ||
			{ cat chains; fail "--unwind $1: no stack hot_leaf <- hot_top <- worker <- main"; }
	fi
}
# Where record profiles from outside (perf events), the first run builds
# the unwind tables and keeps them on disk (src/unwind/table_cache.h); the
# second reads them back, with the same call chains.  (Without perf
# events, as under qemu-user, the library profiles inside each process and
# builds its tables from its own memory, without the cache.)
XDG_CACHE_HOME=$tmp/cache
export XDG_CACHE_HOME
chain auto
case $(comment chain.pb.gz unwind_tables) in
*cache*) fail "--unwind auto: tables from an empty cache: $(comment chain.pb.gz unwind_tables)" ;;
esac
if [ -z "$EMU" ] && why=$("$ROOT/$B/tests/tool_engine" perf); then
	chain auto
	comment chain.pb.gz unwind_tables | grep -q "of them from the cache" ||
		fail "--unwind auto, again: no table from the cache: $(comment chain.pb.gz unwind_tables)"
else
	echo "the unwind table cache not tested: record profiles inside each process here (${why:-under $EMU})"
fi
chain fp

# Exit statuses pass through.
$EMU "$CP" record -o s.pb.gz -- $EMU ./work 1 50 7 >/dev/null 2>err; rc=$?
[ $rc -eq 7 ] || fail "exit status 7 came back as $rc"
[ -s s.pb.gz ] || fail "no profile after exit(7)"
$EMU "$CP" record -o t.pb.gz -- $EMU ./work 2 100 5 exit-thread >/dev/null 2>err; rc=$?
[ $rc -eq 5 ] || fail "exit() from a thread: status $rc"
[ "$(leader t.pb.gz)" = hot_leaf ] || fail "exit() from a thread: profile not written right"
$EMU "$CP" record -o k.pb.gz -- $EMU ./work 1 200 0 sigkill >/dev/null 2>err; rc=$?
[ $rc -eq 137 ] || fail "killed by SIGKILL: status $rc, expected 137"
[ "$(leader k.pb.gz)" = hot_leaf ] || { cat err; fail "killed by SIGKILL: no profile of its work"; }
comment k.pb.gz process | grep -q "ended=signal:9" || fail "killed by SIGKILL: the profile does not say so"

# Children, with and without exec, are in the one profile, each under its
# own pid; --per-process writes FILE.<pid> for each but CMD.
pids() { go tool pprof -tags "$1" 2>/dev/null | awk '/^ *pid:/ { on = 1; next } on && /^ *[a-z]+:/ { on = 0 } on && $NF ~ /^[0-9]+$/ { n++ } END { print n + 0 }'; }
if [ -n "$EMU" ]; then
	# The child execs /proc/self/exe: an aarch64 binary, which the host
	# kernel runs only where binfmt_misc hands it to qemu.
	echo "fork-exec not tested under $EMU: an emulated exec needs binfmt_misc"
else
	"$CP" record -o fx.pb.gz -- ./work 1 100 0 fork-exec >out 2>err || { cat err; fail "fork-exec: status $?"; }
	[ "$(grep -c 'work_hot done' out)" -eq 2 ] || fail "fork-exec: output changed"
	set -- fx.pb.gz.*
	[ ! -e "$1" ] || fail "fork-exec wrote $* beside the one profile"
	[ "$(pids fx.pb.gz)" -eq 2 ] || { go tool pprof -tags fx.pb.gz; fail "fork-exec: expected 2 pids in the profile"; }
	[ "$(leader fx.pb.gz)" = hot_leaf ] || fail "fork-exec: profile wrong"
	"$CP" record --per-process -o fp.pb.gz -- ./work 1 100 0 fork-exec >out 2>err || { cat err; fail "--per-process: status $?"; }
	# The child's image before its exec has a file of its own only if a
	# sample fell in it (the exec itself, on a loaded machine): then
	# FILE.<pid>, ended by the exec, and the program exec'd FILE.<pid>.1.
	set -- fp.pb.gz.*
	if [ $# -eq 2 ] && [ "$2" = "$1.1" ]; then
		go tool pprof -comments "$1" 2>/dev/null | grep -q "ended=exec" ||
			fail "--per-process: $1 is not the child's image before its exec"
		shift
	fi
	[ $# -eq 1 ] && [ -s "$1" ] || fail "--per-process: expected FILE.<pid> (and FILE.<pid>.1 after its exec), found $*"
	grep -q "wrote $1" err || { cat err; fail "--per-process: record did not list $1"; }
	[ "$(leader "$1")" = hot_leaf ] && [ "$(leader fp.pb.gz)" = hot_leaf ] || fail "--per-process: profiles wrong"
	# Names by place, the same every run: CMD's last image (after env and
	# an exec) is FILE, its image after the first exec FILE.<pid>.1.
	"$CP" record --per-process -o fe.pb.gz -- env "$ROOT/$B/tests/work_robust" exec-self 1 >out 2>err ||
		{ cat err; fail "--per-process, exec: status $?"; }
	set -- fe.pb.gz.*.1
	[ $# -eq 1 ] && [ -s "$1" ] && [ -s fe.pb.gz ] && [ ! -e "${1%.1}.2" ] ||
		{ ls fe.pb.gz*; fail "--per-process, exec: expected FILE and FILE.<pid>.1"; }
	[ "$(leader "$1")" = exec_work ] && [ "$(leader fe.pb.gz)" = exec_work ] ||
		fail "--per-process, exec: profiles wrong"
	go tool pprof -comments fe.pb.gz 2>/dev/null | grep -q "ended=exit:0" &&
		go tool pprof -comments "$1" 2>/dev/null | grep -q "ended=exec" ||
		fail "--per-process, exec: FILE is not the image CMD ended as, or $1 not the one it exec'd from"
	# Without the CLI: the program a profiled one starts writes FILE.<pid>.
	env LD_PRELOAD="$ROOT/$B/libcpuprof.so" CPUPROF="$tmp/pl.pb.gz" ./work 1 100 0 fork-exec >out 2>err ||
		{ cat err; fail "LD_PRELOAD, fork-exec: status $?"; }
	set -- pl.pb.gz.*
	[ $# -eq 1 ] && [ -s "$1" ] || fail "LD_PRELOAD, fork-exec: expected one FILE.<pid>, found $*"
	[ "$(pids "$1")" -eq 1 ] && [ "$(pids pl.pb.gz)" -eq 1 ] || fail "LD_PRELOAD, fork-exec: a profile of two processes"
	[ "$(leader "$1")" = hot_leaf ] && [ "$(leader pl.pb.gz)" = hot_leaf ] || fail "LD_PRELOAD, fork-exec: profiles wrong"
	go tool pprof -tags "$1" 2>/dev/null | grep -q "${1##*.}" || fail "LD_PRELOAD: $1 is not the profile of pid ${1##*.}"
	# A preloaded profile is of the process's whole life: what it ran
	# before the profile started (the loader, the constructors) is in it,
	# under a frame that says so, and in the CPU it is judged against.
	before=$(go tool pprof -comments pl.pb.gz 2>/dev/null | sed -n 's/^ *before_start_cpu_ns=//p')
	[ -n "$before" ] && [ "$before" -gt 0 ] || fail "LD_PRELOAD: no before_start_cpu_ns comment"
	go tool pprof -traces pl.pb.gz 2>/dev/null | grep -q "\[unsampled: before the profile started\]" ||
		fail "LD_PRELOAD: no [unsampled: before the profile started] frame"
	echo "LD_PRELOAD: $before ns before the profile started, in the profile"
	# An exec: what ran before it stays in FILE, written at the exec; the
	# programs exec'd write FILE.<pid>.<n> after the n-th, each with its
	# own CPU (not the images' before it again).
	env LD_PRELOAD="$ROOT/$B/libcpuprof.so" CPUPROF="$tmp/ex.pb.gz" "$ROOT/$B/tests/work_robust" exec-self 2 \
		>out 2>err || { cat err; fail "LD_PRELOAD, exec: status $?"; }
	set -- ex.pb.gz.*
	[ $# -eq 2 ] && [ -s "${1%.[0-9]*}.1" ] && [ -s "${1%.[0-9]*}.2" ] ||
		fail "LD_PRELOAD, exec: expected FILE.<pid>.1 and .2, found $*"
	for f in ex.pb.gz "$@"; do
		[ "$(leader "$f")" = exec_work ] || { go tool pprof -top "$f"; fail "LD_PRELOAD, exec: $f has not exec_work"; }
		before=$(go tool pprof -comments "$f" 2>/dev/null | sed -n 's/^ *before_start_cpu_ns=//p')
		[ "${before:-0}" -lt 100000000 ] || fail "LD_PRELOAD, exec: $f holds $before ns from before its start"
	done
	echo "LD_PRELOAD, exec: ex.pb.gz, $*"
fi
$EMU "$CP" record -o fk.pb.gz -- $EMU ./work 1 100 0 fork >out 2>err || { cat err; fail "fork: status $?"; }
[ "$(grep -c 'work_hot done' out)" -eq 1 ] || fail "fork: output changed"
[ "$(pids fk.pb.gz)" -eq 2 ] || { go tool pprof -tags fk.pb.gz; fail "fork without exec: expected 2 pids in the profile"; }
[ "$(leader fk.pb.gz)" = hot_leaf ] || fail "fork: profile wrong"

# Bad settings: one warning line, program output and status unchanged.
lib=$ROOT/$B/libcpuprof.so
for bad in "CPUPROF_HZ=0" "CPUPROF_HZ=abc" "CPUPROF_HZ=1000000" "CPUPROF_ENGINE=fast" \
	"CPUPROF_DEPTH=0" "CPUPROF_SIGNAL=9999" "CPUPROF_SIGNAL=9" "CPUPROF_UNWIND=frames"; do
	env LD_PRELOAD="$lib" CPUPROF=$tmp/bad.pb.gz "$bad" $EMU ./work 1 20 3 >out 2>err; rc=$?
	[ $rc -eq 3 ] || fail "$bad: status $rc, expected 3"
	grep -qx "work_hot done" out || fail "$bad: output changed"
	[ "$(wc -l <err)" -eq 1 ] || { cat err; fail "$bad: expected exactly one warning line"; }
	grep -q "^cpuprof: .*profiling disabled" err || { cat err; fail "$bad: warning does not say profiling is off"; }
	[ ! -e bad.pb.gz ] || fail "$bad: a profile was written"
done
# An unwritable output: the program still runs and exits as it would.
env LD_PRELOAD="$lib" CPUPROF=/nonexistent/dir/x.pb.gz $EMU ./work 1 20 4 >out 2>err; rc=$?
[ $rc -eq 4 ] && grep -qx "work_hot done" out || fail "unwritable path: status $rc"
grep -q "cannot write" err || { cat err; fail "unwritable path: no message"; }
# A profile path that is not a regular file is written into, never
# replaced: -o /dev/null leaves /dev/null a character device.
mkfifo fifo
cat fifo >fifo.out &
$EMU "$CP" record -o fifo -- $EMU ./work 1 50 >/dev/null 2>err || { cat err; fail "record into a FIFO: status $?"; }
wait
[ -p fifo ] || fail "the FIFO was replaced"
[ "$(head -c 2 fifo.out | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "no gzip came through the FIFO"
$EMU "$CP" record -o /dev/null -- $EMU ./work 1 20 >/dev/null 2>err || { cat err; fail "record -o /dev/null: status $?"; }
[ -c /dev/null ] || fail "record -o /dev/null replaced /dev/null"
echo "all record checks passed"
