#!/bin/sh
# test.sh [ARCH | vm] -- installs what the test suite needs (as root;
# otherwise names it) and runs `make check`.  With ARCH (aarch64),
# cross-builds for that CPU with Debian's cross compiler and runs the suite
# under qemu-user (`make check ARCH=aarch64`).  With `vm`, runs `make
# check-vm`: Debian's amd64 and arm64 kernels booted under qemu with
# timers that fire only at the tick (bench/vm/run.sh installs qemu, the
# aarch64 cross compiler, busybox and cpio, and downloads the kernel
# packages).  Run from anywhere.
set -e
cd "$(dirname "$0")/.."
# golang-go brings `go tool pprof`, which reads our profiles back;
# google-perftools is the peer profiler some tests compare with (and its
# google-pprof reads the gperftools drop-in's profiles);
# libgoogle-perftools-dev is gperftools' own libprofiler to build the
# drop-in's test program against, pkg-config finds our install of it;
# python3 runs the benchmark's smoke test (bench/run.py --smoke); chromium and
# nodejs (with a font for the screenshots) open report's HTML flame graph
# in a real browser, driven over the DevTools protocol by tests/tools/cdp.js;
# libdw-dev has the headers src/symbolize/lines.c is built against (and libdw1,
# which it loads at run time); libiberty-dev is binutils' demangler
# (C++, Rust legacy and v0), the static archive src/symbolize/demangle.c
# is linked with; binutils' addr2line is the reference the line and name
# tests compare with; g++ and rustc build the C++ and Rust workloads of
# tests/e2e/t_names.sh (Debian's rustc 1.63 knows both of Rust's manglings);
# xz-utils makes the MiniDebugInfo of tests/e2e/t_debuginfo.sh (its
# liblzma5, and libzstd1, are loaded at run time and come with dpkg);
# dpkg-dev unpacks the Debian source package (lua5.4) that
# tests/e2e/t_lines_lua.sh builds, with a deb-src line beside the machine's
# own deb lines (the same mirrors) when it has none (scripts/deb-src.sh);
# clang, lld and mold are the other linkers of tests/e2e/t_toolchains.sh
# (lld and mold lay out segments unlike GNU ld; rustc links with lld too);
# libdebuginfod-dev has the headers src/symbolize/debuginfod.c is built
# against (and libdebuginfod1, which record loads at run time where
# DEBUGINFOD_URLS is set), debuginfod the server tests/e2e/t_debuginfod.sh
# starts on loopback, strace what shows it that no connection is tried
# without DEBUGINFOD_URLS; tmux gives tests/e2e/t_top.sh terminals of a
# given size to run `cpuprof top` in, type its keys and read its screen.
sh scripts/deps.sh gcc make libc6-dev zlib1g-dev golang-go google-perftools libgoogle-perftools-dev pkg-config \
	python3 ca-certificates chromium nodejs fonts-dejavu-core libdw-dev libiberty-dev binutils g++ rustc dpkg-dev \
	clang lld mold xz-utils libdebuginfod-dev debuginfod strace tmux
sh scripts/deb-src.sh
# speedscope's npm package: its file format's schema and its viewer, which
# tests/e2e/t_report_speedscope.sh loads report's speedscope files into
# (in Chromium, as the flame graph); in the tests' npm folder outside the
# tree (scripts/npm-deps.sh says where).
sh scripts/npm-deps.sh speedscope@1.25.0
case ${1:-} in
'')
	make -s check ;;
aarch64 | arm64)
	# The cross compiler and its C library; zlib for arm64 (with Debian's
	# multiarch arm64 C library, which the tests run on); libdw for arm64,
	# which the library loads at run time for source lines (its headers
	# are the host's); libiberty's archive for arm64, the demangler linked
	# into the library and the CLI (its headers are the host's); the
	# statically linked qemu-user (see the Makefile).
	sh scripts/deps.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross zlib1g-dev:arm64 libdw1:arm64 libiberty-dev:arm64 \
		qemu-user-static
	make -s check ARCH=aarch64 ;;
vm)
	make -s check-vm ;;
*)
	echo "test.sh: unsupported argument '$1' (supported: aarch64, vm)" >&2
	exit 2 ;;
esac
