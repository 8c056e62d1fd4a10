#!/bin/sh
# run.sh [RUNS] -- the gperftools drop-in beside gperftools' own library:
# one program (fixed.c), built against gperftools' libprofiler.so.0, run
# at CPUPROFILE_FREQUENCY=1000 on gperftools' library, on ours
# (LD_LIBRARY_PATH=build, engine auto and, for a tick-bound engine like
# gperftools' ITIMER_PROF, CPUPROF_ENGINE=timer), and unprofiled, RUNS
# times each (default 5), in turn, with 1 and 4 threads.  Prints a
# markdown table of medians: the samples in the profile (its periods), the
# samples 1 kHz asks for over the work's CPU time, coverage (the profile's
# CPU time, samples x 1 ms, over the process's CPU time the program read
# itself), and the work's CPU and wall time against the unprofiled runs'.
# Needs gperftools' library and headers (libgoogle-perftools-dev).
set -e
cd "$(dirname "$0")/../.."
B=${B:-build}
RUNS=${1:-5}
make -s "$B/libprofiler.so.0"
out=$B/bench-gperftools
mkdir -p "$out"
cc -O2 -g -fno-omit-frame-pointer -o "$out/fixed" bench/gperftools/fixed.c -lprofiler -pthread
LIB=$(pwd -P)/$B

# periods FILE: the sum of the counts of a binary profile
periods() {
	od -An -tu8 -v -w8 "$1" | awk '
		NR <= 5 { next }
		{ w[++n] = $1 }
		END {
			for (i = 1; i + 2 <= n; i += 2 + w[i + 1]) {
				if (w[i] == 0 && w[i + 1] == 1 && w[i + 2] == 0) break
				total += w[i]
			}
			print total + 0
		}'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

MSTEPS=2000
echo "| threads | profiler | samples | expected at 1 kHz | coverage | work CPU | CPU vs none | wall vs none |"
echo "|---|---|---|---|---|---|---|---|"
for threads in 1 4; do
	rm -f "$out"/*.tsv
	for run in $(seq "$RUNS"); do
		for p in none gperftools cpuprof cpuprof-timer; do
			f=$out/$p.prof
			rm -f "$f"
			case $p in
			none) "$out/fixed" "$threads" $MSTEPS - >"$out/o" ;;
			gperftools) CPUPROFILE_FREQUENCY=1000 "$out/fixed" "$threads" $MSTEPS "$f" >"$out/o" 2>/dev/null ;;
			cpuprof) CPUPROFILE_FREQUENCY=1000 LD_LIBRARY_PATH=$LIB "$out/fixed" "$threads" $MSTEPS "$f" >"$out/o" 2>/dev/null ;;
			cpuprof-timer) CPUPROF_ENGINE=timer CPUPROFILE_FREQUENCY=1000 LD_LIBRARY_PATH=$LIB \
				"$out/fixed" "$threads" $MSTEPS "$f" >"$out/o" 2>/dev/null ;;
			esac
			cpu=$(sed -n 's/^work_cpu_ns //p' "$out/o")
			wall=$(sed -n 's/^work_wall_ns //p' "$out/o")
			n=0
			[ $p = none ] || n=$(periods "$f")
			echo "$cpu $wall $n" >>"$out/$p.tsv"
		done
	done
	base_cpu=$(cut -d' ' -f1 "$out/none.tsv" | median)
	base_wall=$(cut -d' ' -f2 "$out/none.tsv" | median)
	for p in none gperftools cpuprof cpuprof-timer; do
		cpu=$(cut -d' ' -f1 "$out/$p.tsv" | median)
		wall=$(cut -d' ' -f2 "$out/$p.tsv" | median)
		n=$(cut -d' ' -f3 "$out/$p.tsv" | median)
		case $p in
		none) name="none" ;;
		gperftools) name="gperftools 2.10 (Debian)" ;;
		cpuprof) name="cpuprof's libprofiler (auto: perf)" ;;
		cpuprof-timer) name="cpuprof's libprofiler, CPUPROF_ENGINE=timer" ;;
		esac
		awk -v t="$threads" -v name="$name" -v n="$n" -v cpu="$cpu" -v wall="$wall" -v bc="$base_cpu" \
			-v bw="$base_wall" -v none=$([ $p = none ] && echo 1 || echo 0) 'BEGIN {
			if (none)
				printf "| %d | %s | | | | %.3f s | 1 | 1 |\n", t, name, cpu / 1e9
			else
				printf "| %d | %s | %d | %d | %.3f | %.3f s | %.3f | %.3f |\n", t, name, n, cpu / 1e6,
					n * 1e6 / cpu, cpu / 1e9, cpu / bc, wall / bw
		}'
	done
done
