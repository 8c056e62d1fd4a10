#!/bin/sh
# t_report_formats.sh -- `cpuprof report`'s text formats on profiles made
# by tests/tool_mkprof (its own protobuf encoder): inlined frames in top,
# tree and folded, --lines, --intervals (against intervals worked out
# apart from cpuprof), --list with and without the source on disk,
# merging (totals add up; different sample or period types refuse with
# exit 2), --value, --group-by, --min-share, -o (complete or absent),
# names that try to forge lines or send terminal escapes, and hostile
# shapes (a location of 100,000 lines listed 100,000 times, a gzip bomb)
# refused with exit 2 within a memory limit.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$CP" ] && [ -x "$MK" ] || fail "build first (make tests)"
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
case $MK in /*) ;; *) MK=$PWD/$MK ;; esac
# mk ARGS...: tool_mkprof, run as every program of the build is
mk() { $EMU "$MK" "$@"; }

top=$PWD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_formats.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd"

# rep ARGS...: runs report, which must exit 0 and write nothing to stderr
rep() {
	$EMU "$CP" report "$@" >out 2>err
	rc=$?
	[ $rc -eq 0 ] || { cat err >&2; fail "report $*: exit $rc"; }
	[ -s err ] && { cat err >&2; fail "report $*: wrote to stderr"; }
	return 0
}
# bad WORD ARGS...: report must exit 2 with WORD in its message
bad() {
	word=$1
	shift
	$EMU "$CP" report "$@" >out 2>err
	rc=$?
	[ $rc -eq 2 ] || { cat out err >&2; fail "report $*: exit $rc, expected 2"; }
	grep -q -- "$word" err || { cat err >&2; fail "report $*: no '$word' in the message"; }
	echo "ok: report $* -> $(head -n 1 err)"
}
# has FILE LINE: FILE has exactly the line LINE
has() { grep -qxF -- "$2" "$1" || { cat "$1" >&2; fail "no line '$2'"; }; }

mkdir src
# Lines 1-20 of a source file; outer_fn starts at 10, its loop is at 12.
awk 'BEGIN { for (i = 1; i <= 20; i++) printf "line %d of outer.c\n", i }' >src/outer.c
cat >inl.txt <<EOF
type samples count
type cpu nanoseconds
period cpu nanoseconds 1000000
duration 1000000000
comment engine=perf
comment hz=1000
comment warning=test%20warning
function 1 main src/main.c 1
function 6 outer_fn $tmp/src/outer.c 10
function 7 inl_fn src/inl.h 3
location 1 0 0 1:5
location 2 0 0 7:4 6:12
location 3 0 0 6:13
location 4 0 0 6:12
sample 3 300 : 2 1
sample 1 100 : 3 1
sample 2 200 : 4 1
EOF
mk inl.pb <inl.txt || fail "tool_mkprof"

# --- top: inlined frames are rows of their own ---
rep inl.pb
cat out
grep -q '^warning: test warning$' out || fail "top: no warning line"
grep -q '^Duration: 1s, Total CPU: 600ns' out || fail "top: total"
grep -Eq '^ +300ns +50\.00% .* 300ns +50\.00%  inl_fn \(inlined\)$' out || fail "top: inl_fn (inlined) flat 300ns"
grep -Eq '^ +300ns +50\.00% .* 600ns +100%  outer_fn$' out || fail "top: outer_fn flat 300ns cum 600ns"
rep --lines inl.pb
grep -Eq '  outer_fn .*/src/outer.c:12$' out && grep -Eq '  outer_fn .*/src/outer.c:13$' out &&
	grep -Eq '  inl_fn src/inl.h:4 \(inlined\)$' out || { cat out; fail "--lines: no file:line rows"; }
grep -Eq '^ +200ns .*outer.c:12$' out || fail "--lines: outer.c:12 flat 200ns"

# --- --intervals: each share's 95% interval from the sampling ---
# 10 samples of 5 ns (one merged Sample) and 90 of 1 ns: 100 samples,
# 57.6 effective.  heavy's samples weigh more than the others, so the
# delta method's variance is the larger (cli/report/shares.h); the
# intervals were worked out apart from cpuprof (Wilson's, on
# r(1-r)/variance samples).
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 heavy\nfunction 3 light\nlocation 1 0 0 1\nlocation 2 0 0 2\nlocation 3 0 0 3\nsample 10 50 : 2 1\nsample 90 90 : 3 1\n' |
	mk weighted.pb || fail "tool_mkprof"
rep --intervals weighted.pb
cat out
grep -q '^Intervals: 95% .* from 100 samples, 57.6 effective$' out || fail "--intervals: the samples"
grep -Eq '^ +50ns +35\.71% \[22\.56, 51\.44\] +100% +50ns +35\.71% \[22\.56, 51\.44\] +heavy$' out ||
	fail "--intervals: heavy"
grep -Eq '^ +90ns +64\.29% \[48\.56, 77\.44\] .* light$' out || fail "--intervals: light"

# --- tree ---
rep --format tree inl.pb
cat out
grep -Eq '^ +600ns +100% +0 +0%  main$' out || fail "tree: main"
grep -Eq '^ +600ns +100% +300ns +50\.00%    outer_fn$' out || fail "tree: outer_fn under main"
grep -Eq '^ +300ns +50\.00% +300ns +50\.00%      inl_fn \(inlined\)$' out || fail "tree: inl_fn under outer_fn"
rep --format tree --min-share 60 inl.pb
grep -Eq '^ +300ns +50\.00% +300ns +50\.00%      \.\.\. 1 more below 60%$' out ||
	{ cat out; fail "tree: --min-share 60 does not summarise inl_fn"; }
grep -q 'inl_fn' out && fail "tree: --min-share 60 still shows inl_fn"

# --- folded: root first, both values ---
rep --format folded inl.pb
has out "main;outer_fn 300"
has out "main;outer_fn;inl_fn (inlined) 300"
[ "$(wc -l <out)" -eq 2 ] || fail "folded: not one line per stack"
rep --format folded --value samples inl.pb
has out "main;outer_fn 3"
has out "main;outer_fn;inl_fn (inlined) 3"
bad "no sample type 'bogus'" --value bogus inl.pb

# --- list ---
rep --list 'outer' inl.pb
cat out
grep -q "^ROUTINE =* outer_fn in $tmp/src/outer.c$" out || fail "list: no ROUTINE line"
grep -Eq '^ +300ns +600ns \(flat, cum\) 100% of Total$' out || fail "list: routine totals"
grep -Eq '^ +200ns +500ns +12: line 12 of outer.c$' out || fail "list: line 12 flat 200 cum 500"
grep -Eq '^ +100ns +100ns +13: line 13 of outer.c$' out || fail "list: line 13"
grep -Eq '^ +\. +\. +10: line 10 of outer.c$' out || fail "list: the function's first line"
# A call from line 12 adds to its cum, not to its flat.
{ cat inl.txt; printf 'function 8 callee\nlocation 5 0 0 8:1\nsample 1 50 : 5 4 1\n'; } | mk call.pb
rep --list 'outer' call.pb
grep -Eq '^ +200ns +550ns +12: line 12 of outer.c$' out || { cat out; fail "list: a call from line 12"; }
rep --list 'inl_fn' inl.pb
grep -q 'source not shown: src/inl.h: No such file or directory; the lines with values:' out ||
	{ cat out; fail "list: missing source not said"; }
grep -Eq '^ +300ns +300ns +4$' out || fail "list: inl_fn's line 4 without source"
rep --list 'nomatch' inl.pb
grep -q "No function with samples matches 'nomatch'" out || fail "list: no match not said"
sed "s|$tmp/src/outer.c|$CP|" inl.txt | mk elf.pb || fail "tool_mkprof"
rep --list outer elf.pb
grep -q 'not a text file' out || { cat out; fail "list: an executable shown as source"; }
sed "s|$tmp/src/outer.c|/dev/zero|" inl.txt | mk zero.pb || fail "tool_mkprof"
rep --list outer zero.pb
grep -q 'not a regular file' out || { cat out; fail "list: /dev/zero read"; }
bad "regular expression" --list '(' inl.pb

# --- merging ---
rep --format folded inl.pb inl.pb
has out "main;outer_fn 600"
rep inl.pb inl.pb
grep -q '^Merged 2 profiles:$' out && grep -q 'Total CPU: 1.20us' out && grep -q 'Duration: 2s' out ||
	{ cat out; fail "merge: header"; }
printf 'type samples count\nfunction 1 main\nlocation 1 0 0 1\nsample 5 : 1\n' | mk count.pb
bad "cannot merge" inl.pb count.pb
sed 's/^period cpu nanoseconds 1000000$/period wall nanoseconds 1000000/' inl.txt | mk wall.pb
bad "period types differ" inl.pb wall.pb

# --- labels: --group-by ---
cat >groups.txt <<'EOF'
type samples count
type cpu nanoseconds
function 1 main
location 1 0 0 1
sample 1 100 : 1 | pid#10 process=app tid#10 thread=app
sample 1 200 : 1 | pid#10 process=app tid#12 thread=worker-1
sample 1 400 : 1
EOF
mk groups.pb <groups.txt
rep --format folded --group-by thread groups.pb
has out "app (pid 10);app (tid 10);main 100"
has out "app (pid 10);worker-1 (tid 12);main 200"
has out "main 400"
rep --format folded --group-by process groups.pb
has out "app (pid 10);main 300"
rep groups.pb
grep -q 'pid' out && fail "top: grouping frames are not functions"

# --- hostile names: no forged lines, no escapes ---
printf 'type samples count\nfunction 1 evil%%0A%%1B[31mred%%1B[0m%%3Bx%%FF\nlocation 1 0 0 1\nsample 7 : 1\n' | mk evil.pb
rep --format folded evil.pb
[ "$(wc -l <out)" -eq 1 ] || fail "folded: a name forged a line"
tr -d '\n' <out | od -An -c | grep -q '033' && fail "folded: an escape reached the output"
grep -q 'evil??\[31mred?\[0m?x' out || { cat out; fail "folded: unexpected sanitising"; }
rep --format tree evil.pb
od -An -c out | grep -q '033' && fail "tree: an escape reached the output"

# --- -o: complete or absent ---
rep --format folded -o folded.txt inl.pb
has folded.txt "main;outer_fn 300"
[ -s out ] && fail "-o: wrote to stdout too"
$EMU "$CP" report -o no-such-dir/x.txt inl.pb 2>err
[ $? -eq 2 ] || fail "-o into a missing directory: not exit 2"
ls no-such-dir 2>/dev/null && fail "-o: something was written"
ls | grep -q '\.tmp' && fail "-o: a temporary file was left"
# A path that is not a regular file (a FIFO here; /dev/null as root) is
# written into, never renamed over: report, diff and symbolize alike.
mkfifo fifo || fail "mkfifo"
for cmd in "report --format folded" "diff" "symbolize"; do
	case $cmd in diff) args="inl.pb inl.pb" ;; *) args=inl.pb ;; esac
	cat fifo >fifo.out &
	$EMU "$CP" $cmd -o fifo $args 2>err || { kill $! 2>/dev/null; cat err; fail "$cmd -o FIFO: exit $?"; }
	wait
	[ -p fifo ] || fail "$cmd -o FIFO: the FIFO was replaced"
	[ -s fifo.out ] || fail "$cmd -o FIFO: nothing came through"
done
ls | grep -q '\.tmp' && fail "-o FIFO: a temporary file was left"
# A regular file written over keeps its permissions (the temporary file
# it is replaced by is made with the umask's), and is replaced whole.
for cmd in "report --format folded" "diff" "symbolize"; do
	case $cmd in diff) args="inl.pb inl.pb" ;; *) args=inl.pb ;; esac
	echo old >kept && chmod 600 kept || fail "chmod"
	(umask 022 && $EMU "$CP" $cmd -o kept $args 2>err) || { cat err; fail "$cmd -o kept: exit $?"; }
	[ "$(stat -c %a kept)" = 600 ] || fail "$cmd -o FILE: its mode became $(stat -c %a kept), not 600"
	[ "$(cat kept)" != old ] || fail "$cmd -o FILE: not written"
done

# --- hostile shapes: refused, within 1 GiB of address space ---
# (not under qemu-user, which needs more address space of its own)
lim() { [ -n "$EMU" ] || ulimit -v 1048576; }
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 f\nlocation 1 0 0 1*100000\nsample 1 1 : 1*100000\n' |
	mk -z lines.pb.gz
printf 'type samples count\nempty-samples 100000000\n' | mk -z bomb.pb.gz
gzip -dc lines.pb.gz >lines.pb
echo "sizes: lines.pb.gz $(wc -c <lines.pb.gz), lines.pb $(wc -c <lines.pb), bomb.pb.gz $(wc -c <bomb.pb.gz) bytes"
for f in top folded tree html; do
	(lim; bad "frames" --format $f -o x.out lines.pb.gz) || exit 1
	(lim; bad "frames" --format $f -o x.out lines.pb) || exit 1
	(lim; bad "gzip bomb" --format $f -o x.out bomb.pb.gz) || exit 1
done
(lim; bad "frames" --list f lines.pb) || exit 1
# --- bit flips and truncations: exit 0 or 2 in every format, never a crash ---
# flip FILE OFFSET OUT: OUT is FILE with the byte at OFFSET xor 0x5a
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	cp "$1" "$3"
	printf "\\$(printf %o $((b ^ 90)))" | dd of="$3" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# try FILE: every format may accept or reject FILE, but only with 0 or 2
try() {
	for a in "--format top" "--format tree --lines" "--format folded --group-by thread" \
		"--format html -o x.html" "--list ."; do
		# shellcheck disable=SC2086 # $a is options
		$EMU "$CP" report $a "$1" >/dev/null 2>err
		rc=$?
		case $rc in
		0 | 2) ;;
		*) cat err >&2; cp "$1" "${TMPDIR:-/tmp}/t_report_formats.crash"
		   fail "report $a on a corrupt profile exited $rc (kept as ${TMPDIR:-/tmp}/t_report_formats.crash)" ;;
		esac
	done
}
mk rich.pb <"$top/tests/fuzz/rich.txt" || fail "tool_mkprof rich.txt"
rep --format tree rich.pb
grep -q 'inl<int> (inlined)' out || fail "rich.txt is not the profile it should be"
size=$(wc -c <rich.pb)
i=0
while [ $i -lt 60 ]; do
	flip rich.pb $((i * size / 60)) flip.pb
	try flip.pb
	head -c $((i * size / 60 + 1)) rich.pb >cut.pb
	try cut.pb
	i=$((i + 1))
done
gzip -c rich.pb >rich.pb.gz
gsize=$(wc -c <rich.pb.gz)
for i in 0 1 2 3 4 5 6 7 8 9; do
	flip rich.pb.gz $((i * gsize / 10)) flip.pb.gz
	try flip.pb.gz
done
echo "ok: $((60 * 2 + 10)) corrupt profiles, 5 formats each"
echo "ok"
