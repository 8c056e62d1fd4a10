#!/bin/sh
# check.sh -- `make check-vm`: boots the tick-bound VM (bench/vm/run.sh)
# with one sleep-heavy cell, cpuprof's auto engine on 2 threads at 1 kHz,
# and fails unless the profile accounts for at least 90% of the process's
# CPU (issue 7's acceptance test).  Coverage here is the profile's CPU
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
cov=$(echo "$row" | awk -F'|' '{ gsub(/ /, "", $8); print $8 }')
echo "check-vm: auto, sleepy, 2 threads, 1 kHz: coverage ${cov:-none} (need >= $MIN); $((end - start)) s"
if [ -z "$cov" ] || ! awk -v c="$cov" -v m="$MIN" 'BEGIN { exit !(c + 0 >= m + 0) }' </dev/null; then
	echo "check-vm: FAIL" >&2
	exit 1
fi
echo "check-vm: ok"
