#!/bin/sh
# t_unwind.sh -- call chains with the .eh_frame unwinder, end to end: for
# work_unwind built with and without frame pointers (-O2), at least 95% of
# the samples whose leaf is the hot function carry its whole caller chain:
# a frameless leaf three calls below main; recursion 200 deep, cut at the
# depth cap and flagged [truncated] (and 50 deep, whole; and cut at 8 with
# --depth 8, with the default and the timer engine, and CPUPROF_DEPTH=8
# under LD_PRELOAD); a comparator
# called from libc's qsort (libc has no frame pointers); a library loaded
# with dlopen after profiling started; a signal handler, through the
# signal trampoline into the interrupted frameless function.  With the
# timer engine, whose handler walks the live stack once, every sample of
# the frameless leaf carries its chain, the first ones included (their
# tables are built before the first sample).  A library
# whose .eh_frame is corrupt is rejected (the profile says why) and its
# frames are walked with frame pointers instead.  Frame pointers alone do
# not pass the chain check on the build without them (the check can fail),
# and the mode each profile used is in its comments.
B=${B:-build}
ROOT=$(pwd -P)
# The build's programs run as $EMU PROG (tests/run.sh: empty natively).
CP=$ROOT/$B/cpuprof
T=$ROOT/$B/tests
FOLD=$T/tool_fold

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
for f in "$CP" "$T/work_unwind" "$T/work_unwind_nofp" "$T/libunwind_dl.so" "$T/libunwind_dl_nofp.so" "$FOLD"; do
	[ -x "$f" ] || [ -f "$f" ] || fail "$f is not built (make tests)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_unwind.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

# rec PROFILE ARGS...: cpuprof record ARGS into PROFILE; the program must
# run as it does without the profiler.
rec() {
	out=$1
	shift
	$EMU "$CP" record -o "$out" "$@" >stdout 2>stderr
	rc=$?
	grep -q "no sampling engine" stderr && skip "no sampling engine works here"
	[ $rc -eq 0 ] || { cat stderr >&2; fail "record $*: exit $rc"; }
	grep -q "^work_unwind .* done$" stdout || fail "record $*: the program's output changed"
}

# chains PROFILE LEAF REGEX: prints "GOOD TOTAL": samples whose leaf frame
# is LEAF, and those of them whose folded stack matches REGEX (grep -E,
# anchored at the leaf).
chains() {
	$EMU "$FOLD" "$1" >folded || fail "cannot read $1"
	total=$(awk -v leaf="$2" '{ split($2, f, ";"); if (f[1] == leaf) t += $1 } END { print t + 0 }' folded)
	good=$(grep -E "^[0-9]+ ($3)" folded | awk '{ t += $1 } END { print t + 0 }')
	echo "$good $total"
}

# expect NAME PROFILE LEAF REGEX: at least 95% of LEAF's samples match
# (and LEAF is hot: 30 samples at least, which the tick-bound timer and
# itimer engines reach too where perf events are refused).
expect() {
	set -- "$1" "$2" "$3" "$4" $(chains "$2" "$3" "$4")
	echo "$1: $5 of $6 samples with leaf ${3%@*} carry the chain (engine=$(comment "$2" engine))"
	[ "$6" -ge 30 ] || { sort -rn folded | head -5 >&2; fail "$1: only $6 samples in ${3%@*}"; }
	[ $(($5 * 100)) -ge $(($6 * 95)) ] || { sort -rn folded | head -8 >&2; fail "$1: $5 of $6 samples carry the chain"; }
}

comment() { $EMU "$FOLD" -c "$2" "$1"; }

for v in fp nofp; do
	if [ $v = fp ]; then X=work_unwind L=libunwind_dl.so; else X=work_unwind_nofp L=libunwind_dl_nofp.so; fi
	x=$(echo $X | sed 's/\./\\./g') l=$(echo $L | sed 's/\./\\./g')
	cp "$T/$X" "$T/$L" . || fail "copy"

	rec leaf.pb.gz -- $EMU ./$X leaf
	[ "$(comment leaf.pb.gz unwind)" = auto ] || fail "$v: default mode is not auto: $(comment leaf.pb.gz unwind)"
	expect "$v leaf" leaf.pb.gz "chain_c@$X" "chain_c@$x;chain_b@$x;chain_a@$x;main@$x(;|\$)"

	rec deep.pb.gz -- $EMU ./$X deep 200
	expect "$v deep 200 (cap 128)" deep.pb.gz "deep_leaf@$X" "deep_leaf@$x(;recurse@$x){127};\\[truncated\\]@\$"
	rec deep50.pb.gz -- $EMU ./$X deep 50
	expect "$v deep 50" deep50.pb.gz "deep_leaf@$X" "deep_leaf@$x(;recurse@$x){50};main@$x;"

	rec qsort.pb.gz -- $EMU ./$X qsort
	expect "$v qsort" qsort.pb.gz "cmp_hot@$X" "cmp_hot@$x(;[^;]*@libc\\.so\\.6)+;sort_driver@$x;main@$x(;|\$)"

	rec dlopen.pb.gz -- $EMU ./$X dlopen ./$L 1000
	expect "$v dlopen" dlopen.pb.gz "dl_hot@$L" "dl_hot@$l;dl_mid@$l;dl_entry@$l;dl_driver@$x;main@$x(;|\$)"

	if [ -n "$EMU" ]; then
		# qemu-user's signal trampoline lives in a page of its own with
		# no symbol and no unwind table (the kernel's, in the vDSO, has
		# one): the walk cannot step through it into the interrupted
		# frameless function.
		echo "$v signal: not tested under $EMU (its signal trampoline has no unwind table)"
	else
		# The signal lands in interrupted_leaf, or (more often on a busy
		# machine) in sig_outer's clock read between two of its calls:
		# either way the chain runs whole through the trampoline.
		rec signal.pb.gz -- $EMU ./$X signal - 800
		expect "$v signal" signal.pb.gz "sig_hot@$X" \
			"sig_hot@$x;on_signal@$x;[^;]*@libc\\.so\\.6;(interrupted_leaf@$x|__vdso_clock_gettime@\\[vdso\\];(__GI_)?__clock_gettime@libc\\.so\\.6;cpu_ms@$x);sig_outer@$x;main@$x(;|\$)"
	fi
done

# --depth N, end to end: stacks cut at N frames, the cut flagged, none
# longer, and the profile says so; with the default engine and the timer
# engine (whose handler walks the live stack).
for e in auto timer; do
	rec depth8.pb.gz --depth 8 --engine $e -- $EMU ./work_unwind deep 50
	[ "$(comment depth8.pb.gz max_depth)" = 8 ] || fail "--depth 8: max_depth=$(comment depth8.pb.gz max_depth)"
	expect "--depth 8, engine $e" depth8.pb.gz "deep_leaf@work_unwind" \
		"deep_leaf@work_unwind(;recurse@work_unwind){7};\\[truncated\\]@\$"
	# Locations, not Lines: a pc whose DWARF has inlined calls is one
	# frame of the walk however many functions its Lines name.
	$EMU "$FOLD" -d depth8.pb.gz | awk '$1 > 8 { print; bad = 1 } END { exit bad }' ||
		fail "--depth 8, engine $e: a stack of more than 8 frames"
done
# ... and through the environment, without the CLI (CPUPROF_DEPTH).
env LD_PRELOAD="$ROOT/$B/libcpuprof.so" CPUPROF=depth8.pb.gz CPUPROF_DEPTH=8 $EMU ./work_unwind deep 50 >stdout ||
	fail "CPUPROF_DEPTH=8: exit $?"
[ "$(comment depth8.pb.gz max_depth)" = 8 ] || fail "CPUPROF_DEPTH=8: max_depth=$(comment depth8.pb.gz max_depth)"
expect "CPUPROF_DEPTH=8" depth8.pb.gz "deep_leaf@work_unwind" \
	"deep_leaf@work_unwind(;recurse@work_unwind){7};\\[truncated\\]@\$"

# The timer engine's handler walks the live stack, gone by the time a
# table could be built for it: every table is built before the first
# sample, and every sample of the frameless leaf carries its whole chain
# (a frame walked by frame pointers for want of its table lost its
# callers: the first sample in chain_c did, in every run).
rec timer.pb.gz --engine timer -- $EMU ./work_unwind_nofp leaf
set -- $(chains timer.pb.gz chain_c@work_unwind_nofp \
	"chain_c@work_unwind_nofp;chain_b@work_unwind_nofp;chain_a@work_unwind_nofp;main@work_unwind_nofp(;|\$)")
echo "nofp leaf, --engine timer: $1 of $2 samples carry the chain"
[ "$2" -ge 30 ] || fail "--engine timer: only $2 samples in chain_c"
[ "$1" -eq "$2" ] || { grep -v "^[0-9]* chain_c@work_unwind_nofp;chain_b@" folded | grep " chain_c@" >&2
	fail "--engine timer: $1 of $2 samples carry the chain"; }

# Tables only, and frame pointers only.
rec dwarf.pb.gz --unwind dwarf -- $EMU ./work_unwind_nofp leaf
[ "$(comment dwarf.pb.gz unwind)" = dwarf ] || fail "--unwind dwarf: profile says $(comment dwarf.pb.gz unwind)"
expect "nofp leaf, --unwind dwarf" dwarf.pb.gz "chain_c@work_unwind_nofp" \
	"chain_c@work_unwind_nofp;chain_b@work_unwind_nofp;chain_a@work_unwind_nofp;main@work_unwind_nofp(;|\$)"
rec fp.pb.gz --unwind fp -- $EMU ./work_unwind_nofp leaf
[ "$(comment fp.pb.gz unwind)" = fp ] || fail "--unwind fp: profile says $(comment fp.pb.gz unwind)"
comment fp.pb.gz unwind_tables >/dev/null && fail "--unwind fp built tables"
set -- $(chains fp.pb.gz chain_c@work_unwind_nofp \
	"chain_c@work_unwind_nofp;chain_b@work_unwind_nofp;chain_a@work_unwind_nofp;main@work_unwind_nofp(;|\$)")
echo "nofp leaf, --unwind fp: $1 of $2 samples carry the chain (frame pointers cannot)"
[ "$2" -ge 30 ] && [ $(($1 * 2)) -lt "$2" ] || fail "--unwind fp: $1 of $2 samples have the chain: the check has no teeth"

# A library whose .eh_frame is corrupt: its first entry's length runs far
# past the section.  It is rejected when loaded; its frames fall back to
# frame pointers (the library has them; its frameless leaf hides dl_mid).
cp "$T/libunwind_dl.so" libbad.so
off=$(readelf -SW libbad.so | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".eh_frame" { print $4 }')
[ -n "$off" ] || fail "no .eh_frame in libunwind_dl.so"
printf '\360\377\377\177' | dd of=libbad.so bs=1 seek=$((0x$off)) conv=notrunc 2>/dev/null || fail dd
rec bad.pb.gz -- $EMU ./work_unwind dlopen ./libbad.so 800
why=$(comment bad.pb.gz unwind_rejected) || fail "the corrupt library was not rejected"
echo "corrupt .eh_frame: unwind_rejected=$why"
case $why in *libbad.so:*"runs past the end"*) ;; *) fail "unexpected rejection: $why" ;; esac
expect "corrupt library, frame pointers" bad.pb.gz "dl_hot@libbad.so" \
	"dl_hot@libbad\\.so;(dl_mid@libbad\\.so;)?dl_entry@libbad\\.so;dl_driver@work_unwind;main@work_unwind(;|\$)"
echo "all unwinding checks passed"
