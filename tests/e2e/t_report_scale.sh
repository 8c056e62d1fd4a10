#!/bin/sh
# t_report_scale.sh -- what `cpuprof diff` holds at its peak over two big
# profiles (issue 32), as bench/bigprof.py makes them: 300,000 samples of
# 60,000 distinct stacks each, with times, so that the call tree of both
# has about 2.4 million nodes.  The peak RSS of `diff --format html` and
# `--format folded` stays under 100 MB: diff frees each profile's samples
# once they are in its stackset, and keeps the page's and folded's values
# per leaf of the tree, not per node (measured 81 MB each; 111-123 MB with
# the samples kept, 129-138 MB before either).  Not a timed test: a
# profile's peak is the same from run to run.  The outputs are checked to
# be whole: the page's data ends, and folded's lines add up to NEW's
# samples.  Skipped under emulation, where the RSS is the emulator's.
B=${B:-build}
CP=$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$CP" ] || fail "build first (make)"
[ -z "${EMU:-}" ] || { echo "skip: the peak RSS under emulation is the emulator's"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3 (bench/bigprof.py)"; exit 77; }
case $CP in /*) ;; *) CP=$PWD/$CP ;; esac
BIG=$PWD/bench/bigprof.py

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_report_scale.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd"

python3 "$BIG" a.pb.gz 300000 60000 1 && python3 "$BIG" b.pb.gz 300000 60000 2 || fail "bigprof.py"

# peak STATUS OUT ARGS...: runs cpuprof ARGS with stdout into OUT, which
# must exit STATUS; prints its peak RSS in KiB.
peak() {
	want=$1 out=$2
	shift 2
	python3 - "$want" "$out" "$CP" "$@" <<'EOF' || fail "cpuprof $*"
import resource, subprocess, sys
want, out, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
with open(out, "wb") as f:
    rc = subprocess.run(cmd, stdout=f).returncode
if rc != want:
    sys.exit("exit %d, not %d: %s" % (rc, want, " ".join(cmd)))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
}

# Two profiles of other stacks: diff finds changes (exit 1).
for f in html folded; do
	kib=$(peak 1 "d.$f" diff --format "$f" a.pb.gz b.pb.gz) || exit 1
	echo "diff --format $f: peak RSS $kib KiB"
	[ "$kib" -le 102400 ] || fail "diff --format $f of two profiles of 300,000 samples: peak RSS $kib KiB, over 100 MiB"
done
tail -c 100 d.html | grep -q '</html>' || fail "diff's page is not whole"
# BASE is scaled to NEW's total; NEW's column adds up to its 300,000
# samples of 1 ms each.
awk '{ b += $NF } END { if (b != 300000000000) { print "NEW sums to " b > "/dev/stderr"; exit 1 } }' d.folded ||
	fail "diff's folded lines do not add up to NEW's samples"
exit 0
