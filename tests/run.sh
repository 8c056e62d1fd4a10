#!/bin/sh
# run.sh -- runs every test of the suite, each in its own process with a
# timeout: build/tests/test_* and unit_* (C programs, from tests/api/ and
# tests/unit/) and tests/e2e/t_*.sh (end-to-end scripts).  Exit status 77
# means "skipped here", with the reason on a line "skip: REASON".  Prints
# one TAP-style line per test (with its time) and a closing "N passed, N
# failed, N skipped" line.  A test whose source (tests/api/NAME.c,
# tests/unit/NAME.c, or the script) has a line
# "TEST_ENGINES: perf hw ..." runs once per engine listed, as NAME/ENGINE
# with CPUPROF_TEST_ENGINE=ENGINE in its environment: an engine this
# machine does not allow is then a skip of its own, counted as such.
# Usage: tests/run.sh [NAME-SUBSTRING...] (any of them; all tests if none)
#        tests/run.sh --list   (the names it runs tests as, one a line,
#                               from their sources: no build needed)
# Environment: B, the build directory (build); ARCH, the CPU it is built
# for (uname -m); EMU, the command that runs that build's programs when
# they are for another CPU ("qemu-aarch64-static" for `make check
# ARCH=aarch64`), empty for a native build.  All three are passed on to
# the tests: scripts run every program of the build as $EMU PROG, and a
# test that must do less under emulation can tell from EMU.
cd "$(dirname "$0")/.." || exit 2
# engines SRC: the engines of SRC's "TEST_ENGINES:" line (none: empty).
engines() {
	sed -n 's/^.*TEST_ENGINES: *//p' "$1" 2>/dev/null | head -n 1
}
if [ "${1:-}" = --list ]; then
	for src in tests/api/test_*.c tests/unit/unit_*.c tests/e2e/t_*.sh; do
		[ -e "$src" ] || continue
		name=$(basename "$src" .c)
		e=$(engines "$src")
		[ -n "$e" ] || { echo "$name"; continue; }
		for x in $e; do echo "$name/$x"; done
	done
	exit 0
fi
B=${B:-build}
ARCH=${ARCH:-$(uname -m)}
EMU=${EMU:-}
TIMEOUT=${TEST_TIMEOUT:-300}
export B ARCH EMU
if [ -n "$EMU" ]; then
	# shellcheck disable=SC2086 # EMU is a command with its arguments
	command -v ${EMU%% *} >/dev/null 2>&1 ||
		{ echo "run.sh: the emulator '$EMU' is not installed" >&2; exit 2; }
	echo "# running $B under: $EMU"
fi
start=$(date +%s)
pass=0 fail=0 skip=0 n=0
log=$B/tests/logs
mkdir -p "$log"
# wanted NAME: is NAME one of the tests asked for?
wanted() {
	[ $# -eq 1 ] && return 0
	w=$1
	shift
	for pat in "$@"; do
		case "$w" in *"$pat"*) return 0 ;; esac
	done
	return 1
}
# run_one T NAME ENGINE: runs test T as NAME (with CPUPROF_TEST_ENGINE set
# if ENGINE is not empty) and prints its line.
run_one() {
	n=$((n + 1))
	lf=$log/$(echo "$2" | tr / -).log
	# Each test starts with an empty lines cache of its own
	# (src/symbolize/lines_cache.h), never the user's.
	XDG_CACHE_HOME=$(cd "$log" && pwd)/cache-$(echo "$2" | tr / -)
	rm -rf "$XDG_CACHE_HOME"
	export XDG_CACHE_HOME
	t0=$(date +%s)
	case "$1" in
	*.sh) CPUPROF_TEST_ENGINE=$3 timeout -k 10 "$TIMEOUT" sh "$1" >"$lf" 2>&1 ;;
	# shellcheck disable=SC2086
	*) CPUPROF_TEST_ENGINE=$3 timeout -k 10 "$TIMEOUT" $EMU "$1" >"$lf" 2>&1 ;;
	esac
	rc=$?
	rm -rf "$XDG_CACHE_HOME"
	secs="($(($(date +%s) - t0)) s)"
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "ok $n - $2 $secs"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1)); echo "ok $n - $2 # SKIP $(grep -m1 '^skip:' "$lf" | cut -c7-)"
	else
		fail=$((fail + 1)); echo "not ok $n - $2 (exit $rc) $secs"
		sed 's/^/#   /' "$lf" | tail -n 30
	fi
}
for t in $B/tests/test_* $B/tests/unit_* tests/e2e/t_*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	case "$t" in *.sh) src=$t ;; *) src=$(ls tests/api/$name.c tests/unit/$name.c 2>/dev/null | head -n 1) ;; esac
	engs=$(engines "$src")
	if [ -z "$engs" ]; then
		wanted "$name" "$@" && run_one "$t" "$name" ""
		continue
	fi
	for e in $engs; do
		wanted "$name/$e" "$@" && run_one "$t" "$name/$e" "$e"
	done
done
echo "1..$n"
echo "# $B: $(($(date +%s) - start)) s"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $n -gt 0 ]
