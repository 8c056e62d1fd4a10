#!/bin/sh
# run.sh -- what source lines and inline frames cost when a profile is
# written (not a test): builds libzstd from Debian's source package (apt-get
# source libzstd, kept in $B/ext/) with -O2 -g, a C library with heavy
# inlining, and takes the libstdc++ built with DWARF that Debian's
# libstdc++6-12-dbg ships (installed as root), a C++ one; builds
# bench/lines/write.c against this tree's libcpuprof-internal.a; then, for each
# library, writes 100,000 distinct stacks of 20 frames drawn from 50,000
# (and 10,000) addresses spread over all its functions, names only and
# with lines, REPS times each, and prints a markdown section on stdout:
# the medians of the write's time, of this process's added peak RSS, of
# the peak RSS of the child that reads the DWARF, of the same reading's
# in one process, and the file's size.
# Usage: sh bench/lines/run.sh [REPS] >> docs/benchmarks.md
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd -P)
B=${B:-build}
ARCH=$(uname -m)
REPS=${1:-5}
make -s all >&2
mkdir -p "$B/bench" "$B/ext"
ext=$ROOT/$B/ext
src=$(ls -d "$ext"/libzstd-*/lib 2>/dev/null | head -1)
if [ -z "$src" ]; then
	(cd "$ext" && apt-get source -qq libzstd >&2)
	src=$(ls -d "$ext"/libzstd-*/lib | head -1)
fi
lib=$ROOT/$B/bench/libzstd-g.so
if [ ! -e "$lib" ]; then
	objs=$ROOT/$B/bench/zstd-obj
	mkdir -p "$objs"
	# As upstream's Makefile builds it, less the x86-64 assembly (one
	# source of C for both CPUs).
	ls "$src"/common/*.c "$src"/compress/*.c "$src"/decompress/*.c "$src"/dictBuilder/*.c |
		xargs -P 2 -I{} sh -c '${CC:-cc} -O2 -g -fPIC -DZSTD_DISABLE_ASM -DZSTD_MULTITHREAD \
			-I"$1" -I"$1/common" -c "$2" -o "$3/$(basename "$2" .c).o"' _ "$src" {} "$objs"
	${CC:-cc} -shared -pthread -o "$lib" "$objs"/*.o
fi
${CC:-cc} -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Isrc -Isrc/arch/$ARCH \
	-o "$B/bench/lines_write" bench/lines/write.c "$B/libcpuprof-internal.a" -lz -ldl -pthread -l:libiberty.a
W=$ROOT/$B/bench/lines_write
[ "$(id -u)" -eq 0 ] && sh scripts/deps.sh libstdc++6-12-dbg >&2
libs=$lib
cxx=/usr/lib/$ARCH-linux-gnu/debug/libstdc++.so.6
[ -e "$cxx" ] && libs="$libs $cxx"

load() { cut -d' ' -f1-3 /proc/loadavg; }
cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -1)
[ -n "$cpu" ] || cpu=$(uname -m)
load0=$(load)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_lines.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for l in $libs; do
	for addrs in 50000 10000; do
		for r in $(seq "$REPS"); do
			for mode in names lines reader; do
				"$W" "$l" $mode 100000 20 $addrs >>"$tmp/runs.$(basename "$l")"
			done
		done
	done
done
load1=$(load)

# median FIELD MODE ADDRS
median() {
	sed -n "s/^$2 .* addrs=$3 .*/&/p" "$runs" | tr ' ' '\n' | sed -n "s/^$1=//p" | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
added() {
	sed -n "s/^$1 .* addrs=$2 .*/&/p" "$runs" | awk '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		print f["hwm_after_kib"] - f["hwm_before_kib"] }' | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
# facts LIB: "FUNCTIONS TEXT_KIB DWARF_KIB"
facts() {
	first=$(head -1 "$tmp/runs.$(basename "$1")")
	fns=$(echo "$first" | tr ' ' '\n' | sed -n 's/^functions=//p')
	text=$(echo "$first" | tr ' ' '\n' | sed -n 's/^text=//p')
	dbg=$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\]//' | perl -ane '$s += hex($F[4]) if $F[0] =~ /^\.debug_/; END { print $s + 0 }')
	echo "$fns $((text / 1024)) $((dbg / 1024))"
}
set -- $(facts "$lib")

cat <<EOF

## Source lines

What reading source lines and inline frames from DWARF adds to writing a
profile (\`sh bench/lines/run.sh\`, $(date -u +%Y-%m-%d), $cpu, load
average $load0 before and $load1 after, on a machine shared with other
work).  The libraries: libzstd 1.5.4 from Debian's source package, built
\`-O2 -g\` ($1 functions in $2 KiB of code, $3 KiB of DWARF), and
EOF
if [ -e "$cxx" ]; then
	set -- $(facts "$cxx")
	echo "the libstdc++ 12 built with DWARF of Debian's libstdc++6-12-dbg ($1 functions in $2 KiB of"
	echo "code, $3 KiB of DWARF, C++)."
fi
cat <<EOF
\`bench/lines/write.c\` loads each, draws 100,000 distinct stacks of 20
frames from a pool of distinct addresses spread over all its functions
(every unit of its DWARF is read), and writes them with \`pprof_write\`,
names only (\`cp_pprof_lines = 0\`, as before lines) and with lines.
Medians of $REPS runs each.  **added peak** is the growth of the writing
process's peak RSS (VmHWM) during the write.  **child peak** is the peak
RSS of the child process that reads the DWARF (it exits when the write
is done, and its memory goes with it); it counts the pages it shares with
its parent, copy-on-write, so **reader** is what the reading itself
takes: the same lookups in one process (\`write LIB reader\`), its
added peak RSS.

| library | addresses | write | time (s) | added peak (KiB) | child peak (KiB) | reader (KiB) | file (KiB) |
|---|---:|---|---:|---:|---:|---:|---:|
EOF
for l in $libs; do
runs=$tmp/runs.$(basename "$l")
for addrs in 50000 10000; do
	for mode in names lines; do
		cp=$(median child_peak_kib $mode $addrs)
		rd=$(sed -n "s/^reader addrs=$addrs .*added_kib=//p" "$runs" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		[ "$mode" = names ] && cp="–" && rd="–"
		echo "| $(basename "$l") | $addrs | $mode | $(median time_s $mode $addrs) | $(added $mode $addrs) | $cp | $rd | $(median file_kib $mode $addrs) |"
	done
done
done
cat <<EOF

The goal (issue 13) was at most 1 s and 64 MiB more than writing names
only: the rows above show the difference for each pool of addresses.
EOF
