#!/bin/sh
# t_lines.sh -- source lines and inline chains in profiles, checked against
# an independent reader: tests/work/work_inline.c is built -O2 -g with inlining
# (DWARF 5, DWARF 4, -flto, compressed sections -gz, and stripped with a
# separate debug file found by .gnu_debuglink), profiled with cpuprof
# record, and for every sampled address of the program the profile's
# Lines (innermost first: function, file, line) must be what `addr2line
# -f -i` prints.  Then what pprof makes of them (-list, -lines -top,
# -peek), and the objects that get no lines, with names and a comment
# saying why: a debug file of another build, split DWARF without its .dwo.
B=${B:-build}
ARCH=${ARCH:-$(uname -m)}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
SRC=$ROOT/tests/work/work_inline.c

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] || fail "build first (make tests)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
if [ -n "$EMU" ]; then
	CC=$ARCH-linux-gnu-gcc
	TOOLS=$ARCH-linux-gnu-
else
	CC=${CC:-cc}
	TOOLS=
fi
for t in "$CC" ${TOOLS}addr2line ${TOOLS}objcopy ${TOOLS}readelf; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (binutils)"
done
# Lines need libdw at run time, for the profiled program's CPU.
libdw_found() {
	for d in /lib/$ARCH-linux-gnu /usr/lib/$ARCH-linux-gnu /lib64 /usr/lib64; do
		[ -e "$d/libdw.so.1" ] && return 0
	done
	return 1
}
libdw_found || skip "libdw.so.1 for $ARCH is not installed (libdw1)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_lines.XXXXXX") || fail mktemp
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps it for a look
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none
# shellcheck source=tests/tools/lines_compare.sh
. "$ROOT/tests/tools/lines_compare.sh"

# record NAME BINARY: profiles ./BINARY into NAME.pb.gz.  Longer under
# qemu-user, which delivers signals only between the blocks it translates:
# its samples fall on a handful of addresses (the dense checks below look
# at every address).
rounds=3 least=8
[ -n "$EMU" ] && rounds=12 least=1
record() {
	$EMU "$CP" record -o "$1.pb.gz" -F 2000 -- $EMU "./$2" $rounds >out 2>err ||
		{ cat err; fail "$1: record failed"; }
	grep -qx "work_inline done" out || fail "$1: the program's output changed"
}

# check NAME BINARY DEBUGFILE: the profile of BINARY agrees with addr2line
# on DEBUGFILE at every sampled address of BINARY.
check() {
	ROOT_BIN=$tmp/$2
	profile_chains "$1.pb.gz" "$2" | unnamed | sort >"$1.ours"
	addr2line_chains "$3" <"$1.ours" | unnamed | sort >"$1.ref"
	n=$(wc -l <"$1.ours")
	[ "$n" -ge $least ] || { cat raw; fail "$1: only $n sampled addresses in the program"; }
	if ! cmp -s "$1.ours" "$1.ref"; then
		diff "$1.ref" "$1.ours" | head -20
		fail "$1: the profile's lines differ from addr2line's (< addr2line, > profile)"
	fi
	# Inlining is there and in the profile (all three levels: dense below).
	[ -n "$EMU" ] || grep -Eq ' (mix|step|fold)@[^|]*work_inline.c:[0-9]+\|' "$1.ours" ||
		{ cat "$1.ours"; fail "$1: no inlined function in the profile"; }
	grep -q "$ROOT_BIN [0-9a-f]* \[FN\]\[FL\]\[LN\]\[IN\]" raw ||
		{ grep "$ROOT_BIN" raw; fail "$1: the mapping does not say it has files, lines and inline frames"; }
	echo "$1: $n sampled addresses agree with addr2line, $(grep -c '|' "$1.ours") of them inlined"
}

cp "$SRC" work_inline.c
build() { out=$1; shift; "$CC" -O2 -g "$@" -o "$out" work_inline.c || fail "build $out ($*)"; }
build wi_dw5 -gdwarf-5
build wi_dw4 -gdwarf-4
# DWARF 4 for LTO: binutils 2.40's addr2line names the line table's file 0
# ("<artificial>") for LTO units in DWARF 5, where the table itself
# (readelf --debug-dump=decodedline) says work_inline.c.
build wi_lto -flto -gdwarf-4
build wi_gz -gz
for v in dw5 dw4 lto gz; do
	record $v wi_$v
	check $v wi_$v wi_$v
done

# Stripped, with its DWARF in a separate file named by .gnu_debuglink.
build wi_link
${TOOLS}objcopy --only-keep-debug wi_link wi_link.debug &&
	${TOOLS}objcopy --strip-debug --add-gnu-debuglink=wi_link.debug wi_link || fail objcopy
record link wi_link
check link wi_link wi_link.debug

# Not only the sampled addresses: every byte of every function of the
# test program, and every third byte of libcpuprof.so (real code, -O2
# -g), looked up by lines.c directly (tool_lines) and by addr2line.
# dense OBJECT STRIDE [DEBUGFILE]
dense() {
	${TOOLS}readelf -sW "${3:-$1}" 2>/dev/null | perl -ane 'if ($F[3] eq "FUNC" && $F[2] > 0) {
		my $a = hex($F[1]); for (my $i = 0; $i < $F[2]; $i += '"$2"') { printf "%x\n", $a + $i } }' |
		sort -u >dense.addrs
	$EMU "$ROOT/$B/tests/tool_lines" "$1" <dense.addrs | unnamed | sort >dense.ours ||
		fail "tool_lines $1"
	addr2line_chains "${3:-$1}" <dense.ours | unnamed | sort >dense.ref
	n=$(wc -l <dense.ours)
	[ "$n" -ge 100 ] || fail "dense $1: only $n addresses"
	if ! cmp -s dense.ours dense.ref; then
		diff dense.ref dense.ours | head -20
		fail "dense $1: $(diff dense.ref dense.ours | grep -c '^<') of $n addresses differ from addr2line (< addr2line, > lines.c)"
	fi
	case $1 in
	wi_*) grep -q ' mix@[^|]*work_inline.c:[0-9]*|step@[^|]*work_inline.c:[0-9]*|hot_mix@' dense.ours ||
		fail "dense $1: no inline chain mix <- step <- hot_mix" ;;
	esac
	echo "dense $(basename "$1"): $n addresses agree with addr2line, $(grep -c '|' dense.ours) inlined"
	cached "$1"
}

# The same addresses through the lines cache, which keeps each answer for
# the span it holds over (the line-table row, cut to its inline scopes):
# a first batch of every 5th address read and kept, then every address,
# most answered from the kept spans and the rest by the reader's child
# (which takes the answer before where its span holds): the same as
# addr2line's, where the next row or inline scope begins too.
# cached OBJECT, after dense OBJECT (its dense.addrs and dense.ref).
cached() {
	rm -rf lcache
	awk 'NR % 5 == 1' dense.addrs >sparse.addrs
	XDG_CACHE_HOME=$tmp/lcache $EMU "$ROOT/$B/tests/tool_lines" --resolve "$1" <sparse.addrs >/dev/null ||
		fail "tool_lines --resolve $1 (every 5th address)"
	ls lcache/cpuprof/lines/* >/dev/null 2>&1 || fail "cached $1: nothing kept in the lines cache"
	XDG_CACHE_HOME=$tmp/lcache $EMU "$ROOT/$B/tests/tool_lines" --resolve "$1" <dense.addrs | unnamed |
		sort >dense.cached || fail "tool_lines --resolve $1"
	if ! cmp -s dense.cached dense.ref; then
		diff dense.ref dense.cached | head -20
		fail "cached $1: $(diff dense.ref dense.cached | grep -c '^<') addresses differ from addr2line (< addr2line, > through the cache)"
	fi
	echo "cached $(basename "$1"): $(wc -l <dense.cached) addresses agree with addr2line, after $(wc -l <sparse.addrs) kept"
}
for v in dw5 dw4 lto gz; do
	dense wi_$v 1
done
dense wi_link 1 wi_link.debug
dense "$ROOT/$B/libcpuprof.so" 3

# What pprof makes of them.  -list opens the source file the Function
# names (the old profiles named the binary, and pprof printed its bytes).
# Not under qemu-user, which delivers signals only between the blocks it
# translates: its samples fall on a handful of addresses, maybe none in
# mix, and what pprof reads is the same profile format as natively.
if [ -z "$EMU" ]; then
	pp -list '^mix$' dw5.pb.gz >list || fail "pprof -list"
	grep -q 'ROUTINE =* mix in .*work_inline.c' list || { cat list; fail "-list mix: no routine in work_inline.c"; }
	grep -q '17:.x \*= 0x5bd1e995u;$' list || { cat list; fail "-list mix: its source is not listed"; }
	grep -Eq '^ +[0-9.]+[mun]?s +[0-9.]+[mun]?s +1[678]:' list ||
		{ cat list; fail "-list mix: no cost on mix's lines 16-18"; }
	grep -q 'ELF' list && fail "-list mix printed the binary"
	pp -lines -top dw5.pb.gz | sed -n '/flat%/,$p' | sed 1d >top
	awk 'NR <= 3' top | grep -Eq ' (mix|step|fold) .*work_inline.c:[0-9]+ \(inline\)$' ||
		{ cat top; fail "-lines -top: the first lines are not inlined lines of work_inline.c"; }
	pp -peek '^hot_mix$' dw5.pb.gz >peek
	awk '/\| hot_mix$/ { seen = 1; next } seen && /\|   step \(inline\)$/ { ok = 1 } END { exit !ok }' peek ||
		{ cat peek; fail "-peek hot_mix: step is not an inlined callee"; }
	grep -q '|   main$' peek || { cat peek; fail "-peek hot_mix: main is not its caller"; }
	echo "pprof -list, -lines -top and -peek read the inline frames"
fi

# No lines, but names and a comment saying why.
# no_lines NAME WHY: the program's functions are named and have no lines.
no_lines() {
	pp -raw "$1.pb.gz" >raw
	grep -q "lines_missing=$tmp/$2: .*$3" raw || { grep lines raw; fail "$1: no comment saying '$3'"; }
	pp -top "$1.pb.gz" | grep -q ' hot_mix$' || fail "$1: hot_mix is not named"
	awk -v bin="$tmp/$2" '/^Mappings/ { m = 1 } m && index($0, bin) && /\[FN\]/ && !/\[FL\]|\[LN\]|\[IN\]/ { ok = 1 } END { exit !ok }' raw ||
		{ grep "$2" raw; fail "$1: the mapping claims lines"; }
	grep -q '^ *[0-9]*: 0x[0-9a-f]* M=1 hot_mix .*work_inline.c' raw && fail "$1: hot_mix has a source file"
	echo "$1: names, no lines: $(sed -n "s|.*lines_missing=$tmp/$2: ||p" raw)"
}
# A debug file of another build under the debuglink name.
build wi_other -O1
${TOOLS}objcopy --only-keep-debug wi_other wi_link.debug || fail objcopy
record mismatch wi_link
no_lines mismatch wi_link "another build ID"
# Split DWARF whose .dwo is gone.
build wi_split -gsplit-dwarf
ls ./*.dwo >/dev/null 2>&1 || fail "no .dwo file from -gsplit-dwarf"
record split wi_split
pp -raw split.pb.gz | grep -Eq '^ *[0-9]+: 0x[0-9a-f]+ M=1 (mix|step|fold|hot_mix|hot_fold|main) .*work_inline.c:[0-9]' ||
	{ pp -raw split.pb.gz; fail "split DWARF with its .dwo: no lines"; }
rm -f ./*.dwo
record split_nodwo wi_split
no_lines split_nodwo wi_split "split DWARF unit .*dwo not found"
echo "all line checks passed"
