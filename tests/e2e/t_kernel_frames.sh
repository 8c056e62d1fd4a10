#!/bin/sh
# t_kernel_frames.sh -- `record --kernel`: the kernel's part of each stack
# sampled in it, above the user frames that entered it, named from
# /proc/kallsyms and marked as the kernel's in every format; refused
# without the privileges, in one line that names the setting, with a
# profile of user frames as without --kernel.  The program is work_kernel
# syscalls: sys_pipe writes and reads a pipe (almost all of it in the
# kernel), user_spin works in user mode, each timing its own CPU.
#
# - As root: frames of the kernel (a name with read, write, pipe, copy or
#   syscall in it) lie above sys_pipe, on stacks that go down to main, and
#   no user frame lies above a kernel frame; they are " [k]" in top and
#   tree, "name_[k]" in folded stacks (report's and diff's), and their
#   Mapping is [kernel.kallsyms] in the pprof file (go tool pprof -raw,
#   where go is installed).  The kernel's time is said, not guessed: the
#   stacks with kernel frames hold sys_pipe's true share within 12 points,
#   as does the comment kernel_frames_cpu_ns; user_spin keeps its own.
#   (Mostly within 3; one run in six was 6 off at a load average of 5.8
#   on 2 CPUs, where runs without --kernel were 1.5 off at most: hence
#   the band, and a question left open.)
# - Without --kernel the profile has none of it (no kernel Mapping, no
#   [k], no kernel_frames comment): the default is as it was.
# - Refused, record goes on from outside with user frames, one line saying
#   what refused, the profile saying why: as root by the test build's
#   knobs (kallsyms' addresses hidden, as kptr_restrict=2 hides them from
#   root; a kernel that gives no callchain); as nobody (perf_event_paranoid
#   2) perf_event_paranoid; and with CAP_SYSLOG (kallsyms readable,
#   kernel-mode samples still refused) the samples were refused.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_kernel

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "qemu-user has no perf_event_open: no kernel frames under it"
why=$("$ROOT/$B/tests/tool_engine" perf) || skip "$why"
par=$(cat /proc/sys/kernel/perf_event_paranoid)
[ "$(id -u)" = 0 ] || [ "$par" -le 1 ] || skip "not root and perf_event_paranoid=$par: no kernel-mode samples"
awk '$2 ~ /^[tT]$/ { exit !($1 !~ /^0+$/) }' /proc/kallsyms || skip "/proc/kallsyms shows no addresses (kptr_restrict)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_kernel_frames.XXXXXX") || fail mktemp
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"

# truth OUT NAME: NAME's true share of the process's CPU, in percent.
truth() { awk -v n="$2" '$1 == "truth" && $2 == n { t = $3 } $1 == "process_cpu_ns" { c = $2 }
	END { printf "%.2f\n", c ? 100 * t / c : 0 }' "$1"; }
near() { awk "BEGIN { d = $1 - ($2); exit !(d <= $3 && d >= -($3)) }"; }
# comment PROFILE KEY: the first word of a comment of the profile whose
# value is words (its strings are plain in the protobuf, each followed by
# the next one's tag and length).
comment() { gzip -dc "$1" | grep -ao "$2=[^ ]* " | head -1 | sed "s/^$2=//; s/ $//"; }

"$CP" record --kernel -o k.pb.gz -- "$W" syscalls 1500 >out 2>err || { cat err; fail "record --kernel failed"; }
! grep -q 'kernel frames' err || { cat err; fail "root: record said something of kernel frames"; }
"$CP" report --format folded k.pb.gz >k.folded || fail "report --format folded"
"$CP" report --top 0 k.pb.gz >k.top || fail "report --top 0"

# Above sys_pipe, the kernel's frames, down to main.
grep -E '(^|;)main;.*;sys_pipe;([^;]*;)*[^;]*(read|write|pipe|copy|syscall)[^;]*_\[k\]' k.folded >/dev/null ||
	{ head -20 k.folded >&2; fail "no kernel frame named from kallsyms above sys_pipe and main"; }
# No user frame above a kernel frame.
awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); k = 0
	for (i = 1; i <= n; i++) { if (f[i] ~ /_\[k\]$/) k = 1; else if (k) { print; exit 1 } } }' k.folded ||
	fail "a user frame above a kernel frame"
grep -E '^ .* [^ ]*(read|write|pipe|copy|syscall)[^ ]* \[k\]$' k.top >/dev/null ||
	{ cat k.top >&2; fail "top marks no kernel function [k]"; }
"$CP" report --format tree k.pb.gz | grep -q ' \[k\]$' || fail "tree marks no kernel function [k]"
gzip -dc k.pb.gz | grep -aq '\[kernel\.kallsyms\]' || fail "no [kernel.kallsyms] in the pprof file"
if command -v go >/dev/null 2>&1; then
	go tool pprof -raw k.pb.gz 2>/dev/null | sed -n '/^Mappings/,$p' >k.raw
	grep -q '^[0-9]*: 0x[0-9a-f]*/0x[0-9a-f]*/0x0 \[kernel\.kallsyms\]' k.raw || { cat k.raw >&2; fail "no Mapping [kernel.kallsyms]"; }
fi
[ "$(comment k.pb.gz kernel_frames)" = "recorded:" ] || fail "no comment kernel_frames=recorded"
# The flame graph: its kind, colour, tooltip and legend (in headless
# Chromium, where it and Node.js are installed).
kname=$(sed -n 's/^.*;\([^;]*\)_\[k\] [0-9]*$/\1/p' k.folded | head -1)
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && command -v node >/dev/null 2>&1; then
	"$CP" report --format html -o k.html k.pb.gz || fail "report --format html"
	node "$ROOT/tests/tools/html_check.js" --kernel k.html "$kname" >html.out 2>&1
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || { cat html.out >&2; fail "the flame graph's kernel frames"; }
	grep '^ok\|^skip' html.out
else
	echo "Chromium or Node.js is not installed: the flame graph is not checked"
fi

# Where the kernel's time went: under kernel frames, sys_pipe's share.
total=$(awk '{ s += $NF } END { print s }' k.folded)
in_k=$(awk '/_\[k\] [0-9]+$/ { s += $NF } END { print s + 0 }' k.folded)
share=$(awk "BEGIN { printf \"%.2f\", 100 * $in_k / $total }")
sys=$(truth out sys_pipe)
echo "stacks with kernel frames: $share% of the profile, sys_pipe truly $sys%"
near "$share" "$sys" 12 || fail "kernel frames hold $share%, sys_pipe truly $sys%"
kns=$(comment k.pb.gz kernel_frames_cpu_ns)
kshare=$(awk "BEGIN { printf \"%.2f\", 100 * ${kns:-0} / $total }")
echo "kernel_frames_cpu_ns: $kshare% of the profile's CPU"
near "$kshare" "$sys" 12 || fail "kernel_frames_cpu_ns is $kshare% of the CPU, sys_pipe truly $sys%"
spin=$(awk '$NF == "user_spin" { sub(/%/, "", $5); print $5 }' k.top)
want=$(truth out user_spin)
echo "user_spin: $spin% of the profile, truly $want%"
near "${spin:-0}" "$want" 12 || fail "user_spin $spin%, truly $want%"

# The default: no kernel frames, nothing said of them.
"$CP" record -o u.pb.gz -- "$W" syscalls 500 >out 2>err || { cat err; fail "record failed"; }
! gzip -dc u.pb.gz | grep -aqE '\[kernel\.kallsyms\]|kernel_frames' || fail "kernel frames without --kernel"
! "$CP" report --format folded u.pb.gz | grep -q '_\[k\]' || fail "[k] frames without --kernel"

# diff marks them too: what grew from the profile without them.
"$CP" diff --threshold 5 u.pb.gz k.pb.gz >d.txt
[ $? -le 1 ] || { cat d.txt >&2; fail "diff failed"; }
grep -qE '^ *(flat|cum) .* [^ ]+ \[k\]$' d.txt || { cat d.txt >&2; fail "diff names no kernel function [k]"; }
"$CP" diff --format folded u.pb.gz k.pb.gz | grep -q '_\[k\];\|_\[k\] ' || fail "diff's folded stacks have no name_[k]"

# Refused as root, by the test build's knobs (src/base/testhooks.h): a
# kallsyms whose addresses read 0 (kptr_restrict=2 hides them from root
# too), and a kernel that gives no callchain.  One line each; the profile
# is from outside still, with user frames, the kernel's time charged to
# the user frame that entered it as without --kernel.
HCP=$ROOT/$B/hooks/cpuprof
[ -x "$HCP" ] || fail "build first (make tests): no $HCP"
# hooked WHAT PATTERN VAR=VALUE: record --kernel with the knob set.
hooked() {
	env "$3" "$HCP" record --kernel -o h.pb.gz -- "$W" syscalls 300 >out 2>err || { cat err; fail "$1: record failed"; }
	grep 'kernel frames' err >lines
	[ "$(wc -l <lines)" = 1 ] && grep -q "^cpuprof record: no kernel frames: .*$2" lines ||
		{ cat err; fail "$1: not one line saying $2"; }
	! grep -q 'not from outside' err || { cat err; fail "$1: record gave up sampling from outside"; }
	echo "$1: $(cat lines)"
	"$CP" report --format folded h.pb.gz >h.folded || fail "$1: report"
	! grep -q '_\[k\]' h.folded || fail "$1: kernel frames"
	grep -qE ';sys_pipe(;| )' h.folded || fail "$1: no user frames"
	comment h.pb.gz kernel_frames | grep -q '^absent:' || fail "$1: the profile does not say they are absent"
}
printf '0000000000000000 T _stext\n0000000000000000 t vfs_read\n' >zeros
hooked "hidden addresses" "$tmp/zeros.*hides the kernel's addresses" CPUPROF_TEST_KALLSYMS="$tmp/zeros"
hooked "no callchain" "perf_event_open refused the kernel's callchain: Invalid argument" CPUPROF_TEST_NO_CALLCHAIN=1

# Refused: as nobody, one line naming the setting, user frames only.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ] || [ "$par" -lt 2 ] || ! command -v setpriv >/dev/null 2>&1; then
	echo "not root at perf_event_paranoid >= 2 with setpriv: the refusal is not checked"
	echo "ok"
	exit 0
fi
as_nobody test -x "$W" || { echo "the build is out of nobody's reach ($W): the refusal is not checked"; echo ok; exit 0; }
mkdir n && chmod 777 n
# refused WHAT PATTERN [SETPRIV OPTIONS]: record --kernel as nobody.
refused() {
	what=$1 pattern=$2
	shift 2
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@" "$CP" record --kernel -o n/n.pb.gz -- "$W" syscalls 300 \
		>out 2>err || { cat err; fail "$what: record failed"; }
	grep 'kernel frames' err >lines
	[ "$(wc -l <lines)" = 1 ] || { cat err; fail "$what: not one line of kernel frames"; }
	grep -q "^cpuprof record: no kernel frames: .*$pattern" lines || { cat err; fail "$what: the line does not say $pattern"; }
	echo "$what: $(cat lines)"
	"$CP" report --format folded n/n.pb.gz >n.folded || fail "$what: report"
	! grep -q '_\[k\]' n.folded || fail "$what: kernel frames"
	grep -qE ';user_spin(;| )' n.folded || fail "$what: no user frames"
	comment n/n.pb.gz kernel_frames | grep -q '^absent:' || fail "$what: the profile does not say they are absent"
}
refused "nobody" "perf_event_paranoid=$par hides the kernel's addresses"
if setpriv --inh-caps=+syslog --ambient-caps=+syslog true 2>/dev/null; then
	refused "nobody with CAP_SYSLOG" "perf_event_paranoid=$par refuses samples in kernel mode" \
		--inh-caps=+syslog --ambient-caps=+syslog
fi
echo "ok"
