# cpuprof -- GNU Makefile.  `make` builds the library and the CLI into build/,
# `make check` runs the test suite, `make install PREFIX=DIR` installs,
# `make bench [QUICK=1] [VM=1]` runs the benchmark into docs/benchmarks.md.

ARCH    ?= $(shell uname -m)
CC      ?= cc
AR      ?= ar
PREFIX  ?= /usr/local
B       := build

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
# Frame pointers in our own code keep the profiler's frames walkable too.
BASE    := -std=gnu11 -fno-omit-frame-pointer -D_GNU_SOURCE $(WARN) -Iinclude -Isrc -Isrc/arch/$(ARCH)
LIBFLAGS:= $(BASE) -fPIC -fvisibility=hidden -pthread
LDLIBS  := -lz -ldl -pthread

LIB_SRCS := $(wildcard src/*.c)
SIG_SRCS := $(wildcard src/sig/*.c)
CLI_SRCS := $(wildcard cli/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o) $(SIG_SRCS:%.c=$(B)/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/%.o)

TEST_SRCS := $(wildcard tests/*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)

all: $(B)/libcpuprof.so $(B)/libcpuprof.a $(B)/cpuprof

$(B)/src/%.o: src/%.c $(wildcard src/*.h src/sig/*.h src/arch/$(ARCH)/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) -c -o $@ $<

$(B)/cli/%.o: cli/%.c $(wildcard cli/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -c -o $@ $<

$(B)/libcpuprof.so: $(LIB_OBJS)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcpuprof.so -Wl,-z,defs -o $@ $^ $(LDLIBS)

$(B)/libcpuprof.a: $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/cpuprof: $(CLI_OBJS)
	$(CC) $(CFLAGS) -o $@ $^ -lz

# Test programs: test_*.c use the public API of libcpuprof.so; unit_*.c test
# internals and link the static library; everything else in tests/ is a
# workload run under `cpuprof record` and links nothing of ours.
$(B)/tests/test_%: tests/test_%.c tests/check.h $(B)/libcpuprof.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -rdynamic -o $@ $< -L$(B) -Wl,-rpath,$(abspath $(B)) -lcpuprof -pthread -lm -ldl

$(B)/tests/unit_%: tests/unit_%.c tests/check.h $(B)/libcpuprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< $(B)/libcpuprof.a $(LDLIBS) -lm

$(B)/tests/%: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread -lm -ldl

$(B)/demo: demo/demo.c
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread

tests: all $(TEST_BINS) $(B)/demo

# Signal-context objects may call nothing that can allocate, lock or use stdio.
check-sigsafe: $(SIG_SRCS:%.c=$(B)/%.o)
	@sh tests/sigsafe.sh $^

check: tests check-sigsafe bench-build
	@sh tests/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(B)/cpuprof $(DESTDIR)$(PREFIX)/bin/cpuprof
	install -m 755 $(B)/libcpuprof.so $(DESTDIR)$(PREFIX)/lib/libcpuprof.so
	install -m 644 $(B)/libcpuprof.a $(DESTDIR)$(PREFIX)/lib/libcpuprof.a
	install -m 644 include/cpuprof.h $(DESTDIR)$(PREFIX)/include/cpuprof.h
	sed -e 's|@PREFIX@|$(PREFIX)|' cpuprof.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cpuprof.pc

# The benchmark (bench/run.py): its workloads, a static launcher, and a
# second build of the library in $(BB)/ with -DCPUPROF_BENCH, where the
# handler times itself (handler_ns / handler_calls in the profile's
# comments).  The profilers compared are the normal build/ library and the
# peers; the bench library is only used to read the handler's time.
BB      := build-bench
PYTHON  ?= /usr/bin/python3
BENCH_BINS := $(patsubst bench/%.c,$(BB)/bench/%,$(wildcard bench/*.c))

$(BB)/src/%.o: src/%.c $(wildcard src/*.h src/sig/*.h src/arch/$(ARCH)/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) -DCPUPROF_BENCH -c -o $@ $<

$(BB)/libcpuprof.so: $(LIB_OBJS:$(B)/%=$(BB)/%)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libcpuprof.so -Wl,-z,defs -o $@ $^ $(LDLIBS)

# Workloads: frame pointers, as every profiler compared walks them.  In
# scale.c the function that works is also the one that calls: without
# shrink-wrapping its frame is set up on both paths, so a frame-pointer
# walk sees every function of the path and each path is its own stack.
$(BB)/bench/%: bench/%.c bench/clocks.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) $(BENCH_CFLAGS) -o $@ $< -pthread

$(BB)/bench/scale: BENCH_CFLAGS := -fno-shrink-wrap

# The launcher is static so that the workloads inherit almost no RSS.
$(BB)/bench/spawn: bench/spawn.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -static -o $@ $<

bench-build: all $(BB)/libcpuprof.so $(BENCH_BINS)
	@sh tests/sigsafe.sh $(SIG_SRCS:%.c=$(BB)/%.o) >/dev/null

BENCH_ARGS := $(if $(filter-out 0,$(QUICK)),--quick) $(if $(filter-out 0,$(VM)),--vm)
bench: bench-build
	sh scripts/deps.sh python3 gnuplot-nox google-perftools linux-perf golang-go
	$(PYTHON) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(B) $(BB)

.PHONY: all tests check check-sigsafe install clean bench bench-build
.DELETE_ON_ERROR:
