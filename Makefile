# cpuprof -- GNU Makefile.  `make` builds the library and the CLI into build/,
# `make check` runs the test suite, `make install PREFIX=DIR` installs.

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

# tests/lib_*.c are libraries a workload loads, tests/tool_*.c helpers of
# the test scripts: neither is a test or workload of its own.
TEST_SRCS := $(filter-out tests/lib_%.c tests/tool_%.c,$(wildcard tests/*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
# The unwinding tests run work_unwind and its library built both with and
# without frame pointers.
UNWIND_BINS := $(B)/tests/work_unwind_nofp $(B)/tests/libunwind_dl.so $(B)/tests/libunwind_dl_nofp.so \
	$(B)/tests/tool_fold

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

$(B)/tests/work_unwind_nofp: tests/work_unwind.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fomit-frame-pointer -o $@ $< -pthread -lm -ldl

$(B)/tests/libunwind_dl.so: tests/lib_unwind_dl.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fPIC -shared -o $@ $<

$(B)/tests/libunwind_dl_nofp.so: tests/lib_unwind_dl.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -fomit-frame-pointer -fPIC -shared -o $@ $<

$(B)/tests/tool_fold: tests/tool_fold.c cli/profile.c cli/profile.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE) -Icli -o $@ tests/tool_fold.c cli/profile.c -lz

$(B)/demo: demo/demo.c
	$(CC) $(CFLAGS) $(BASE) -o $@ $< -pthread

tests: all $(TEST_BINS) $(UNWIND_BINS) $(B)/demo

# Signal-context objects may call nothing that can allocate, lock or use stdio.
check-sigsafe: $(SIG_SRCS:%.c=$(B)/%.o)
	@sh tests/sigsafe.sh $^

check: tests check-sigsafe
	@sh tests/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(B)/cpuprof $(DESTDIR)$(PREFIX)/bin/cpuprof
	install -m 755 $(B)/libcpuprof.so $(DESTDIR)$(PREFIX)/lib/libcpuprof.so
	install -m 644 $(B)/libcpuprof.a $(DESTDIR)$(PREFIX)/lib/libcpuprof.a
	install -m 644 include/cpuprof.h $(DESTDIR)$(PREFIX)/include/cpuprof.h
	sed -e 's|@PREFIX@|$(PREFIX)|' cpuprof.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cpuprof.pc

include bench/vm/build.mk

clean:
	rm -rf $(B)

.PHONY: all tests check check-sigsafe install clean
.DELETE_ON_ERROR:
