#!/bin/sh
# t_names.sh -- function names as `addr2line -C -f -i` prints them, the
# same whichever way the profile was written: a C++ workload
# (tests/work/names.cpp: templates, namespaces, a class method, a lambda,
# inlined functions and methods, the standard library's) built with g++
# -O2 -g, and a Rust one (tests/work/names.rs) built with rustc -O -g twice,
# with legacy (_ZN...17h<hash>E) and v0 (_R...) symbol mangling, each
# profiled under `cpuprof record` (the CLI symbolizes: nothing of the
# program's is in its process), under LD_PRELOAD=libcpuprof.so (the
# program writes its own profile, as through the API) and under the
# gperftools drop-in (LD_PRELOAD=libprofiler.so.0, CPUPROFILE=*.pb.gz).
# For every Line of every Location of every object in the profile, its
# function name is compared with the name addr2line gives that level of
# the address's inline chain (tests/tools/lines_compare.sh,
# names_agreement, which says what is not a difference: symbol versions,
# aliases); at least 95% must agree for each workload and path, and the
# measured agreement is printed (1.000 here).  Not 100%: binutils has
# quirks of its own that the profile does not copy (an inlined C++
# function of internal linkage that begins at its caller's first
# instruction gets the caller's name).  Where no symbol covers an address
# without DWARF (libc's internal functions when its debug file, libc6-dbg,
# is not installed) the profile names no function and addr2line names the
# nearest symbol before it, however far: such Lines are left out, counted
# apart, and may not be most of them.
# Natively only: the cross build's demangler is the same code, which
# unit_pprof checks under emulation.
# The benchmark (bench/run.py, names()) runs this script for its table:
# NAMES_PATHS and NAMES_WORKLOADS pick a subset of the paths and workloads
# (the workloads not picked are not built), and NAMES_MIN=0 has every
# agreement measured and printed, however low, where the test stops at
# the first one below 0.95.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
LIB=$ROOT/$B/libcpuprof.so
GP=$ROOT/$B/libprofiler.so.0
MIN=${NAMES_MIN:-0.95}
PATHS=${NAMES_PATHS:-record preload gperftools}
WORKLOADS=${NAMES_WORKLOADS:-names_cxx names_legacy names_v0}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -e "$LIB" ] && [ -e "$GP" ] || fail "build first (make tests)"
[ -z "$EMU" ] || skip "names are compared on the native build (unit_pprof checks the cross build's demangler)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
command -v addr2line >/dev/null 2>&1 || skip "addr2line is not installed (binutils)"
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || skip "$CXX is not installed (g++)"
# Debian's rustc where installed (a rustup toolchain may come first in
# PATH), any rustc otherwise.
if [ -z "$RUSTC" ]; then
	RUSTC=rustc
	[ -x /usr/bin/rustc ] && RUSTC=/usr/bin/rustc
fi
command -v "$RUSTC" >/dev/null 2>&1 || skip "$RUSTC is not installed (rustc)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_names.XXXXXX") || fail mktemp
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps it for a look
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none
TOOLS=
# shellcheck source=tests/tools/lines_compare.sh
. "$ROOT/tests/tools/lines_compare.sh"

picked() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }
if picked names_cxx; then
	"$CXX" -O2 -g -o names_cxx "$ROOT/tests/work/names.cpp" 2>cc.log || { cat cc.log; fail "$CXX names.cpp"; }
fi
# The mangling asked for is the one in the binaries.
if picked names_legacy; then
	"$RUSTC" -O -g -o names_legacy "$ROOT/tests/work/names.rs" 2>rc.log || { cat rc.log; fail "$RUSTC names.rs"; }
	nm names_legacy | grep -q ' _ZN5names3hot6engine5Mixer5churn17h[0-9a-f]*E$' || fail "names_legacy: no legacy-mangled churn"
fi
if picked names_v0; then
	"$RUSTC" -O -g -C symbol-mangling-version=v0 -o names_v0 "$ROOT/tests/work/names.rs" 2>rc.log ||
		{ cat rc.log; fail "$RUSTC -C symbol-mangling-version=v0 names.rs"; }
	nm names_v0 | grep -q ' _RNvMNtNtCs[0-9A-Za-z_]*5names3hot6engineNtB[0-9A-Za-z_]*5Mixer5churn$' ||
		fail "names_v0: no v0-mangled churn"
fi

# profile PATH WORKLOAD: runs ./WORKLOAD under PATH into PATH-WORKLOAD.pb.gz.
rounds_cxx=8 rounds_legacy=4 rounds_v0=4
profile() {
	out=$1-$2.pb.gz
	eval "rounds=\$rounds_${2#names_}"
	case $1 in
	record) "$CP" record -o "$out" -F 2000 -- "./$2" "$rounds" >out 2>err ;;
	preload) LD_PRELOAD=$LIB CPUPROF=$tmp/$out CPUPROF_HZ=2000 "./$2" "$rounds" >out 2>err ;;
	gperftools) LD_PRELOAD=$GP CPUPROFILE=$tmp/$out CPUPROFILE_FREQUENCY=2000 "./$2" "$rounds" >out 2>err ;;
	esac || { cat err; fail "$1 $2: status $?"; }
	grep -q "^names done" out || { cat out err; fail "$1 $2: the program's output changed"; }
	[ -s "$out" ] || { cat err; fail "$1 $2: no profile"; }
}

# check PATH WORKLOAD MANGLED NAME...: the names of PATH-WORKLOAD.pb.gz
# agree with addr2line's, a Function's system name begins with MANGLED (it
# keeps the mangled symbol), and the profile has functions whose names
# begin with each NAME (a fixed string): qualified names of the workload's
# functions.
check() {
	path=$1 work=$2 mangled=$3
	shift 3
	names_agreement "$path-$work.pb.gz" >names.count
	read -r agree total left <names.count
	[ "$total" -ge 20 ] && [ $((left * 2)) -lt "$total" ] ||
		{ cat raw; fail "$path $work: only $total Lines compared, $left unnamed"; }
	ratio=$(awk -v a="$agree" -v t="$total" 'BEGIN { printf "%.3f", a / t }')
	echo "$path $work: $agree of $total names agree with addr2line -C -f -i: $ratio ($left unnamed, left out)"
	sed 's/^/  differs: /' names.diff | cut -c1-300
	awk -v r="$ratio" -v m=$MIN 'BEGIN { exit !(r < m) }' &&
		fail "$path $work: names agree $ratio < $MIN (addr2line's | the profile's)"
	grep -qF "($mangled" raw || { cat raw; fail "$path $work: no system name $mangled..."; }
	for name in "$@"; do
		cut -f5 lines | awk -v n="$name" 'index($0, n) == 1 { ok = 1 } END { exit !ok }' ||
			{ cut -f5 lines | sort -u | head -30; fail "$path $work: no function named '$name'"; }
	done
}

for path in $PATHS; do
	if picked names_cxx; then
		profile $path names_cxx
		check $path names_cxx _ZN3app5CacheINSt7__cxx1112basic_string 'app::Cache<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >::fill(int)' \
			'app::detail::mix(unsigned long)' '(anonymous namespace)::Hasher::run(unsigned long, int)'
	fi
	if picked names_legacy; then
		profile $path names_legacy
		check $path names_legacy _ZN5names3hot6engine5Mixer5churn17h 'names::hot::engine::Mixer::churn' '<names::hot::engine::Mixer as names::hot::engine::Step>::step'
	fi
	if picked names_v0; then
		profile $path names_v0
		check $path names_v0 _RNvMNtNtCs '<names::hot::engine::Mixer>::churn' '<names::hot::engine::Mixer as names::hot::engine::Step>::step'
	fi
done
echo "all name checks passed"
