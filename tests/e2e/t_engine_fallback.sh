#!/bin/sh
# t_engine_fallback.sh -- where perf_event_open does not exist (ENOSYS, as
# under qemu-user), `auto` falls back to the timer engine by itself: the
# profile says engine=timer, its engine_reason says why perf was not used,
# and the hot function still leads; asking for perf alone gives one
# warning line and the program runs unprofiled, output and status
# unchanged.  Natively the test makes perf_event_open fail with a seccomp
# filter (build/tests/no_perf); under emulation (EMU set) qemu-user has no
# perf_event_open at all.  Skips if seccomp filters cannot be installed.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
WORK=$ROOT/$B/tests/work_hot
NO_PERF=$ROOT/$B/tests/no_perf

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
[ -x "$CP" ] && [ -x "$WORK" ] && [ -x "$NO_PERF" ] || fail "build first (make tests)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_engine_fallback.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
cp "$WORK" ./work

# without_perf CMD...: runs CMD where perf_event_open is ENOSYS.
if [ -n "$EMU" ]; then
	without_perf() { "$@"; }
	how="under $EMU"
else
	"$NO_PERF" true 2>err
	[ $? -eq 125 ] && skip "$(cat err)"
	without_perf() { "$NO_PERF" "$@"; }
	how="with a seccomp filter"
fi
comment() { go tool pprof -comments "$1" 2>/dev/null | sed -n "s/^ *$2=//p"; }

without_perf $EMU "$CP" record -o auto.pb.gz -- $EMU ./work 2 300 6 >out 2>err; rc=$?
cat err
[ $rc -eq 6 ] || fail "auto: exit $rc, expected the program's 6"
grep -qx "work_hot done" out || fail "auto: the program's output changed"
e=$(comment auto.pb.gz engine)
reason=$(comment auto.pb.gz engine_reason)
echo "$how: engine=$e engine_reason=$reason"
[ "$e" = timer ] || fail "auto without perf_event_open: engine=$e, expected timer"
case $reason in
perf:*perf_event_open*) ;;
*) fail "engine_reason '$reason' does not say why perf was not used" ;;
esac
grep -q "cpuprof: wrote auto.pb.gz: [0-9]* samples, engine=timer" err || fail "no summary line"
l=$(go tool pprof -top auto.pb.gz 2>/dev/null | sed -n '/flat%/,$p' | awk 'NR == 2 { print $6 }')
[ "$l" = hot_leaf ] || fail "leader is '$l', not hot_leaf"

# Asking for perf where it does not exist: one warning, no profile, the
# program's output and status as without the profiler.
without_perf $EMU "$CP" record -o perf.pb.gz --engine perf -- $EMU ./work 1 50 5 >out 2>err; rc=$?
cat err
[ $rc -eq 5 ] || fail "--engine perf: exit $rc, expected 5"
grep -qx "work_hot done" out || fail "--engine perf: output changed"
[ "$(grep -c '^cpuprof: .*profiling disabled' err)" -eq 1 ] || fail "--engine perf: not one warning"
[ ! -e perf.pb.gz ] || fail "--engine perf: a profile was written"
echo "ok"
