#!/bin/sh
# t_cli_report.sh -- end-to-end test of `cpuprof report` on a profile made
# without libcpuprof: a workload with a hot and a warm function (4:1 work)
# is profiled by gperftools and converted to pprof by `go tool pprof
# -proto`.  Checks the ranking, then that missing, empty, truncated,
# bit-flipped and random files fail with status 2 and never crash.
# Skips (77) if gperftools, go or cc is missing.
B=${B:-build}
CP=$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }

[ -x "$CP" ] || fail "$CP is not built (make build/cpuprof)"
LIBPROF=
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 \
	/usr/lib /usr/local/lib; do
	if [ -e "$d/libprofiler.so.0" ]; then LIBPROF=$d/libprofiler.so.0; break; fi
done
[ -n "$LIBPROF" ] || skip "gperftools' libprofiler.so.0 is not installed"
command -v go >/dev/null 2>&1 || skip "go is not installed (needed for go tool pprof -proto)"
command -v cc >/dev/null 2>&1 || skip "no C compiler (cc)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_cli_report.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
export PPROF_TMPDIR="$tmp" HOME="${HOME:-$tmp}"

cat >"$tmp/work.c" <<'EOF'
/* hot() does four times the work of warm(), each in its own loop. */
volatile unsigned long sink;
__attribute__((noinline)) void hot(void)
{
	for (volatile unsigned long i = 0; i < 4000000; i++)
		sink += i;
}
__attribute__((noinline)) void warm(void)
{
	for (volatile unsigned long i = 0; i < 1000000; i++)
		sink += i;
}
int main(void)
{
	for (int k = 0; k < 100; k++) {
		hot();
		warm();
	}
	return 0;
}
EOF
cc -O1 -g -fno-omit-frame-pointer -o "$tmp/work" "$tmp/work.c" ||
	fail "cannot compile the workload"
LD_PRELOAD=$LIBPROF CPUPROFILE="$tmp/work.prof" CPUPROFILE_FREQUENCY=1000 \
	"$tmp/work" || fail "workload failed under gperftools"
[ -s "$tmp/work.prof" ] || fail "gperftools wrote no profile"
go tool pprof -proto "$tmp/work" "$tmp/work.prof" >"$tmp/p.pb.gz" 2>"$tmp/go.err" ||
	{ cat "$tmp/go.err" >&2; fail "go tool pprof -proto failed"; }

# rows FILE: prints the report's table rows (after the "flat flat% ..." line)
rows() { awk 'f { print } $1 == "flat" && $2 == "flat%" { f = 1 }' "$1"; }
# pct NAME FILE: the flat% of function NAME, as a number (0 if absent)
pct() {
	rows "$2" | awk -v n="$1" '$NF == n { sub("%", "", $2); print $2; found = 1 }
		END { if (!found) print 0 }'
}

# --- a good profile, gzipped and plain ---
$EMU "$CP" report "$tmp/p.pb.gz" >"$tmp/out" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "report exited $?"; }
cat "$tmp/out"
[ -s "$tmp/err" ] && { cat "$tmp/err" >&2; fail "report wrote to stderr"; }
grep -q 'Total CPU: ' "$tmp/out" || fail "no 'Total CPU' line"
first=$(rows "$tmp/out" | awk 'NR == 1 { print $NF }')
[ "$first" = hot ] || fail "first row is '$first', expected hot"
h=$(pct hot "$tmp/out")
w=$(pct warm "$tmp/out")
awk -v h="$h" -v w="$w" 'BEGIN { exit !(h > w && h >= 50) }' ||
	fail "hot flat% $h is not plausibly above warm flat% $w"

gzip -dc "$tmp/p.pb.gz" >"$tmp/p.pb" || fail "gzip -dc"
$EMU "$CP" report "$tmp/p.pb" >"$tmp/out2" || fail "plain protobuf: exit $?"
[ "$(rows "$tmp/out2" | awk 'NR == 1 { print $NF }')" = hot ] ||
	fail "plain protobuf: hot is not the first row"

$EMU "$CP" report --top 1 "$tmp/p.pb.gz" >"$tmp/out3" || fail "--top 1: exit $?"
[ "$(rows "$tmp/out3" | wc -l)" -eq 1 ] || fail "--top 1 printed other than 1 row"

# expect_bad FILE: report on FILE must exit 2 and name FILE on stderr
expect_bad() {
	$EMU "$CP" report "$1" >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || { cat "$tmp/err" >&2; fail "$1: exit $rc, expected 2"; }
	grep -q "cpuprof report: $1: " "$tmp/err" ||
		{ cat "$tmp/err" >&2; fail "$1: message does not name the file"; }
	sed 's/^/  /' "$tmp/err"
}
expect_bad "$tmp/no-such-file.pb.gz"
: >"$tmp/empty"
expect_bad "$tmp/empty"
expect_bad "$tmp"
size=$(wc -c <"$tmp/p.pb.gz")
head -c $((size / 2)) "$tmp/p.pb.gz" >"$tmp/trunc.gz"
expect_bad "$tmp/trunc.gz"
psize=$(wc -c <"$tmp/p.pb")
head -c $((psize / 2)) "$tmp/p.pb" >"$tmp/trunc.pb"
expect_bad "$tmp/trunc.pb"
head -c 4096 /dev/urandom >"$tmp/random"
expect_bad "$tmp/random"
echo "this is not a profile" >"$tmp/text"
expect_bad "$tmp/text"

# flip FILE OFFSET OUT: OUT is FILE with the byte at OFFSET xor 0x5a
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	cp "$1" "$3"
	printf "\\$(printf %o $((b ^ 90)))" |
		dd of="$3" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# try FILE: report may accept or reject FILE, but only with 0 or 2
try() {
	$EMU "$CP" report "$1" >/dev/null 2>"$tmp/err"
	rc=$?
	case $rc in
	0 | 2) ;;
	*) cat "$tmp/err" >&2; cp "$1" "${TMPDIR:-/tmp}/t_cli_report.crash"
	   fail "corrupt input made report exit $rc (kept as ${TMPDIR:-/tmp}/t_cli_report.crash)" ;;
	esac
}
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 \
	24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39; do
	flip "$tmp/p.pb" $((i * psize / 40)) "$tmp/flip.pb"
	try "$tmp/flip.pb"
	head -c $((i * psize / 40 + 1)) "$tmp/p.pb" >"$tmp/cut.pb"
	try "$tmp/cut.pb"
done
for i in 0 1 2 3 4 5 6 7 8 9; do
	flip "$tmp/p.pb.gz" $((i * size / 10)) "$tmp/flip.gz"
	try "$tmp/flip.gz"
done

# Output that cannot be written is an error like the others: exit 2 with
# a message, and -o leaves nothing behind.
$EMU "$CP" report "$tmp/p.pb.gz" >/dev/full 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "No space left" "$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "report >/dev/full: exit $rc, expected 2 with a message"; }
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
if ! touch "$tmp/ro/probe" 2>/dev/null; then # root writes anywhere
	$EMU "$CP" report -o "$tmp/ro/out.txt" "$tmp/p.pb.gz" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] && [ -z "$(ls "$tmp/ro")" ] ||
		{ cat "$tmp/err" >&2; fail "report -o into a read-only directory: exit $rc, expected 2"; }
fi
# The message names the file asked for, not the temporary one beside it.
$EMU "$CP" report -o "$tmp/no-such-dir/out.txt" "$tmp/p.pb.gz" 2>"$tmp/err"
grep -q "cannot write $tmp/no-such-dir/out.txt: " "$tmp/err" || { cat "$tmp/err" >&2; fail "-o's message"; }
# gperftools' own binary profile (header words 0, 3, 0, period, 0) is named
# as such, with what reads it.
printf '\0\0\0\0\0\0\0\0\003\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\020\047\0\0\0\0\0\0\0\0\0\0\0\0\0\0' >"$tmp/gperf.prof"
$EMU "$CP" report "$tmp/gperf.prof" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "a gperftools CPU profile.*google-pprof" "$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "report of a gperftools profile: exit $rc"; }
# -o onto a profile it reads (by any name) is refused, the profile whole.
cp "$tmp/p.pb.gz" "$tmp/keep.pb.gz"
$EMU "$CP" report -o "$tmp/./keep.pb.gz" "$tmp/keep.pb.gz" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "a profile it reads" "$tmp/err" && cmp -s "$tmp/p.pb.gz" "$tmp/keep.pb.gz" ||
	{ cat "$tmp/err" >&2; fail "report -o onto its input: exit $rc"; }
echo "ok"
