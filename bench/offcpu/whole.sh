#!/bin/sh
# whole.sh -- how much of the off-CPU time keeps its whole stack (issue 32;
# not a test): each program below under `cpuprof record --off-cpu` of
# each build in BUILDS (say, builds made with another
# -DCP_SWITCH_STACK_COPY, bench/offcpu/paired.sh), its off-CPU time split
# by the stack it is charged to: whole (the walk reached the thread's
# outermost frame: _start, clone3...), cut short where the stack copy
# ended ([truncated]), or with no stack at all (a wait that began before
# the profile, a new thread's first wait to run).  Prints a markdown table.
# Usage: sh bench/offcpu/whole.sh
# Environment: BUILDS (default "build").
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
BUILDS=${BUILDS:-build}
tmp=$(mktemp -d "$ROOT/build/whole.XXXXXX") # on disk: sqlite's waits are fsync's
trap 'rm -rf "$tmp"' EXIT
W=$ROOT/build/tests/work_offcpu
seq 1 400000 >"$tmp/nums"
head -c 16000000 /dev/urandom >"$tmp/rnd"
{
	echo "create table t(a, b);"
	i=0
	while [ $i -lt 300 ]; do
		echo "insert into t values($i, hex(randomblob(200)));"
		i=$((i + 1))
	done
	echo "select count(*), sum(length(b)) from t;"
} >"$tmp/q.sql"

# name: command (run in $tmp)
programs="pingpong: $W pingpong 3000 80
kinds: $W kinds 100
deep: $W deep 100 100
xz: xz -T2 -3 -c rnd
pipeline: cat nums | sort -rn | gzip -1 | gzip -d | wc -l
sqlite3: sqlite3 db <q.sql"

echo "| program | build | stack copy | off-CPU (s) | whole | cut short ([truncated]) | no stack |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s\n' "$programs" | while IFS=: read -r name cmd; do
	for b in $BUILDS; do
		rm -f "$tmp/db"
		copy=$(strace -f -v -e trace=perf_event_open "$ROOT/$b/cpuprof" record --off-cpu -o "$tmp/p.pb.gz" -- true 2>&1 |
			sed -n 's/.*CONTEXT_SWITCHES.*sample_stack_user=\([0-9a-fx]*\).*/\1/p' | head -1)
		(cd "$tmp" && "$ROOT/$b/cpuprof" record --off-cpu -o p.pb.gz -- sh -c "$cmd" >/dev/null 2>&1)
		"$ROOT/$b/cpuprof" report --format folded --value off-cpu "$tmp/p.pb.gz" | awk -v n="$name" -v b="$b" -v c="$copy" '
			{ w = $NF; all += w }
			/^\[truncated\]/ || /;\[truncated\]/ { cut += w; next }
			/^\[/ { none += w; next }
			{ whole += w }
			END { if (all == 0) all = 1
			      printf "| %s | %s | %d | %.3f | %.1f%% | %.1f%% | %.1f%% |\n", n, b, c, all / 1e9,
				whole / all * 100, cut / all * 100, none / all * 100 }'
	done
done
