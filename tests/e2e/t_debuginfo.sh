#!/bin/sh
# t_debuginfo.sh -- debug information wherever users' binaries ship it.
# tests/work/work_inline.c is built -O2 -g, kept whole as the reference,
# and shipped in each of the forms below (a "cell"); each form is profiled
# under `cpuprof record` and under LD_PRELOAD=libcpuprof.so (the program
# writes its own profile), and the profile's names and lines at every
# sampled address of the program are compared with what `addr2line -f -i`
# says on the unstripped binary:
#   buildid        stripped (strip --strip-all), its debug file under
#                  DEBUGROOT/.build-id/xx/rest.debug
#   buildid_zlib   the same, the debug file's sections zlib-compressed
#   link           stripped, its debug file beside it by .gnu_debuglink
#   link_zlib      the same, zlib-compressed, in .debug/ beside it
#   link_root      the same, under DEBUGROOT/<the binary's directory>/
#   split_dwo      -gsplit-dwarf: the units in a .dwo beside the objects
#                  (the reference built without: binutils 2.40 reads no
#                  inline chain from split DWARF 5)
#   split_dwp      -gdwarf-4 -gsplit-dwarf packed by dwp into a .dwp (the
#                  .dwo files gone): libdw reads .dwp from elfutils 0.191
#                  on, cpuprof unpacks it for an older one (Debian 12's
#                  0.188)
#   split_dwp_bad  the same, the .dwp cut in half: names, no lines, and a
#                  comment saying why
#   zstd           its own DWARF zstd-compressed (objcopy
#                  --compress-debug-sections=zstd: GCC 12 has no -gz=zstd)
#   buildid_zstd   stripped, its zstd-compressed debug file by build ID
#   minidebug      stripped, with Fedora's MiniDebugInfo: an xz-compressed
#                  ELF of its function symbols in .gnu_debugdata (made as
#                  find-debuginfo does); names only, no lines
# A lines cell must give every sampled address the chain addr2line gives
# (function, file, line, innermost first, as t_lines.sh), and the mapping
# must say it has lines.  Every cell: the function names of at least 95% of
# the sampled weight in the program agree with addr2line (a names-only cell
# with the outermost function of addr2line's chain: the symbol's).
# DEBUGROOT is a directory of the test's, given to the test build
# ($B/hooks/) by CPUPROF_TEST_DEBUG_ROOT: the machine's /usr/lib/debug is
# never touched.  A cell whose tool is missing (dwp, xz, zstd support in
# objcopy) is skipped with its reason; the test skips as a whole only when
# every cell did.  CELLS picks a subset.
B=${B:-build}
ARCH=${ARCH:-$(uname -m)}
ROOT=$(pwd -P)
CP=$ROOT/$B/hooks/cpuprof
LIB=$ROOT/$B/hooks/libcpuprof.so
SRC=$ROOT/tests/work/work_inline.c
CELLS=${CELLS:-buildid buildid_zlib link link_zlib link_root split_dwo split_dwp split_dwp_bad zstd buildid_zstd minidebug}
MIN=0.95

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*" >&2; exit 77; }
[ -x "$CP" ] && [ -e "$LIB" ] || fail "build first (make tests)"
[ -z "$EMU" ] || skip "the forms of debug information are the same under emulation (t_lines.sh runs there)"
command -v go >/dev/null 2>&1 || skip "go (go tool pprof) is not installed"
CC=${CC:-cc}
for t in "$CC" addr2line objcopy readelf strip nm; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (binutils)"
done
libdw_found() {
	for d in /lib/$ARCH-linux-gnu /usr/lib/$ARCH-linux-gnu /lib64 /usr/lib64; do
		[ -e "$d/libdw.so.1" ] && return 0
	done
	return 1
}
libdw_found || skip "libdw.so.1 is not installed (libdw1)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_debuginfo.XXXXXX") || fail mktemp
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps it for a look
cd "$tmp" || fail "cd $tmp"
export PPROF_TMPDIR=$tmp PPROF_BINARY_PATH=$tmp/none
# Nothing kept from other runs (or this one's other cells: each cell's
# binary is its own build, but one build ID shared by several cells).
export XDG_CACHE_HOME=$tmp/cache
DEBUGROOT=$tmp/debug
export CPUPROF_TEST_DEBUG_ROOT=$DEBUGROOT
TOOLS=
# shellcheck source=tests/tools/lines_compare.sh
. "$ROOT/tests/tools/lines_compare.sh"

cp "$SRC" work_inline.c
# build OUT CELL FLAGS...: the program, with a symbol naming the cell that
# makes each cell's build ID its own (no cell finds another's debug file).
build() {
	out=$1 c=$2
	shift 2
	printf 'const char *cell_tag = "%s";\n' "$c" >tag_$c.c
	"$CC" -O2 -g "$@" -o "$out" work_inline.c tag_$c.c || fail "build $out ($*)"
}
build_id() { readelf -n "$1" | sed -n "s/^ *Build ID: *//p" | head -n 1; }
# as_buildid DEBUGFILE BINARY: installs DEBUGFILE as BINARY's, by its build ID.
as_buildid() {
	id=$(build_id "$2")
	[ -n "$id" ] || fail "$2 has no build ID"
	mkdir -p "$DEBUGROOT/.build-id/$(echo "$id" | cut -c1-2)" || fail mkdir
	mv "$1" "$DEBUGROOT/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" || fail "install $1"
}

# same_code A B: A's code is B's, byte for byte (the reference of a cell
# built another way).
same_code() {
	objcopy -O binary --only-section=.text "$1" "$1.text" && objcopy -O binary --only-section=.text "$2" "$2.text" &&
		cmp -s "$1.text" "$2.text" || fail "$1 and $2 have different code"
}

# Each cell makes ./wi_CELL (what is run) and ./ref_CELL (the reference,
# unstripped), and says "lines" or "names"; a cell that cannot be made
# here says "skip: REASON".
make_cell() {
	c=$1
	case $c in
	buildid | buildid_zlib | buildid_zstd)
		build ref_$c $c
		objcopy --only-keep-debug ref_$c dbg_$c || fail "$c: objcopy --only-keep-debug"
		case $c in
		*_zlib) objcopy --compress-debug-sections=zlib dbg_$c || fail "$c: objcopy zlib" ;;
		*_zstd) objcopy --compress-debug-sections=zstd dbg_$c 2>/dev/null ||
			{ echo "skip: objcopy cannot compress with zstd"; return; } ;;
		esac
		strip --strip-all -o wi_$c ref_$c || fail "$c: strip"
		as_buildid dbg_$c wi_$c
		echo lines ;;
	link | link_zlib | link_root)
		build ref_$c $c
		case $c in
		link) dir=. ;;
		link_zlib) dir=.debug ;;
		link_root) dir=$DEBUGROOT$tmp ;;
		esac
		mkdir -p "$dir" || fail mkdir
		objcopy --only-keep-debug ref_$c wi_$c.debug || fail "$c: objcopy --only-keep-debug"
		[ $c = link_zlib ] && { objcopy --compress-debug-sections=zlib wi_$c.debug || fail "$c: objcopy zlib"; }
		strip --strip-all -o wi_$c ref_$c || fail "$c: strip"
		objcopy --add-gnu-debuglink=wi_$c.debug wi_$c || fail "$c: --add-gnu-debuglink"
		[ "$dir" = . ] || mv wi_$c.debug "$dir/" || fail "$c: mv"
		echo lines ;;
	split_dwo)
		build wi_$c $c -gsplit-dwarf
		ls wi_$c-*.dwo >/dev/null 2>&1 || fail "$c: no .dwo from -gsplit-dwarf"
		# binutils 2.40's addr2line reads no inline chain from split
		# DWARF 5: the reference is the same code built without it.
		build ref_$c $c
		same_code ref_$c wi_$c
		echo lines ;;
	split_dwp)
		command -v dwp >/dev/null 2>&1 || { echo "skip: dwp is not installed (binutils)"; return; }
		# binutils 2.40's dwp packs DWARF 4's split units (it crashes on 5's).
		build wi_$c $c -gdwarf-4 -gsplit-dwarf
		dwp -e wi_$c -o wi_$c.dwp 2>/dev/null || { echo "skip: dwp cannot pack $c"; return; }
		build ref_$c $c -gdwarf-4
		same_code ref_$c wi_$c
		# The profile must read the .dwp, without the .dwo (cpuprof
		# unpacks it where libdw reads no .dwp: before elfutils 0.191).
		rm -f wi_$c-*.dwo
		echo lines ;;
	split_dwp_bad)
		# A damaged package (its second half gone): names, no lines, and
		# the comment says why; never a crash.
		command -v dwp >/dev/null 2>&1 || { echo "skip: dwp is not installed (binutils)"; return; }
		build wi_$c $c -gdwarf-4 -gsplit-dwarf
		dwp -e wi_$c -o wi_$c.dwp 2>/dev/null || { echo "skip: dwp cannot pack $c"; return; }
		build ref_$c $c -gdwarf-4
		same_code ref_$c wi_$c
		rm -f wi_$c-*.dwo
		head -c $(($(wc -c <wi_$c.dwp) / 2)) wi_$c.dwp >dwp.half && mv dwp.half wi_$c.dwp
		echo dwp_bad ;;
	zstd)
		build ref_$c $c
		cp ref_$c wi_$c
		objcopy --compress-debug-sections=zstd wi_$c 2>/dev/null ||
			{ echo "skip: objcopy cannot compress with zstd"; return; }
		echo lines ;;
	minidebug)
		command -v xz >/dev/null 2>&1 || { echo "skip: xz is not installed (xz-utils)"; return; }
		build ref_$c $c
		# As Fedora's find-debuginfo does (add_minidebug): the function
		# symbols not already in .dynsym, from the debug file, in an ELF
		# stripped of all else, xz-compressed into the stripped binary.
		objcopy --only-keep-debug ref_$c mini.full || fail "$c: objcopy --only-keep-debug"
		nm -D ref_$c --format=posix --defined-only | awk '{ print $1 }' | sort >mini.dynsyms
		nm mini.full --format=sysv --defined-only | awk -F '|' '{ if ($4 ~ "FUNC") print $1 }' |
			sed 's/ *$//' | sort >mini.funcsyms
		comm -13 mini.dynsyms mini.funcsyms >mini.keep
		grep -qx hot_mix mini.keep || fail "$c: hot_mix is not among the symbols kept"
		objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=mini.keep \
			mini.full mini.debug || fail "$c: objcopy -S"
		xz -f mini.debug || fail "$c: xz"
		strip --strip-all -o wi_$c ref_$c || fail "$c: strip"
		objcopy --add-section .gnu_debugdata=mini.debug.xz wi_$c || fail "$c: --add-section"
		echo names ;;
	*)
		fail "no cell $c" ;;
	esac
}

# profile PATH CELL: runs ./wi_CELL under PATH into PATH-CELL.pb.gz.
profile() {
	out=$1-$2.pb.gz
	case $1 in
	record) "$CP" record -o "$out" -F 2000 -- "./wi_$2" 3 >out 2>err ;;
	preload) LD_PRELOAD=$LIB CPUPROF=$tmp/$out CPUPROF_HZ=2000 "./wi_$2" 3 >out 2>err ;;
	esac || { cat err; fail "$1 $2: status $?"; }
	grep -qx "work_inline done" out || { cat out err; fail "$1 $2: the program's output changed"; }
	[ -s "$out" ] || { cat err; fail "$1 $2: no profile"; }
}

# check PATH CELL KIND: the profile PATH-CELL.pb.gz against addr2line on
# ./ref_CELL.
check() {
	path=$1 c=$2 ck=$3 p=$1-$2.pb.gz
	ROOT_BIN=$tmp/wi_$c
	profile_chains "$p" "wi_$c" | unnamed | sort >"$path-$c.ours"
	if [ "$ck" = dwp_bad ]; then
		grep -q "lines_missing=$ROOT_BIN: .*not found, nor in its DWARF package: wi_$c.dwp" raw ||
			{ grep lines raw; fail "$path $c: no comment saying the .dwp could not be read"; }
		echo "$path $c: no lines: $(sed -n "s|.*lines_missing=$ROOT_BIN: ||p" raw)"
		ck=names
	fi
	n=$(wc -l <"$path-$c.ours")
	[ "$n" -ge 8 ] || { cat raw; fail "$path $c: only $n sampled addresses in the program"; }
	# Names, by sampled weight: the profile's chain of names at each
	# Location of the program against addr2line's (for a names-only
	# cell, its one name against addr2line's outermost).
	awk '/^Samples:/ { s = 1; next } /^[A-Z][a-z]+:/ { s = 0 }
	     s && /^ *[0-9]+ +[0-9]+: / { c = $1; for (i = 3; i <= NF; i++) w[$i] += c }
	     END { for (k in w) print k, w[k] }' raw | sort >"$path-$c.weights"
	awk -F '\t' -v bin="$ROOT_BIN" '$1 == bin { print $2 }' lines | sort -u >"$path-$c.addrs"
	addr2line -f -i -a -e "ref_$c" <"$path-$c.addrs" | awk '
		/^0x[0-9a-f]+$/ && n % 2 == 0 { a = $0; sub(/^0x0*/, "", a); a = "0x" a; n = 0; next }
		n % 2 == 0 { if (a in name) name[a] = name[a] "|" $0; else name[a] = $0; n++; next }
		{ n++ }
		END { for (a in name) print a, name[a] }' >"$path-$c.refnames"
	awk -F '\t' -v bin="$ROOT_BIN" -v kind="$ck" '
		FILENAME ~ /refnames$/ { split($0, f, " "); ref[f[1]] = f[2]; next }
		FILENAME ~ /weights$/ { split($0, f, " "); w[f[1]] = f[2]; next }
		$1 == bin { if ($3 in ours) ours[$3] = ours[$3] "|" $5; else ours[$3] = $5; addr[$3] = $2 }
		END {
			for (l in ours) {
				r = ref[addr[l]]
				if (kind == "names") sub(/.*\|/, "", r)
				total += w[l]
				if (ours[l] == r) agree += w[l]
				else print "differs: " addr[l] " (" w[l] " samples): addr2line " r " | profile " ours[l] >"/dev/stderr"
			}
			printf "%d %d\n", agree, total
		}' "$path-$c.refnames" "$path-$c.weights" lines >"$path-$c.agree" 2>"$path-$c.differs"
	read -r agree total <"$path-$c.agree"
	[ "$total" -ge 50 ] || { cat raw; fail "$path $c: only $total samples in the program"; }
	ratio=$(awk -v a="$agree" -v t="$total" 'BEGIN { printf "%.3f", a / t }')
	head -5 "$path-$c.differs"
	awk -v r="$ratio" -v m=$MIN 'BEGIN { exit !(r < m) }' &&
		fail "$path $c: names agree with addr2line for $ratio of the sampled weight < $MIN"
	grep -q '	hot_mix	' lines || fail "$path $c: hot_mix is not named"
	if [ "$ck" = lines ]; then
		addr2line_chains "ref_$c" <"$path-$c.ours" | unnamed | sort >"$path-$c.ref"
		if ! cmp -s "$path-$c.ours" "$path-$c.ref"; then
			diff "$path-$c.ref" "$path-$c.ours" | head -20
			pp -raw "$p" | grep '^Comment: lines'
			fail "$path $c: the profile's lines differ from addr2line's on the unstripped binary (< addr2line, > profile)"
		fi
		grep -Eq ' (mix|step|fold)@[^|]*work_inline.c:[0-9]+\|' "$path-$c.ours" ||
			{ cat "$path-$c.ours"; fail "$path $c: no inlined function in the profile"; }
		grep -q "$ROOT_BIN [0-9a-f]* \[FN\]\[FL\]\[LN\]\[IN\]" raw ||
			{ grep "$ROOT_BIN" raw; fail "$path $c: the mapping does not say it has lines"; }
		echo "$path $c: $n sampled addresses agree with addr2line -f -i on the unstripped binary; names $agree of $total samples ($ratio)"
	else
		grep -q "^ *[0-9]*: 0x[0-9a-f]* M=[0-9]* hot_mix .*work_inline.c" raw &&
			fail "$path $c: hot_mix has a source file: lines from where?"
		echo "$path $c: names of $agree of $total samples ($ratio) agree with addr2line's functions on the unstripped binary"
	fi
}

ran=0
skipped=
for c in $CELLS; do
	kind=$(make_cell "$c") || exit 1
	case $kind in
	skip:*)
		echo "$c: $kind"
		skipped="$skipped $c"
		continue ;;
	esac
	for path in record preload; do
		profile $path "$c"
		check $path "$c" "$kind"
	done
	# A compressed debug file is inflated once, by record's reader, and
	# kept inflated (debugcopy.c): the preloaded run's lines above came
	# from that copy.
	case $c in
	*_zlib | *zstd)
		ls "$XDG_CACHE_HOME/cpuprof/inflated/$(build_id "wi_$c" 2>/dev/null || build_id "ref_$c")"-* >/dev/null 2>&1 ||
			{ ls -la "$XDG_CACHE_HOME/cpuprof/inflated"; fail "$c: no inflated copy of its debug file kept"; } ;;
	esac
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || skip "every cell skipped:$skipped"
echo "all debug information checks passed ($ran cells${skipped:+; skipped:$skipped})"
