#!/bin/sh
# t_layers.sh -- the house's layering, checked from the #include lines of
# src/, cli/ and compat/ (docs/architecture.md).  The library's rooms, from
# the bottom up:
#
#   arch  sig  base  unwind  perf  symbolize  profile  shm  engines  session  process
#
# A file may include headers of its own room and of rooms below it, with
# two exceptions: src/sig/ (signal context) includes nothing but sig/ and
# arch/, and the gperftools drop-in (compat/) only the public headers.
# session is src/*.c and src/*.h themselves (a profile's life); process/ is
# the program-facing top (the interposers, LD_PRELOAD), which nothing else
# includes.  The CLI's rooms: cli/ itself (main.c, the pprof reader) may
# include the library's profile/; cli/record/, cli/report/, cli/diff/ and
# cli/symbolize/ may include cli/ and the library's rooms up to shm, never
# engines/, the session or process/ (the CLI runs nothing of the in-process
# profiler); cli/diff/ also includes cli/report/ (its stacks, shares and page: one
# reader, one set of names), cli/top/ cli/record/ (record's run and collector,
# read while it runs: one pipeline), and no other CLI room includes another.
# Then the map (below).  Prints each include or name that breaks a rule
# and exits 1 if there is one.
cd "$(dirname "$0")/../.." || exit 2
ORDER="arch sig base unwind perf symbolize profile shm engines session process"
rank() {
	i=0
	for r in $ORDER; do
		[ "$r" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo 99
}
# room FILE: the room a file is in.
room() {
	case $1 in
	include/*) echo api ;;
	src/arch/*) echo arch ;;
	src/*/*) f=${1#src/}; echo "${f%%/*}" ;;
	src/*) echo session ;;
	cli/*/*) f=${1#cli/}; echo "cli-${f%%/*}" ;;
	cli/*) echo cli ;;
	compat/*) echo compat ;;
	*) echo other ;;
	esac
}
# resolve FILE NAME: the file `#include "NAME"` in FILE names, as the
# build's search path finds it (the file's folder, include/, src/, the
# arch folder, cli/).
resolve() {
	for d in "$(dirname "$1")" include src src/arch/x86_64 cli compat/gperftools; do
		[ -f "$d/$2" ] && { echo "$d/$2" | sed 's|^\./||'; return; }
	done
}
bad=0
for f in $(find src cli compat -name '*.[ch]' | sort); do
	from=$(room "$f")
	for name in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		t=$(resolve "$f" "$name")
		[ -n "$t" ] || continue
		to=$(room "$t")
		[ "$to" = "$from" ] && continue
		ok=0
		case $from in
		sig) case $to in arch) ok=1 ;; esac ;;
		compat) case $to in api) ok=1 ;; esac ;;
		cli) case $to in profile) ok=1 ;; esac ;;
		cli-diff) case $to in cli | cli-report | arch | sig | base | unwind | perf | symbolize | profile | shm) ok=1 ;; esac ;;
		cli-top) case $to in cli | cli-record | arch | sig | base | unwind | perf | symbolize | profile | shm) ok=1 ;; esac ;;
		cli-*) case $to in cli | arch | sig | base | unwind | perf | symbolize | profile | shm) ok=1 ;; esac ;;
		*)
			case $to in
			api) [ "$from" = session ] || [ "$from" = process ] && ok=1 ;;
			*) [ "$(rank "$to")" -lt "$(rank "$from")" ] && ok=1 ;;
			esac ;;
		esac
		if [ $ok -eq 0 ]; then
			echo "layers: $f ($from) includes $t ($to)"
			bad=1
		fi
	done
done
[ $bad -eq 0 ] && echo "layers: every include goes down ($ORDER; cli, cli/diff over cli/report, cli/top over cli/record, compat)"
# The map: docs/architecture.md names every source file (each .c, and
# each .h with no .c of its name beside it) by its name in backquotes, and
# no two files share a name (but arch.h, one per CPU).
map=docs/architecture.md
names=$(find src cli compat -name '*.[ch]' | sort | while read -r f; do
	case $f in *.h) [ -f "${f%.h}.c" ] && continue ;; esac
	echo "${f##*/}"
done)
for n in $(echo "$names" | sort | uniq -d); do
	[ "$n" = arch.h ] && continue
	echo "map: two files are named $n: $(find src cli compat -name "$n" | tr '\n' ' ')"
	bad=1
done
for n in $(echo "$names" | sort -u); do
	grep -q "\`[^\`]*\b$n\`" "$map" || { echo "map: $map does not name $n"; bad=1; }
done
[ $bad -eq 0 ] && echo "map: $map names every source file, each name one file's"
exit $bad
