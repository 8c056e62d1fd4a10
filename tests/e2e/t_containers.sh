#!/bin/sh
# t_containers.sh -- a program in a container is named and unwound.  The
# container is made as a runtime makes one: a new mount and PID namespace
# (unshare) whose root is a tmpfs mounted in that namespace alone, holding
# the workload (tests/work/chain.c, built as /app/prog) and the C library
# it loads, entered with chroot.  Its files are at no path record can open
# in its own mount namespace, so record must read them through the
# process's root (/proc/PID/root).  Under `cpuprof record` (the kernel
# names a mapping from the container's root: /app/prog) and `record -p`
# (/proc/PID/maps names it from ours as far as it can:
# ROOT/app/prog):
#  - inner holds at least 80% of the CPU, cumulatively, and main is above
#    at least 0.99 of inner's weight (its unwind tables were read too);
#  - inner has its source line (chain.c), from the DWARF read through the
#    container's root.
# A JIT in such a container, its /tmp an absolute link, is named from its
# perf map read through the link as the container resolves it.
# And a program whose file is gone when record looks (deleted while it
# runs) is profiled all the same, with one line that names the file and
# says why it has no names.  Needs root (namespaces, mount, chroot) and
# unshare; natively only.
B=${B:-build}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] || fail "build first (make tests)"
[ -z "$EMU" ] || skip "containers are checked on the native build"
[ "$(id -u)" = 0 ] || skip "making a container needs root (mount and PID namespaces, mount, chroot)"
command -v unshare >/dev/null 2>&1 || skip "unshare is not installed (util-linux)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
unshare --mount --pid --fork true 2>/dev/null || skip "unshare --mount --pid is refused here"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_containers.XXXXXX") || fail mktemp
bg=
trap '[ -z "$bg" ] || kill "$bg" 2>/dev/null; [ -n "$KEEP" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps it
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none

# The container's files: the program and what it loads, at their paths.
mkdir -p image/app mnt || fail mkdir
${CC:-gcc} -O2 -g -fno-omit-frame-pointer -o image/app/prog "$ROOT/tests/work/chain.c" || fail "cannot build chain.c"
for lib in $(ldd image/app/prog | grep -o '/[^ ]*'); do
	mkdir -p "image$(dirname "$lib")" && cp "$lib" "image$lib" || fail "cannot copy $lib"
done
# enter.sh SECONDS: in the new namespaces, the tmpfs root and the program.
cat >enter.sh <<EOF
mount -t tmpfs none "$tmp/mnt" && cp -a "$tmp/image/." "$tmp/mnt/" && exec chroot "$tmp/mnt" /app/prog "\$@"
EOF

# check WHAT PROFILE: inner leads, main above it, and inner's line.
check() {
	top=$("$CP" report --format top "$2") || fail "$1: report"
	cum=$(echo "$top" | awk '/flat%/ { t = 1; next } t && $NF == "inner" { c = $5; sub(/%/, "", c); print c + 0; exit }')
	reach=$("$CP" report --format folded "$2" | awk '
		{ w = $NF; n = split(substr($0, 1, length($0) - length(w) - 1), f, ";"); in_ = on = 0
		  for (i = 1; i <= n; i++) { in_ += f[i] == "inner"; on += f[i] == "main" }
		  if (in_) { all += w; hit += on ? w : 0 } }
		END { printf "%.3f", all ? hit / all : 0 }')
	echo "# $1: inner ${cum:-0}% of the CPU, main above $reach of it"
	awk -v c="${cum:-0}" 'BEGIN { exit !(c >= 80) }' || { echo "$top" | head -n 12; fail "$1: inner holds ${cum:-0}% of the CPU (need 80%)"; }
	awk -v r="$reach" 'BEGIN { exit !(r >= 0.99) }' || { "$CP" report --format folded "$2" | sort -k2 -n | tail -n 5; fail "$1: main above $reach of inner's weight (need 0.99)"; }
	go tool pprof -symbolize=none -raw "$2" 2>/dev/null | grep -q ' inner .*chain\.c:[0-9]' ||
		{ go tool pprof -symbolize=none -raw "$2" 2>/dev/null | sed -n '/^Locations/,$p' | head -n 20; fail "$1: inner has no line of chain.c"; }
}

"$CP" record -o rec.pb.gz -- unshare --mount --pid --fork sh enter.sh >out 2>err || { cat err; fail "record failed"; }
[ "$(cat out)" = 1 ] || { cat out err; fail "the program's output changed under record"; }
check "record" rec.pb.gz
go tool pprof -symbolize=none -raw rec.pb.gz 2>/dev/null | grep -q ' /app/prog ' || fail "record: no Mapping names /app/prog, the container's own path"

secs=30.$$ # its command line is this test's alone
unshare --mount --pid --fork sh enter.sh $secs >/dev/null 2>&1 &
bg=$!
pid=
for i in 1 2 3 4 5 6 7 8 9 10; do
	sleep 0.2
	pid=$(pgrep -x -f "/app/prog $secs") && break
done
[ -n "$pid" ] || fail "the container's program did not start"
"$CP" record -p "$pid" -d 1 -o att.pb.gz >/dev/null 2>err || { cat err; fail "record -p failed"; }
kill -KILL "$pid" 2>/dev/null # the namespace's init: SIGTERM would be ignored
wait "$bg" 2>/dev/null
bg=
check "record -p" att.pb.gz

# A JIT in a container whose /tmp is an absolute symbolic link
# (/tmp -> /var/tmp): its perf map is read in the container's /var/tmp, the
# link resolved inside the container's root, never in ours (where it would
# be the host's /var/tmp).
W=$ROOT/$B/tests/work_jit
if [ -x "$W" ]; then
	rm -rf image/tmp && mkdir -p image/var/tmp && ln -s /var/tmp image/tmp && cp "$W" image/app/jit || fail "cannot make the JIT's image"
	cat >enter_jit.sh <<EOF
mount -t tmpfs none "$tmp/mnt" && cp -a "$tmp/image/." "$tmp/mnt/" && exec chroot "$tmp/mnt" /app/jit map 600
EOF
	"$CP" record -o jit.pb.gz -- unshare --mount --pid --fork sh enter_jit.sh >out 2>err || { cat err; fail "record of the JIT failed"; }
	jit=$("$CP" report --format top jit.pb.gz | awk '/flat%/ { t = 1; next } t && $NF == "[jit]" && $(NF - 1) == "jit_hot_loop" { c = $2; sub(/%/, "", c); print c + 0; exit }')
	echo "# a JIT behind a /tmp link: jit_hot_loop ${jit:-0}% of the CPU"
	awk -v c="${jit:-0}" 'BEGIN { exit !(c >= 50) }' || { "$CP" report --format top jit.pb.gz | head -n 12; fail "the JIT's perf map behind the container's /tmp link was not read (jit_hot_loop ${jit:-0}%)"; }
else
	echo "# no JIT cell: $W is not built"
fi

# A program whose file is gone: profiled, and record says what it lacks.
cp image/app/prog gone
./gone 30 >/dev/null &
bg=$!
sleep 0.3
rm gone
"$CP" record -p "$bg" -d 1 -o gone.pb.gz >/dev/null 2>err || { cat err; fail "record -p of a program whose file is gone failed"; }
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=
grep -q "no names or unwinding for $tmp/gone (deleted): " err || { cat err; fail "record did not say which file it could not read"; }
[ -s gone.pb.gz ] && "$CP" report --format top gone.pb.gz >/dev/null || fail "no profile of the program whose file is gone"
echo "# a deleted program: $(grep 'no names' err)"
exit 0
