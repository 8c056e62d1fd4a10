#!/bin/sh
# t_top.sh -- `cpuprof top` (issue 31): the live view on a terminal (tmux
# panes of a given size) and in a pipe.  On a terminal: the hot function
# leads the view by flat CPU, the threads are listed, samples came; q ends
# CMD as record ends it (SIGINT: exit 130) and the terminal is given back
# as it was; a CMD that ends by itself leaves the last view and its exit
# status; -p: q leaves the process running; 40 columns: every line cut to
# the width, none wrapped, and the pane grown to 70: the view follows it;
# Ctrl-Z gives the terminal back while stopped, and fg takes the view up
# again; SIGTERM to top ends CMD (exit 143) and gives the terminal back.  In a pipe: plain blocks with no escape code, one a
# view, the hot function leading, the coverage of the whole run.  Every
# wait polls (up to 30 s): nothing here is a timing.  Skips without tmux,
# and under emulation (the view is the same code natively; the run under
# it is record's, which t_record.sh covers).
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof
W=$ROOT/$B/tests/work_hot

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -x "$W" ] || fail "build first (make tests)"
[ -z "${EMU:-}" ] || skip "the view's terminal is tested natively"
command -v tmux >/dev/null 2>&1 || skip "tmux is not installed"
command -v bash >/dev/null 2>&1 || skip "bash is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_top.XXXXXX") || fail mktemp
# Our own tmux server, on our own socket; nothing of a failed run is left.
T="tmux -S $tmp/sock"
bg=
trap '$T kill-server 2>/dev/null; [ -n "$bg" ] && kill -KILL $bg 2>/dev/null; pkill -KILL -f "$W 2 6[0-9]000" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
ESC=$(printf '\033')

# pane NAME COLS ROWS CMD: a detached session NAME of COLSxROWS running the
# shell command CMD.
pane() {
	$T new-session -d -x "$2" -y "$3" -s "$1" "$4" || fail "tmux new-session $1"
}
# screen NAME: what the pane shows now, its wrapped lines joined.
screen() { $T capture-pane -p -J -t "$1" 2>/dev/null; }
# leader: the first function of the view on stdin (the row under the
# heads' "function").
leader() { awk '/ function *$/ { if (getline > 0) { print $NF; exit } }'; }
# threads: how many thread rows the view on stdin lists.
threads() { awk '/pid\/tid thread/ { on = 1; next } on && $3 ~ /^[0-9]+\/[0-9]+$/ { n++ } END { print n + 0 }'; }
# until_leads NAME: until the pane shows a whole view (a terminal may be
# caught drawing one: its threads come last) with hot_leaf first (30 s),
# its screen then in NAME.screen.
until_leads() {
	for i in $(seq 150); do
		screen "$1" >"$1.screen"
		[ "$(leader <"$1.screen")" = hot_leaf ] && [ "$(threads <"$1.screen")" -gt 0 ] && return 0
		sleep 0.2
	done
	cat "$1.screen"
	fail "$1: hot_leaf never led the view"
}
# until_shows NAME TEXT WHAT: until the pane shows TEXT (30 s; tmux may
# still be reading what top wrote last), its screen then in NAME.final.
until_shows() {
	for i in $(seq 150); do
		screen "$1" >"$1.final"
		grep -q "$2" "$1.final" && return 0
		sleep 0.2
	done
	cat "$1.final"
	fail "$3"
}
# until_file FILE WHAT: until FILE exists and is not empty (30 s).
until_file() {
	for i in $(seq 150); do
		[ -s "$1" ] && return 0
		sleep 0.2
	done
	screen "${1%.status}" 2>/dev/null
	fail "$2"
}
# gone PID: until process PID has gone (30 s).
gone() {
	for i in $(seq 150); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}
# restored FILE WHAT: stty -a's output in FILE has canonical mode and echo.
restored() {
	grep -qw -- -icanon "$1" || grep -qw -- -echo "$1" && { cat "$1"; fail "$2: the terminal was left without icanon or echo"; }
	grep -qw icanon "$1" && grep -qw echo "$1" || { cat "$1"; fail "$2: no terminal modes read"; }
}
# samples FILE: the since-start samples of the last view in FILE.
samples() { sed -n 's/^since start:.* \([0-9][0-9]*\) samples.*/\1/p' "$1" | tail -n 1; }
# run_in NAME: the shell command that runs the rest in a pane and then
# writes its status to NAME.status and the terminal's modes to NAME.stty.
run_in() {
	n=$1
	shift
	echo "$* ; echo \$? >$tmp/$n.status; stty -a >$tmp/$n.stty; exec sleep 600"
}

# A terminal of 100x30: the view, then q.
pane tty 100 30 "$(run_in tty "$CP" top -- "$W" 2 60000)"
until_leads tty
rows=$(threads <tty.screen)
[ "$rows" -ge 2 ] || { cat tty.screen; fail "tty: $rows threads listed, work_hot has 2 working"; }
n=$(samples tty.screen)
[ "${n:-0}" -gt 0 ] || { cat tty.screen; fail "tty: no samples"; }
cmd=$(sed -n 's/^cpuprof top: .* (pid \([0-9]*\)).*/\1/p' tty.screen | head -n 1)
[ -n "$cmd" ] && kill -0 "$cmd" 2>/dev/null || { cat tty.screen; fail "tty: the view names no running CMD (pid '$cmd')"; }
$T send-keys -t tty q
until_file tty.status "tty: top did not end within 30 s of q"
st=$(cat tty.status)
[ "$st" = 130 ] || fail "tty: exit status $st after q; record's when CMD dies of the SIGINT it is passed is 130"
gone "$cmd" || fail "tty: CMD (pid $cmd) still runs after q"
until_shows tty "ended after .*: quit, killed by signal 2" "tty: the last view does not say how it ended"
restored tty.stty tty
echo "tty: hot_leaf leads, $rows threads, $n samples; q: exit $st, CMD gone, terminal given back"

# CMD that ends by itself: the last view stays, with its status.
pane self 100 30 "$(run_in self "$CP" top -i 0.5 -- "$W" 1 1500 7)"
until_file self.status "self: top did not end with CMD"
st=$(cat self.status)
[ "$st" = 7 ] || fail "self: exit status $st, CMD's is 7"
until_shows self "ended after .*: exit 7" "self: no last view saying exit 7"
[ "$(leader <self.final)" = hot_leaf ] || { cat self.final; fail "self: hot_leaf does not lead the last view"; }
restored self.stty self
echo "self: exit $st, the last view stays"

# -p: q leaves the process running.
"$W" 2 60000 >/dev/null &
bg=$!
pane attach 100 30 "$(run_in attach "$CP" top -p $bg)"
until_leads attach
$T send-keys -t attach q
until_file attach.status "attach: top did not end within 30 s of q"
st=$(cat attach.status)
[ "$st" = 0 ] || fail "attach: exit status $st after q"
kill -0 $bg 2>/dev/null || fail "attach: the process did not survive q"
until_shows attach "ended after .*: quit, left running" "attach: the last view does not say it left the process running"
kill $bg
wait $bg 2>/dev/null
bg=
restored attach.stty attach
echo "attach: exit 0 after q, the process ran on"

# 40 columns: lines cut to the width, never wrapped (-J joins wrapped
# lines into one longer than the pane).
pane narrow 40 20 "$(run_in narrow "$CP" top -- "$W" 2 61000)"
until_leads narrow
long=$(awk '{ sub(/ +$/, "") } length($0) > 40 { n++ } END { print n + 0 }' narrow.screen)
[ "$long" -eq 0 ] || { cat narrow.screen; fail "narrow: $long lines longer than 40 columns"; }
# The pane grows to 70 columns: the view takes the new width (its first
# line is longer than 40), and no more.
$T resize-window -t narrow -x 70 -y 20 || fail "tmux resize-window"
for i in $(seq 150); do
	screen narrow >narrow.wide
	wide=$(awk '{ sub(/ +$/, "") } length($0) > 40 { n++ } END { print n + 0 }' narrow.wide)
	[ "$wide" -gt 0 ] && [ "$(leader <narrow.wide)" = hot_leaf ] && [ "$(threads <narrow.wide)" -gt 0 ] && break
	sleep 0.2
done
[ "$wide" -gt 0 ] || { cat narrow.wide; fail "narrow: the view never took the pane's new width"; }
long=$(awk '{ sub(/ +$/, "") } length($0) > 70 { n++ } END { print n + 0 }' narrow.wide)
[ "$long" -eq 0 ] || { cat narrow.wide; fail "narrow: $long lines longer than 70 columns"; }
$T send-keys -t narrow q
until_file narrow.status "narrow: top did not end within 30 s of q"
echo "narrow: no line beyond 40 columns; at 70, $wide lines beyond 40, none beyond 70"

# Ctrl-Z in an interactive shell: the terminal is given back while top is
# stopped; fg takes the view up again, and q still ends it.
pane job 100 30 "env PS1='$ ' bash --norc --noprofile -i"
$T send-keys -t job "$CP top -- $W 2 62000" Enter
until_leads job
$T send-keys -t job C-z
until_shows job Stopped "job: Ctrl-Z did not stop top"
$T send-keys -t job "stty -a >$tmp/job.stopped.stty" Enter
until_file job.stopped.stty "job: no shell prompt after Ctrl-Z"
restored job.stopped.stty "job (stopped)"
$T send-keys -t job "fg" Enter
# The view comes back: a second ago's numbers give way to new ones.
before=$(samples job.screen)
for i in $(seq 150); do
	screen job >job.screen
	now=$(samples job.screen)
	[ -n "$now" ] && [ "$now" != "$before" ] && [ "$(leader <job.screen)" = hot_leaf ] && break
	sleep 0.2
done
[ "$now" != "$before" ] || { cat job.screen; fail "job: no new view after fg"; }
$T send-keys -t job q
# What is typed before top has drawn its last view would be its keys.
until_shows job "ended after" "job: no last view after q"
$T send-keys -t job "echo \$? >$tmp/job.status; stty -a >$tmp/job.stty" Enter
until_file job.status "job: top did not end within 30 s of q after fg"
st=$(cat job.status)
[ "$st" = 130 ] || fail "job: exit status $st after fg and q"
until_file job.stty "job: no terminal modes"
restored job.stty job
echo "job: Ctrl-Z gave the terminal back, fg drew again, q: exit $st"

# SIGTERM to top: passed to CMD (exit 143), the terminal given back.
pane term 100 30 "$(run_in term "$CP" top -- "$W" 2 63000)"
until_leads term
toppid=$(pgrep -f "^$CP top -- $W 2 63000" | head -n 1)
[ -n "$toppid" ] || fail "term: no top process"
kill -TERM "$toppid"
until_file term.status "term: top did not end within 30 s of SIGTERM"
st=$(cat term.status)
[ "$st" = 143 ] || fail "term: exit status $st after SIGTERM, CMD's is 143"
restored term.stty term
echo "term: SIGTERM: exit $st, terminal given back"

# A pipe: plain blocks, one a view, no escape code; hot_leaf leads the
# last, whose coverage is of the whole run.
{ "$CP" top -i 0.5 -- "$W" 2 1500 </dev/null 2>err; echo $? >pipe.status; } | cat >pipe.out
st=$(cat pipe.status)
[ "$st" = 0 ] || { cat err; fail "pipe: status $st"; }
! grep -q "$ESC" pipe.out || fail "pipe: escape codes in a pipe"
blocks=$(grep -c '^cpuprof top: ' pipe.out)
[ "$blocks" -ge 2 ] || { cat pipe.out; fail "pipe: $blocks blocks"; }
awk '/^cpuprof top: .*ended after/ { last = 1 } last' pipe.out >pipe.last
grep -q "exit 0" pipe.last || { cat pipe.out; fail "pipe: no last block saying exit 0"; }
[ "$(leader <pipe.last)" = hot_leaf ] || { cat pipe.last; fail "pipe: hot_leaf does not lead the last block"; }
cov=$(sed -n 's/^since start:.* coverage \([0-9.]*\),.*/\1/p' pipe.last)
awk "BEGIN { exit !(\"$cov\" != \"\" && $cov + 0 >= 0.8 && $cov + 0 <= 1.2) }" ||
	{ cat pipe.last; fail "pipe: coverage '$cov' of the whole run"; }
echo "pipe: $blocks plain blocks, hot_leaf leads, coverage $cov"
exit 0
