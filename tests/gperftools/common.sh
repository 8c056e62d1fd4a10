# common.sh -- sourced by tests/t_gperftools_*.sh, the drop-in's end-to-end
# tests: skips where they cannot run, a scratch directory, the workload
# (work.c) built against gperftools' own library, and readers of the
# profiles through Debian's google-pprof and `go tool pprof`.
B=${B:-build}
ROOT=$(pwd -P)
LIB=$ROOT/$B
SRC=$ROOT/tests/gperftools/work.c
# -g: `go tool pprof` names a C program's functions in a binary profile
# from DWARF only (Go's own symbolizer); google-pprof uses nm.
WCFLAGS="-O2 -g -fno-omit-frame-pointer"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }

[ -z "${EMU:-}" ] || skip "gperftools' libprofiler.so.0, google-pprof and the C compiler are the host's; under $EMU only cpuprof's own build runs"
[ -e "$LIB/libprofiler.so.0" ] && [ -e "$LIB/libprofiler.a" ] || fail "build first (make tests)"
command -v cc >/dev/null 2>&1 || skip "no C compiler (cc) to build the workload"
command -v google-pprof >/dev/null 2>&1 || skip "google-pprof is not installed (Debian: google-perftools)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
[ -e /usr/include/gperftools/profiler.h ] && [ "$(cc -print-file-name=libprofiler.so)" != libprofiler.so ] ||
	skip "gperftools' own library is not installed (Debian: libgoogle-perftools-dev)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_gperftools.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
tmp=$(pwd -P)
unset CPUPROFILE CPUPROFILESIGNAL CPUPROFILE_FREQUENCY CPUPROFILE_REALTIME CPUPROFILE_PER_THREAD_TIMERS \
	CPUPROFILE_TIMER_SIGNAL CPUPROFILE_FORMAT CPUPROF CPUPROF_ENGINE LD_PRELOAD LD_LIBRARY_PATH

# build_gperf OUT: the workload, as a program of gperftools' builds it:
# its header and its libprofiler.so.0.
build_gperf() {
	cc $WCFLAGS -o "$1" "$SRC" -lprofiler -pthread || fail "cannot build the workload against gperftools"
}

# ours CMD...: runs CMD on our library (LD_LIBRARY_PATH).
ours() { env LD_LIBRARY_PATH="$LIB" "$@"; }

# read_prof BINARY FILE: both readers' reports of FILE, kept in FILE.g
# (`google-pprof --text BINARY FILE`: the "Total: N samples" line, then a
# row a function) and FILE.go (the rows of `go tool pprof -top`), which
# the functions below read.
read_prof() {
	google-pprof --text "$1" "$2" 2>/dev/null | sed -n '/^Total:/,$p' >"$2.g"
	go tool pprof -top "$1" "$2" 2>/dev/null | sed -n '/flat%/,$p' | sed 1d >"$2.go"
}
gtotal() { awk 'NR == 1 { print $2 } END { if (NR == 0) print 0 }' "$1.g"; }
gleader() { awk 'NR == 2 { print $6 }' "$1.g"; }
# ghas FILE FUNCTION: FUNCTION has samples of its own in google-pprof's
ghas() { awk -v f="$2" 'NR > 1 && $6 == f && $1 > 0 { found = 1 } END { exit !found }' "$1.g"; }
goleader() { awk 'NR == 1 { print $6 }' "$1.go"; }
gohas() { awk -v f="$2" '$6 == f { found = 1 } END { exit !found }' "$1.go"; }
# The sampling period in the binary profile's header, in microseconds.
period_us() { od -An -tu8 -j24 -N8 "$1" | tr -d ' '; }
# Is FILE gzip (a pprof profile)?
is_gzip() { [ "$(head -c 2 "$1" | od -An -tx1 | tr -d ' ')" = 1f8b ]; }
# lines FILE: its number of lines
lines() { wc -l <"$1" | tr -d ' '; }
# The "PROFILE: interrupts/evictions/bytes = N/..." line's N.
interrupts() { sed -n 's|^PROFILE: interrupts/evictions/bytes = \([0-9]*\)/.*|\1|p' "$1"; }
# ratio A B LO HI: is A/B within [LO, HI]?
ratio() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { r = b > 0 ? a / b : 0; exit !(r >= lo && r <= hi) }'; }
# on_time BINARY: does cpuprof's auto engine sample on time here (perf's
# task clock or hw's cycles)?  Then what a thread uses after its last
# sample is under a period, and the counts are its CPU time.  The timer
# and itimer engines fire at ticks, and on a busy machine far more seldom:
# that remainder, which a binary profile cannot carry, can then be a good
# part of a short run's CPU, and the checks allow for half of it missing.
on_time() {
	CPUPROFILE=$tmp/engine.pb.gz ours "./$1" env 0 20 >/dev/null 2>&1
	engine=$(go tool pprof -comments "$tmp/engine.pb.gz" 2>/dev/null | sed -n 's/^ *engine=//p')
	echo "cpuprof's engine here: ${engine:-none}"
	case $engine in perf | hw) return 0 ;; esac
	return 1
}
