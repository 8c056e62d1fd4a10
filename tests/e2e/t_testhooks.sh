#!/bin/sh
# t_testhooks.sh -- the test build's knobs (src/base/testhooks.h) are in
# the test build only.  What `make` builds and `make install` installs
# (libcpuprof.so and .a, the CLI, the gperftools drop-in) holds none of
# them: no cp_test_* or cp_lines_fault_* symbol, no CPUPROF_TEST_* name
# to read from the environment.  The hooked builds the tests use
# ($B/hooks/) hold them all, so the names looked for are the right ones.
# (That each knob still works there, its own test shows: unit_lines,
# unit_lost, unit_lost_kernel, unit_tickbound, unit_clock_ahead, ...)
# And every file of src/ and cli/ that uses a knob includes the header
# itself, by which line the Makefile finds the files to build twice.
B=${B:-build}
cd "$(dirname "$0")/../.." || exit 2
NM=${NM:-nm}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
command -v "$NM" >/dev/null 2>&1 || skip "$NM (binutils) is not installed"

# The knobs, from the header: every variable and function it declares for
# the test build (not its macros).
knobs=$(sed -n '/^#ifdef CPUPROF_TEST_HOOKS/,/^#else/p' src/base/testhooks.h | grep -v '^#' |
	grep -o '\bcp_\(test\|lines_fault\)_[a-z_]*' | sort -u)
[ "$(echo "$knobs" | wc -l)" -ge 9 ] || fail "the knobs of src/base/testhooks.h: $knobs"

# has FILE: the knobs' symbols and environment names FILE holds, one a line.
has() {
	{
		"$NM" -A "$1" 2>/dev/null | grep -o '\bcp_\(test\|lines_fault\)_[a-z_]*'
		grep -ao 'CPUPROF_TEST_[A-Z_]*' "$1" | grep -vx CPUPROF_TEST_ENGINE
	} | sort -u
}
bad=0
for f in libcpuprof.so libcpuprof.a libcpuprof-internal.a cpuprof libprofiler.so.0 libprofiler.a; do
	[ -f "$B/$f" ] || fail "build first (make tests): no $B/$f"
	found=$(has "$B/$f")
	if [ -n "$found" ]; then
		echo "release $B/$f holds test hooks:" $found
		bad=1
	fi
done
for f in hooks/libcpuprof-test.a hooks/libcpuprof.so hooks/cpuprof; do
	[ -f "$B/$f" ] || fail "build first (make tests): no $B/$f"
	found=$(has "$B/$f")
	for k in $knobs CPUPROF_TEST_CLOCK_AHEAD_PCT; do
		echo "$found" | grep -qx "$k" || { echo "test build $B/$f lacks $k"; bad=1; }
	done
done
# The Makefile builds twice the files that include the header by name: a
# file that uses a knob must include it itself, not through another header.
for f in $(grep -rlw "$(echo $knobs | sed 's/ /\\|/g')" src cli); do
	case $f in src/base/testhooks.[ch]) continue ;; esac
	grep -q '^#include "\(base/\)\?testhooks\.h"' "$f" ||
		{ echo "$f uses a knob without including base/testhooks.h itself"; bad=1; }
done
[ $bad -eq 0 ] || fail "test hooks where they do not belong, or missing where the tests need them"
echo "ok: no test hook in the release build; $(echo $knobs | wc -w) knobs and the environment hook in $B/hooks/"
