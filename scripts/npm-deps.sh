#!/bin/sh
# npm-deps.sh NAME@VERSION... -- makes sure these npm packages are in the
# tests' own npm folder, $CPUPROF_NPM (default
# $HOME/.cache/cpuprof-tests/npm: not under $XDG_CACHE_HOME, which
# tests/run.sh makes anew for each test; the packages in its
# node_modules/), each at its version: installs the missing ones with npm
# from the npm registry (npm comes with NodeSource's nodejs; Debian's
# nodejs needs Debian's npm, which scripts/deps.sh installs).  The folder
# is outside the tree, so that `make clean`, the mutation check's copies
# and every worktree share one download.  Tests find the packages there
# and skip (77) without them.
dir=${CPUPROF_NPM:-$HOME/.cache/cpuprof-tests/npm}
missing=
for p in "$@"; do
	name=${p%@*}
	have=$(cd / && node -p "require('$dir/node_modules/$name/package.json').version" 2>/dev/null)
	[ "$have" = "${p##*@}" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
command -v npm >/dev/null 2>&1 || sh "$(dirname "$0")/deps.sh" npm || exit 1
mkdir -p "$dir" || exit 1
echo "installing in $dir:$missing" >&2
# Saved to $dir/package.json, so that a later install keeps these.
# shellcheck disable=SC2086 # $missing is a list
npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error $missing >&2
