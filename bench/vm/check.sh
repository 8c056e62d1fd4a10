#!/bin/sh
# check.sh -- `make check-vm`: boots the tick-bound VM (bench/vm/run.sh)
# with one sleep-heavy cell, cpuprof's auto engine on 2 threads at 1 kHz,
# and fails unless the profile accounts for at least 90% of the process's
# CPU and no more than 110% (issue 7's acceptance test), and unless it
# warns that the threads ran less than a tick between sleeps and, when it
# took fewer than an eighth of the samples asked for, that too.  Coverage here is the profile's CPU
# over the process's CPU from main() on, measured by the workload itself,
# not the profile's own claim (which is printed beside it).
set -e
cd "$(dirname "$0")/../.."
MIN=${VM_MIN_COVERAGE:-0.9}
LOG=build/vm/check.log
mkdir -p build/vm
start=$(date +%s)
VM_LOG=$LOG sh bench/vm/run.sh @check > build/vm/check.md
end=$(date +%s)
cat build/vm/check.md
row=$(grep '^| auto | sleepy |' build/vm/check.md || true)
field() { echo "$row" | awk -F'|' -v i="$1" '{ gsub(/^ +| +$/, "", $i); print $i }'; }
cov=$(field 8)
samples=$(field 6)
expected=$(field 7)
echo "check-vm: auto, sleepy, 2 threads, 1 kHz: coverage ${cov:-none} (need $MIN to 1.1), attributed $(field 9), $samples samples of $expected expected; $((end - start)) s"
# Above 1.1 would be CPU counted twice (the profile's window starts a
# little before main() and ends a little after it, hence a few % over 1).
if [ -z "$cov" ] || ! awk -v c="$cov" -v m="$MIN" 'BEGIN { exit !(c + 0 >= m + 0 && c + 0 <= 1.1) }' </dev/null; then
	echo "check-vm: FAIL: coverage ${cov:-none} outside [$MIN, 1.1]" >&2
	exit 1
fi
# Far fewer samples than asked for must not pass for a profile at the
# asked-for rate, nor samples taken in step with the program's sleeps for
# a fair draw: the profile has to say so.
if [ $((samples * 8)) -lt "$expected" ] && ! echo "$row" | grep -q 'warns: .*few samples'; then
	echo "check-vm: FAIL: $samples samples of $expected and the profile does not warn" >&2
	exit 1
fi
if ! echo "$row" | grep -q 'warns: .*runs shorter than the tick'; then
	echo "check-vm: FAIL: sleep-heavy threads on a tick-bound kernel and the profile does not warn" >&2
	exit 1
fi
echo "check-vm: ok"
