#!/bin/sh
# check.sh -- `make check-vm`: boots each tick-bound VM (bench/vm/run.sh)
# with one sleep-heavy cell, cpuprof's auto engine on 2 threads at 1 kHz
# (issue 7's acceptance test), and fails unless
#  - the profile accounts for 0.9 to 1.1 of the process's CPU (above 1.1
#    would be CPU counted twice; the profile's window starts a little
#    before main() and ends a little after it, hence a few % over 1);
#  - if auto took a tick-driven engine (timer: x86-64 has no PMU), the
#    profile warns that the threads ran less than a tick between sleeps,
#    and that its samples are few when it took fewer than an eighth of
#    those asked for;
#  - if auto took the hw engine, its profile holds a sample for every
#    overflow interrupt the PMU raised during the cell (at least 0.8 of
#    them: the engine's probe raises a few of its own, up to 16; the
#    samples were equal to the interrupts in 41 cells before the probe
#    raised any), those are at least a sixteenth of
#    the samples asked for, and it put each leaf within 15 percentage
#    points of its true share (2-7 measured; the timer engine 12-49).  The
#    hw engine counts user mode only, and under TCG the workload's system
#    calls take most of its CPU, more so when the host is busy: its
#    samples were 0.17-0.51 of those asked for on a quiet host (34 boots)
#    and 0.105-0.34 with two processes burning the host's two CPUs (8
#    boots), which an eighth, the bound before, failed 3 times of 8;
#  - on aarch64 (QEMU's -cpu max has a PMU) auto took the hw engine.
# Two faults of the emulator, not of cpuprof, boot the VM again (up to
# three boots, and the check says so):
#  - the guest kernel hit a soft lockup (vmwork stuck on CPU 0 in the
#    kernel, seen twice so far, both times under the hw engine; the kernel
#    then panics, softlockup_panic=1, and qemu exits);
#  - QEMU's emulated PMU raised no overflow interrupt for the workload
#    (about one boot of 30-40): auto's probe says so and took another
#    engine, or the hw engine's profile has no sample and the PMU raised
#    no more interrupts in the cell than the probe raises itself (16).
# Coverage and shares are vmprof's, against the workload's own clocks, not
# the profile's claims (printed beside them).
#
#   sh bench/vm/check.sh [x86_64|aarch64]...    (default: both)
set -e
cd "$(dirname "$0")/../.."
MIN=${VM_MIN_COVERAGE:-0.9}
[ $# -gt 0 ] || set -- x86_64 aarch64
fail=0
for arch in "$@"; do
	b=build
	[ "$arch" = aarch64 ] && b=build-aarch64
	mkdir -p $b/vm
	start=$(date +%s)
	bad() { echo "check-vm $arch: FAIL: $*" >&2; fail=1; }
	field() { echo "$row" | awk -F'|' -v i="$1" '{ gsub(/^ +| +$/, "", $i); print $i }'; }
	ran=
	for boot in 1 2 3; do
		ran=
		if ! VM_ARCH=$arch VM_LOG=$b/vm/check.log sh bench/vm/run.sh @check > $b/vm/check.md; then
			# The guest kernel hung (a soft lockup: a CPU stuck in the
			# kernel for 20 s, which no user program can cause on a
			# sound kernel; seen under the emulated PMU about once in
			# dozens of boots).  softlockup_panic=1 ends such a boot.
			if [ $boot -lt 3 ] && grep -q 'soft lockup' $b/vm/check.log; then
				cp $b/vm/check.log $b/vm/check-lockup.log
				echo "check-vm $arch: the guest kernel hit a soft lockup (log kept in $b/vm/check-lockup.log): booting again"
				continue
			fi
			break
		fi
		ran=1
		cat $b/vm/check.md
		row=$(grep '^| auto | sleepy |' $b/vm/check.md || true)
		samples=$(field 6) pmu=$(field 16)
		if [ "$arch" = aarch64 ] && [ $boot -lt 3 ] &&
			{ echo "$row" | grep -q 'overflow interrupt does not come' ||
				{ echo "$row" | grep -q 'engine=hw;' && [ "$samples" = 0 ] && [ "${pmu:-0}" -le 16 ] 2>/dev/null; }; }; then
			echo "check-vm $arch: the emulated PMU raised no overflow interrupt in this boot: booting again"
			continue
		fi
		break
	done
	if [ -z "$ran" ]; then
		bad "the VM did not run its cell (bench/vm/run.sh failed; see $b/vm/check.log)"
		continue
	fi
	end=$(date +%s)
	samples=$(field 6) expected=$(field 7) cov=$(field 8) err=$(field 10) pmu=$(field 16)
	echo "check-vm $arch: auto, sleepy, 2 threads, 1 kHz: coverage ${cov:-none} (need $MIN to 1.1)," \
		"attributed $(field 9), err ${err:-none} pp, ${samples:-no} samples of ${expected:-?} expected; $((end - start)) s"
	case "$samples:$expected" in
	[0-9]*:[0-9]*) ;;
	*) bad "no profile judged"; continue ;;
	esac
	if ! awk -v c="$cov" -v m="$MIN" 'BEGIN { exit !(c != "" && c + 0 >= m + 0 && c + 0 <= 1.1) }' </dev/null; then
		bad "coverage ${cov:-none} outside [$MIN, 1.1]"
		continue
	fi
	if echo "$row" | grep -q 'engine=hw;'; then
		case $pmu in
		[0-9]*) [ $((samples * 10)) -ge $((pmu * 8)) ] || bad "$samples samples for $pmu overflow interrupts of the PMU" ;;
		*) bad "the VM did not count the PMU's interrupts" ;;
		esac
		[ $((samples * 16)) -ge "$expected" ] || bad "$samples samples of $expected: fewer than a sixteenth"
		awk -v e="$err" 'BEGIN { exit !(e != "" && e + 0 <= 15) }' </dev/null || bad "a leaf's share is $err pp off"
	else
		[ "$arch" != aarch64 ] || bad "auto did not take the hw engine"
		if [ $((samples * 8)) -lt "$expected" ] && ! echo "$row" | grep -q 'warns: .*few samples'; then
			bad "$samples samples of $expected and the profile does not warn"
		fi
		echo "$row" | grep -q 'warns: .*runs shorter than the tick' ||
			bad "sleep-heavy threads on a tick-bound kernel and the profile does not warn"
	fi
done
[ $fail -eq 0 ] || exit 1
echo "check-vm: ok"
