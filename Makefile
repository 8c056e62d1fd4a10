# cpuprof -- GNU Makefile.  `make` builds the library and the CLI into build/,
# `make check` runs the test suite, `make install PREFIX=DIR` installs,
# `make bench [QUICK=1] [VM=1]` runs the benchmark into docs/benchmarks.md.
#
# Cross-building: `make ARCH=aarch64` (Debian's aarch64-linux-gnu-gcc) or
# `make CC=aarch64-linux-gnu-gcc` builds into build-aarch64/, and
# `make check ARCH=aarch64` runs that build's tests under qemu-user.

HOST_ARCH := $(shell uname -m)
# Debian and kernel names for the same CPUs.
arch_name = $(patsubst arm64,aarch64,$(patsubst amd64,x86_64,$(1)))
ifneq ($(ARCH),)
override ARCH := $(call arch_name,$(ARCH))
# A foreign ARCH with make's default CC: Debian's cross compiler for it.
ifeq ($(origin CC),default)
ifneq ($(ARCH),$(HOST_ARCH))
CC := $(ARCH)-linux-gnu-gcc
endif
endif
else
# No ARCH: the one the compiler builds for.
ARCH := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)) $(HOST_ARCH))
endif
ifeq ($(wildcard src/arch/$(ARCH)/arch.h),)
$(error cpuprof does not support ARCH=$(ARCH) (supported: $(notdir $(wildcard src/arch/*))))
endif
ifeq ($(shell command -v $(CC) 2>/dev/null),)
ifneq ($(MAKECMDGOALS),clean)
$(error $(CC) is not installed; `sh scripts/test.sh $(ARCH)` (as root) installs the cross toolchain and runs the suite)
endif
endif
# src/symbolize/lines.c is compiled against libdw's headers (it loads libdw.so.1 with
# dlopen at run time, so nothing links with it); they are the same for
# every CPU, so the host's libdw-dev serves a cross build too.
LIBDW_PROBE := \#include <elfutils/libdw.h>
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(shell echo '$(LIBDW_PROBE)' | $(CC) -xc -fsyntax-only - 2>/dev/null && echo ok),)
$(error libdw's headers are not installed: `sh scripts/deps.sh libdw-dev` (as root) installs them)
endif
endif
# src/symbolize/debuginfod.c likewise against libdebuginfod's header (record
# loads libdebuginfod.so.1 with dlopen, only where DEBUGINFOD_URLS is set).
LIBDEBUGINFOD_PROBE := \#include <elfutils/debuginfod.h>
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(shell echo '$(LIBDEBUGINFOD_PROBE)' | $(CC) -xc -fsyntax-only - 2>/dev/null && echo ok),)
$(error libdebuginfod's header is not installed: `sh scripts/deps.sh libdebuginfod-dev` (as root) installs it)
endif
endif
# src/symbolize/demangle.c is libiberty's demangler (binutils' own, which
# knows C++ and both of Rust's manglings): Debian's libiberty-dev, a static
# archive built position-independent, linked into every library and the
# CLI with its names hidden (--exclude-libs, and the archives' objcopy),
# so that names never depend on what a profiled program links.  Its headers
# serve every CPU; the archive is the target's (libiberty-dev:arm64).
LIBIBERTY := -l:libiberty.a
LIBIBERTY_PROBE := \#include <libiberty/demangle.h>
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(shell echo '$(LIBIBERTY_PROBE)' | $(CC) -xc -fsyntax-only - 2>/dev/null && echo ok),)
$(error libiberty's headers are not installed: `sh scripts/deps.sh libiberty-dev` (as root) installs them)
endif
endif
# Binutils of a cross compiler named PREFIX-gcc are PREFIX-ar, PREFIX-nm.
CROSS   := $(patsubst %gcc,%,$(filter %-gcc,$(notdir $(CC))))
ifeq ($(origin AR),default)
AR      := $(CROSS)ar
endif
NM      ?= $(CROSS)nm
PREFIX  ?= /usr/local
ifeq ($(ARCH),$(HOST_ARCH))
B       := build
else
B       := build-$(ARCH)
# Foreign binaries run under qemu-user.  The statically linked qemu, so
# that the LD_PRELOAD of a foreign library, which `cpuprof record` puts
# into the environment of the command it runs (a qemu process), means
# nothing to the host's dynamic loader and reaches the emulated program
# unchanged.  No -L: the programs run on Debian's multiarch runtime
# (libc6:$(ARCH) in /lib/$(ARCH)-linux-gnu, which zlib1g:$(ARCH) needs
# anyway).  With -L /usr/$(ARCH)-linux-gnu the loader would come from the
# cross toolchain's libc, another build of glibc than the multiarch
# libc.so.6 it then finds first, and that mix hangs in pthread_create.
EMU     ?= qemu-$(ARCH)-static
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
# Frame pointers in our own code keep the profiler's frames walkable too.
BASE    := -std=gnu11 -fno-omit-frame-pointer -D_GNU_SOURCE $(WARN) -Iinclude -Isrc -Isrc/arch/$(ARCH)
LIBFLAGS:= $(BASE) -fPIC -fvisibility=hidden -pthread
LDLIBS  := -lz -ldl -pthread $(LIBIBERTY)
# A shared library exports none of libiberty's names.
SOFLAGS := -Wl,--exclude-libs,libiberty.a

# The library's rooms (docs/architecture.md): src/ itself is a profile's
# life; each folder below it one concern.  Object files keep their folders,
# but an archive keeps only base names: no two may be the same.
LIB_SRCS := $(wildcard src/*.c src/*/*.c)
SIG_SRCS := $(wildcard src/sig/*.c)
CLI_SRCS := $(wildcard cli/*.c cli/*/*.c)
ifneq ($(words $(sort $(notdir $(LIB_SRCS)))),$(words $(LIB_SRCS)))
$(error two files of src/ have the same name: $(sort $(notdir $(LIB_SRCS))))
endif
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/%.o)

# Tests by kind: tests/api/ (test_*: the public API), tests/unit/ (unit_*:
# internals), tests/e2e/ (t_*.sh: the programs end to end), tests/work/
# (workloads the scripts profile, and lib_*.c, libraries they load),
# tests/tools/ (helpers of the scripts).  Every program is built into
# $(B)/tests/ under its own name.
TEST_SRCS := $(wildcard tests/api/*.c tests/unit/*.c) $(filter-out tests/work/lib_%.c,$(wildcard tests/work/*.c)) \
	tests/tools/no_perf.c
TEST_BINS := $(addprefix $(B)/tests/,$(basename $(notdir $(TEST_SRCS))))
# The unwinding tests run work_unwind and its library built both with and
# without frame pointers.
UNWIND_BINS := $(B)/tests/work_unwind_nofp $(B)/tests/libunwind_dl.so $(B)/tests/libunwind_dl_nofp.so \
	$(B)/tests/tool_fold $(B)/tests/tool_lines $(B)/tests/libversioned.so

# The gperftools drop-in (compat/gperftools/): gperftools' CPU-profiler
# ABI on cpuprof's public API, as libprofiler.so.0 and libprofiler.a, each
# with a copy of cpuprof inside (less preload.c, whose CPUPROF= would
# start a second profile).  cpuprof's objects come first in every link:
# in a forked child its fork handler must forget the parent's profile
# before the child's switch can start one.  Each exports what its objects
# give default visibility (gperftools' functions, and the C library's that
# cpuprof interposes: pthread_create, sigaction, ...) less cpuprof's own
# API (cpuprof_*), the .so by a version script, the .a as one relocatable
# object whose other symbols are made local: no internal name can meet a
# program's, and a libcpuprof beside it is another profiler.
GP_SRCS := $(wildcard compat/gperftools/*.c) $(wildcard compat/gperftools/sig/*.c)
GP_OBJS := $(GP_SRCS:%.c=$(B)/%.o)
GP_SIG_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard compat/gperftools/sig/*.c))
GP_CORE := $(filter-out $(B)/src/process/preload.o,$(LIB_OBJS))
GP_LIBS := $(B)/libprofiler.so.0 $(B)/libprofiler.so $(B)/libprofiler.a
OBJCOPY ?= $(CROSS)objcopy
READELF ?= $(CROSS)readelf
# Only the public headers: the drop-in is built on cpuprof's API alone.
GPFLAGS := -std=gnu11 -fno-omit-frame-pointer -D_GNU_SOURCE $(WARN) -Iinclude -Icompat/gperftools \
	-fPIC -fvisibility=hidden -pthread

all: $(B)/libcpuprof.so $(B)/libcpuprof.a $(B)/cpuprof $(GP_LIBS)

# Each object depends on the headers it includes (-MMD writes the list
# beside it; -MP keeps a deleted header from breaking the build).
DEPFLAGS := -MMD -MP

$(B)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/cli/%.o: cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli $(DEPFLAGS) -c -o $@ $<

# The lines cache (src/symbolize/lines_cache.c) believes only answers of
# the same DWARF reader: a checksum of lines.c and the files it reads
# with, compiled in.
LINES_CODE := $(firstword $(shell cat src/symbolize/lines.c src/symbolize/unpack.c src/symbolize/dwp.c \
	src/symbolize/debuglink.c | cksum))
%/src/symbolize/lines_cache.o: CFLAGS += -DCP_LINES_CODE=$(LINES_CODE)u
$(B)/src/symbolize/lines_cache.o: src/symbolize/lines.c src/symbolize/unpack.c src/symbolize/dwp.c \
	src/symbolize/debuglink.c
# And the symbol table cache (src/symbolize/symtab_cache.c): tables read
# by the same code.
SYMBOLS_CODE := $(firstword $(shell cat src/symbolize/symbols.c src/symbolize/minidebug.c src/symbolize/unpack.c \
	src/symbolize/debuglink.c | cksum))
%/src/symbolize/symtab_cache.o: CFLAGS += -DCP_SYMBOLS_CODE=$(SYMBOLS_CODE)u
$(B)/src/symbolize/symtab_cache.o: src/symbolize/symbols.c src/symbolize/minidebug.c src/symbolize/unpack.c \
	src/symbolize/debuglink.c
# The same for the unwind table cache (src/unwind/table_cache.c): tables
# of the same parser and encoder, for the same architecture.
UNWIND_CODE_SRCS := src/unwind/ehframe.c src/unwind/encode.c src/unwind/file.c src/sig/unwind_table.h \
	src/arch/$(ARCH)/arch.h
UNWIND_CODE := $(firstword $(shell cat $(UNWIND_CODE_SRCS) | cksum))
%/src/unwind/table_cache.o: CFLAGS += -DCP_UNWIND_CODE=$(UNWIND_CODE)u
$(B)/src/unwind/table_cache.o: $(UNWIND_CODE_SRCS)

# The flame graph's page is built into the CLI (.incbin in cli/report/flame.c).
$(B)/cli/report/flame.o: cli/report/flame.html

# nodelete: the library's signal handler may stay installed after a
# profile (src/engines/sampling_signal.c), so the library must never be
# unloaded.
$(B)/libcpuprof.so: $(LIB_OBJS)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcpuprof.so -Wl,-z,defs -Wl,-z,nodelete $(SOFLAGS) -o $@ $^ $(LDLIBS)

# The names the library exports, one a line: what its objects give default
# visibility, its API (cpuprof_*) and the C library's functions it
# interposes (sigaction, pthread_create, ...).
$(B)/exports.txt: $(LIB_OBJS)
	$(READELF) -sW $^ | awk '($$5 == "GLOBAL" || $$5 == "WEAK") && $$6 == "DEFAULT" && $$7 != "UND" \
		{ print $$8 }' | sort -u >$@
	grep -qx cpuprof_start $@

# libcpuprof.a: the objects as one, every name but those exported made
# local, so that no internal name can meet a program's in a static link.
# The tests of internals (unit_*, tool_lines, bench/lines, bench/unwind)
# link libcpuprof-internal.a, the objects as they are.
$(B)/libcpuprof.a: $(LIB_OBJS) $(B)/exports.txt
	@rm -f $@ $(B)/libcpuprof.o
	$(CC) -r -nostdlib -o $(B)/libcpuprof.o $(LIB_OBJS) $(LIBIBERTY)
	$(OBJCOPY) --keep-global-symbols=$(B)/exports.txt $(B)/libcpuprof.o
	$(AR) rcs $@ $(B)/libcpuprof.o

$(B)/libcpuprof-internal.a: $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# The test build's knobs (src/base/testhooks.h): constants in every object
# above, which is what `make install` installs.  The files that include
# the header are compiled a second time with -DCPUPROF_TEST_HOOKS into
# $(B)/hooks/, and the test programs that turn a knob link those in place
# of the release ones: the unit tests libcpuprof-test.a, the scripts that
# set a hook in the environment (t_clock_ahead.sh) $(B)/hooks/cpuprof,
# which finds $(B)/hooks/libcpuprof.so beside itself.  A few objects built
# twice, not the whole library.
HOOK_SRCS := $(shell grep -l '^\#include "\(base/\)\?testhooks\.h"' $(LIB_SRCS) /dev/null)
HOOK_REL  := $(HOOK_SRCS:%.c=$(B)/%.o)
hooked     = $(foreach o,$(1),$(if $(filter $(o),$(HOOK_REL)),$(o:$(B)/%=$(B)/hooks/%),$(o)))
HOOKFLAGS := -DCPUPROF_TEST_HOOKS
$(B)/hooks/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) $(HOOKFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/hooks/libcpuprof-test.a: $(call hooked,$(LIB_OBJS))
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/hooks/libcpuprof.so: $(call hooked,$(LIB_OBJS))
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcpuprof.so -Wl,-z,defs -Wl,-z,nodelete $(SOFLAGS) -o $@ $^ $(LDLIBS)

# The CLI checks its flags with the library's table of settings, and
# record collects, unwinds, symbolizes and writes with the library's own
# code: the rooms below the engines (docs/architecture.md), never the
# engines, the session or the interposers, whose libc-named functions
# would take the place of the C library's in the CLI.
CLI_ROOMS  := base perf unwind symbolize profile
CLI_SHARED := $(patsubst %.c,$(B)/%.o,$(foreach r,$(CLI_ROOMS),$(wildcard src/$(r)/*.c))) \
	$(addprefix $(B)/src/sig/,ring.o state.o stack.o unwind_dwarf.o unwind_fp.o)
$(B)/cpuprof: $(CLI_OBJS) $(CLI_SHARED)
	$(CC) $(CFLAGS) -o $@ $^ -lz -lm $(LIBIBERTY)

$(B)/hooks/cpuprof: $(CLI_OBJS) $(call hooked,$(CLI_SHARED))
	$(CC) $(CFLAGS) -o $@ $^ -lz -lm $(LIBIBERTY)

ifdef TSAN
# `make tsan`: the tests link the library itself, so that the threads it
# makes go through ThreadSanitizer's pthread_create.  Not instrumented:
# interpose.c, for ThreadSanitizer calls sigaction (ours) before it is
# ready to see any access; and the signal-context code (src/sig/), whose
# handler the kernel may run in a thread ThreadSanitizer has not set up
# yet, and whose fences it does not model (tests/tools/sigsafe.sh checks it).
TEST_LINK = $(B)/libcpuprof-internal.a $(LDLIBS)
$(B)/src/process/interpose.o $(SIG_SRCS:%.c=$(B)/%.o): override CFLAGS += -fno-sanitize=thread
else
TEST_LINK = -L$(B) -Wl,-rpath,$(abspath $(B)) -lcpuprof
endif

$(B)/compat/%.o: compat/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(GPFLAGS) $(DEPFLAGS) -c -o $@ $<

# The names libprofiler exports, one a line (see GP_SRCS).
$(B)/compat/exports.txt: $(GP_CORE) $(GP_OBJS)
	@mkdir -p $(dir $@)
	$(READELF) -sW $^ | awk '($$5 == "GLOBAL" || $$5 == "WEAK") && $$6 == "DEFAULT" && $$7 != "UND" && \
		$$8 !~ /^cpuprof_/ { print $$8 }' | sort -u >$@
	grep -qx ProfilerStart $@

$(B)/compat/libprofiler.map: $(B)/compat/exports.txt
	{ echo '{ global:'; sed 's/$$/;/' $<; echo 'local: *; };'; } >$@

# -z nodelete: a dlclose() must not unmap a library whose signal handler
# and threads may still run.
$(B)/libprofiler.so.0: $(GP_CORE) $(GP_OBJS) $(B)/compat/libprofiler.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libprofiler.so.0 -Wl,-z,defs -Wl,-z,nodelete $(SOFLAGS) \
		-Wl,--version-script=$(B)/compat/libprofiler.map -o $@ $(GP_CORE) $(GP_OBJS) $(LDLIBS)

$(B)/libprofiler.so: $(B)/libprofiler.so.0
	ln -sf libprofiler.so.0 $@

# The static library: cpuprof's objects and ours as one; coexist.o only
# matters beside gperftools' own shared library and is left out.
$(B)/libprofiler.a: $(GP_CORE) $(filter-out %/coexist.o,$(GP_OBJS)) $(B)/compat/exports.txt
	@rm -f $@ $(B)/compat/libprofiler.o
	$(CC) -r -nostdlib -o $(B)/compat/libprofiler.o $(filter %.o,$^) $(LIBIBERTY)
	$(OBJCOPY) --keep-global-symbols=$(B)/compat/exports.txt $(B)/compat/libprofiler.o
	$(AR) rcs $@ $(B)/compat/libprofiler.o

# Test programs: test_*.c use the public API of libcpuprof.so; unit_*.c test
# internals and link the static library with the test build's knobs; everything else in tests/ is a
# workload run under `cpuprof record` and links nothing of ours.
$(B)/tests/test_%: tests/api/test_%.c tests/check.h $(B)/libcpuprof.so $(B)/libcpuprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -rdynamic -o $@ $< $(TEST_LINK) -pthread -lm -ldl

# test_gp_*.c test the gperftools drop-in, against libprofiler.so.
$(B)/tests/test_gp_%: tests/api/test_gp_%.c tests/check.h $(B)/libprofiler.so.0 $(B)/libprofiler.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -rdynamic -o $@ $< -L$(B) -Wl,-rpath,$(abspath $(B)) -lprofiler -pthread -ldl

$(B)/tests/unit_%: tests/unit/unit_%.c tests/check.h src/base/testhooks.h $(B)/hooks/libcpuprof-test.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) $(HOOKFLAGS) -o $@ $< $(B)/hooks/libcpuprof-test.a $(LDLIBS) -lm

# The CLI's flag parser, with the library's table of settings.
$(B)/tests/unit_flags: tests/unit/unit_flags.c tests/check.h cli/flags.c cli/flags.h $(B)/libcpuprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli -o $@ tests/unit/unit_flags.c cli/flags.c $(B)/libcpuprof-internal.a $(LDLIBS) -lm

# The call tree of report and diff (cli/report/stacks.c) and the walk
# that sums it (shares.c), with what stacks.c links of the CLI.
CALLTREE_OBJS := $(addprefix $(B)/cli/,report/stacks.o report/shares.o pprof_read.o pprof_decode.o)
$(B)/tests/unit_calltree: tests/unit/unit_calltree.c tests/check.h $(CALLTREE_OBJS) $(B)/libcpuprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli -o $@ tests/unit/unit_calltree.c $(CALLTREE_OBJS) $(B)/libcpuprof-internal.a \
		$(LDLIBS) -lm

# record's names of threads (cli/record/kernel_tables.c, proctree.c),
# with what kernel_tables.c links of the CLI.
THREADNAME_OBJS := $(addprefix $(B)/cli/record/,kernel_tables.o proctree.o kernel_jit.o)
$(B)/tests/unit_thread_names: tests/unit/unit_thread_names.c tests/check.h $(THREADNAME_OBJS) $(B)/libcpuprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli -o $@ tests/unit/unit_thread_names.c $(THREADNAME_OBJS) \
		$(B)/libcpuprof-internal.a $(LDLIBS) -lm

$(B)/tests/%: tests/work/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread -lm -ldl

$(B)/tests/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread -lm -ldl

$(B)/tests/work_unwind_nofp: tests/work/work_unwind.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fomit-frame-pointer -o $@ $< -pthread -lm -ldl

$(B)/tests/libunwind_dl.so: tests/work/lib_unwind_dl.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fPIC -shared -o $@ $<

$(B)/tests/libunwind_dl_nofp.so: tests/work/lib_unwind_dl.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fomit-frame-pointer -fPIC -shared -o $@ $<

$(B)/tests/tool_fold: tests/tools/tool_fold.c cli/pprof_read.c cli/pprof_decode.c src/profile/times.c src/profile/protobuf.c cli/pprof_read.h cli/pprof_int.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli -o $@ tests/tools/tool_fold.c cli/pprof_read.c cli/pprof_decode.c src/profile/times.c src/profile/protobuf.c -lz

# Without DWARF, like a libc without its debug package: its names come from
# the versioned symbols.
$(B)/tests/libversioned.so: tests/work/lib_versioned.c tests/work/lib_versioned.map
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -g0 $(BASE) -fPIC -shared -Wl,--version-script=tests/work/lib_versioned.map -o $@ $<

$(B)/tests/tool_lines: tests/tools/tool_lines.c $(B)/libcpuprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< $(B)/libcpuprof-internal.a $(LDLIBS)

# Whether this machine allows an engine, for the test scripts (check.h).
$(B)/tests/tool_engine: tests/tools/tool_engine.c tests/check.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $<

# The report tests' profile writer: its own encoder, nothing of ours.
$(B)/tests/tool_mkprof: tests/tools/tool_mkprof.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -lz

$(B)/demo: demo/demo.c
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread

# cpuprof diff's tests draw synthetic profiles (written through tool_mkprof).
$(B)/tests/tool_sampleprof: tests/tools/tool_sampleprof.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $<

tests: all $(TEST_BINS) $(UNWIND_BINS) $(B)/tests/tool_mkprof $(B)/tests/tool_sampleprof $(B)/tests/tool_engine $(B)/demo \
	$(B)/hooks/cpuprof $(B)/hooks/libcpuprof.so

# Signal-context objects may call nothing that can allocate, lock or use stdio.
check-sigsafe: $(SIG_SRCS:%.c=$(B)/%.o) $(GP_SIG_OBJS)
	@NM='$(NM)' sh tests/tools/sigsafe.sh $(SIG_SRCS:%.c=$(B)/%.o)
	@NM='$(NM)' sh tests/tools/sigsafe.sh $(GP_SIG_OBJS)

# The benchmark's smoke test needs its build; it runs on the host only.
check: tests check-sigsafe $(if $(filter $(ARCH),$(HOST_ARCH)),bench-build)
	@B='$(B)' ARCH='$(ARCH)' EMU='$(EMU)' sh tests/run.sh

# Starts, stops, flushes and streams from several threads at once, for a
# minute; then the same paths under ThreadSanitizer (gcc's), where any
# report fails the run.
STRESS_SECONDS ?= 60
TSAN_TESTS := test_stress test_stream test_churn
stress: tests
	STRESS_SECONDS=$(STRESS_SECONDS) $(B)/tests/test_stress
tsan:
	$(MAKE) B=build-tsan CFLAGS='-O1 -g -fsanitize=thread' TSAN=1 $(TSAN_TESTS:%=build-tsan/tests/%)
	for t in $(TSAN_TESTS); do \
		echo "tsan: $$t"; \
		TSAN_OPTIONS='halt_on_error=1 exitcode=66' STRESS_SECONDS=$(STRESS_SECONDS) build-tsan/tests/$$t || exit 1; \
	done

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(B)/cpuprof $(DESTDIR)$(PREFIX)/bin/cpuprof
	install -m 755 $(B)/libcpuprof.so $(DESTDIR)$(PREFIX)/lib/libcpuprof.so
	install -m 644 $(B)/libcpuprof.a $(DESTDIR)$(PREFIX)/lib/libcpuprof.a
	install -m 644 include/cpuprof.h $(DESTDIR)$(PREFIX)/include/cpuprof.h
	sed -e 's|@PREFIX@|$(PREFIX)|' cpuprof.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cpuprof.pc
	install -d $(DESTDIR)$(PREFIX)/include/gperftools
	install -m 755 $(B)/libprofiler.so.0 $(DESTDIR)$(PREFIX)/lib/libprofiler.so.0
	ln -sf libprofiler.so.0 $(DESTDIR)$(PREFIX)/lib/libprofiler.so
	install -m 644 $(B)/libprofiler.a $(DESTDIR)$(PREFIX)/lib/libprofiler.a
	install -m 644 include/gperftools/profiler.h $(DESTDIR)$(PREFIX)/include/gperftools/profiler.h
	sed -e 's|@PREFIX@|$(PREFIX)|' compat/gperftools/libprofiler.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libprofiler.pc

include bench/vm/build.mk

# The benchmark (bench/run.py), on the host: its workloads, a static
# launcher, and a second build of the library in $(BB)/ with
# -DCPUPROF_BENCH, where the handler times itself (handler_ns and
# handler_calls in the profile's comments).  The profilers compared are the
# normal library and the peers; the bench library only reads the handler's
# time.
BB      := build-bench
PYTHON  ?= /usr/bin/python3
BENCH_BINS := $(patsubst bench/%.c,$(BB)/bench/%,$(wildcard bench/*.c))

$(BB)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) $(DEPFLAGS) -DCPUPROF_BENCH -c -o $@ $<
$(BB)/src/symbolize/lines_cache.o: src/symbolize/lines.c
$(BB)/src/symbolize/symtab_cache.o: src/symbolize/symbols.c
$(BB)/src/unwind/table_cache.o: $(UNWIND_CODE_SRCS)

$(BB)/libcpuprof.so: $(LIB_OBJS:$(B)/%=$(BB)/%)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcpuprof.so -Wl,-z,defs -Wl,-z,nodelete $(SOFLAGS) -o $@ $^ $(LDLIBS)

# Workloads: frame pointers, as every profiler compared walks them.  In
# scale.c the function that works is also the one that calls: without
# shrink-wrapping its frame is set up on both paths, so a frame-pointer
# walk sees every function of the path and each path is its own stack.
$(BB)/bench/%: bench/%.c bench/clocks.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) $(BENCH_CFLAGS) -o $@ $< -pthread

$(BB)/bench/scale: BENCH_CFLAGS := -fno-shrink-wrap

# The launchers are static so that the workloads inherit almost no RSS.
$(BB)/bench/spawn $(BB)/bench/hwm: $(BB)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -static -o $@ $<

bench-build: all $(BB)/libcpuprof.so $(BENCH_BINS) $(B)/tests/work_kernel
	@NM='$(NM)' sh tests/tools/sigsafe.sh $(SIG_SRCS:%.c=$(BB)/%.o) >/dev/null

# What `make bench` installs (as root): python3 runs it, gnuplot-nox draws
# its plots, google-perftools and linux-perf are the peers, golang-go's
# `go tool pprof` reads gperftools' profiles; dpkg-dev (with the deb-src
# line scripts/deb-src.sh gives apt) unpacks zstd's Debian source for the
# real build; g++, rustc and binutils' addr2line are what
# tests/e2e/t_names.sh, which measures the names, builds and compares with.
BENCH_ARGS := $(if $(filter-out 0,$(QUICK)),--quick) $(if $(filter-out 0,$(VM)),--vm)
bench: bench-build
	sh scripts/deps.sh python3 gnuplot-nox google-perftools linux-perf golang-go dpkg-dev g++ rustc binutils
	sh scripts/deb-src.sh
	$(PYTHON) bench/run.py $(BENCH_ARGS)

# Fuzzing report's (and diff's) reader and writers with libFuzzer (clang), by hand:
# `make fuzz-report [FUZZ_SECONDS=300]`.  The corpus starts from profiles
# the tests make; crashes are written to build-fuzz/.
FUZZ_SECONDS ?= 300
FUZZ_SRCS := tests/fuzz/report.c src/profile/times.c src/profile/protobuf.c src/profile/options.c src/base/error.c src/base/outfile.c \
	$(filter-out cli/main.c,$(wildcard cli/*.c)) $(wildcard cli/report/*.c cli/diff/*.c)
build-fuzz/report: $(FUZZ_SRCS) $(wildcard cli/*.h cli/*/*.h) cli/report/flame.html
	@mkdir -p build-fuzz
	clang -g -O1 -std=gnu11 -D_GNU_SOURCE -Icli -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -o $@ $(FUZZ_SRCS) -lz -lm

fuzz-report: build-fuzz/report tests
	sh tests/fuzz/corpus.sh $(B) build-fuzz/corpus
	cd build-fuzz && ./report -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		-rss_limit_mb=2048 -timeout=10 corpus

# The mutation check, by hand (scripts/mutate.sh; docs/testing.md): each
# break of scripts/mutations.txt applied alone to a copy of the tree, which
# its tests must fail.  `make mutate M="name ..."` for some of them.
# `make check` runs only `scripts/mutate.sh --check` (t_breaks_apply.sh):
# that every break still applies to the tree, with no build.
mutate:
	sh scripts/mutate.sh $(M)

clean:
	rm -rf $(B) $(BB) build-fuzz

-include $(shell find $(B) $(BB) -name '*.d' 2>/dev/null)

.PHONY: all tests check check-sigsafe install clean bench bench-build fuzz-report stress tsan mutate
.DELETE_ON_ERROR:
