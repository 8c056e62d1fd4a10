#!/bin/sh
# bench-flame.sh -- the size and speed of report's HTML flame graph on
# 100,000 distinct stacks, two ways: a real profile of bench/scale (4
# threads walking 110,000 call paths about 30 frames deep, at 10 kHz:
# about 15 s of CPU), and a synthetic one of 100,000 stacks 8 to 32 deep
# drawn at random from 5,000 functions, so that almost no two share a
# prefix (the worst case for the page's tree).  Prints the files' sizes,
# report's time and peak memory, and the page's timings in headless
# Chromium (tests/tools/html_measure.js).  Run from the repository root after
# `make tests bench-build`; needs chromium and node.
set -e
out=${1:-build/flame-bench}
mkdir -p "$out"
build/cpuprof record -F 10000 -o "$out/scale.pb.gz" -- build-bench/bench/scale 4 110000 150 >/dev/null
awk 'BEGIN { srand(7); print "type samples count"; print "type cpu nanoseconds"; nf = 5000
	for (i = 1; i <= nf; i++) {
		printf "function %d fn_%d_std::vector%%3Cint%%3E::op src/f%d.cc %d\n", i, i, i % 97, i
		printf "location %d 0 %d %d:%d\n", i, i * 16, i, i % 500 + 1
	}
	for (s = 0; s < 100000; s++) {
		d = 8 + int(rand() * 25); line = "sample 1 " (100000 + int(rand() * 2000000)) " :"
		for (k = 0; k < d; k++) line = line " " (1 + int(rand() * nf))
		print line
	} }' | build/tests/tool_mkprof -z "$out/random.pb.gz"
for p in scale random; do
	stacks=$(build/cpuprof report --format folded "$out/$p.pb.gz" | wc -l)
	/usr/bin/time -f "%e s, %M KiB peak" -o "$out/time" \
		build/cpuprof report --format html -o "$out/$p.html" "$out/$p.pb.gz"
	echo "$p: $stacks distinct stacks; profile $(wc -c <"$out/$p.pb.gz") B," \
		"page $(wc -c <"$out/$p.html") B ($(gzip -c "$out/$p.html" | wc -c) B gzipped)," \
		"written in $(cat "$out/time")"
done
node tests/tools/html_measure.js "$out/scale.html" "$out/random.html"
