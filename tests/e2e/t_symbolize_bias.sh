#!/bin/sh
# t_symbolize_bias.sh -- `cpuprof symbolize` of a profile whose Mapping is
# page-aligned (as older cpuprof, perf's converters and Go's runtime/pprof
# write them: memory_start and file_offset rounded down to the page) over
# a program linked by lld, whose text is at p_vaddr = p_offset + 0x1000:
# every Location must be named by the function at its address.  A bias
# taken as memory_start - p_vaddr is off by p_offset - file_offset there,
# and names the neighbours.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 77; }
[ -x "$CP" ] && [ -x "$MK" ] || fail "build first (make tests)"
[ -z "$EMU" ] || skip "the program is built for this machine (clang -fuse-ld=lld); symbolize's arithmetic is the same on every CPU"
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
case $MK in /*) ;; *) MK=$PWD/$MK ;; esac
command -v clang >/dev/null 2>&1 || skip "clang is not installed"
command -v ld.lld >/dev/null 2>&1 || skip "ld.lld is not installed (lld)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_symbolize_bias.XXXXXX") || fail "mktemp"
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd"
unset DEBUGINFOD_URLS
export XDG_CACHE_HOME=$tmp/xdg

# Functions of 64 bytes or more each, so that an address off by less than
# a page but more than one function names another.
cat >prog.c <<'C'
#define F(n) __attribute__((noinline, aligned(64))) int n(int x) { \
	for (int i = 0; i < 9; i++) x = x * 31 + i; return x ^ (x >> 3); }
F(fn_a) F(fn_b) F(fn_c) F(fn_d) F(fn_e) F(fn_f) F(fn_g) F(fn_h)
int main(int c, char **v) { (void)v; return fn_a(c) + fn_b(c) + fn_c(c) + fn_d(c) + fn_e(c) + fn_f(c) + fn_g(c) + fn_h(c); }
C
clang -O1 -fPIE -pie -fuse-ld=lld -Wl,--build-id -o prog prog.c 2>cc.err || skip "clang -fuse-ld=lld cannot link: $(head -n 1 cc.err)"

# The executable PT_LOAD: offset and vaddr.
set -- $(readelf -lW prog | awk '$1 == "LOAD" && / R?W?E +0x/ { print $2, $3, $6; exit }')
[ $# -eq 3 ] || fail "no executable PT_LOAD in prog"
off=$(($1)) vaddr=$(($2)) memsz=$(($3))
[ $((off % 4096)) -ne 0 ] || skip "lld put the text at a page boundary (offset $1): nothing to round"
base=$((0x7f0000000000))
# The Mapping as /proc/PID/maps shows it: from the text's first page.
start=$((base + vaddr / 4096 * 4096)) limit=$((base + vaddr + memsz)) fo=$((off / 4096 * 4096))
{
	echo "type cpu nanoseconds"
	echo "mapping 1 $tmp/prog $start $limit $fo"
	i=1
	for f in fn_a fn_b fn_c fn_d fn_e fn_f fn_g fn_h; do
		a=$(nm prog | awk -v f=$f '$3 == f { print $1 }')
		[ -n "$a" ] || fail "no $f in nm"
		echo "location $i 1 $((base + 0x$a + 8))"
		echo "sample $i : $i"
		i=$((i + 1))
	done
} >desc.txt
"$MK" none.pb <desc.txt || fail "tool_mkprof"
"$CP" symbolize none.pb -o sym.pb 2>sym.err || { cat sym.err; fail "symbolize"; }
"$CP" report --top 0 --value cpu sym.pb >top.txt 2>top.err || { cat top.err; fail "report"; }
# Each Location is named by its own function: fn_X's weight is its place
# in the list, 1..8.
i=1
for f in fn_a fn_b fn_c fn_d fn_e fn_f fn_g fn_h; do
	grep -Eq "^ *${i}ns .* $f\$" top.txt || { cat desc.txt top.txt; fail "symbolize: $f is not named ${i}ns (text at offset $1, vaddr $2; Mapping at offset $fo)"; }
	i=$((i + 1))
done
echo "symbolize: 8 functions named at a page-aligned Mapping of an lld program (text offset $1, vaddr $2)"
