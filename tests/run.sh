#!/bin/sh
# run.sh -- runs every test of the suite, each in its own process with a
# timeout: build/tests/test_* and unit_* (C programs) and tests/t_*.sh
# (end-to-end scripts).  Exit status 77 means "skipped here".  Prints one
# TAP-style line per test and a closing "N passed, N failed" line.
# Usage: tests/run.sh [NAME-SUBSTRING]
# Environment: B, the build directory (build); ARCH, the CPU it is built
# for (uname -m); EMU, the command that runs that build's programs when
# they are for another CPU ("qemu-aarch64-static" for `make check
# ARCH=aarch64`), empty for a native build.  All three are passed on to
# the tests: scripts run every program of the build as $EMU PROG, and a
# test that must do less under emulation can tell from EMU.
cd "$(dirname "$0")/.." || exit 2
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
for t in $B/tests/test_* $B/tests/unit_* tests/t_*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	case "$name" in *"${1:-}"*) ;; *) continue ;; esac
	n=$((n + 1))
	case "$t" in
	*.sh) timeout -k 10 "$TIMEOUT" sh "$t" >"$log/$name.log" 2>&1 ;;
	# shellcheck disable=SC2086
	*) timeout -k 10 "$TIMEOUT" $EMU "$t" >"$log/$name.log" 2>&1 ;;
	esac
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "ok $n - $name"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1)); echo "ok $n - $name # SKIP $(grep -m1 '^skip:' "$log/$name.log" | cut -c7-)"
	else
		fail=$((fail + 1)); echo "not ok $n - $name (exit $rc)"
		sed 's/^/#   /' "$log/$name.log" | tail -n 30
	fi
done
echo "1..$n"
echo "# $B: $(($(date +%s) - start)) s"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ $n -gt 0 ]
