#!/bin/sh
# corpus.sh B DIR -- seeds report's fuzzer (tests/fuzz/report.c) in DIR:
# a profile of work_hot recorded with build B (plain and gzipped), and
# rich.txt made by tool_mkprof (source lines, inlined frames, labels,
# pseudo frames and awkward names).
B=$1
DIR=$2
set -e
mkdir -p "$DIR"
if "$B/cpuprof" record -o "$DIR/work.pb.gz" -- "$B/tests/work_hot" 1 100 >/dev/null 2>&1; then
	gzip -dc "$DIR/work.pb.gz" >"$DIR/work.pb"
fi
"$B/tests/tool_mkprof" "$DIR/rich.pb" <"$(dirname "$0")/rich.txt"
