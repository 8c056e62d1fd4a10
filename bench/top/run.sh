#!/bin/sh
# run.sh -- what `cpuprof top` costs (not a test): its own CPU while it
# shows 4 busy threads sampled at 1 kHz (work_hot 4 MS), in a pipe and on
# a terminal (a tmux pane of 100x30, where tmux is installed), beside
# `cpuprof record`'s own CPU for the same run; and a view's cost, from the
# same run with a view every 1 s and every 0.1 s.  Own CPU is
# /proc/PID/stat's utime + stime of top (or record) alone, not of the
# program it runs, read every 0.2 s until it exits, over its wall time.
# Prints a markdown section "## cpuprof top" on stdout; bench/run.py
# (`make bench`) puts it into docs/benchmarks.md.  QUICK=1: a quarter of
# the CPU.
# Usage: sh bench/top/run.sh
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
B=${B:-build}
make -s all tests >&2
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_hot
MS=20000
[ "${QUICK:-0}" = 1 ] && MS=5000
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_top.XXXXXX")
trap 'tmux -S "$tmp/sock" kill-server 2>/dev/null || :; rm -rf "$tmp"' EXIT
TCK=$(getconf CLK_TCK)

load() { cut -d' ' -f1-3 /proc/loadavg; }
now() { date +%s.%N; }
# own PID: PID's own CPU ticks (utime + stime), or nothing once it is gone.
own() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
# watch PID T0 NAME: polls PID's own CPU until it exits; writes "ticks
# wall_s" to $tmp/NAME.cost.
watch() {
	last=0
	while kill -0 "$1" 2>/dev/null; do
		v=$(own "$1")
		[ -n "$v" ] && last=$v
		t1=$(now)
		sleep 0.2
	done
	echo "$last $(awk -v a="$2" -v b="$t1" 'BEGIN { print b - a }')" >"$tmp/$3.cost"
}
# views FILE: how many views a pipe's output holds.
views() { grep -c '^cpuprof top: ' "$1"; }
# samples FILE: the samples of its last view.
samples() { sed -n 's/^since start:.* \([0-9][0-9]*\) samples.*/\1/p' "$1" | tail -n 1; }

load0=$(load)
echo "[top] pipe, -i 1" >&2
t0=$(now)
"$CP" top -F 1000 -- "$W" 4 $MS </dev/null >"$tmp/pipe.out" 2>"$tmp/pipe.err" &
watch $! "$t0" pipe
echo "[top] pipe, -i 0.1" >&2
t0=$(now)
"$CP" top -F 1000 -i 0.1 -- "$W" 4 $MS </dev/null >"$tmp/fast.out" 2>"$tmp/fast.err" &
watch $! "$t0" fast
echo "[top] record" >&2
t0=$(now)
"$CP" record -F 1000 -o "$tmp/r.pb.gz" -- "$W" 4 $MS </dev/null >/dev/null 2>"$tmp/record.err" &
watch $! "$t0" record
rsamples=$(sed -n 's/.*: \([0-9]*\) samples.*/\1/p' "$tmp/record.err")
tty=
if command -v tmux >/dev/null 2>&1; then
	echo "[top] tmux 100x30, -i 1" >&2
	t0=$(now)
	# The pane stays when top exits: its last view has the samples.
	timeout 30 tmux -S "$tmp/sock" new-session -d -x 100 -y 30 -s m "exec $CP top -F 1000 -- $W 4 $MS" \; \
		set-option -g remain-on-exit on || :
	pid=
	for i in $(seq 100); do
		pid=$(tmux -S "$tmp/sock" display -p -t m '#{pane_pid}' 2>/dev/null) && [ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] && watch "$pid" "$t0" tty && tty=1
	tmux -S "$tmp/sock" capture-pane -p -t m >"$tmp/tty.out" 2>/dev/null || :
fi
load1=$(load)

# row NAME WHAT SAMPLES: a table row from $tmp/NAME.cost.
row() {
	read -r ticks wall <"$tmp/$1.cost"
	awk -v w="$2" -v t="$ticks" -v tck="$TCK" -v s="$wall" -v n="$3" 'BEGIN {
		c = t / tck
		per = n > 0 ? sprintf("%.1f", c / n * 1e6) : "-"
		printf "| %s | %.2f | %.1f | %.2f%% | %s | %s |\n", w, c, s, 100 * c / s, n, per
	}'
}
echo "## cpuprof top"
echo
echo "$(date -u +%Y-%m-%d), \`sh bench/top/run.sh\`$([ "${QUICK:-0}" = 1 ] && echo " (QUICK=1)"): \`cpuprof top -F 1000 -- work_hot 4 $MS\`"
echo "(4 threads, $((MS / 1000)) s of CPU each, sampled at 1 kHz), its own CPU (\`/proc/PID/stat\` utime + stime"
echo "of top alone, read every 0.2 s until it exits) over its wall time; \`cpuprof record\` for the same"
echo "run beside it.  Load average $load0 before, $load1 after: on a busy machine the program gets"
echo "less CPU, the wall time is longer and the share of a CPU smaller; the cost per sample does not"
echo "depend on it."
echo
echo "| run | own CPU (s) | wall (s) | of one CPU | samples | µs per sample |"
echo "|---|---:|---:|---:|---:|---:|"
row pipe "top, a pipe, a view a second ($(views "$tmp/pipe.out") views)" "$(samples "$tmp/pipe.out")"
[ -n "$tty" ] && row tty "top, a tmux pane of 100x30, a view a second" "$(samples "$tmp/tty.out")"
row fast "top, a pipe, a view every 0.1 s ($(views "$tmp/fast.out") views)" "$(samples "$tmp/fast.out")"
row record "record (writes the profile at the end)" "${rsamples:--}"
echo
read -r t1 w1 <"$tmp/pipe.cost"
awk -v t="$t1" -v w="$w1" -v tck="$TCK" 'BEGIN {
	printf "At 1 kHz on 4 busy threads top takes %.2f%% of one CPU in a pipe (the aim: at most 2%%).\n", 100 * t / tck / w
}'

read -r t2 w2 <"$tmp/fast.cost"
awk -v a="$t1" -v b="$t2" -v na="$(views "$tmp/pipe.out")" -v nb="$(views "$tmp/fast.out")" -v tck="$TCK" 'BEGIN {
	if (nb > na && b > a)
		printf "A view costs about %.2f ms of top'"'"'s CPU ((%.2f s - %.2f s) / (%d - %d) views); the rest is record'"'"'s\n", (b - a) / tck / (nb - na) * 1e3, b / tck, a / tck, nb, na
	else
		printf "The views'"'"' own cost is below what this run can tell (%.2f s with %d views, %.2f s with %d); the rest is record'"'"'s\n", a / tck, na, b / tck, nb
	print "work: reading the rings and unwinding each sample."
}'
