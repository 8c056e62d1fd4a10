#!/bin/sh
# mutate.sh -- the mutation check (`make mutate`): do the tests notice when
# the code stops doing what the README says?  Copies the tree as it is
# (every file git tracks or would track, uncommitted changes included) to a
# temporary directory, builds it, runs the tests the breaks name once
# unbroken (they must pass: a failure there is a flake or a broken tree,
# not a catch), then applies each break of scripts/mutations.txt alone:
# rebuilds, runs its tests, notes which failed, puts the file back.  The
# working tree is never touched.  Prints a line per break as it goes and a
# Markdown table at the end (docs/testing.md keeps the last one); exits 1
# if a break was caught by none of its tests, did not apply, or did not
# build.  Not part of `make check`: about 20 minutes on 2 CPUs.
#
# `--check` copies, builds and runs nothing (seconds;
# tests/e2e/t_breaks_apply.sh runs it in `make check`): every break's
# fields are there, its `from` text occurs exactly once in its file (after
# the escapes the run applies) and `to` changes it, and its `tests` name
# tests tests/run.sh has.  It prints each break that fails and exits 1 if
# one does.  The list is read, and a break applied, by scripts/mutations.py
# for both.
#
# Usage: scripts/mutate.sh [--check] [NAME...]   (only the breaks named)
# Environment: MUTATIONS (the list, scripts/mutations.txt), ALL=1 (run the
# whole suite after each break instead of the tests it names), JOBS (make
# -j, 2), TEST_TIMEOUT (per test, 120 s here: a break may hang a test).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd -P)
LIST=${MUTATIONS:-scripts/mutations.txt}
case $LIST in /*) ;; *) LIST=$ROOT/$LIST ;; esac
JOBS=${JOBS:-2}
export TEST_TIMEOUT=${TEST_TIMEOUT:-120}
[ -f "$LIST" ] || { echo "mutate.sh: no $LIST" >&2; exit 2; }
command -v python3 >/dev/null || { echo "mutate.sh: needs python3 (it applies the breaks)" >&2; exit 2; }
if [ "${1:-}" = --check ]; then
	shift
	exec python3 scripts/mutations.py check "$LIST" "$@"
fi

start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpuprof-mutate.XXXXXX") || exit 2
chmod 755 "$tmp" # test_setuid runs a program as nobody from the copy's build
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
tree=$tmp/tree
mkdir "$tree" "$tmp/m"
git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null |
	tar -xf - -C "$tree" || exit 2

# The breaks, one directory each: name, claim, file, from, to, tests.
python3 scripts/mutations.py split "$LIST" "$tmp/m" || exit 2

# names the breaks asked for (all if none)
wanted() {
	[ $# -eq 1 ] && return 0
	w=$1
	shift
	for x in "$@"; do [ "$w" = "$x" ] && return 0; done
	return 1
}

# apply FILE FROM TO: replaces the one occurrence of FROM in FILE.
apply() {
	python3 "$ROOT/scripts/mutations.py" apply "$1" "$2" "$3"
}

build() {
	(cd "$tree" && make -s -j"$JOBS" tests bench-build >"$tmp/build.log" 2>&1)
}

# run_tests OUT TESTS...: runs them in the copy (all if ALL=1); OUT gets
# run.sh's output.
run_tests() {
	out=$1
	shift
	if [ "${ALL:-0}" = 1 ]; then
		(cd "$tree" && sh tests/run.sh) >"$out" 2>&1
	else
		(cd "$tree" && sh tests/run.sh "$@") >"$out" 2>&1
	fi
}

echo "# mutate.sh: building a copy of the tree in $tree"
build || { tail -20 "$tmp/build.log"; echo "mutate.sh: the unbroken copy does not build" >&2; exit 1; }
all_tests=
for d in "$tmp"/m/*; do
	wanted "$(cat "$d/name")" "$@" || continue
	all_tests="$all_tests $(cat "$d/tests")"
done
# shellcheck disable=SC2086 # a list of names
run_tests "$tmp/base" $all_tests
if grep -q '^not ok' "$tmp/base"; then
	grep -A30 '^not ok' "$tmp/base"
	echo "mutate.sh: the unbroken tree fails its tests: nothing to learn from the breaks" >&2
	exit 1
fi
echo "# unbroken: $(tail -n 1 "$tmp/base") ($(($(date +%s) - start)) s)"

table=$tmp/table
echo "| break | the claim | caught by | s |" >"$table"
echo "|---|---|---|---:|" >>"$table"
survived=0 total=0
for d in "$tmp"/m/*; do
	name=$(cat "$d/name")
	wanted "$name" "$@" || continue
	total=$((total + 1))
	file=$(cat "$d/file")
	t0=$(date +%s)
	cp "$tree/$file" "$tmp/orig" || exit 2
	if ! why=$(apply "$tree/$file" "$(cat "$d/from")" "$(cat "$d/to")" 2>&1); then
		verdict="DID NOT APPLY: $why"
	elif ! build; then
		verdict="DOES NOT BUILD: $(grep -m1 error "$tmp/build.log")"
	else
		# shellcheck disable=SC2046 # a list of names
		run_tests "$tmp/out" $(cat "$d/tests")
		verdict=$(sed -n 's/^not ok [0-9]* - \([^ ]*\) .*/\1/p' "$tmp/out" | tr '\n' ' ' | sed 's/ $//')
		[ -n "$verdict" ] || verdict="SURVIVED"
	fi
	# Back as it was, newer than what the break built.
	cp "$tmp/orig" "$tree/$file"
	secs=$(($(date +%s) - t0))
	case $verdict in SURVIVED | DID* | DOES*) survived=$((survived + 1)) ;; esac
	echo "$name: $verdict ($secs s)"
	echo "| $name | $(cat "$d/claim") | $verdict | $secs |" >>"$table"
done
echo
cat "$table"
echo
echo "$total breaks, $((total - survived)) caught, $survived not caught, in $(($(date +%s) - start)) s"
[ $survived -eq 0 ]
