#!/bin/sh
# t_lines_lua.sh -- a real program: Lua 5.4 from Debian's source package
# (apt-get source lua5.4, kept in $B/ext/), built -O2 -g, runs a script
# that calls C functions from Lua in a loop.  Its profile must show the
# functions GCC inlined into the interpreter, as perf does (precallC
# inside luaD_precall, issue 13), and at every sampled address of lua the
# profile's Lines must agree with addr2line -f -i.  Skips when the source
# cannot be had (no deb-src line: scripts/test.sh adds one).
B=${B:-build}
ARCH=${ARCH:-$(uname -m)}
ROOT=$(pwd -P)
CP=$ROOT/$B/cpuprof

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] || fail "build first (make tests)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
if [ -n "$EMU" ]; then
	CC=$ARCH-linux-gnu-gcc
	TOOLS=$ARCH-linux-gnu-
else
	CC=${CC:-cc}
	TOOLS=
fi
for t in "$CC" ${TOOLS}addr2line ${TOOLS}readelf; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
done
[ -e "/usr/lib/$ARCH-linux-gnu/libdw.so.1" ] || [ -e "/lib/$ARCH-linux-gnu/libdw.so.1" ] ||
	skip "libdw.so.1 for $ARCH is not installed (libdw1)"

# The source, once.
ext=$ROOT/$B/ext
src=$(ls -d "$ext"/lua5.4-*/src 2>/dev/null | head -1)
if [ -z "$src" ]; then
	command -v dpkg-source >/dev/null 2>&1 || skip "dpkg-source is not installed (dpkg-dev)"
	mkdir -p "$ext" || fail "mkdir $ext"
	(cd "$ext" && apt-get source -qq lua5.4 >"$ext/fetch.log" 2>&1) ||
		skip "apt-get source lua5.4 failed (no deb-src line?): $(tail -1 "$ext/fetch.log")"
	src=$(ls -d "$ext"/lua5.4-*/src 2>/dev/null | head -1)
	[ -n "$src" ] || fail "apt-get source lua5.4 gave no src/"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_lines_lua.XXXXXX") || fail mktemp
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps it for a look
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none
# shellcheck source=tests/tools/lines_compare.sh
. "$ROOT/tests/tools/lines_compare.sh"

# As Debian builds it (-O2 -g, LUA_USE_LINUX, the header its rules
# generate), in one program.
echo "#define DEB_HOST_MULTIARCH \"$ARCH-linux-gnu\"" >lua5.4-deb-multiarch.h
srcs=$(ls "$src"/*.c | grep -v '/luac\.c$')
# shellcheck disable=SC2086
"$CC" -O2 -g -I. -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -o lua $srcs -lm -ldl || fail "building lua"

cat >calls.lua <<'EOF'
-- C functions called from Lua, and plain Lua work.
local byte, sub, floor = string.byte, string.sub, math.floor
local s, str = 0, "abcdefghijklmnopqrstuvwxyz"
for i = 1, 1500000 do
	s = s + byte(str, i % 26 + 1) + floor(i / 7) % 3 + #sub(str, 1, i % 5)
end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 200000 do t[i] = tostring(i) end
table.sort(t)
print("lua done", s, fib(24), #t)
EOF
$EMU "$CP" record -o lua.pb.gz -F 2000 -- $EMU ./lua calls.lua >out 2>err || { cat err; fail "record lua"; }
grep -q "^lua done" out || fail "lua's output changed"

ROOT_BIN=$tmp/lua
profile_chains lua.pb.gz lua | unnamed | sort >ours
addr2line_chains lua <ours | unnamed | sort >ref
n=$(wc -l <ours)
[ "$n" -ge 50 ] || fail "only $n sampled addresses in lua"
if ! cmp -s ours ref; then
	diff ref ours | head -20
	fail "$(diff ref ours | grep -c '^<') of $n sampled addresses of lua differ from addr2line (< addr2line, > profile)"
fi
echo "lua: $n sampled addresses agree with addr2line, $(grep -c '|' ours) of them inlined"

# The inlined C-call path of the interpreter, where perf shows it.
grep -q ' precallC@[^|]*ldo\.c:[0-9]*|luaD_precall@[^|]*ldo\.c:' ours ||
	{ grep precall ours; fail "no Location with precallC inlined in luaD_precall"; }
pp -top lua.pb.gz | sed -n '/flat%/,$p' >top
grep -q ' precallC (inline)$' top || { cat top; fail "-top: precallC (inline) missing"; }
pp -list '^precallC$' lua.pb.gz >list
grep -q 'ROUTINE =* precallC in .*ldo\.c' list && grep -q 'n = (\*f)(L);' list ||
	{ cat list; fail "-list precallC: not its source"; }
echo "lua: precallC is inlined in luaD_precall and pprof lists its source"
