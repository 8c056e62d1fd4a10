#!/bin/sh
# t_toolchains.sh -- programs from every toolchain a user brings, named and
# unwound whole.  One workload (main -> outer -> inner, the hot loop:
# tests/work/chain.c, chain.rs, chain.go) is built by each toolchain found
# here: gcc with GNU ld (PIE, not PIE, -z noseparate-code), gcc with gold,
# clang with lld (PIE and not), gcc with mold, Rust linked by lld (Debian's
# rustc with -fuse-ld=lld, and rustup's rustc whose default it is), Rust by
# GNU ld (Debian's rustc), and Go (gc: static, its own linker).  lld and
# mold load the text segment a page above its file offset (p_vaddr !=
# p_offset), which is where addresses went wrong: each is profiled under
# `cpuprof record`, `record -p` (attached while it runs), LD_PRELOAD and
# the gperftools drop-in (not these two for Go: static, nothing to preload
# into), and for each:
#  - inner holds at least 80% of the profile's CPU, cumulatively;
#  - the leaf frames' names agree with `addr2line -C -f -i` on the same
#    binary, every level of the inline chain, for at least 0.95 of the
#    sampled weight (tests/tools/lines_compare.sh, names_agreement);
#  - at least 0.99 of the weight sampled in inner has main (Go: main.main)
#    above it: the unwinding went through the whole program (the rest of
#    the CPU is start-up and, in Go, the runtime's own threads);
#  - `go tool pprof -symbolize=force`, given the profile and reading the
#    binary itself, gives inner the same 80%: the Mapping places the binary
#    as every pprof reader reads it (Go's own places it by the executable
#    segment's p_vaddr alone).
# A toolchain that is not installed is a cell skipped, with its reason; the
# test fails if no cell ran.  Natively only (EMU empty).
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
LIB=$ROOT/$B/libcpuprof.so
GP=$ROOT/$B/libprofiler.so.0
TOOLS=
WORK=$ROOT/tests/work

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -e "$LIB" ] && [ -e "$GP" ] || fail "build first (make tests)"
[ -z "$EMU" ] || skip "toolchains are checked on the native build"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
command -v addr2line >/dev/null 2>&1 || skip "addr2line is not installed (binutils)"
. "$ROOT/tests/tools/lines_compare.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_toolchains.XXXXXX") || fail mktemp
trap '[ -n "$KEEP" ] || rm -rf "$tmp"; [ -z "$bg" ] || kill "$bg" 2>/dev/null' EXIT  # KEEP=1 keeps it
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none
[ -n "$HOME" ] || export GOCACHE=$tmp/gocache

# build CELL CMD...: builds ./CELL (the command writes it), or says why not.
built=
skipped=
build() {
	cell=$1
	shift
	if "$@" >"$cell.build" 2>&1 && [ -x "$cell" ]; then
		built="$built $cell"
	else
		skipped="$skipped $cell($(tail -n 1 "$cell.build" | cut -c1-60))"
	fi
}
has() { command -v "$1" >/dev/null 2>&1; }
C="-O2 -g -fno-omit-frame-pointer"
build gnu_pie gcc $C -o gnu_pie "$WORK/chain.c"
build gnu_nopie gcc $C -no-pie -o gnu_nopie "$WORK/chain.c"
build gnu_noseparate gcc $C -Wl,-z,noseparate-code -o gnu_noseparate "$WORK/chain.c"
has ld.gold && build gold gcc $C -fuse-ld=gold -o gold "$WORK/chain.c"
if has clang && has ld.lld; then
	build lld_pie clang $C -fuse-ld=lld -o lld_pie "$WORK/chain.c"
	build lld_nopie clang $C -fuse-ld=lld -no-pie -o lld_nopie "$WORK/chain.c"
else
	skipped="$skipped lld(clang or ld.lld not installed)"
fi
if has mold; then build mold gcc $C -fuse-ld=mold -o mold "$WORK/chain.c"; else skipped="$skipped mold(not installed)"; fi
if [ -x /usr/bin/rustc ]; then
	build rust_gnu /usr/bin/rustc -O -g -o rust_gnu "$WORK/chain.rs"
	has ld.lld && build rust_lld /usr/bin/rustc -O -g -C link-arg=-fuse-ld=lld -o rust_lld "$WORK/chain.rs"
else
	skipped="$skipped rust_gnu(Debian's rustc not installed)"
fi
# rustup's rustc (lld by default since 1.90), where one is on PATH.
r=$(command -v rustc)
if [ -n "$r" ] && [ "$r" != /usr/bin/rustc ]; then
	build rust_rustup "$r" -O -g -o rust_rustup "$WORK/chain.rs"
else
	skipped="$skipped rust_rustup(no rustup toolchain on PATH)"
fi
build go go build -o go "$WORK/chain.go"
[ -n "$built" ] || fail "no toolchain built the workload:$skipped"
[ -z "$skipped" ] || echo "# cells skipped:$skipped"

# inner_cum CMD...: the cumulative share (%) of inner (chain::inner,
# main.inner) in CMD's top table ("flat flat% sum% cum cum% name"), 0 if
# it is not there.  Cumulative: an inlined function may hold the flat.
inner_cum() {
	"$@" 2>/dev/null | awk '
		/flat%/ { t = 1; next }
		t && ($NF == "inner" || $NF == "chain::inner" || $NF == "main.inner") { c = $5; sub(/%/, "", c); print c + 0; f = 1; exit }
		END { if (!f) print 0 }'
}

# check CELL PATH PROFILE: the profile of ./CELL under PATH passes.
check() {
	cell=$1 how=$2 prof=$3
	what="$cell under $how"
	main=main
	[ "$cell" = go ] && main=main.main
	lead=$(inner_cum "$CP" report --format top "$prof")
	awk -v c="$lead" 'BEGIN { exit !(c >= 80) }' || { "$CP" report --format top "$prof" | head -n 12; fail "$what: inner holds $lead% of the CPU (need 80%)"; }
	# Of the sampled weight in inner, the part whose stack goes on to main.
	reach=$("$CP" report --format folded "$prof" | awk -v m="$main" '
		{ w = $NF; n = split(substr($0, 1, length($0) - length(w) - 1), f, ";"); in_ = on = 0
		  for (i = 1; i <= n; i++) { in_ += f[i] ~ /^(chain::|main\.)?inner$/; on += f[i] == m }
		  if (in_) { all += w; hit += on ? w : 0 } }
		END { printf "%.3f", all ? hit / all : 0 }')
	# The leaves' names against addr2line's, by sampled weight.
	names_agreement "$prof" >/dev/null
	agree=$(awk -F '\t' '
		FILENAME == "names.diff" { split($0, w, " "); bad[w[1] SUBSEP w[2]] = 1; next }
		FILENAME == "lines" { loc[$3] = ($1 SUBSEP $2) in bad ? 0 : 1; next }
		/^Samples:/ { s = 1; next }
		/^Locations/ { s = 0 }
		s { n = split($0, w, " ") }
		s && n > 2 && w[2] ~ /^[0-9]+:$/ { v = w[2] + 0; if (w[3] in loc) { all += v; good += loc[w[3]] ? v : 0 } }
		END { printf "%.3f", all ? good / all : 0 }' names.diff lines raw)
	golead=$(inner_cum go tool pprof -symbolize=force -top "$cell" "$prof")
	echo "# $what: inner $lead% (go tool pprof reading the binary: $golead%), names agree on $agree of the leaves' weight, main above $reach of inner's"
	awk -v a="$agree" 'BEGIN { exit !(a >= 0.95) }' || { head -n 20 names.diff; fail "$what: names agree with addr2line on $agree of the weight (need 0.95)"; }
	awk -v r="$reach" 'BEGIN { exit !(r >= 0.99) }' || { "$CP" report --format folded "$prof" | sort -k2 -n | tail -n 8; fail "$what: main above $reach of inner's weight (need 0.99)"; }
	awk -v c="$golead" 'BEGIN { exit !(c >= 80) }' || { go tool pprof -symbolize=force -top "$cell" "$prof" 2>&1 | head -n 20; fail "$what: go tool pprof reading the binary gives inner $golead% (need 80%)"; }
}

for cell in $built; do
	"$CP" record -o "$cell.rec.pb.gz" -- "./$cell" >/dev/null 2>"$cell.rec.err" || { cat "$cell.rec.err"; fail "$cell: record failed"; }
	check "$cell" record "$cell.rec.pb.gz"
	"./$cell" 30 >/dev/null &
	bg=$!
	sleep 0.3
	"$CP" record -p "$bg" -d 1 -o "$cell.att.pb.gz" >/dev/null 2>"$cell.att.err" || { cat "$cell.att.err"; fail "$cell: record -p failed"; }
	kill "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	bg=
	check "$cell" "record -p" "$cell.att.pb.gz"
	[ "$cell" = go ] && continue
	LD_PRELOAD=$LIB CPUPROF="$cell.pre.pb.gz" "./$cell" >/dev/null 2>"$cell.pre.err" || { cat "$cell.pre.err"; fail "$cell: failed under LD_PRELOAD"; }
	check "$cell" LD_PRELOAD "$cell.pre.pb.gz"
	LD_PRELOAD=$GP CPUPROFILE="$cell.gp.pb.gz" "./$cell" >/dev/null 2>"$cell.gp.err" || { cat "$cell.gp.err"; fail "$cell: failed under the gperftools drop-in"; }
	check "$cell" "the gperftools drop-in" "$cell.gp.pb.gz"
done
echo "# cells:$built"
exit 0
