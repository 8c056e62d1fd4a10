# build.mk -- the tick-bound VM harness's programs, included by the top
# Makefile: the workload (vmwork), the profile judge (vmprof, which reuses
# the CLI's pprof reader) and the in-process mechanism probes
# (experiments/probe, experiments/ticks).  The workload is linked without
# PIE so its leaves sit at the same addresses in every run.
VM_B      := $(B)/vm
VM_CFLAGS := -O2 -g -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer -fno-ipa-icf $(WARN)
VM_BINS   := $(VM_B)/vmwork $(VM_B)/vmprof $(VM_B)/probe $(VM_B)/ticks

$(VM_B)/vmwork: bench/vm/vmwork.c bench/vm/workload.c bench/vm/workload.h
	@mkdir -p $(dir $@)
	$(CC) $(VM_CFLAGS) -no-pie -o $@ bench/vm/vmwork.c bench/vm/workload.c -pthread

$(VM_B)/probe: bench/vm/experiments/probe.c bench/vm/workload.c bench/vm/workload.h
	@mkdir -p $(dir $@)
	$(CC) $(VM_CFLAGS) -no-pie -o $@ bench/vm/experiments/probe.c bench/vm/workload.c -pthread

$(VM_B)/ticks: bench/vm/experiments/ticks.c
	@mkdir -p $(dir $@)
	$(CC) $(VM_CFLAGS) -o $@ $< -pthread -lm

$(VM_B)/vmprof: bench/vm/vmprof.c cli/pprof_read.c cli/pprof_decode.c src/profile/times.c src/profile/protobuf.c cli/pprof_read.h cli/pprof_int.h src/profile/profile_proto.h
	@mkdir -p $(dir $@)
	$(CC) $(VM_CFLAGS) -Isrc -Icli -o $@ bench/vm/vmprof.c cli/pprof_read.c cli/pprof_decode.c src/profile/times.c src/profile/protobuf.c -lz

vm-progs: all $(VM_BINS)

# Boots Debian's kernel under qemu (TCG, highres=off nohz=off: timers only
# from the 250 Hz tick), x86-64 and then aarch64 (with an emulated PMU),
# each with one sleep-heavy cell, and checks what cpuprof's auto engine
# makes of it (bench/vm/check.sh; issue 7).  Downloads the kernels once.
check-vm: vm-progs
	@sh bench/vm/check.sh

.PHONY: vm-progs check-vm
