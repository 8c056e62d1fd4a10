#!/bin/sh
# t_report_speedscope.sh -- `cpuprof report --format speedscope`, checked
# by tests/tools/speedscope_check.js against the schema the speedscope npm
# package ships, and loaded into that package's viewer in headless
# Chromium.  A profile of `work_hot 2 1500` (two threads, hot_leaf three
# quarters of their CPU): valid; its samples, each under its thread's
# grouping frames, add up stack by stack to `report --format folded
# --group-by thread`; a profile per thread, hot_leaf the heaviest leaf of
# the file and of each busy thread; speedscope opens it without an error,
# lists every thread with the total the file gives it, opens on the
# heaviest, and its Sandwich view puts hot_leaf first (screenshots in
# $B/tests/speedscope-*.png).  Profiles made by tool_mkprof with times
# written out: each thread's samples in the order of their times across
# Samples written out of order, an irregular weight, an off-CPU interval
# with wall and off-cpu but not with cpu, samples with no time as
# "[not placed in time]" under their thread's frames, two files whose
# clocks start 2.5 ms apart merged on one clock, --from/--to, --pid,
# --tid, --value samples, a name that is not valid UTF-8 and has quotes
# and controls; a profile without times, a profile per thread in file
# order, which speedscope opens too; -o and stdout the same (t_cli_usage.sh
# has --group-by refused).  Skips (77) without Node.js, Chromium or the speedscope package
# (scripts/npm-deps.sh, run by scripts/test.sh, puts it in $CPUPROF_NPM).
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof
CHECK=tests/tools/speedscope_check.js

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 77; }

[ -x "$CP" ] && [ -x "$MK" ] || fail "build first (make tests)"
command -v node >/dev/null 2>&1 || skip "Node.js is not installed (Debian package nodejs)"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "Chromium is not installed (Debian package chromium)"
export CHROMIUM
SS=${CPUPROF_NPM:-$HOME/.cache/cpuprof-tests/npm}/node_modules/speedscope
SCHEMA=$SS/dist/release/file-format-schema.json
[ -f "$SS/dist/release/index.html" ] && [ -f "$SCHEMA" ] ||
	skip "the speedscope npm package is not in $SS (sh scripts/npm-deps.sh speedscope@1.25.0)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_speedscope.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# rep ARGS...: cpuprof report, as every program of the build is run
rep() { $EMU "$CP" report "$@"; }
# schema FILE: valid against speedscope's schema
schema() { node "$CHECK" schema "$1" "$SCHEMA" || fail "$1 is not a valid speedscope file"; }

# --- a recorded profile: report's stacks, hot_leaf, speedscope ---
$EMU "$CP" record -o "$tmp/p.pb.gz" -- $EMU "$B/tests/work_hot" 2 1500 >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "record work_hot"; }
rep --format speedscope -o "$tmp/p.json" "$tmp/p.pb.gz" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "report --format speedscope"; }
[ -s "$tmp/err" ] && { cat "$tmp/err" >&2; fail "report wrote to stderr"; }
rep --format speedscope "$tmp/p.pb.gz" >"$tmp/stdout.json" || fail "report --format speedscope to stdout"
cmp -s "$tmp/p.json" "$tmp/stdout.json" || fail "-o and stdout differ"
schema "$tmp/p.json"
rep --format folded --group-by thread "$tmp/p.pb.gz" >"$tmp/p.folded" || fail "report --format folded"
node "$CHECK" folded "$tmp/p.json" "$tmp/p.folded" hot_leaf || fail "the file is not report's stacks"

# --- profiles whose times are known ---
# t1: process app (pid 10) with threads app (10) and worker (12), helper
# (pid 11); 1 ms units.  In app 10, first at 1, 3 (2 ms: an irregular
# weight) and 5 ms, second at 2, 4 and 6 ms, written second first; off
# the CPU in nanosleep from 7 ms for 5 ms; CPU no sample placed and lost
# samples, with no times.  t2 starts 2.5 ms after t1: fourth in app 10
# at 0 and 10 ms of its clock.
head='type samples count
type cpu nanoseconds
type off_cpu nanoseconds
type wall nanoseconds
raw 7006'
body='duration 20000000
function 1 main
function 2 first src/w.c 10
function 3 second
function 4 third
function 5 nanosleep
function 6 [unsampled:%20after%20each%20thread'"'"'s%20last%20sample]
function 7 [lost]
function 8 helper_main
function 9 q%22uote%5Cback%01ctl%FFbad
location 1 0 0 1
location 2 0 0 2
location 3 0 0 3
location 4 0 0 4
location 5 0 0 5
location 6 0 0 6
location 7 0 0 7
location 8 0 0 8
location 9 0 0 9
sample 2 2000000 0 2000000 : 4 1 | pid#10 process=app tid#12 thread=worker @ 2 4
sample 3 3000000 0 3000000 : 3 1 | pid#10 process=app tid#10 thread=app @ 2 4 6
sample 3 4000000 0 4000000 : 2 1 | pid#10 process=app tid#10 thread=app @ 1 3/2000 5
sample 1 0 5000000 5000000 : 5 1 | pid#10 process=app tid#10 thread=app @ 7/5000
sample 1 1000000 0 1000000 : 9 8 | pid#11 process=helper tid#11 thread=helper @ 3
sample 1 500000 0 500000 : 6 | pid#10 process=app tid#10 thread=app
sample 1 250000 0 250000 : 7'
printf '%s\ntimeunit 1000000\ntime 1000000000000\n%s\n' "$head" "$body" | $EMU "$MK" "$tmp/t1.pb" || fail "tool_mkprof t1"
printf '%s\ntimeunit 1000000\ntime 1000002500000\nduration 20000000\nfunction 1 main\nfunction 2 fourth
location 1 0 0 1\nlocation 2 0 0 2\nsample 2 2000000 0 2000000 : 2 1 | pid#10 process=app tid#10 thread=app @ 0 10\n' \
	"$head" | $EMU "$MK" "$tmp/t2.pb" || fail "tool_mkprof t2"
printf '%s\ntime 1000000000000\n%s\n' "$head" "$body" | $EMU "$MK" "$tmp/t0.pb" || fail "tool_mkprof t0"

# expect NAME REPORT-ARGS...: report's file of REPORT-ARGS is valid and is
# $tmp/NAME.exp's
expect() {
	n=$1
	shift
	rep --format speedscope -o "$tmp/$n.json" "$@" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "report $* failed"; }
	schema "$tmp/$n.json"
	node "$CHECK" expect "$tmp/$n.json" "$tmp/$n.exp" || fail "report --format speedscope $*"
}
N='[not placed in time]'
U="[unsampled: after each thread's last sample]"
H='helper_main;q\"uote\\back\u0001ctl\ufffdbad'
cat >"$tmp/wall.exp" <<EOF
{"name": "t1\\\\.pb \\\\(wall\\\\)$", "active": 0,
 "frames": {"first": {"file": "src/w.c", "line": 10}, "main": {}},
 "profiles": [
  {"name": "app 10 / app 10", "weights": [1000000, 1000000, 2000000, 1000000, 1000000, 1000000, 5000000],
   "stacks": ["main;first", "main;second", "main;first", "main;second", "main;first", "main;second", "main;nanosleep"]},
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1000000, 1000000]},
  {"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1000000]},
  {"name": "$N", "stacks": ["app (pid 10);app (tid 10);$U", "[lost]"], "weights": [500000, 250000]}]}
EOF
expect wall "$tmp/t1.pb"
cat >"$tmp/cpu.exp" <<EOF
{"name": "\\\\(cpu\\\\)$", "active": 0, "profiles": [
  {"name": "app 10 / app 10", "weights": [1000000, 1000000, 2000000, 1000000, 1000000, 1000000],
   "stacks": ["main;first", "main;second", "main;first", "main;second", "main;first", "main;second"]},
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1000000, 1000000]},
  {"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1000000]},
  {"name": "$N", "stacks": ["app (pid 10);app (tid 10);$U", "[lost]"], "weights": [500000, 250000]}]}
EOF
expect cpu --value cpu "$tmp/t1.pb"
cat >"$tmp/off.exp" <<EOF
{"name": "\\\\(off_cpu\\\\)$", "active": 0, "profiles": [
  {"name": "app 10 / app 10", "stacks": ["main;nanosleep"], "weights": [5000000]}]}
EOF
expect off --value off-cpu "$tmp/t1.pb"
cat >"$tmp/count.exp" <<EOF
{"name": "\\\\(samples\\\\)$", "active": 0, "profiles": [
  {"name": "app 10 / app 10", "weights": [1, 1, 1, 1, 1, 1, 1],
   "stacks": ["main;first", "main;second", "main;first", "main;second", "main;first", "main;second", "main;nanosleep"]},
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1, 1]},
  {"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1]},
  {"name": "$N", "stacks": ["app (pid 10);app (tid 10);$U", "[lost]"], "weights": [1, 1]}]}
EOF
expect count --value samples "$tmp/t1.pb"
grep -q '"unit":"none"' "$tmp/count.json" || fail "--value samples: not unit none"
cat >"$tmp/merged.exp" <<EOF
{"name": "t1\\\\.pb, .*t2\\\\.pb \\\\(wall\\\\)$", "active": 0, "profiles": [
  {"name": "app 10 / app 10",
   "weights": [1000000, 1000000, 1000000, 2000000, 1000000, 1000000, 1000000, 5000000, 1000000],
   "stacks": ["main;first", "main;second", "main;fourth", "main;first", "main;second", "main;first", "main;second",
              "main;nanosleep", "main;fourth"]},
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1000000, 1000000]},
  {"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1000000]},
  {"name": "$N", "stacks": ["app (pid 10);app (tid 10);$U", "[lost]"], "weights": [500000, 250000]}]}
EOF
expect merged "$tmp/t1.pb" "$tmp/t2.pb"
cat >"$tmp/range.exp" <<EOF
{"active": 0, "profiles": [
  {"name": "app 10 / app 10", "stacks": ["main;second", "main;first", "main;second", "main;first"],
   "weights": [1000000, 2000000, 1000000, 1000000]},
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1000000, 1000000]},
  {"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1000000]}]}
EOF
expect range --from 2ms --to 6ms "$tmp/t1.pb"
cat >"$tmp/tid.exp" <<EOF
{"active": 0, "profiles": [
  {"name": "app 10 / worker 12", "stacks": ["main;third", "main;third"], "weights": [1000000, 1000000]}]}
EOF
expect tid --tid 12 "$tmp/t1.pb"
cat >"$tmp/pid.exp" <<EOF
{"active": 0, "profiles": [{"name": "helper 11 / helper 11", "stacks": ["$H"], "weights": [1000000]}]}
EOF
expect pid --pid 11 "$tmp/t1.pb"
A=' (no times: stacks aggregated)'
cat >"$tmp/none.exp" <<EOF
{"name": "no sample times", "active": 0, "profiles": [
  {"name": "app 10 / app 10$A", "stacks": ["main;second", "main;first", "main;nanosleep", "$U"],
   "weights": [3000000, 4000000, 5000000, 500000]},
  {"name": "app 10 / worker 12$A", "stacks": ["main;third"], "weights": [2000000]},
  {"name": "helper 11 / helper 11$A", "stacks": ["$H"], "weights": [1000000]},
  {"name": "[no thread labels]$A", "stacks": ["[lost]"], "weights": [250000]}]}
EOF
expect none "$tmp/t0.pb"

# --- speedscope itself ---
node "$CHECK" view "$SS" "$tmp/p.json" hot_leaf "$B/tests/speedscope-work_hot"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "speedscope did not show work_hot's profile"
node "$CHECK" view "$SS" "$tmp/merged.json" nanosleep "$B/tests/speedscope-times" ||
	fail "speedscope did not show the merged profiles with times"
node "$CHECK" view "$SS" "$tmp/none.json" nanosleep "$B/tests/speedscope-no-times" ||
	fail "speedscope did not show a profile without times"
echo "ok"
