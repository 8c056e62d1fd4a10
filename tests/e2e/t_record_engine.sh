#!/bin/sh
# t_record_engine.sh -- `cpuprof record` and `cpuprof report` with each
# engine on a real program: work_hot, 4 threads, times every call of its
# hot and warm chains with the thread CPU clock (WORK_HOT_CPU=1) and prints
# its own process CPU clock at the end.  The profile must hold that CPU
# within 3% (all its samples, the frames that are not code included), give
# hot_top and warm_top their measured shares within four standard
# deviations of a share estimated from that many samples (plus a point),
# say engine=ENGINE and arm main and its 4 threads (names come from the
# profile itself: the program is deleted before it is read); where the
# engine fires above the tick (perf, hw), take at least 85% of the samples
# 1 kHz asks for.  `cpuprof report` reads the same profile in every format: top leads
# with hot_leaf and shows the comments, folded adds up to the profile's
# CPU with the chain to hot_leaf whole, tree nests hot_leaf under hot_mid,
# html holds the frames.  A program that scribbles on its frame-pointer
# register does not crash under the engine.  An engine this machine allows
# (tool_engine) must work; one it does not is a skip.
#
# TEST_ENGINES: perf hw timer itimer
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot
TOOL=$ROOT/$B/tests/tool_engine

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
[ -x "$CP" ] && [ -x "$WORK" ] && [ -x "$TOOL" ] || fail "build first (make tests)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_record_engine.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }
# within X LO HI: LO <= X <= HI
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }

engines=${CPUPROF_TEST_ENGINE:-perf hw timer itimer}
ran=0
for e in $engines; do
	if ! why=$($EMU "$TOOL" "$e"); then
		[ -n "${CPUPROF_TEST_ENGINE:-}" ] && skip "$why"
		echo "not run: $why"
		continue
	fi
	ran=$((ran + 1))
	cp "$WORK" ./work
	WORK_HOT_CPU=1 $EMU "$CP" record -o $e.pb.gz -F 1000 --engine $e -- $EMU ./work 4 400 >out 2>err ||
		{ cat err; fail "$e: record exited $?"; }
	grep -qx "work_hot done" out || fail "$e: the program's output changed"
	grep -q "cpuprof: wrote $e.pb.gz: [0-9]* samples, engine=$e" err || { cat err; fail "$e: no summary line"; }
	rm -f ./work
	# shellcheck disable=SC2046 # four numbers
	set -- $(sed -n 's/^work_hot cpu //p' out)
	[ $# -eq 3 ] || fail "$e: work_hot printed no CPU line"
	cpu=$1 hot=$2 warm=$3
	[ "$(comment $e.pb.gz engine)" = "$e" ] || fail "$e: the profile says engine=$(comment $e.pb.gz engine)"
	threads=$(comment $e.pb.gz threads)
	[ "$threads" -ge 5 ] || fail "$e: $threads threads armed, expected main + 4"

	# The whole, and the two chains, against the program's clocks.
	go tool pprof -raw $e.pb.gz 2>/dev/null >raw || fail "$e: pprof -raw"
	awk '/^Locations/ { exit } /^ *[0-9]+ +[0-9]+: / { c += $1; n += $2 } END { print c, n }' raw >sums
	read -r count total <sums
	ratio=$(awk -v a="$total" -v b="$cpu" 'BEGIN { printf "%.4f", a / b }')
	echo "$e: the profile holds $total ns, the program's clock $cpu ns: $ratio; $count samples"
	within "$ratio" 0.97 1.03 || fail "$e: the profile holds $ratio of the program's CPU"
	cov=$(comment $e.pb.gz coverage)
	within "$cov" "$(awk -v r="$ratio" 'BEGIN { print r - 0.02 }')" "$(awk -v r="$ratio" 'BEGIN { print r + 0.02 }')" ||
		fail "$e: coverage=$cov where the program's clock gives $ratio"
	go tool pprof -top -sample_index=cpu -unit=ns -nodecount=1000 $e.pb.gz 2>/dev/null >top
	awk -v hot="$hot" -v warm="$warm" -v n="$count" -v e="$e" '
		$6 == "hot_top" { ph = $4 } $6 == "warm_top" { pw = $4 }
		END {
			want = hot / (hot + warm); got = ph / (ph + pw)
			bound = 4 * sqrt(want * (1 - want) / n) + 0.01
			printf "%s: hot_top has %.3f of the two in the profile, %.3f by its clock (bound %.3f)\n", e, got, want, bound
			exit !(got - want <= bound && want - got <= bound)
		}' top || fail "$e: hot_top's share is off"
	case $e in
	perf | hw)
		floor=0.85
		[ $e = hw ] && floor=0.75
		lost=$(comment $e.pb.gz lost)
		awk -v c="$count" -v cpu="$cpu" -v f="$floor" -v e="$e" 'BEGIN {
			asked = cpu / 1e6
			printf "%s: %d samples where 1000 Hz asks for %.0f\n", e, c, asked
			exit !(c >= f * asked && c <= 1.1 * asked) }' || fail "$e: too few samples for an engine above the tick"
		;;
	esac

	# cpuprof report on the same profile, every format.
	$EMU "$CP" report $e.pb.gz >rtop 2>rerr || { cat rerr; fail "$e: report exited $?"; }
	grep -q "engine=$e .*coverage=" rtop || { cat rtop; fail "$e: report's header lacks the comments"; }
	awk '/flat%/ { on = 1; next } on { print $6; exit }' rtop | grep -qx hot_leaf || { cat rtop; fail "$e: report top"; }
	$EMU "$CP" report --format folded $e.pb.gz >folded || fail "$e: report --format folded"
	fsum=$(awk '{ s += $NF } END { printf "%d", s }' folded)
	[ "$fsum" = "$total" ] || fail "$e: folded stacks add up to $fsum ns, the profile to $total"
	grep -q ';worker;hot_top;hot_mid;hot_leaf [0-9]*$' folded || { head folded; fail "$e: no whole chain to hot_leaf"; }
	$EMU "$CP" report --format tree $e.pb.gz >tree || fail "$e: report --format tree"
	awk '$NF == "hot_mid" { d = index($0, "hot_mid") } d && $NF == "hot_leaf" && index($0, "hot_leaf") > d { ok = 1 }
		END { exit !ok }' tree || { cat tree; fail "$e: the tree does not nest hot_leaf under hot_mid"; }
	$EMU "$CP" report --format html -o $e.html $e.pb.gz || fail "$e: report --format html"
	grep -q hot_leaf $e.html || fail "$e: the flame graph has no hot_leaf"
	$EMU "$CP" report --value samples $e.pb.gz >rsamples || fail "$e: report --value samples"
	grep -q hot_leaf rsamples || fail "$e: report --value samples"

	# A program that scribbles on rbp while sampled.
	cp "$WORK" ./work
	$EMU "$CP" record -o f.pb.gz --engine $e -F 5000 -- $EMU ./work 2 300 0 scribble >/dev/null 2>err ||
		{ cat err; fail "scribble, $e: exit $?"; }
	l=$(go tool pprof -top f.pb.gz 2>/dev/null | awk '/flat%/ { on = 1; next } on { print $6; exit }')
	[ "$l" = hot_leaf ] || fail "scribble, $e: leader $l"
done
[ $ran -gt 0 ] || fail "no engine can run here"
echo ok
