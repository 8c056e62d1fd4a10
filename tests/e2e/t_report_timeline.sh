#!/bin/sh
# t_report_timeline.sh -- the timeline of `cpuprof report --format html`
# in a real browser (tests/tools/timeline_check.js, through Debian's headless
# Chromium, real mouse and key events): work_phases' page, whose threads
# each run phase_one and then phase_two, has a lane per thread named as
# the profile names it, under its process; a drag over the first half of
# the lanes makes phase_one lead the top functions and the flame graph,
# over the second half phase_two, with the totals report --from --to
# gives for that range; a click on phase_two's frame marks columns of
# each worker's lane only after those phase_one's click marked, and no
# sooner than phase_one's CPU; Clear range, Escape and a click on the
# lanes give the whole profile back.  A hand-made profile of two
# processes, with off-CPU intervals and a sample without a time: lanes
# ordered by pid and tid, each thread's CPU and off-CPU time in its lane
# and columns, and a range that cuts an interval has report's totals in
# wall, cpu and off_cpu.  A profile without times, several merged, and
# diff's page have no timeline, and the first two say why in one line.
# No script error may be logged.  Screenshots are kept in $B/tests/
# (timeline-range.png, timeline-marks.png).  Skips (77) without Chromium
# or Node.js, or where Chromium cannot start.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 77; }

[ -x "$CP" ] && [ -x "$MK" ] && [ -x "$B/tests/work_phases" ] || fail "build first (make tests)"
mk() { $EMU "$MK" "$@"; }
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "Chromium is not installed (Debian package chromium)"
command -v node >/dev/null 2>&1 || skip "Node.js is not installed (Debian package nodejs)"
export CHROMIUM

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_timeline.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# --- two threads, each 600 ms of phase_one, then 600 ms of phase_two ---
MS=600
$EMU "$CP" record -o "$tmp/p.pb.gz" -- $EMU "$B/tests/work_phases" 2 $MS >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "record work_phases"; }
$EMU "$CP" report --format html -o "$tmp/p.html" "$tmp/p.pb.gz" || fail "report --format html"

# --- by hand: app (pid 7) with w1 (tid 8: one from 1 ms to 1 s, two from
# 1 s to 2 s, renamed w1b as it began two: still one lane, named as it
# first was) and w2 (tid 9: off the CPU in nanosleep from 0.5 s to 0.8 s
# and from 0.9 s to 1 s), helper (pid 20) with h (tid 21: 298 samples of
# 1 ms from 1.2 s and one of 5 ms), and 1 ms of [unsampled] with no time.
# Times are in ms (timeunit), deltas; /W a weight in us ---
cat >"$tmp/s.txt" <<'PROF'
type samples count
type cpu nanoseconds
type off_cpu nanoseconds
type wall nanoseconds
raw 7006
timeunit 1000000
duration 2100000000
function 1 main
function 2 one
function 3 two
function 4 nanosleep
function 5 help
function 6 [unsampled:%20after%20each%20thread's%20last%20sample]
location 1 0 0 1
location 2 0 0 2
location 3 0 0 3
location 4 0 0 4
location 5 0 0 5
location 6 0 0 6
sample 1000 1000000000 0 1000000000 : 2 1 | pid#7 process=app tid#8 thread=w1 @+ 1*1000
sample 1000 1000000000 0 1000000000 : 3 1 | pid#7 process=app tid#8 thread=w1b @+ 1001 1*999
sample 0 0 400000000 400000000 : 4 1 | pid#7 process=app tid#9 thread=w2 @+ 500/300000 400/100000
sample 299 303000000 0 303000000 : 5 1 | pid#20 process=helper tid#21 thread=h @+ 1201 1*297 1/5000
sample 0 1000000 0 1000000 : 6
PROF
mk "$tmp/s.pb" <"$tmp/s.txt" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/s.html" "$tmp/s.pb" || fail "report of the hand-made profile"

# --- no times (the same without them), several merged, diff's page ---
sed -e '/^timeunit/d' -e 's/ @+ .*//' "$tmp/s.txt" | mk "$tmp/n.pb" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/n.html" "$tmp/n.pb" || fail "report of a profile without times"
$EMU "$CP" report --format html -o "$tmp/m.html" "$tmp/s.pb" "$tmp/s.pb" || fail "report of two profiles"
$EMU "$CP" diff --format html -o "$tmp/d.html" "$tmp/s.pb" "$tmp/s.pb"
[ $? -le 1 ] || fail "diff --format html"

node tests/tools/timeline_check.js "$CP" \
	--phases "$tmp/p.html" "$tmp/p.pb.gz" $MS "$B/tests/timeline" \
	--synthetic "$tmp/s.html" "$tmp/s.pb" \
	--none "$tmp/n.html" "no sample times in this profile" \
	--none "$tmp/m.html" "no timeline: several profiles merged, each with a clock of its own" \
	--none "$tmp/d.html" ""
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "timeline_check.js failed (exit $rc)"
echo "ok"
