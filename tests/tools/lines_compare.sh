# lines_compare.sh -- sourced by the line and name tests (t_lines.sh,
# t_lines_lua.sh, t_names.sh): a profile's Lines and addr2line's answers
# for the same addresses.  The line tests compare whole chains, one line
# per address, "LINKADDR CHAIN", CHAIN the frames innermost first as
# name@file:line joined by "|", so that the two compare with cmp; the name
# test compares every Line's function name with `addr2line -C -f -i`'s, in
# every object of the profile.  Needs TOOLS (the binutils prefix, ""
# natively) and, for profile_chains, ROOT_BIN (the absolute path of the
# program).

pp() { go tool pprof -symbolize=none "$@" 2>/dev/null; }

# profile_lines PROFILE: every Line of every Location in a mapping of a
# file, one row each into `lines`, tab-separated: "FILE LINKADDR LOCATION K
# NAME FILE:LINE", K counting from 0 at the innermost, LINKADDR (hex) the
# address in the file's own numbering.  pprof's own text (-raw) is kept in
# `raw`.
profile_lines() {
	pp -raw "$1" >raw || fail "pprof -raw $1"
	awk '
		BEGIN { OFS = "\t" }
		/^Mappings/ { maps = 1; locs = 0; next }
		/^Locations/ { locs = 1; next }
		maps && $3 ~ /^\// { split($1, id, ":"); split($2, r, "/"); print "M", id[1], r[1], r[3], $3; next }
		locs && /^ *[0-9]+: 0x/ { loc = $1 + 0; addr = $2; k = 0; if ($3 ~ /^M=/) { m = substr($3, 3); line(3) } else m = ""; next }
		locs && /^        / && m != "" { line(0); next }
		locs { m = "" }
		# A Lines row: "NAME FILE:LINE s=N[(SYS)]", after skip fields
		# ("ID: ADDR M=ID").
		function line(skip,   i, n, name) {
			n = NF
			while (n > 0 && $n !~ /^s=/) n--
			name = ""
			for (i = skip + 1; i < n - 1; i++) name = name (name == "" ? "" : " ") $i
			print "L", m, addr, loc, k++, name, $(n - 1)
		}' raw >lines.parsed
	# Each mapping's addresses to the file's numbering (in the shell:
	# awk's numbers are not all 64-bit), then every Line with its own.
	awk -F '\t' '$1 == "M" { print $2 " " $3 " " $4 " " $5 }' lines.parsed | while read -r id start off file; do
		[ -r "$file" ] || continue
		# The executable segment: its address in the file minus its offset.
		delta=$(${TOOLS}readelf -lW "$file" | awk '$1 == "LOAD" && ($7 ~ /E/ || $8 ~ /E/) { print $3 " " $2; exit }')
		[ -n "$delta" ] || continue
		set -- $delta
		delta=$(($1 - $2 + off - start))
		awk -F '\t' -v id="$id" '$1 == "L" && $2 == id { print $3 }' lines.parsed | sort -u | while read -r addr; do
			printf '%s %s 0x%x\n' "$id" "$addr" $((addr + delta))
		done
		echo "F $id $file"
	done >lines.addrs
	awk -F '\t' '
		BEGIN { OFS = "\t" }
		NR == FNR { split($0, w, " "); if (w[1] == "F") file[w[2]] = substr($0, length(w[1] w[2]) + 3); else link[w[1] SUBSEP w[2]] = w[3]; next }
		$1 == "L" && ($2 SUBSEP $3) in link { print file[$2], link[$2 SUBSEP $3], $4, $5, $6, $7 }' lines.addrs lines.parsed >lines
}

# profile_chains PROFILE BINARY: one line per Location of BINARY's mapping
# (BINARY ROOT_BIN): "LINKADDR CHAIN", CHAIN the Lines innermost first as
# name@file:line joined by "|".
profile_chains() {
	profile_lines "$1"
	grep -q "^M	[0-9]*	[^	]*	[^	]*	$ROOT_BIN\$" lines.parsed || { cat raw; fail "no mapping of $ROOT_BIN in $1"; }
	awk -F '\t' -v bin="$ROOT_BIN" '
		$1 == bin { if ($3 != loc) { if (c != "") print a " " c; loc = $3; a = $2; c = "" }
			    c = c (c == "" ? "" : "|") $5 "@" $6 }
		END { if (c != "") print a " " c }' lines
}

# addr2line_chains DEBUGFILE < "LINKADDR ..." lines: "LINKADDR CHAIN" as
# addr2line -f -i prints them (with -C too if A2L_DEMANGLE is set).
addr2line_chains() {
	awk '{ print $1 }' | ${TOOLS}addr2line ${A2L_DEMANGLE:+-C} -f -i -a -e "$1" | awk '
		/^0x[0-9a-f]+$/ && n % 2 == 0 { if (a != "") print a " " c; a = $0; c = ""; n = 0; next }
		n % 2 == 0 { name = $0; n++; next }
		{ sub(/ \(discriminator [0-9]+\)$/, ""); f = $0
		  # No line known: addr2line may still name the unit.
		  if (f ~ /^\?\?:/ || f ~ /:\?$/) f = ":0"
		  if (name == "??") name = ""
		  c = c (c == "" ? "" : "|") name "@" f; n++ }
		END { if (a != "") print a " " c }' |
		awk '{ a = $1; sub(/^0x0*/, "", a); $1 = "0x" a; print }'
}

# Frames without a source file are named from the symbol table (or as
# BINARY+0xOFFSET, or not at all), where the two may pick other aliases of
# one address: only that such a frame is there is compared.
unnamed() { sed 's/ [^@|]*@:0$/ -@:0/'; }

# names_agreement PROFILE: compares the function name of every Line of
# every Location in a file's mapping with what `addr2line -C -f -i -e FILE
# ADDR` prints at the same level of the inline chain, innermost first.
# Prints "AGREE TOTAL LEFT", TOTAL counting for each Location the longer of
# the two chains less the LEFT out (below), AGREE the levels whose names
# are the same; the differences go to `names.diff` ("FILE LINKADDR K:
# addr2line's | the profile's").  What is documented behaviour is not a
# difference: the profile's names have no symbol versions (addr2line's
# "memcpy@GLIBC_2.2.5" is "memcpy"); an address that neither names is
# agreed on ("??" is the profile's "libx.so+0x1f0" or "0x7f..."); where the
# profile names a function from the symbol table alone (no source line),
# another symbol of the same address is the same function (aliases:
# "__newlocale" is "newlocale"); and an address that no symbol covers (a
# libc without its debug file: .dynsym only) is unnamed in the profile,
# where addr2line names the nearest symbol before it however far: left
# out.  addr2line is asked for every address twice over and its second
# answers taken: binutils 2.40's names for C++ functions without a linkage
# name (internal linkage: static, anonymous namespaces) depend on what it
# was asked before.  An inlined one is named by the symbol of the function
# it is inlined into the first time it is the innermost level asked for,
# by its own name from then on; a function that is not inlined by its own
# name as a caller until it has been asked for as the innermost level, by
# its symbol from then on.
names_agreement() {
	profile_lines "$1"
	: >names.ref
	: >names.diff
	: >names.syms
	cut -f1 lines | sort -u | while read -r file; do
		awk -F '\t' -v f="$file" '$1 == f { print $2 }' lines | sort -u >names.addrs
		cat names.addrs names.addrs | ${TOOLS}addr2line -C -f -i -a -e "$file" | awk -v f="$file" '
			BEGIN { OFS = "\t" }
			/^0x[0-9a-f]+$/ && n % 2 == 0 { a = $0; sub(/^0x0*/, "", a); a = "0x" a; k = 0; n = 0; again = seen[a]++; next }
			n % 2 == 0 { if (again) print f, a, k, $0; k++; n++; next }
			{ n++ }' >>names.ref
		# The file's symbols, for aliases: "FILE ADDR NAME".
		{ ${TOOLS}nm -C --defined-only "$file"; ${TOOLS}nm -C -D --defined-only "$file"; } 2>/dev/null |
			awk -v f="$file" 'BEGIN { OFS = "\t" } $2 ~ /^[TtWwi]$/ { a = $1; $1 = $2 = ""; sub(/^  /, ""); sub(/@.*/, ""); print f, a, $0 }' >>names.syms
	done
	awk -F '\t' '
		function norm(s) {
			if (s == "??" || s ~ /^[^ ]*\+0x[0-9a-f]+$/ || s ~ /^0x[0-9a-f]+$/) return "??"
			sub(/@.*/, "", s)
			return s
		}
		FILENAME == "names.syms" { sym[$1 SUBSEP $3] = $2; next }
		FILENAME == "names.ref" { ref[$1 SUBSEP $2 SUBSEP $3] = norm($4); if ($3 + 1 > nref[$1 SUBSEP $2]) nref[$1 SUBSEP $2] = $3 + 1; next }
		{ key = $1 SUBSEP $2; loc = $1 SUBSEP $3
		  if (!(loc in seen)) { seen[loc] = key; order[++nloc] = loc }
		  ours[loc SUBSEP $4] = norm($5); fromsym[loc SUBSEP $4] = $6 ~ /^:0$/
		  if ($4 + 1 > nours[loc]) nours[loc] = $4 + 1 }
		END {
			for (i = 1; i <= nloc; i++) {
				loc = order[i]; key = seen[loc]
				n = nours[loc] > nref[key] ? nours[loc] : nref[key]
				split(key, fa, SUBSEP)
				for (k = 0; k < n; k++) {
					o = (loc SUBSEP k) in ours ? ours[loc SUBSEP k] : "(none)"
					r = (key SUBSEP k) in ref ? ref[key SUBSEP k] : "(none)"
					if (fromsym[loc SUBSEP k] && o == "??" && r != "(none)") { left++; continue }
					total++
					if (o == r || (fromsym[loc SUBSEP k] && (fa[1] SUBSEP o) in sym && (fa[1] SUBSEP r) in sym &&
						       sym[fa[1] SUBSEP o] == sym[fa[1] SUBSEP r]))
						agree++
					else
						print fa[1] " " fa[2] " " k ": " r " | " o >"names.diff"
				}
			}
			printf "%d %d %d\n", agree, total, left
		}' names.syms names.ref lines
}
