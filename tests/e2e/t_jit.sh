#!/bin/sh
# t_jit.sh -- code a JIT made, named as perf names it: from the process's
# perf map (/tmp/perf-PID.map) and its jitdump (jit-PID.dump, mapped
# executable).  tests/work/work_jit writes a hot loop into anonymous
# memory and names it (map: "jit_stale", then "jit_hot_loop" for the same
# range on a later line, which wins; dump: "jit_hot_dump" with the lines
# jit_fixture.js:10 and :11; both: the dump wins; noname: a range the map
# leaves unnamed, "[jit]"; baddump: a dump record
# cannot read, which it says, where no file is no word), and prints the CPU its
# thread's clock gave the loop.  Under `record`, `record -p`, LD_PRELOAD
# and `record --preload` (its map), at least 0.9 of that CPU is in the frame the JIT named,
# which leads, is marked a JIT frame (" [jit]" in top, "_[j]" in folded
# stacks, kind "jit" in the flame graph's page) under main (its frame
# pointer walked), in a Mapping "[jit]" that go tool pprof keeps (where Go
# is installed); a process in its own PID and mount namespace, with a
# private /tmp, is found there (where unshare may make them).  Then node,
# where installed: --perf-basic-prof under record, record -p and
# LD_PRELOAD, --perf-prof under record; a JS function fib leads, and at
# least 0.9 of the CPU in JIT code (frames named by the JIT, and
# anonymous code left unnamed) is named.  Skips where this machine allows
# no perf events.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_jit
LIB=$ROOT/$B/libcpuprof.so

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_jit.XXXXXX") || fail mktemp
chmod 755 "$tmp"
# The perf maps the processes here wrote (each prints its pid) go too.
cleanup() {
	kill $(jobs -p) 2>/dev/null
	for p in $(cat "$tmp"/*.out 2>/dev/null | sed -n 's/^pid \([0-9]*\)$/\1/p'); do
		[ "$p" -gt 1 ] && rm -f /tmp/perf-$p.map
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || fail "cd $tmp"

# leaf_ns FILE REGEX: the CPU (ns) of the stacks whose leaf matches REGEX.
leaf_ns() {
	"$CP" report --format folded "$1" | awk -v re="$2" '{ v = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";")
		if (f[n] ~ re) s += v } END { printf "%.0f\n", s + 0 }'
}
# top_leaf FILE: the name of the function with the most flat time.
top_leaf() { "$CP" report "$1" | awk '/^ +flat/ { on = 1; next } on { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print; exit }'; }
# at_least A B F: A >= F * B.
at_least() { awk "BEGIN { exit !($1 >= $3 * $2) }"; }

# fixture LABEL FILE OUT NAME [LINE]: the profile of work_jit in FILE (its
# output in OUT) names the loop NAME (NAME LINE with --lines) for at least
# 0.9 of its CPU, leads with it, under main, marked as a JIT frame.
fixture() {
	label=$1 f=$2 out=$3 name=$4 line=${5:-}
	cpu=$(sed -n 's/^jit_cpu_ns //p' "$out")
	[ -n "$cpu" ] || { cat "$out"; fail "$label: work_jit did not finish"; }
	named=$(leaf_ns "$f" "^$name _?\\[j\\]\$|^${name}_\\[j\\]\$")
	at_least "$named" "$cpu" 0.9 || { "$CP" report "$f" | head -12; fail "$label: $named ns of $cpu named $name"; }
	top=$(top_leaf "$f")
	[ "$top" = "$name [jit]" ] || { "$CP" report "$f" | head -12; fail "$label: '$top' leads, not '$name [jit]'"; }
	"$CP" report "$f" | grep -q "jit_stale\|jit_elsewhere" && fail "$label: a name the map gave before, or of no code"
	"$CP" report --format folded "$f" | grep -q ";main;${name}_\\[j\\] " ||
		{ "$CP" report --format folded "$f" | sort -k2 -n | tail -3; fail "$label: $name is not under main"; }
	if [ -n "$line" ]; then
		"$CP" report --lines "$f" | grep -q " $name $line \\[jit\\]\$" ||
			{ "$CP" report --lines "$f" | head -8; fail "$label: no $name $line"; }
	fi
	if command -v go >/dev/null 2>&1; then
		go tool pprof -top "$f" 2>/dev/null | grep -q " $name\$" ||
			{ go tool pprof -top "$f" | head; fail "$label: go tool pprof does not show $name"; }
		go tool pprof -raw "$f" 2>/dev/null | grep -q "\\[jit\\]" || fail "$label: no [jit] Mapping"
	fi
	echo "$label: $named of $cpu ns named $name"
}

# Outside (record), each kind of file.
for mode in map dump both; do
	name=jit_hot_loop line=
	[ $mode = map ] || { name=jit_hot_dump line=jit_fixture.js:11; }
	"$CP" record -o $mode.pb.gz -- "$W" $mode 1500 >$mode.out 2>$mode.err || { cat $mode.err; fail "$mode: record"; }
	fixture "record $mode" $mode.pb.gz $mode.out $name $line
done
"$CP" report --format html -o map.html map.pb.gz || fail "html"
grep -q '"jit"' map.html || fail "the flame graph's page has no kind jit"
# Without any file: no name (the test of the tests: the names come from
# the files, not from anywhere else).
"$CP" record -o none.pb.gz -- "$W" none 500 >none.out 2>&1 || fail "none: record"
"$CP" report none.pb.gz | grep -q "\\[jit\\]" && fail "none: a JIT frame without a map or a dump"
# ... and no word of it: no map is the ordinary case, not a fault.
grep "no JIT names" none.out && fail "none: a missing map reported"
# Code its JIT left unnamed: a JIT frame "[jit]", not "[jit] [jit]".
"$CP" record -o noname.pb.gz -- "$W" noname 500 >noname.out 2>noname.err || { cat noname.err; fail "noname: record"; }
top=$(top_leaf noname.pb.gz)
[ "$top" = "[jit]" ] || { "$CP" report noname.pb.gz | head -12; fail "noname: '$top' leads, not '[jit]'"; }
"$CP" report --format folded noname.pb.gz | grep -q ";main;\[jit\]_\[j\] " ||
	{ "$CP" report --format folded noname.pb.gz | sort -k2 -n | tail -3; fail "noname: no [jit]_[j] under main"; }
# A dump it cannot read says so, one line, at record's end.
"$CP" record -o bad.pb.gz -- "$W" baddump 300 >bad.out 2>bad.err || { cat bad.err; fail "baddump: record"; }
grep -q "^cpuprof record: no JIT names from .*/jit-[0-9]*\.dump of process [0-9]*: a jitdump of the other byte order\$" bad.err ||
	{ cat bad.err; fail "baddump: the dump it could not read is not said"; }

# Attached (record -p): the map is read at the end of the window, the
# process running on.
"$W" map 4000 >p.out 2>&1 &
for i in $(seq 100); do grep -q '^pid' p.out && break; sleep 0.05; done
pid=$(sed -n 's/^pid //p' p.out)
"$CP" record -p "$pid" -d 2 -o p.pb.gz >/dev/null 2>p.err || { cat p.err; fail "-p: record"; }
wait
named=$(leaf_ns p.pb.gz '^jit_hot_loop_\[j\]$')
total=$(leaf_ns p.pb.gz '.')
at_least "$named" "$total" 0.9 || { "$CP" report p.pb.gz | head; fail "-p: $named of $total ns named"; }
echo "record -p: $named of $total ns named jit_hot_loop"

# Inside (LD_PRELOAD): the library reads its own files as it writes.
for mode in map dump; do
	name=jit_hot_loop line=
	[ $mode = map ] || { name=jit_hot_dump line=jit_fixture.js:11; }
	LD_PRELOAD=$LIB CPUPROF=pre_$mode.pb.gz "$W" $mode 1500 >pre_$mode.out 2>pre_$mode.err ||
		{ cat pre_$mode.err; fail "preload $mode"; }
	fixture "LD_PRELOAD $mode" pre_$mode.pb.gz pre_$mode.out $name $line
done

# record --preload: record reads the map as each process ends.
"$CP" record --preload -o rp.pb.gz -- "$W" map 1500 >rp.out 2>rp.err || { cat rp.err; fail "record --preload"; }
fixture "record --preload map" rp.pb.gz rp.out jit_hot_loop

# Its own PID and mount namespaces, its /tmp a tmpfs of its own: it
# writes /tmp/perf-1.map there, gone with it.  work_jit is opened before
# the tmpfs goes over /tmp and run from that descriptor: the tree may be
# under /tmp itself (a CI's checkout), which the tmpfs hides.
if unshare -m -p -f --mount-proc true 2>/dev/null; then
	"$CP" record -o ns.pb.gz -- unshare -m -p -f --mount-proc \
		sh -c "exec 3<'$W' && mount -t tmpfs none /tmp && exec /proc/self/fd/3 map 1500" >ns.out 2>ns.err ||
		{ cat ns.err; fail "ns: record"; }
	grep -q '^pid 1$' ns.out || { cat ns.out; fail "ns: work_jit is not pid 1 in its namespace"; }
	fixture "namespaces" ns.pb.gz ns.out jit_hot_loop
else
	echo "namespaces: not tested: unshare may not make PID and mount namespaces here"
fi

# node: a JS fib, its JIT's names.
NODE=${NODE:-/usr/bin/node}
if ! [ -x "$NODE" ]; then
	echo "node: not tested: $NODE is not installed"
	exit 0
fi
cat >fib.js <<'EOF'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const ms = +process.argv[2], t0 = Date.now();
let s = 0;
while (Date.now() - t0 < ms) s += fib(24);
console.log("pid " + process.pid);
EOF
# node_check LABEL FILE: fib leads, and 0.9 of the JIT's CPU is named.
node_check() {
	named=$(leaf_ns "$2" '_\[j\]$')
	anon=$(leaf_ns "$2" '^(anon\+)?0x[0-9a-f]+$')
	at_least "$named" $((named + anon)) 0.9 || { "$CP" report "$2" | head -12; fail "$1: $named ns named, $anon not"; }
	top=$(top_leaf "$2")
	case $top in *fib*"[jit]") ;; *) "$CP" report "$2" | head -12; fail "$1: '$top' leads, not fib" ;; esac
	echo "$1: $named ns of JIT code named, $anon not; $top leads"
}
"$CP" record -o nb.pb.gz -- "$NODE" --perf-basic-prof fib.js 1500 >nb.out 2>nb.err || { cat nb.err; fail "node: record"; }
node_check "node --perf-basic-prof, record" nb.pb.gz
"$CP" record -o np.pb.gz -- "$NODE" --perf-prof fib.js 1500 >np.out 2>np.err || { cat np.err; fail "node: record"; }
node_check "node --perf-prof, record" np.pb.gz
LD_PRELOAD=$LIB CPUPROF=nl.pb.gz "$NODE" --perf-basic-prof fib.js 1500 >nl.out 2>nl.err || { cat nl.err; fail "node: preload"; }
node_check "node --perf-basic-prof, LD_PRELOAD" nl.pb.gz
"$NODE" --perf-basic-prof fib.js 4000 >na.out 2>&1 &
node=$!
sleep 1
"$CP" record -p $node -d 2 -o na.pb.gz >/dev/null 2>na.err || { cat na.err; fail "node: -p"; }
wait
node_check "node --perf-basic-prof, record -p" na.pb.gz
