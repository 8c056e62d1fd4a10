#!/bin/sh
# paired.sh -- what --off-cpu adds to `cpuprof record`, in a form that can
# be judged (issue 32; not a test): ROUNDS rounds, each a pair (or more)
# of runs of the same fixed work, tests/work/work_offcpu pingpong at US µs
# a side (10,000 or more switches a second where nothing else runs), one
# under plain `record`, one under `record --off-cpu`, in an order that
# alternates from round to round.  The load of a shared machine then falls
# on both runs of a round alike, and each round gives one ratio: the
# program's wall (its own clock around the work) with --off-cpu over
# without.  Prints, as a markdown table, the median ratio and its 95%
# interval: the order statistics x(k), x(n+1-k) of the n ratios, k the
# largest with P(Binomial(n, 1/2) < k) <= 0.025 (distribution-free: it
# holds whatever the ratios' spread), and the same of the CPU ratio.
# Usage: sh bench/offcpu/paired.sh [ROUNDS]
# It stops after ROUNDS rounds (default 400), or sooner: once the wall
# ratio's interval is narrower than TARGET_PP percentage points (default
# 1; checked after each round from MIN_ROUNDS, default 20, on: a stop so
# chosen makes the interval a little optimistic), or after MAX_SECS
# (default 3600) seconds.
# Environment: KEEP (a directory for each run's output), NICE (default
# "chrt -f 10" for root, else empty: the caller's priority), PIN
# (default empty), US (default 80), WORK_ROUNDS (default 10000: 0.8 s of
# work a side), B (the build, default build), OTHER: builds (directories) whose
# `record --off-cpu` is run in the same rounds besides (e.g. one built
# with -DCP_SWITCH_STACK_COPY=2048), each against the same round's plain
# `record` and against B's --off-cpu.
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
B=${B:-build}
ROUNDS=${1:-400}
MIN_ROUNDS=${MIN_ROUNDS:-20}
TARGET_PP=${TARGET_PP:-1}
MAX_SECS=${MAX_SECS:-3600}
US=${US:-80}
WORK_ROUNDS=${WORK_ROUNDS:-10000}
OTHER=${OTHER:-}
# Others' work on a shared machine makes a round's wall mostly theirs (the
# two threads wait for a CPU at every switch, and nice -20 did not stop
# that: rounds 10-20% apart); as a real-time task (root) the runs get a
# CPU when they ask, as on an idle machine.  PIN: a command the program
# runs under, e.g. "taskset -c 1": both threads on one CPU, where every
# switch's cost is in the program's wall (the worst case); unpinned, a
# switch-out's sample is taken while the other thread already runs on
# the other CPU.
[ "$(id -u)" = 0 ] && NICE=${NICE-chrt -f 10}
NICE=${NICE-}
PIN=${PIN-}
W=$ROOT/$B/tests/work_offcpu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_paired.XXXXXX")
# KEEP: a directory to keep each run's output in (DIR/NAME.ROUND).
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/* "$KEEP"/; fi; rm -rf "$tmp"' EXIT
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }

# The configurations of a round: "name build flags".
configs="plain $B -
offcpu $B --off-cpu"
for o in $OTHER; do
	configs="$configs
$(basename "$o") $o --off-cpu"
done
nconf=$(printf '%s\n' "$configs" | wc -l)

# The per-round ratios of KEY, a over b, one a line (none for a round
# where either run failed: a binary rebuilt under it, say).
ratios() { for r in $(seq "$ROUNDS"); do
	awk -v a="$(field "$3" <"$tmp/$1.$r")" -v b="$(field "$3" <"$tmp/$2.$r")" 'BEGIN { if (a > 0 && b > 0) print a / b }'
done; }
# Median and 95% interval of the numbers on stdin, as "+x.x% [+a.a%, +b.b%] (width w.w pp)".
interval() { sort -g | awk '{ v[NR] = $1 } END {
	n = NR; if (!n) { print "–"; exit }
	med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	# k: the largest with P(X < k) <= 0.025, X ~ Binomial(n, 1/2).
	p = 0.5 ^ n; cdf = 0; k = 0
	for (i = 0; i <= n; i++) { if (cdf + p > 0.025) break; cdf += p; k = i + 1; p = p * (n - i) / (i + 1) }
	if (k < 1) k = 1
	lo = v[k]; hi = v[n + 1 - k]
	printf "%+.1f%% [%+.1f%%, %+.1f%%] (width %.1f pp)", (med - 1) * 100, (lo - 1) * 100, (hi - 1) * 100, (hi - lo) * 100 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
switches() { for r in $(seq "$ROUNDS"); do field switches_per_s <"$tmp/$1.$r"; done | median; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
: >"$tmp/loads"
for r in $(seq "$ROUNDS"); do
	# Rotate the order: round r starts at configuration r mod nconf and,
	# on odd passes, runs them backwards, so no one always goes first.
	order=$(printf '%s\n' "$configs" | awk -v r="$r" -v n="$nconf" '{ c[NR] = $0 }
		END { s = r % n; for (i = 0; i < n; i++) { j = (s + i) % n + 1; o[i] = c[j] }
		      if (int(r / n) % 2) for (i = n - 1; i >= 0; i--) print o[i]; else for (i = 0; i < n; i++) print o[i] }')
	printf '%s\n' "$order" | while read -r name build flags; do
		[ "$flags" = - ] && flags=
		# shellcheck disable=SC2086
		$NICE "$ROOT/$build/cpuprof" record $flags -o "$tmp/p.pb.gz" -- $PIN "$W" pingpong "$WORK_ROUNDS" "$US" \
			>"$tmp/$name.$r" 2>/dev/null
	done
	cut -d' ' -f1 /proc/loadavg >>"$tmp/loads"
	done_rounds=$r
	# Enough: the wall interval narrower than TARGET_PP, or the time is up.
	if [ "$r" -ge "$MIN_ROUNDS" ]; then
		ROUNDS=$r
		width=$(ratios offcpu plain wall_s | interval | sed -n 's/.*(width \([0-9.]*\) pp).*/\1/p')
		awk -v w="$width" -v t="$TARGET_PP" 'BEGIN { exit !(w != "" && w < t) }' && break
		[ $(($(date +%s) - t0)) -ge "$MAX_SECS" ] && break
	fi
done
ROUNDS=$done_rounds
secs=$(($(date +%s) - t0))
load1=$(cut -d' ' -f1-3 /proc/loadavg)


cat <<HEAD
$ROUNDS rounds of \`work_offcpu pingpong $WORK_ROUNDS $US\` ($secs s), load average $load0 at the start,
$load1 at the end, the 1-minute load between rounds $(sort -g "$tmp/loads" | awk '{ v[NR] = $1 } END { printf "%s to %s, median %s", v[1], v[NR], v[int((NR + 1) / 2)] }').

| runs compared, round by round | switches/s (median) | wall: median [95% interval] | CPU: median [95% interval] |
|---|---:|---|---|
HEAD
row() { printf '| %s | %s | %s | %s |\n' "$3" "$(switches "$1")" "$(ratios "$1" "$2" wall_s | interval)" \
	"$(ratios "$1" "$2" cpu_s | interval)"; }
row offcpu plain "\`record --off-cpu\` / \`record\`"
for o in $OTHER; do
	n=$(basename "$o")
	row "$n" plain "$n: \`record --off-cpu\` / \`record\`"
	row "$n" offcpu "$n: \`record --off-cpu\` / $B's"
done
