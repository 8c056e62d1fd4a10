#!/bin/sh
# deb-src.sh -- as root, gives apt a deb-src line beside each of the
# machine's own deb lines (the same mirrors and suites) when it has none,
# so that `apt-get source` works: tests/e2e/t_lines_lua.sh unpacks lua5.4
# and the benchmark (bench/run.py, build()) zstd.  Does nothing otherwise.
[ "$(id -u)" -eq 0 ] || exit 0
grep -Eqs '^(deb-src |Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/* && exit 0
src=/etc/apt/sources.list.d/cpuprof-deb-src
for f in /etc/apt/sources.list.d/*.sources; do
	[ -e "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f"
done >/tmp/cpuprof-deb-src.$$
[ -s /tmp/cpuprof-deb-src.$$ ] && mv /tmp/cpuprof-deb-src.$$ "$src.sources"
[ -e /etc/apt/sources.list ] && sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/tmp/cpuprof-deb-src.$$
[ -s /tmp/cpuprof-deb-src.$$ ] && mv /tmp/cpuprof-deb-src.$$ "$src.list"
rm -f /tmp/cpuprof-deb-src.$$
apt-get update -qq >&2 || true
