#!/bin/sh
# t_debuginfod.sh -- debug files fetched by build ID.  A stripped program
# (its DWARF and symbols split off with objcopy --only-keep-debug) is
# recorded with a debuginfod server (Debian's, started here on loopback
# over a directory holding only the debug file) in DEBUGINFOD_URLS: its
# profile must have the names and lines, inline chains included, that
# addr2line finds in the unstripped program at every sampled address.
# Without DEBUGINFOD_URLS: no names, no request reaches the server, no
# connection is tried and libdebuginfod is not even loaded.  A server that
# accepts and never answers holds record no longer than the bound (the
# test build's knob shortens it), and DEBUGINFOD_TIMEOUT is honoured.
# The library (LD_PRELOAD) never fetches.  Then `cpuprof symbolize` fills
# in the names and lines of a profile recorded without them, from a debug
# directory or from the server, and keeps all the rest.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
HCP=$ROOT/$B/hooks/cpuprof
SRC=$ROOT/tests/work/work_inline.c

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$HCP" ] || fail "build first (make tests)"
[ -n "$EMU" ] && skip "the server runs natively; nothing here depends on the CPU"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
for t in cc addr2line objcopy readelf strip python3; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
done
command -v debuginfod >/dev/null 2>&1 && command -v debuginfod-find >/dev/null 2>&1 ||
	skip "debuginfod is not installed (Debian's debuginfod)"
found=
for d in /lib/*-linux-gnu /usr/lib/*-linux-gnu /lib64 /usr/lib64; do
	[ -e "$d/libdebuginfod.so.1" ] && found=1
done
[ -n "$found" ] || skip "libdebuginfod.so.1 is not installed (libdebuginfod1)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_debuginfod.XXXXXX") || fail mktemp
srv= dead=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	[ -n "$dead" ] && kill "$dead" 2>/dev/null && wait "$dead" 2>/dev/null
	[ -n "$KEEP" ] || rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || fail "cd $tmp"
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
# Caches of our own: lines and symbol tables (XDG), libdebuginfod's.
export XDG_CACHE_HOME=$tmp/xdg PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none TOOLS=
. "$ROOT/tests/tools/lines_compare.sh"

cp "$SRC" work_inline.c
cc -O2 -g -Wl,--build-id -o full work_inline.c || fail "cc"
mkdir debug || fail mkdir
objcopy --only-keep-debug full debug/full.debug || fail objcopy
strip -o stripped full || fail strip
bid=$(readelf -n stripped | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || fail "no build ID in the stripped program"
readelf -S stripped | grep -q '\.debug_\|\.symtab\|gnu_debuglink' && fail "stripped still has debug sections"

# A port nobody listens on, from the kernel.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port=$(free_port)
debuginfod -p "$port" -F debug -d "$tmp/db.sqlite" -t 0 -g 0 >srv.log 2>&1 &
srv=$!
url=http://127.0.0.1:$port
# Up once it serves the debug file (a fresh client cache each try: a
# miss is cached).
i=0
until rm -rf poll && DEBUGINFOD_CACHE_PATH=$tmp/poll DEBUGINFOD_URLS=$url debuginfod-find debuginfo "$bid" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 150 ] || { cat srv.log; fail "debuginfod on port $port does not serve $bid"; }
	kill -0 "$srv" 2>/dev/null || { cat srv.log; fail "debuginfod exited"; }
	sleep 0.2
done
gets() { grep -c "GET /buildid/$bid/debuginfo 200" srv.log; }
echo "debuginfod on port $port serves $bid"

# record NAME [cpuprof]: records ./stripped into NAME.pb.gz, with lines
# and symbol caches of its own: what an earlier run kept from the debug
# file it fetched (still in that run's libdebuginfod cache) would name
# the program without a fetch, at every address of a kept span.
record() {
	XDG_CACHE_HOME=$tmp/xdg-$1 ${2:-$CP} record -o "$1.pb.gz" -F 2000 -- ./stripped 3 >out 2>"$1.err" ||
		{ cat "$1.err"; fail "$1: record failed"; }
	grep -qx "work_inline done" out || fail "$1: the program's output changed"
}
ROOT_BIN=$tmp/stripped
# same NAME: NAME's profile has, at every sampled address of the
# program, the chain addr2line finds in the unstripped one.
same() {
	profile_chains "$1.pb.gz" stripped | unnamed | sort >"$1.ours"
	addr2line_chains full <"$1.ours" | unnamed | sort >"$1.ref"
	n=$(wc -l <"$1.ours")
	[ "$n" -ge 4 ] || { cat raw; fail "$1: only $n sampled addresses in the program"; }
	cmp -s "$1.ours" "$1.ref" || { diff "$1.ref" "$1.ours" | head; fail "$1: lines differ from addr2line's on the unstripped program (< addr2line, > profile)"; }
	grep -Eq ' (mix|step|fold)@[^|]*work_inline.c:[0-9]+\|' "$1.ours" || { cat "$1.ours"; fail "$1: no inlined function"; }
	grep -q "$ROOT_BIN [0-9a-f]* \[FN\]\[FL\]\[LN\]\[IN\]" raw || { grep "$ROOT_BIN" raw; fail "$1: the mapping does not say it has lines"; }
	echo "$1: $n sampled addresses agree with addr2line on the unstripped program"
}
# unnamed NAME: the program's addresses have no names in NAME's profile.
unnamed_prog() {
	pp -top "$1.pb.gz" >top || fail "pprof -top $1"
	grep -q ' hot_mix$\| mix$\| step$' top && { cat top; fail "$1: the stripped program has names"; }
	grep -q 'stripped+0x' top || { cat top; fail "$1: the program's addresses are not in the profile"; }
}

# Without DEBUGINFOD_URLS: nothing fetched, nothing asked, nothing loaded.
before=$(gets)
if command -v strace >/dev/null 2>&1; then
	strace -f -qq -o trace -e trace=connect,openat "$CP" record -o none.pb.gz -F 2000 -- ./stripped 3 >out 2>none.err ||
		{ cat none.err; fail "none: record under strace failed"; }
	grep -q 'connect(.*AF_INET' trace && { grep connect trace; fail "none: a connection was tried"; }
	grep -q 'libdebuginfod' trace && { grep libdebuginfod trace; fail "none: libdebuginfod was loaded"; }
	echo "none: no connection, libdebuginfod not loaded (strace)"
else
	record none
fi
unnamed_prog none
grep -q debuginfod none.err && { cat none.err; fail "none: record speaks of debuginfod"; }
[ "$(gets)" = "$before" ] || fail "none: the server was asked"
echo "none: no names without DEBUGINFOD_URLS, the server not asked"

# With it: fetched once, into libdebuginfod's cache, and named.
export DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache
record fetched
[ "$(gets)" -gt "$before" ] || { cat srv.log; fail "fetched: the server was not asked"; }
[ -s "dcache/$bid/debuginfo" ] || { ls -R dcache; fail "fetched: not in libdebuginfod's cache"; }
# (Without libc6-dbg libc is asked for too, and not found: only the
# program's file is sure to come.)
grep -Eq '^cpuprof: debuginfod: [1-9][0-9]* of [1-9][0-9]* debug files fetched' fetched.err &&
	! grep -q 'stripped (' fetched.err || { cat fetched.err; fail "fetched: no summary line, or the program not fetched"; }
same fetched
pp -raw fetched.pb.gz | grep -Eq 'debuginfod=[1-9][0-9]* of [1-9][0-9]* objects' || fail "fetched: no comment"

# The library never fetches, DEBUGINFOD_URLS or not (a fresh cache: a
# fetch would reach the server; and fresh lines and symbol caches, which
# hold what record read from the file it fetched, and would answer for
# it); symbolize names its profile afterwards.
before=$(gets)
XDG_CACHE_HOME=$tmp/xdg6 DEBUGINFOD_CACHE_PATH=$tmp/c6 LD_PRELOAD=$ROOT/$B/libcpuprof.so CPUPROF=$tmp/lib.pb.gz ./stripped 3 >out 2>lib.err ||
	{ cat lib.err; fail "lib: the preloaded program failed"; }
[ "$(gets)" = "$before" ] || fail "lib: the library asked the server"
unnamed_prog lib
DEBUGINFOD_CACHE_PATH=$tmp/c6 "$CP" symbolize lib.pb.gz -o lib_sym.pb.gz 2>lib_sym.err || { cat lib_sym.err; fail "symbolize lib"; }
same lib_sym

# Not on the server: said, by name.  (Another program's build ID.)
cc -O1 -o other work_inline.c && strip other || fail "cc other"
"$CP" record -o other.pb.gz -- ./other 3 >out 2>other.err || { cat other.err; fail "other: record failed"; }
grep -Eq '^cpuprof: debuginfod: 0 of [1-9][0-9]* debug files fetched; not: (.*, )?other \(no server has it\)' other.err ||
	{ cat other.err; fail "other: the summary does not name what failed"; }
unset DEBUGINFOD_CACHE_PATH

# A server that accepts and never answers.
dport=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); time.sleep(300)' "$dport" &
dead=$!
sleep 0.5
# The bound: with DEBUGINFOD_TIMEOUT far away, the budget ends it.
t0=$(date +%s)
DEBUGINFOD_URLS=http://127.0.0.1:$dport DEBUGINFOD_TIMEOUT=600 DEBUGINFOD_CACHE_PATH=$tmp/c2 \
	CPUPROF_TEST_DEBUGINFOD_BUDGET_MS=3000 record dead "$HCP"
t=$(($(date +%s) - t0))
[ $t -lt 40 ] || fail "dead: record took $t s with a 3 s bound"
# The program's, or (libc's asked first) the time was spent before it.
grep -Eq 'stripped \((no answer within |not asked: )the 3 s' dead.err || { cat dead.err; fail "dead: not said"; }
unnamed_prog dead
echo "dead server: record ended in $t s (bound 3 s)"
# DEBUGINFOD_TIMEOUT honoured, under the default bound.
t0=$(date +%s)
DEBUGINFOD_URLS=http://127.0.0.1:$dport DEBUGINFOD_TIMEOUT=2 DEBUGINFOD_CACHE_PATH=$tmp/c3 record dead2
t=$(($(date +%s) - t0))
[ $t -lt 45 ] || fail "dead2: record took $t s with DEBUGINFOD_TIMEOUT=2"
grep -q 'stripped (no answer within DEBUGINFOD_TIMEOUT)' dead2.err || { cat dead2.err; fail "dead2: not said"; }
echo "dead server, DEBUGINFOD_TIMEOUT=2: record ended in $t s: $(grep debuginfod: dead2.err)"
# Nobody listening: refused at once.
nport=$(free_port)
DEBUGINFOD_URLS=http://127.0.0.1:$nport DEBUGINFOD_CACHE_PATH=$tmp/c4 record refused
grep -q 'stripped (Connection refused)' refused.err || { cat refused.err; fail "refused: not said"; }
echo "refused: $(grep debuginfod: refused.err)"

# symbolize: the profile recorded without names (none) named here.
# kept NAME: everything but the names is as in none.pb.gz: the samples
# (their locations and values), the comments (and one more).
kept() {
	pp -raw none.pb.gz | sed -n '/^Samples/,/^Locations/p' >none.samples
	pp -raw "$1.pb.gz" | sed -n '/^Samples/,/^Locations/p' >"$1.samples"
	[ -s none.samples ] && cmp -s none.samples "$1.samples" || { diff none.samples "$1.samples" | head; fail "$1: the samples changed"; }
	pp -comments none.pb.gz >none.comments && pp -comments "$1.pb.gz" | grep -v '^symbolized=' >"$1.comments" &&
		grep -q coverage= none.comments && cmp -s none.comments "$1.comments" ||
		{ diff none.comments "$1.comments"; fail "$1: the comments changed"; }
	pp -comments "$1.pb.gz" | grep -q '^symbolized=[1-9][0-9]* of [1-9][0-9]* locations' || fail "$1: no symbolized= comment"
}
unset DEBUGINFOD_URLS
# From a debug directory, by build ID.
mkdir -p "dd/.build-id/$(echo "$bid" | cut -c1-2)" && cp debug/full.debug "dd/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug" || fail "debug dir"
"$CP" symbolize none.pb.gz -o sym_dir.pb.gz --debug-dir dd 2>sym_dir.err || { cat sym_dir.err; fail "symbolize --debug-dir"; }
grep -q '^cpuprof symbolize: wrote sym_dir.pb.gz: [1-9][0-9]* of [1-9][0-9]* locations without names or lines named$' sym_dir.err ||
	{ cat sym_dir.err; fail "sym_dir: no summary"; }
same sym_dir
kept sym_dir
# Nothing here: nothing named, and said; the profile still written.  (A
# lines cache of its own: the one sym_dir filled holds answers from dd's
# debug file, still there, at every address of their spans.)
XDG_CACHE_HOME=$tmp/xdg-sym_none "$CP" symbolize none.pb.gz -o sym_none.pb.gz 2>sym_none.err || { cat sym_none.err; fail "symbolize without files"; }
grep -q 'wrote sym_none.pb.gz: 0 of' sym_none.err || { cat sym_none.err; fail "sym_none: named something"; }
unnamed_prog sym_none
# From the server, on a machine without the program (its debug file's
# program headers place it).
mv stripped stripped.away || fail mv
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/c5 "$CP" symbolize none.pb.gz -o sym_srv.pb.gz 2>sym_srv.err ||
	{ cat sym_srv.err; fail "symbolize with debuginfod"; }
mv stripped.away stripped || fail mv
grep -Eq '^cpuprof symbolize: debuginfod: [1-9][0-9]* of [1-9][0-9]* debug files fetched$' sym_srv.err &&
	! grep -q 'debuginfod: .*/stripped:' sym_srv.err || { cat sym_srv.err; fail "sym_srv: not fetched"; }
same sym_srv
kept sym_srv
# A corrupt IN: one line, no output.
head -c 100 none.pb.gz >bad.pb.gz
"$CP" symbolize bad.pb.gz -o sym_bad.pb.gz 2>bad.err && fail "symbolize took a truncated profile"
[ "$(wc -l <bad.err)" -eq 1 ] && [ ! -e sym_bad.pb.gz ] || { cat bad.err; fail "bad: not one line, or written"; }

echo "all debuginfod checks passed"
