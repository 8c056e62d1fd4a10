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
# google-perftools is the peer profiler some tests compare with; python3
# runs the benchmark's smoke test (bench/run.py --smoke); libdw-dev has the
# headers src/lines.c is built against (and libdw1, which it loads at run
# time); binutils' addr2line is the reference the line tests compare with.
sh scripts/deps.sh gcc make libc6-dev zlib1g-dev libdw-dev binutils golang-go google-perftools python3 ca-certificates
case ${1:-} in
'')
	make -s check ;;
aarch64 | arm64)
	# The cross compiler and its C library; zlib for arm64 (with Debian's
	# multiarch arm64 C library, which the tests run on); libdw for arm64,
	# which the library loads at run time for source lines (its headers
	# are the host's); the statically linked qemu-user (see the Makefile).
	sh scripts/deps.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross zlib1g-dev:arm64 libdw1:arm64 qemu-user-static
	make -s check ARCH=aarch64 ;;
vm)
	make -s check-vm ;;
*)
	echo "test.sh: unsupported argument '$1' (supported: aarch64, vm)" >&2
	exit 2 ;;
esac
