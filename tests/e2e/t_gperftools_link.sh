#!/bin/sh
# t_gperftools_link.sh -- the gperftools drop-in in every way a program
# meets libprofiler: built against gperftools' own libprofiler.so.0 and
# run with ours by LD_LIBRARY_PATH, the same with ours in LD_PRELOAD
# (and a program of libtcmalloc_and_profiler.so.4, whose profiler ours
# must keep quiet), built with `pkg-config libprofiler` against our
# install, linked with our libprofiler.a, and fully static (static-pie,
# and -static).  In each, a
# run with CPUPROFILE at 1 kHz and CPUPROFILE_PER_THREAD_TIMERS (where
# gperftools samples only threads that register, and none does): the
# hottest function leads in google-pprof and `go tool pprof`, every
# thread's function is there, the counts are the process's CPU time (less
# what each thread ran after its last sample: see on_time), twice the
# work gives about twice the samples, and stderr holds gperftools' one
# closing line and nothing else.  Neither library exports a name of
# cpuprof's own.
. tests/gperftools/common.sh

build_gperf work_gperf
# Nothing of the library's own is visible to a program: gperftools'
# functions and the C library's that cpuprof interposes, no cpuprof_*,
# cp_* or gpt_* name (a program's own could meet them).
for f in "$LIB/libprofiler.so.0" "$LIB/libprofiler.a"; do
	case $f in *.so.0) syms=$(nm -D --defined-only "$f") ;; *) syms=$(nm -g --defined-only "$f") ;; esac
	echo "$syms" | awk 'NF == 3 { print $3 }' | grep -E '^(cpuprof_|cp_|gpt_)' &&
		fail "$f exports the names above"
	echo "$syms" | grep -q ' T ProfilerStart$' || fail "$f does not export ProfilerStart"
done
make_install() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" install PREFIX="$tmp/prefix" B="$B" >make.log 2>&1 ||
		{ cat make.log; fail "make install PREFIX=$tmp/prefix failed"; }
}
make_install
PKG_CONFIG_PATH=$tmp/prefix/lib/pkgconfig
export PKG_CONFIG_PATH
command -v pkg-config >/dev/null 2>&1 || skip "pkg-config is not installed"
pkg-config --exists libprofiler || fail "pkg-config does not find libprofiler in $PKG_CONFIG_PATH"
# The header that builds is ours.
echo '#include <gperftools/profiler.h>' | cc -E $(pkg-config --cflags libprofiler) - |
	grep -q "$tmp/prefix/include/gperftools/profiler.h" || fail "#include <gperftools/profiler.h> is not the installed one"
# shellcheck disable=SC2046 # pkg-config's words
cc $WCFLAGS -o work_pc "$SRC" $(pkg-config --cflags --libs libprofiler) -pthread || fail "build with pkg-config"
static_libs=$(pkg-config --static --libs libprofiler | sed 's/-lprofiler/-Wl,-Bstatic -lprofiler -Wl,-Bdynamic/')
# shellcheck disable=SC2086
cc $WCFLAGS -o work_archive "$SRC" $(pkg-config --cflags libprofiler) $static_libs -pthread || fail "build with libprofiler.a"
readelf -d work_archive | grep -q 'NEEDED.*libprofiler' && fail "work_archive still needs a libprofiler.so"
# Fully static: no dynamic loader for cpuprof's pthread_create() to find
# the C library's with.
fullstatic=
for kind in static-pie static; do
	# shellcheck disable=SC2046
	if cc $WCFLAGS -$kind -o work_$kind "$SRC" $(pkg-config --cflags libprofiler) \
		$(pkg-config --static --libs libprofiler) -pthread 2>$kind.log; then
		fullstatic="$fullstatic $kind"
	else
		cat $kind.log
		echo "no $kind build here (no static C library or zlib?): that mode is not tested"
	fi
done
tcmalloc=
if [ "$(cc -print-file-name=libtcmalloc_and_profiler.so)" != libtcmalloc_and_profiler.so ]; then
	cc $WCFLAGS -o work_tcmalloc "$SRC" -ltcmalloc_and_profiler -pthread || fail "build with tcmalloc_and_profiler"
	tcmalloc=tcmalloc
fi

# The LD_LIBRARY_PATH run finds ours.
ours ldd ./work_gperf | grep -q "libprofiler.so.0 => $LIB/libprofiler.so.0" ||
	{ ours ldd ./work_gperf; fail "LD_LIBRARY_PATH=$LIB does not put our libprofiler.so.0 first"; }

# cmd MODE: the binary and the environment of that way of linking.
cmd() {
	case $1 in
	ldpath) echo "env LD_LIBRARY_PATH=$LIB ./work_gperf" ;;
	preload) echo "env LD_PRELOAD=$LIB/libprofiler.so.0 ./work_gperf" ;;
	tcmalloc) echo "env LD_PRELOAD=$LIB/libprofiler.so.0 ./work_tcmalloc" ;;
	pkgconfig) echo "env LD_LIBRARY_PATH=$tmp/prefix/lib ./work_pc" ;;
	*) echo "./work_$1" ;;
	esac
}
binary() {
	case $1 in
	ldpath | preload) echo work_gperf ;;
	tcmalloc) echo work_tcmalloc ;;
	pkgconfig) echo work_pc ;;
	*) echo "work_$1" ;;
	esac
}

# run MODE MS: the workload, 3 threads, profiled into MODE.MS.prof
run() {
	CPUPROFILE=$tmp/$1.$2.prof CPUPROFILE_FREQUENCY=1000 CPUPROFILE_PER_THREAD_TIMERS=1 \
		$(cmd "$1") env 3 "$2" 5 >"$1.$2.out" 2>"$1.$2.err"
	rc=$?
	[ $rc -eq 5 ] || { cat "$1.$2.err"; fail "$1: exit status $rc, expected the program's 5"; }
	grep -qx "work done" "$1.$2.out" || fail "$1: the program's output changed"
	# (A loaded machine may make cpuprof lose a few samples, which is
	# said in one line of its own.)
	grep -v '^cpuprof: .*samples were lost' "$1.$2.err" >"$1.$2.rest"
	[ "$(lines "$1.$2.rest")" -eq 1 ] && grep -q '^PROFILE: interrupts/evictions/bytes = [0-9]*/0/[0-9]*$' "$1.$2.rest" ||
		{ cat "$1.$2.err"; fail "$1: stderr is not gperftools' one closing line"; }
}

if on_time work_gperf; then
	least=0.85 twice_lo=1.6 twice_hi=2.5
else
	least=0.45 twice_lo=1.2 twice_hi=3.5
fi
for mode in ldpath preload $tcmalloc pkgconfig archive $fullstatic; do
	bin=$(binary $mode)
	run $mode 200
	run $mode 400
	p=$mode.200.prof
	read_prof $bin $p
	read_prof $bin $mode.400.prof
	[ "$(period_us $p)" = 1000 ] || fail "$mode: period $(period_us $p) us, expected 1000"
	lead=$(gleader $p)
	[ "$lead" = hot_main ] || { cat $p.g; fail "$mode: google-pprof's leader is '$lead', not hot_main"; }
	for f in warm_main worker_a worker_b worker_c; do
		ghas $p $f || { cat $p.g; fail "$mode: google-pprof does not show $f"; }
	done
	# Go 1.19's pprof misplaces a non-PIE executable's code by a page in
	# a binary profile (gperftools' own profiles alike): -static is
	# read with google-pprof only.
	if readelf -h $bin | grep -q 'Type:.*DYN'; then
		golead=$(goleader $p)
		[ "$golead" = hot_main ] || { cat $p.go; fail "$mode: go tool pprof's leader is '$golead', not hot_main"; }
		for f in warm_main worker_a worker_b worker_c; do
			gohas $p $f || { cat $p.go; fail "$mode: go tool pprof does not show $f"; }
		done
	fi
	n1=$(gtotal $p)
	n2=$(gtotal $mode.400.prof)
	[ "$n1" = "$(interrupts $mode.200.err)" ] || fail "$mode: google-pprof counts $n1, the PROFILE line $(interrupts $mode.200.err)"
	cpu=$(sed -n 's/^cpu_ms //p' $mode.200.out)
	echo "$mode: $n1 samples at 1 kHz for $cpu ms of CPU; twice the work: $n2 samples"
	# Each sample is a millisecond of CPU, whatever the tick.
	ratio "$n1" "$cpu" $least 1.1 || fail "$mode: $n1 samples for $cpu ms of CPU"
	ratio "$n2" "$n1" $twice_lo $twice_hi || fail "$mode: twice the work gave $n2 samples against $n1"
done

# What gperftools itself makes of the same run, for the record: with
# per-thread timers, only the threads that register (none here).
CPUPROFILE=$tmp/gperf.prof CPUPROFILE_FREQUENCY=1000 CPUPROFILE_PER_THREAD_TIMERS=1 ./work_gperf env 3 200 >gperf.out 2>&1
read_prof work_gperf gperf.prof
echo "gperftools itself: $(gtotal gperf.prof) samples for $(sed -n 's/^cpu_ms //p' gperf.out) ms of CPU;" \
	"worker_a $(ghas gperf.prof worker_a && echo present || echo absent)"
echo "all link checks passed"
