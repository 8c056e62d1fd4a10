#!/bin/sh
# t_report_html.sh -- `cpuprof report --format html` in a real browser:
# pages for a profile of work_hot (hot_leaf burns three quarters of the
# CPU), for names that try to break out of the page, for an empty profile
# and for samples labelled with processes and threads are opened in
# Debian's headless Chromium, and tests/tools/html_check.js checks from inside
# each page, after its script ran: the root's total is the profile's (as
# tool_fold reads it), the widest chain below main ends in hot_leaf, a
# typed search highlights exactly the matching frames and reports their
# share, a function under several chains and inside itself is a frame
# per path with its path's share and counted once by a search, a real
# click zooms, a tooltip gives the interval `report
# --intervals` gives, hostile names are text, and no script error was
# logged; a profile of off-CPU time offers wall, cpu and off_cpu in its
# Value menu and redraws with each; and a page of `cpuprof diff` colours the function that grew
# red, the one that shrank blue and the rest grey.  Screenshots of work_hot's and the demo's pages are kept in
# $B/tests/ (docs/flamegraph.png is the demo's).  Skips (77) without
# Chromium or Node.js, or where Chromium cannot start.
B=${B:-build}
CP=$B/cpuprof
MK=$B/tests/tool_mkprof
SP=$B/tests/tool_sampleprof
FOLD=$B/tests/tool_fold

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; exit 77; }

[ -x "$CP" ] && [ -x "$MK" ] && [ -x "$SP" ] && [ -x "$FOLD" ] || fail "build first (make tests)"
# mk ARGS...: tool_mkprof, run as every program of the build is
mk() { $EMU "$MK" "$@"; }
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "Chromium is not installed (Debian package chromium)"
command -v node >/dev/null 2>&1 || skip "Node.js is not installed (Debian package nodejs)"
export CHROMIUM

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_html.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# --- work_hot: totals, the hot chain, search, zoom ---
$EMU "$CP" record -o "$tmp/p.pb.gz" -- $EMU "$B/tests/work_hot" 1 300 >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "record work_hot"; }
$EMU "$CP" report --format html -o "$tmp/p.html" "$tmp/p.pb.gz" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "report --format html"; }
[ -s "$tmp/err" ] && { cat "$tmp/err" >&2; fail "report wrote to stderr"; }
grep -Eq '<script [^>]*src=|<link |https?://|@import|url\(' "$tmp/p.html" &&
	fail "the page refers to something outside itself"
$EMU "$FOLD" -v cpu "$tmp/p.pb.gz" >"$tmp/fold" || fail "tool_fold"
total=$(awk '{ t += $1 } END { printf "%d", t }' "$tmp/fold")
# hot_leaf is the leaf function, with jitter() (or an older spin())
# inlined into it (its first Line) where the compiler inlined it: the
# page's hot_leaf frame holds what is inlined into it.  The page's frame
# is one node of the call tree: the check holds because every sample in
# hot_leaf has the same chain, which a walk that loses a caller breaks
# (under qemu-user, the timer engine's first samples while the unwind
# tables were built lazily lost hot_mid: t_unwind.sh's timer check).
hot=$(awk '{ split($2, f, ";"); if (f[1] ~ /^hot_leaf@/ || (f[1] ~ /^(spin|jitter)@/ && f[2] ~ /^hot_leaf@/)) h += $1; t += $1 }
	END { printf "%.6f", h / t }' "$tmp/fold")
match=$(awk '$2 ~ /hot_/ { h += $1 } { t += $1 } END { printf "%.6f", h / t }' "$tmp/fold")
echo "profile: total $total ns, hot_leaf $hot, frames with hot_ $match"

# --- the tooltips' intervals are report --intervals' ---
iv=$($EMU "$CP" report --intervals --top 0 "$tmp/p.pb.gz" |
	sed -n 's/.*\[\([0-9.]*\), \([0-9.]*\)\] *hot_leaf$/\1 \2/p')
[ -n "$iv" ] || fail "report --intervals has no interval for hot_leaf"

# --- a differential flame graph (cpuprof diff): grow_me 40% -> 50% ---
draw() { out=$1; shift; $EMU "$SP" "$@" | mk "$out" || fail "tool_sampleprof $*"; }
draw "$tmp/base.pb" -j 0.3 101 5000 "main;loop;steady=40" "main;loop;grow_me=40" "main;setup=20"
draw "$tmp/new.pb" -j 0.3 102 5000 "main;loop;steady=40" "main;loop;grow_me=60" "main;setup=20"
$EMU "$CP" diff --format html -o "$tmp/diff.html" "$tmp/base.pb" "$tmp/new.pb"
[ $? -eq 1 ] || fail "diff --format html of grow_me's pair: not exit 1"

# --- hostile names, inlined and pseudo frames ---
cat >"$tmp/hostile.txt" <<'EOF'
type samples count
type cpu nanoseconds
comment warning=%3C/script%3E%3Cb%3Ex%3C/b%3E
function 1 %3C/script%3E%3Cscript%3Ewindow.pwned=1%3C/script%3E
function 2 %3Cimg%20src=x%20onerror=window.pwned=2%3E
function 3 a%26b%20%22q%22%20'q'%20%3C!--
function 4 bad%FF%FEutf8%C0%AF
function 5 std::vector%3Cint,%20std::allocator%3Cint%3E%20%3E::push_back
function 6 outer_fn src/outer.c 10
function 7 inl_fn src/inl.h 3
function 8 [lost]
function 9 [truncated]
function 10 [unsampled:%20after%20each%20thread's%20last%20sample]
function 11 [profiler:%20cpuprof's%20drain%20thread]
function 12 line%E2%80%A8sep%0Anewline
location 1 0 0 1
location 2 0 0 2
location 3 0 0 3
location 4 0 0 4
location 5 0 0 5
location 6 0 0 7:4 6:12
location 8 0 0 8
location 9 0 0 9
location 10 0 0 10
location 11 0 0 11
location 12 0 0 12
sample 1 100 : 1 6
sample 1 100 : 2 6
sample 1 100 : 3 6
sample 1 100 : 4 6
sample 1 100 : 5 6
sample 1 100 : 12 6
sample 1 100 : 6
sample 1 100 : 9 6
sample 1 100 : 8
sample 1 100 : 10
sample 1 100 : 11
EOF
mk "$tmp/hostile.pb" <"$tmp/hostile.txt" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/hostile.html" "$tmp/hostile.pb" || fail "report of hostile names"
grep -c '</script>' "$tmp/hostile.html" | grep -qx 2 || fail "a name closed a script element"
printf '%s\n' '["</script><script>window.pwned=1</script>", "<img src=x onerror=window.pwned=2>",' \
	'"a&b \"q\" '"'"'q'"'"' <!--", "bad\ufffd\ufffdutf8\ufffd\ufffd",' \
	'"std::vector<int, std::allocator<int> >::push_back", "inl_fn", "outer_fn", "line\u2028sep\nnewline"]' \
	>"$tmp/names.json"

# --- a function under several chains and inside itself ---
# leaf is four frames (under a, under b > mid, under b and again under
# itself): each frame is its own path's share, and a search counts each
# sample once however many of its frames match (60%, not 70%).
cat >"$tmp/branches.txt" <<'EOF'
type samples count
type cpu nanoseconds
function 1 main
function 2 a
function 3 b
function 4 mid
function 5 leaf
function 6 other
location 1 0 0 1
location 2 0 0 2
location 3 0 0 3
location 4 0 0 4
location 5 0 0 5
location 6 0 0 6
sample 3 300 : 5 2 1
sample 2 200 : 5 4 3 1
sample 1 100 : 5 5 3 1
sample 4 400 : 6 1
EOF
mk "$tmp/branches.pb" <"$tmp/branches.txt" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/branches.html" "$tmp/branches.pb" || fail "report of a function under several chains"

# --- an empty profile ---
printf 'type samples count\ntype cpu nanoseconds\ncomment engine=perf\n' | mk "$tmp/empty.pb" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/empty.html" "$tmp/empty.pb" || fail "report of an empty profile"

# --- samples labelled with processes and threads ---
cat >"$tmp/groups.txt" <<'EOF'
type samples count
type cpu nanoseconds
function 1 main
function 2 work
location 1 0 0 1
location 2 0 0 2
sample 1 100 : 2 1 | pid#10 process=app tid#10 thread=app
sample 1 200 : 2 1 | pid#10 process=app tid#12 thread=worker-1
sample 1 400 : 2 1 | pid#11 process=helper tid#11 thread=helper
EOF
mk "$tmp/groups.pb" <"$tmp/groups.txt" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/groups.html" "$tmp/groups.pb" || fail "report of labelled samples"

# --- a profile of off-CPU time: the Value menu (wall the default: the
# raw field 14 names string 6, "wall") ---
cat >"$tmp/values.txt" <<'EOF'
type samples count
type cpu nanoseconds
type off_cpu nanoseconds
type wall nanoseconds
raw 7006
function 1 main
function 2 compute
function 3 nanosleep
function 4 [waiting%20to%20run]
location 1 0 0 1
location 2 0 0 2
location 3 0 0 3
location 4 0 0 4
sample 10 100 0 100 : 2 1
sample 0 0 300 300 : 3 1
sample 0 0 50 50 : 4 2 1
EOF
mk "$tmp/values.pb" <"$tmp/values.txt" || fail "tool_mkprof"
$EMU "$CP" report --format html -o "$tmp/values.html" "$tmp/values.pb" || fail "report of a profile of off-CPU time"

# --- the demo, for the README's screenshot ---
demo=
if [ -x "$B/demo" ]; then
	# From its own directory, so that the page's title is demo.pb.gz.
	case $B in /*) AB=$B ;; *) AB=$PWD/$B ;; esac
	(cd "$tmp" && $EMU "$AB/cpuprof" record -o demo.pb.gz -- $EMU "$AB/demo" >/dev/null 2>&1 &&
		$EMU "$AB/cpuprof" report --format html -o demo.html demo.pb.gz) &&
		demo="--shot $tmp/demo.html $B/tests/flamegraph-demo.png"
fi

# shellcheck disable=SC2086 # $demo is options
# shellcheck disable=SC2086 # $iv is two words
node tests/tools/html_check.js \
	--work "$tmp/p.html" "$B/tests/flamegraph-work_hot.png" "$total" "$hot" "$match" \
	--interval "$tmp/p.html" hot_leaf $iv \
	--diff "$tmp/diff.html" grow_me steady main "$B/tests/flamegraph-diff.png" \
	--branches "$tmp/branches.html" \
	--hostile "$tmp/hostile.html" "$tmp/names.json" \
	--empty "$tmp/empty.html" \
	--groups "$tmp/groups.html" \
	--values "$tmp/values.html" $demo
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "html_check.js failed (exit $rc)"
echo "ok"
