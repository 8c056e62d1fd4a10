#!/bin/sh
# t_report_reader.sh -- what `cpuprof report` does to read and write big
# profiles within their time and memory (issue 32), on profiles made by
# tests/tool_mkprof: gzip data of two members, whose last trailer (ISIZE,
# the reader's hint for its buffer) says far less than the whole, reads as
# the plain protobuf does; a trailer that lies about a single member is
# refused (exit 2, within a memory limit), as is one that says 4 GiB;
# 3,000 Samples of 1,000 label lists, each list three times and all of the
# same length, keep their own labels (the reader gives equal lists one
# copy: equal, not just as long), each thread's folded line as worked out
# here; a stack 3,000 frames deep is whole in speedscope's export
# (written through a buffer of a fixed size) and in folded stacks; and
# folded stacks come in the call tree's order where two sibling frames
# have one name.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$CP" ] && [ -x "$MK" ] || fail "build first (make tests)"
command -v gzip >/dev/null 2>&1 || { echo "skip: no gzip"; exit 77; }
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
case $MK in /*) ;; *) MK=$PWD/$MK ;; esac
mk() { $EMU "$MK" "$@"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_reader.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd"

# rep OUT ARGS...: report into OUT, which must exit 0 and be silent
rep() {
	o=$1
	shift
	$EMU "$CP" report "$@" >"$o" 2>err || { cat err >&2; fail "report $*: exit $?"; }
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

# --- 1,000 label lists of one length, each in three Samples apart ---
# Sample i: thread i % 1000 (pid 7), leaf f or g by i's parity, value
# 1000 + i; so thread T's line is f (T even) or g, 6000 + 3T.
{
	printf 'type samples count\ntype cpu nanoseconds\nperiod cpu nanoseconds 1000000\n'
	printf 'function 1 main\nfunction 2 f\nfunction 3 g\n'
	printf 'location 1 0 0 1:1\nlocation 2 0 0 2:1\nlocation 3 0 0 3:1\n'
	awk 'BEGIN { for (i = 0; i < 3000; i++)
		printf "sample 1 %d : %d 1 | pid#7 tid#%d thread=t%d\n", 1000 + i, 2 + i % 2, i % 1000, i % 1000 }'
} | mk lab.pb || fail "tool_mkprof lab.pb"
awk 'BEGIN { for (t = 0; t < 1000; t++)
	printf "pid 7;t%d (tid %d);main;%s %d\n", t, t, t % 2 ? "g" : "f", 6000 + 3 * t }' | LC_ALL=C sort >want
rep got --format folded --group-by thread lab.pb
LC_ALL=C sort got >got.sorted
cmp -s want got.sorted || { diff want got.sorted | head >&2; fail "folded --group-by thread: a Sample with another's labels"; }
echo "ok: 1000 label lists of 3 labels each, every Sample under its own thread"

# --- gzip: two members, the last trailer's ISIZE 100 of 98 KB ---
size=$(wc -c <lab.pb)
head -c $((size - 100)) lab.pb | gzip -c >two.pb.gz
tail -c 100 lab.pb | gzip -c >>two.pb.gz
rep got --format folded --group-by thread two.pb.gz
LC_ALL=C sort got >got.sorted
cmp -s want got.sorted || fail "two gzip members: not the plain protobuf's stacks"
rep top.plain --format top lab.pb
rep top.two --format top two.pb.gz
cmp -s top.plain top.two || fail "two gzip members: top differs from the plain protobuf's"
echo "ok: two gzip members ($(wc -c <two.pb.gz) bytes), the last one's trailer saying 100 bytes, read whole"

# --- a single member whose trailer lies: refused, never believed ---
lim() { [ -n "$EMU" ] || ulimit -v 1048576; }
gzip -c lab.pb >one.pb.gz
n=$(wc -c <one.pb.gz)
for isize in '\001\000\000\000' '\377\377\377\377'; do
	cp one.pb.gz lie.pb.gz
	# shellcheck disable=SC2059 # the format is the trailer's bytes
	printf "$isize" | dd of=lie.pb.gz bs=1 seek=$((n - 4)) conv=notrunc 2>/dev/null
	(lim; bad "corrupt gzip" --format top lie.pb.gz) || exit 1
done

# --- a stack 3,000 frames deep ---
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 f\nlocation 1 0 0 1:1\nlocation 2 0 0 2:1\nsample 1 1000 : 2*3000 1\n' |
	mk deep.pb || fail "tool_mkprof deep.pb"
rep deep.json --format speedscope deep.pb
want=$(awk 'BEGIN { s = "[0"; for (i = 0; i < 3000; i++) s = s ",1"; print s "]" }')
grep -qF "\"samples\":[$want]" deep.json || fail "speedscope: the stack of 3001 frames is not whole"
grep -q '"exporter":"cpuprof' deep.json || fail "speedscope: the file does not end as it should"
rep deep.folded --format folded deep.pb
want=$(awk 'BEGIN { s = "main"; for (i = 0; i < 3000; i++) s = s ";f"; print s " 1000" }')
[ "$(cat deep.folded)" = "$want" ] || fail "folded: the stack of 3001 frames is not whole"
echo "ok: a stack of 3001 frames whole in speedscope and folded"

# --- folded: two frames of one name, siblings (the call tree's order) ---
# A function named "f (inlined)" and f inlined into main: the call tree
# keeps them apart and walks the later made first; folded stacks must
# give the lines in that order.
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 f\nfunction 4 f%%20(inlined)\nlocation 1 0 0 1:1\nlocation 10 0 0 4:1\nlocation 12 0 0 2:1 1:1\nsample 1 1 : 10 1\nsample 1 2 : 12\nsample 1 4 : 1\n' |
	mk tie.pb || fail "tool_mkprof tie.pb"
rep tie.folded --format folded tie.pb
printf 'main 4\nmain;f (inlined) 2\nmain;f (inlined) 1\n' >want
cmp -s want tie.folded || { cat tie.folded >&2; fail "folded: two frames of one name not in the call tree's order"; }
echo "ok: folded with two sibling frames of one name, in the call tree's order"
echo ok
