#!/bin/sh
# demo.sh -- builds cpuprof and its demo program, profiles the demo with
# `cpuprof record` and prints the report.  Run from the repository root.
set -e
cd "$(dirname "$0")/.."
# libc6-dbg names libc's internal functions (qsort's merge sort, say).
sh scripts/deps.sh gcc make libc6-dev zlib1g-dev libdw-dev libdebuginfod-dev libiberty-dev libc6-dbg
make -s all build/demo
build/cpuprof record -o demo.pb.gz -- build/demo
build/cpuprof report demo.pb.gz
