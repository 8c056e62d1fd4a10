#!/bin/sh
# t_breaks_apply.sh -- the mutation list follows the code: every break of
# scripts/mutations.txt still applies to the tree (its `from` text once in
# its file, changed by `to`) and names tests that exist
# (`scripts/mutate.sh --check`: no build, no test run, a second or so).
# `make mutate` then finds whether each is caught; this says, on every
# `make check`, when a change has moved the text a break points at.
# First the check is shown a list with one break of each kind it must
# refuse, and must name them all.
cd "$(dirname "$0")/../.." || exit 2
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || skip "python3 (scripts/mutate.sh applies the breaks with it) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_breaks_apply.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
# The first break of the list as it is, then the same break spoilt in
# each way the check must see.
first=$(awk '/^#/ { next } /^$/ { if (n) exit; next } { n++; print }' scripts/mutations.txt)
[ -n "$first" ] || fail "no break in scripts/mutations.txt"
field() { echo "$first" | sed -n "s/^$1: //p"; }
name=$(field name)
from=$(field from)
[ -n "$name" ] && [ -n "$from" ] || fail "the first break has no name or no from"
spoil() { # NEW-NAME SED-EXPRESSION: the first break renamed and changed
	echo "$first" | sed -e "s/^name: .*/name: $1/" -e "$2"
	echo
}
{
	echo "$first"
	echo
	spoil moved 's/^from: /from: moved away /'
	spoil twice 's/^from: .*/from: #include/'
	spoil same "s/^to: .*/to: $(echo "$from" | sed 's/[&/\]/\\&/g')/"
	spoil untested 's/^tests: .*/tests: t_no_such_test.sh/'
	spoil nofile 's|^file: .*|file: src/no_such_file.c|'
	spoil nofrom '/^from: /d'
	echo "$first"
	echo
} >"$tmp/list"
MUTATIONS=$tmp/list sh scripts/mutate.sh --check >"$tmp/out" 2>&1 && { cat "$tmp/out"; fail "the check passed a spoilt list"; }
for b in moved twice same untested nofile nofrom "$name"; do
	grep -q "^$b: " "$tmp/out" || { cat "$tmp/out"; fail "the check did not name the spoilt break $b"; }
done
grep -q "^$name: .*another break has its name" "$tmp/out" || { cat "$tmp/out"; fail "a name given twice passed"; }
echo "a spoilt list: $(grep -c '^[a-z]' "$tmp/out") breaks refused, as they should be"

# The list itself.
sh scripts/mutate.sh --check || fail "breaks of scripts/mutations.txt that no longer apply or name no test (above)"
