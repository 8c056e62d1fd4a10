#!/bin/sh
# t_times.sh -- samples keep their times (profile/times.h), in every way
# of recording: record from outside, record -p, LD_PRELOAD with the perf
# and timer engines; and `report --from/--to/--pid/--tid` select by
# them.  The workload runs hot_leaf for its first half (of wall time) and
# warm_leaf for its second (work_hot's "phases"), so a range in each half
# has that half's function alone.  Also: go tool pprof reads a profile
# with times as one without; diff compares two ranges of one profile; the
# halves of a range add up to it; ranges
# outside the profile, a profile without times, malformed times and ids
# no sample has are refused with exit 2.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot
MK=$ROOT/$B/tests/tool_mkprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$WORK" ] && [ -x "$MK" ] || fail "build first (make tests)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
# Under qemu-user record has no perf events, and the times' arithmetic is
# the same on every CPU (unit_times runs there).
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: the times of record's samples are tested natively"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_times.XXXXXX") || fail mktemp
trap 'kill $bg 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

# share FILE FN [ARGS...]: FN's flat share (percent, whole) in report's top
share() {
	f=$1 fn=$2
	shift 2
	$EMU "$CP" report --top 0 "$@" "$f" 2>err | awk -v fn="$fn" '$6 == fn { sub("%", "", $2); print int($2); f = 1 } END { if (!f) print 0 }'
}
# total FILE [ARGS...]: the report's total CPU in ms
total() {
	f=$1
	shift
	$EMU "$CP" report "$@" "$f" | awk '/^Showing/ { v = $(NF - 1); u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		print (u == "s" ? v * 1000 : u == "ms" ? v : u == "us" ? v / 1000 : v / 1e6) }'
}
# phases FILE WHAT: hot_leaf has the first half, warm_leaf the second
phases() {
	h1=$(share "$1" hot_leaf --to 0.7) w1=$(share "$1" warm_leaf --to 0.7)
	h2=$(share "$1" hot_leaf --from 1.3) w2=$(share "$1" warm_leaf --from 1.3)
	echo "$2: 0-0.7s hot_leaf $h1% warm_leaf $w1%; 1.3s- hot_leaf $h2% warm_leaf $w2%"
	[ "$h1" -ge 80 ] && [ "$w1" -le 10 ] && [ "$w2" -ge 80 ] && [ "$h2" -le 10 ] ||
		{ cat err; fail "$2: the halves are not hot_leaf's and warm_leaf's"; }
	# The two halves add up to the whole range (what has a time: not
	# [lost] or [unsampled: ...], which grow on a loaded machine).
	a=$(total "$1" --to 1) b=$(total "$1" --from 1) all=$(total "$1" --from 0) whole=$(total "$1")
	awk -v a="$a" -v b="$b" -v t="$all" -v w="$whole" \
		'BEGIN { exit !(t > 0 && (a + b) / t > 0.99 && (a + b) / t < 1.01 && t <= w * 1.001 && t > w * 0.8) }' ||
		fail "$2: 0-1s ($a ms) and 1s- ($b ms) do not add up to the whole range ($all ms of $whole)"
}

"$CP" record -o rec.pb.gz -- "$WORK" 1 2000 0 phases >out 2>err || { cat err; fail "record: status $?"; }
phases rec.pb.gz "record"

env LD_PRELOAD="$ROOT/$B/libcpuprof.so" CPUPROF="$tmp/pre.pb.gz" "$WORK" 1 2000 0 phases >out 2>err ||
	{ cat err; fail "LD_PRELOAD: status $?"; }
phases pre.pb.gz "LD_PRELOAD, perf"
env LD_PRELOAD="$ROOT/$B/libcpuprof.so" CPUPROF="$tmp/tim.pb.gz" CPUPROF_ENGINE=timer "$WORK" 1 2000 0 phases \
	>out 2>err || { cat err; fail "LD_PRELOAD, timer: status $?"; }
phases tim.pb.gz "LD_PRELOAD, timer"

# record -p: the range counts from when record attached.  hot_leaf runs
# for the first 3 s of wall time, so that record's attach, slow on a
# loaded machine, still finds it leading the range (with 1.5 s, a
# fresh-clone run beside a busy CPU once attached too late).
"$WORK" 1 6000 0 phases >/dev/null &
bg=$!
"$CP" record -p $bg -d 1 -o att.pb.gz >out 2>err || { cat err; fail "record -p: status $?"; }
[ "$(share att.pb.gz hot_leaf --from 0.1 --to 0.9)" -ge 80 ] || fail "record -p: hot_leaf does not lead its range"
wait $bg
bg=

# go tool pprof reads it as one without times: the same total.
go tool pprof -raw rec.pb.gz >/dev/null 2>err || { cat err; fail "go tool pprof cannot read a profile with times"; }
gt=$(go tool pprof -top rec.pb.gz 2>/dev/null | sed -n 's/.* of \([0-9.]*\)\(m*s\) total.*/\1 \2/p')
echo "go tool pprof total: $gt, report's $(total rec.pb.gz) ms"

# --pid of its process is the whole.
pid=$(go tool pprof -tags rec.pb.gz 2>/dev/null | awk '/^ *pid:/ { on = 1; next } on && $NF ~ /^[0-9]+$/ { print $NF; exit }')
[ -n "$pid" ] && [ "$(total rec.pb.gz --pid "$pid")" = "$(total rec.pb.gz)" ] || fail "--pid $pid is not the whole"
"$CP" report --from 0.5 --to 1.5 rec.pb.gz | grep -q "^selection: 0.5s to 1.5s" || fail "a range is not said"

# diff compares two ranges of one profile: the first half against the
# second is hot_leaf's share lost to warm_leaf.
"$CP" diff --base-to 0.8 --new-from 1.2 rec.pb.gz >out 2>err
rc=$?
[ $rc -eq 1 ] || { cat out err; fail "diff of the two halves: exit $rc, expected 1 (changed)"; }
grep -E '^- flat .* hot_leaf$' out >/dev/null && grep -E '^\+ flat .* warm_leaf$' out >/dev/null ||
	{ cat out; fail "diff of the two halves: hot_leaf did not shrink and warm_leaf grow"; }
"$CP" diff --base-to 0.8 --new-from 100 rec.pb.gz >out 2>err
[ $? -eq 2 ] && grep -q "(NEW): .*outside the profile" err || { cat err; fail "diff: a range outside NEW is not refused"; }

# bad WORD ARGS...: report exits 2 with WORD in its message
bad() {
	word=$1
	shift
	"$CP" report "$@" >out 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -q -- "$word" err || { cat err; fail "report $*: exit $rc, expected 2 and '$word'"; }
	echo "ok: report $* -> $(head -n 1 err)"
}
bad "outside the profile" --from 100 rec.pb.gz
bad "not after" --from 1 --to 0.5 rec.pb.gz
bad "no sample is in" --tid 1 rec.pb.gz
bad "not a list" --pid 12x rec.pb.gz
bad "a time from the start" --from yesterday rec.pb.gz
# A Sample with times, written by hand: its values, a time list, the unit.
sample="120A120401C0843D"    # Sample { value: [1, 1000000] ... (10 bytes)
printf 'type samples count\ntype cpu nanoseconds\nduration 1000000000\nraw %sCA3E0102C83EC0843D\n' "$sample" >good.txt
"$MK" good.pb <good.txt || fail "tool_mkprof"
"$CP" report --from 0 --to 0.5 good.pb >out 2>err || { cat err; fail "a hand-written list of times is refused"; }
printf 'type samples count\ntype cpu nanoseconds\nduration 1000000000\nraw %sCA3E01FFC83EC0843D\n' "$sample" >bad.txt
"$MK" malformed.pb <bad.txt || fail "tool_mkprof"
bad "malformed" malformed.pb
printf 'type samples count\ntype cpu nanoseconds\nduration 1000000000\nsample 1 1000000\n' >none.txt
"$MK" none.pb <none.txt || fail "tool_mkprof"
bad "no times" --to 0.5 none.pb
echo "ok"
