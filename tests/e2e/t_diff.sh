#!/bin/sh
# t_diff.sh -- `cpuprof diff`: its false alarms counted over seeded pairs
# of synthetic profiles of the same program (tests/tools/tool_sampleprof:
# equal lengths; other lengths, rates and weights; a short BASE), which
# must stay near the --alpha it states; a function doing 1.5 times the
# work found and named, in synthetic profiles and in two recorded with
# `cpuprof record` (tests/work/work_grow); a pair with too few samples
# that says so; the threshold; merged pprof Samples counted as the
# samples they stand for; profiles without a samples/count type;
# cpuprof's accounting left out; merging; the folded format; profiles
# that cannot be compared (exit 2).  The
# synthetic profiles are drawn from fixed seeds: the counts are the same
# on every run, whatever the machine's load.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof
SP=$B/tests/tool_sampleprof
WORK=$B/tests/work_grow

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$CP" ] && [ -x "$MK" ] && [ -x "$SP" ] && [ -x "$WORK" ] || fail "build first (make tests)"
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
case $MK in /*) ;; *) MK=$PWD/$MK ;; esac
case $SP in /*) ;; *) SP=$PWD/$SP ;; esac
case $WORK in /*) ;; *) WORK=$PWD/$WORK ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_diff.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd"

# draw OUT [OPTIONS] SEED N STACK=SHARE...: a synthetic profile into OUT
draw() {
	out=$1
	shift
	$EMU "$SP" "$@" >draw.txt || fail "tool_sampleprof $*"
	$EMU "$MK" "$out" <draw.txt || fail "tool_mkprof for $*"
}
# dif STATUS ARGS...: cpuprof diff ARGS must exit STATUS; out and err
# hold what it wrote
dif() {
	want=$1
	shift
	$EMU "$CP" diff "$@" >out 2>err
	rc=$?
	[ $rc -eq "$want" ] || { cat out err >&2; fail "diff $*: exit $rc, expected $want"; }
}
# rows FILE: the table's lines (after the line naming the columns)
rows() { awk 'f { print } /p\(Holm\)/ { f = 1 }' "$1"; }

# A program of 14 stacks: nested functions, a function (cmp) under two
# callers, frames whose samples weigh 3 times the others (gc, mark), and
# rare ones (tiny, tiny2: a few samples in a thousand).
PROGRAM="main;parse;lex=8 main;parse;tree=6 main;eval;hash=20 main;eval;cmp=15 main;eval;alloc=5
main;eval;hash;mix=10 main;io=3 main;io;write=2 main;sort;cmp=12 main;sort;swap=9 main;gc=4@3
main;gc;mark=3@3 main;tiny=0.5 main;tiny2=0.2"

# --- 1. false alarms: pairs of the same program, counted ---
# fa LABEL N ALPHA THRESHOLD "BASE N, OPTIONS" "NEW N, OPTIONS" STACKS...:
# draws N pairs (BASE from seed 2i+1, NEW from 2i+2), runs diff on each
# and counts exit 1; the count must stay within 3 alpha N + 3.
fa() {
	label=$1 n=$2 alpha=$3 thr=$4 na=$5 nb=$6
	shift 6
	i=0 alarms=0
	while [ $i -lt "$n" ]; do
		# shellcheck disable=SC2086 # options and counts as words
		draw a.pb ${na#* } $((2 * i + 1)) ${na%% *} "$@"
		# shellcheck disable=SC2086
		draw b.pb ${nb#* } $((2 * i + 2)) ${nb%% *} "$@"
		$EMU "$CP" diff --threshold "$thr" --alpha "$alpha" a.pb b.pb >out 2>err
		rc=$?
		[ $rc -le 1 ] || { cat err >&2; fail "$label: diff exited $rc"; }
		if [ $rc -eq 1 ]; then
			alarms=$((alarms + 1))
			grep '^[+-] ' out | sed "s/^/  pair $i: /" | head -n 2
		fi
		i=$((i + 1))
	done
	bound=$(awk -v a="$alpha" -v n="$n" 'BEGIN { printf "%d", 3 * a * n + 3 }')
	echo "false alarms, $label: $alarms of $n pairs at alpha $alpha, threshold ${thr}pp (bound $bound)"
	[ "$alarms" -le "$bound" ] || fail "$label: $alarms false alarms in $n pairs at alpha $alpha"
}
# Fewer pairs under emulation, where each run of a program costs more.
N=200
[ -n "$EMU" ] && N=100
# shellcheck disable=SC2086 # PROGRAM is a list of stacks
{
	fa "equal lengths, weights within 50%" $N 0.05 0 "2000 -j 0.5" "2000 -j 0.5" $PROGRAM
	fa "500 samples of 4 ms (jitter 90%) against 8000 of 0.25 ms, one Sample each" $N 0.05 0 \
		"500 -w 4000000 -j 0.9" "8000 -w 250000 -1" $PROGRAM
	# A short BASE: its rare functions often have no sample at all there.
	fa "100 samples against 10000" $N 0.05 1 "100 -j 0.3" "10000 -j 0.3" \
		"main;a=40" "main;b=30" "main;c=12" "main;d=6" "main;e=4" "main;f=3" "main;g=2" "main;h=2" "main;i=1"
}

# --- 2. one function does 1.5 times the work (synthetic) ---
# grow_me has 40% of BASE; with 1.5 times the work it has 60/120 = 50%.
draw base.pb -j 0.3 101 5000 "main;loop;steady=40" "main;loop;grow_me=40" "main;setup=20"
draw new.pb -j 0.3 102 5000 "main;loop;steady=40" "main;loop;grow_me=60" "main;setup=20"
dif 1 base.pb new.pb
cat out
rows out | head -n 1 | grep -Eq '^\+ flat .* grow_me$' || fail "1.5x: grow_me is not the first change, grown"
rows out | grep -Eq '^\+ cum .* grow_me$' || fail "1.5x: grow_me's cum is not marked grown"
rows out | grep -Eq '^- flat .* steady$' || fail "1.5x: steady's share did not shrink"
rows out | grep -Eq '^[+-] .* main$' && fail "1.5x: main (100% in both) is marked"
grep -q '^Changed beyond noise: ' out || fail "1.5x: no summary line"
# Its own profile against itself: nothing changed.
dif 0 new.pb new.pb
grep -q '^Nothing changed beyond noise' out || fail "a profile against itself"

# cpuprof's accounting is left out: [lost] going from 1% to 20% of the
# samples is no change of the program's, and moves no share.
draw lost-a.pb 111 5000 "main;a=50" "main;b=50" "[lost]=1"
draw lost-b.pb 112 5000 "main;a=50" "main;b=50" "[lost]=25"
dif 0 lost-a.pb lost-b.pb
grep -q '^Left out: BASE ' out || { cat out; fail "[lost] left out, not said"; }
grep -q 'lost\]$' out && { cat out; fail "[lost] is compared"; }

# --- 3. too few samples: said, and the verdict still 0 ---
draw small-a.pb 201 100 "main;loop;steady=40" "main;loop;grow_me=40" "main;setup=20"
draw small-b.pb 202 100 "main;loop;steady=40" "main;loop;grow_me=40" "main;setup=20"
dif 0 small-a.pb small-b.pb
grep -q '^Warning: too few samples to detect a change of 1pp: with 100 and 100 effective samples' out ||
	{ cat out; fail "too few samples: not said"; }
echo "ok: $(grep '^Warning' out)"
# The smallest detectable change, worked out apart from cpuprof (Python's
# statistics.NormalDist): (z(1 - 0.01/16) + z(0.8)) sqrt(p(1-p) 2/100)
# over the 8 tests, and 2 (z + z')^2 / 4 / 0.01^2 samples for 1pp.
grep -q '^Detectable with 80% power: 28.77pp at a 50% share, 17.26pp at 10%, 5.73pp at 1%$' out ||
	{ cat out; fail "the smallest detectable change"; }
grep -q 'about 82778 samples in each profile would detect 1pp' out || fail "the samples needed"
dif 0 --format folded small-a.pb small-b.pb
grep -q '^cpuprof diff: too few samples' err || fail "too few samples: not said on stderr with --format folded"
# Raising the threshold to what 100 samples can see ends the warning.
dif 0 --threshold 40 small-a.pb small-b.pb
grep -q 'too few' out && fail "too few samples said at --threshold 40"

# --- 4. the threshold: a change beyond noise but below it does not count ---
# 1,000,000 samples each: 50% -> 50.6% is 8 standard deviations.
draw big-a.pb 301 1000000 "main;a=500" "main;b=500"
draw big-b.pb 302 1000000 "main;a=506" "main;b=494"
dif 0 big-a.pb big-b.pb
grep -q '^Nothing changed beyond noise' out || fail "a change of 0.6pp counted at --threshold 1"
dif 1 --threshold 0.5 big-a.pb big-b.pb
rows out | grep -Eq '^\+ flat .* a$' || { cat out; fail "a change of 0.6pp not found at --threshold 0.5"; }

# --- 5. merged Samples count as the samples they stand for ---
# The same draws, one pprof Sample each or merged per stack (as cpuprof
# writes them), with equal weights: the same table.
draw one.pb -1 401 3000 $PROGRAM
draw merged.pb 401 3000 $PROGRAM
draw other.pb 402 3000 $PROGRAM
dif 0 --threshold 0 one.pb other.pb
rows out >one.rows
dif 0 --threshold 0 merged.pb other.pb
rows out >merged.rows
cmp -s one.rows merged.rows || { diff one.rows merged.rows; fail "merged Samples compare otherwise than one per sample"; }
grep -q "BASE .* in 3000 samples (2529.0 effective)" out || { cat out; fail "merged: not 3000 samples"; }
# No samples/count type: one sample a pprof Sample.
draw nocount.pb -n 401 3000 $PROGRAM
draw nocount-other.pb -n 402 3000 $PROGRAM
dif 0 --threshold 0 nocount.pb nocount-other.pb
rows out >nocount.rows
cmp -s one.rows nocount.rows || { diff one.rows nocount.rows; fail "no samples/count type compares otherwise"; }
grep -q 'no samples/count type' out || fail "no samples/count type: not said"
# An exact value (count 0, as cpuprof's [unsampled: ...]) is left out.
draw exact.pb -e 500000000 401 3000 $PROGRAM
dif 0 --threshold 0 exact.pb other.pb
rows out >exact.rows
cmp -s one.rows exact.rows || { diff one.rows exact.rows; fail "an exact value changed the comparison"; }
grep -q '^Left out: BASE 500ms and NEW 0 ' out || { cat out; fail "the exact value left out is not said"; }

# --- 6. the folded format: BASE scaled to NEW's total ---
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 a\nfunction 3 b\nlocation 1 0 0 1\nlocation 2 0 0 2\nlocation 3 0 0 3\nsample 3 300 : 2 1\nsample 1 100 : 3 1\n' |
	$EMU "$MK" f1.pb || fail "tool_mkprof"
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 a\nfunction 3 b\nfunction 4 c\nlocation 1 0 0 1\nlocation 2 0 0 2\nlocation 3 0 0 3\nlocation 4 0 0 4\nsample 4 400 : 2 1\nsample 3 300 : 3 1\nsample 1 100 : 4 1\n' |
	$EMU "$MK" f2.pb || fail "tool_mkprof"
dif 0 --format folded f1.pb f2.pb
printf 'main;a 600 400\nmain;b 200 300\nmain;c 0 100\n' >want
cmp -s out want || { diff want out; fail "folded"; }
# Lines that part above their leaf (main;a;x, then main;b;y): each names
# its own frames, not the line before's.
printf 'type samples count\ntype cpu nanoseconds\nfunction 1 main\nfunction 2 a\nfunction 3 b\nfunction 5 x\nfunction 6 y\nlocation 1 0 0 1\nlocation 2 0 0 2\nlocation 3 0 0 3\nlocation 5 0 0 5\nlocation 6 0 0 6\nsample 2 200 : 5 2 1\nsample 2 200 : 6 3 1\n' |
	$EMU "$MK" f3.pb || fail "tool_mkprof"
dif 0 --format folded f3.pb f3.pb
printf 'main;a;x 200 200\nmain;b;y 200 200\n' >want
cmp -s out want || { diff want out; fail "folded: a line with the frames of the line before"; }

# --- 7. what cannot be compared: exit 2 with a message ---
printf 'type samples count\nfunction 1 main\nlocation 1 0 0 1\nsample 5 : 1\n' | $EMU "$MK" count.pb
dif 2 f1.pb count.pb
grep -q 'cannot compare f1.pb and count.pb: their sample types differ' err || { cat err; fail "other types"; }
printf 'type samples count\ntype cpu nanoseconds\n' | $EMU "$MK" empty.pb
dif 2 f1.pb empty.pb
grep -q 'cannot compare: NEW (empty.pb) has no samples' err || { cat err; fail "empty NEW"; }
dif 2 f1.pb no-such.pb
grep -q 'no-such.pb' err || fail "a missing file"
dif 2 f1.pb f2.pb -o no-such-dir/x.txt
ls | grep -q '\.tmp' && fail "-o: a temporary file was left"
# Profiles of other programs (their main files' names) are refused unless
# asked for; a rebuild of one program (another build ID) is what diff is for.
for prog in prog_a prog_b; do
	printf 'type samples count\ntype cpu nanoseconds\nmapping 1 /opt/%s\nfunction 1 main\nlocation 1 1 0x1100 1\nsample 5 5000 : 1\n' \
		$prog | $EMU "$MK" $prog.pb || fail "tool_mkprof $prog"
done
dif 2 prog_a.pb prog_b.pb
grep -q 'prog_a.pb is a profile of prog_a, prog_b.pb of prog_b: other programs' err || { cat err; fail "other programs"; }
dif 0 --other-programs prog_a.pb prog_b.pb
cp f2.pb f2.keep
dif 2 -o f2.pb f1.pb f2.pb
grep -q 'a profile it reads' err && cmp -s f2.pb f2.keep || { cat err; fail "diff -o onto its NEW profile"; }
# Two NEW files are merged, and so are BASE files given with --base.
dif 0 --format folded f1.pb f2.pb f2.pb
grep -qx 'main;a 1200 800' out || { cat out; fail "two NEW files are not merged"; }
dif 0 --format folded --base f2.pb --base f2.pb f1.pb
grep -qx 'main;c 50 0' out || { cat out; fail "two BASE files are not merged"; }
dif 0 --base f2.pb --base f2.pb f1.pb
grep -q '^BASE: 2 profiles merged$' out || { cat out; fail "two BASE files: not said"; }

# --- 8. two profiles recorded by cpuprof: grow_me does 1.5 times the work ---
# rec OUT MS FACTOR: records work_grow; prints the profile's samples
rec() {
	$EMU "$CP" record -F 4000 -o "$1" -- $EMU "$WORK" "$2" "$3" >/dev/null 2>rec.err ||
		{ cat rec.err >&2; fail "record work_grow $2 $3"; }
	sed -n 's/.*: \([0-9]*\) samples,.*/\1/p' rec.err
}
# grow_me goes from 50% to 60%: at 2500 samples each the change is 7
# standard deviations.  Where the engine samples fewer than 2500 a
# second (a tick-bound timer), the runs are made long enough.
ms=1000
s=$(rec g1.pb.gz $ms 1)
if [ "${s:-0}" -lt 2500 ]; then
	ms=$((1000 * 3000 / (${s:-0} + 1)))
	[ $ms -le 20000 ] || fail "only ${s:-0} samples in 1 s of work_grow"
	s=$(rec g1.pb.gz $ms 1)
fi
rec g2.pb.gz $ms 1.5 >/dev/null
rec g3.pb.gz $ms 1 >/dev/null
dif 1 g1.pb.gz g2.pb.gz
cat out
rows out | grep -Eq '^\+ flat .* grow_me$' || fail "recorded: grow_me is not marked grown"
rows out | head -n 2 | grep -q 'grow_me$\|steady$' || fail "recorded: the changes are not first"
rows out | grep -Eq '^[+-] ' | grep -Ev 'grow_me$|steady$' && fail "recorded: another function changed"
# The same workload twice: nothing changed.  (At --alpha 0.0001: a real
# pair cannot be drawn a thousand times, and this one must not flake.)
dif 0 --alpha 0.0001 g1.pb.gz g3.pb.gz
grep -q '^Nothing changed beyond noise' out || { cat out; fail "recorded: the same workload changed"; }
# The differential flame graph is written (t_report_html.sh opens one).
dif 1 --format html -o g.html g1.pb.gz g2.pb.gz
grep -q '"diff":{"base"' g.html || fail "html: no diff data in the page"
echo "ok"
