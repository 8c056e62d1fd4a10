#!/bin/sh
# test.sh -- installs what the test suite needs (as root; otherwise names
# it) and runs `make check`.  Run from anywhere.
set -e
cd "$(dirname "$0")/.."
# golang-go brings `go tool pprof`, which reads our profiles back;
# google-perftools is the peer profiler some tests compare with; python3
# runs the benchmark's smoke test (bench/run.py --smoke).
sh scripts/deps.sh gcc make libc6-dev zlib1g-dev golang-go google-perftools python3 ca-certificates
make -s check
