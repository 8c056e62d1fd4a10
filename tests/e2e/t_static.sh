#!/bin/sh
# t_static.sh -- libcpuprof.a in a program linked with it, as the README
# tells programs that cannot preload to do: the archive exports the API
# and the C library's functions cpuprof interposes and nothing else (a
# program's own cp_ring_create or threads_init links beside it), and in a
# fully static program (gcc -static, where dlsym finds nothing) every
# pthread_create() succeeds and the profile names the threads' function.
set -u
B=${B:-build}
ROOT=$(pwd -P)
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -z "${EMU:-}" ] || skip "the C compiler and its static C library are the host's; under $EMU only the build runs"
command -v cc >/dev/null 2>&1 || skip "no C compiler (cc)"
[ -e "$B/libcpuprof.a" ] && [ -e "$B/libcpuprof.so" ] || fail "build first (make)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_static.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT

# Every name the archive defines globally is one the shared library
# exports too: the API and the interposed C functions.
nm -g --defined-only "$B/libcpuprof.a" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/archive"
nm -D --defined-only "$B/libcpuprof.so" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/shared"
grep -qx cpuprof_start "$tmp/archive" || fail "libcpuprof.a does not define cpuprof_start"
extra=$(comm -23 "$tmp/archive" "$tmp/shared")
[ -z "$extra" ] || fail "libcpuprof.a defines names libcpuprof.so does not export: $(echo $extra | head -c 300)"

cat >"$tmp/prog.c" <<'EOF'
#include <cpuprof.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Names cpuprof used inside once: a program may have its own. */
int cp_ring_create(void) { return 1; }
int threads_init(void) { return 2; }

static volatile unsigned long sink;

__attribute__((noinline)) static void *spin_in_thread(void *arg)
{
	unsigned long x = 0;
	for (unsigned long i = 0; i < 150000000ul; i++)
		x += i ^ (x >> 3);
	sink = x;
	return arg;
}

int main(int argc, char **argv)
{
	struct cpuprof_options o = { .hz = 1000 };
	int rc = cpuprof_start(argv[1], &o);
	if (rc != 0) {
		printf("start: %s\n", cpuprof_strerror(rc));
		return 3;
	}
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		int e = pthread_create(&t[i], NULL, spin_in_thread, NULL);
		if (e != 0) {
			printf("pthread_create: error %d\n", e);
			return 4;
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	rc = cpuprof_stop();
	printf("stop %d, own names %d %d\n", rc, cp_ring_create(), threads_init());
	return rc == 0 && argc > 0 ? 0 : 5;
}
EOF
CFLAGS="-O2 -g -fno-omit-frame-pointer -I$ROOT/include"
# shellcheck disable=SC2086
cc $CFLAGS -o "$tmp/linked" "$tmp/prog.c" "$B/libcpuprof.a" -lz -ldl -pthread 2>"$tmp/cc.log" ||
	{ cat "$tmp/cc.log"; fail "a program with names of its own does not link with libcpuprof.a"; }
"$tmp/linked" "$tmp/linked.pb.gz" || fail "the program linked with libcpuprof.a failed (exit $?)"
kinds=
for kind in static-pie static; do
	# shellcheck disable=SC2086
	if cc $CFLAGS -$kind -o "$tmp/$kind" "$tmp/prog.c" "$B/libcpuprof.a" -lz -pthread 2>"$tmp/$kind.log"; then
		kinds="$kinds $kind"
	else
		cat "$tmp/$kind.log"
		echo "no $kind build here (no static C library or zlib?): that mode is not tested"
	fi
done
[ -n "$kinds" ] || skip "no static build is possible here (libc6-dev and zlib1g-dev have libc.a and libz.a)"
for prog in linked $kinds; do
	out=$(timeout 120 "$tmp/$prog" "$tmp/$prog.pb.gz") || fail "$prog: exit $?: $out"
	echo "$prog: $out"
	"$B/cpuprof" report --top 3 "$tmp/$prog.pb.gz" >"$tmp/$prog.top" || fail "$prog: report failed"
	cat "$tmp/$prog.top"
	# The first function row (after the header and the column names).
	lead=$(awk '/flat%/ { getline; print $NF; exit }' "$tmp/$prog.top")
	[ "$lead" = spin_in_thread ] || fail "$prog: the profile's leading function is '$lead', not spin_in_thread"
done
echo "ok: libcpuprof.a exports $(wc -l <"$tmp/archive") names, all the shared library's; threads made in:$kinds"
