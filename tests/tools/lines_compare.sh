# lines_compare.sh -- sourced by the line tests (t_lines.sh,
# t_lines_lua.sh): a profile's Lines and addr2line's answers for the same
# addresses, both as one line per address, "LINKADDR CHAIN", CHAIN the
# frames innermost first as name@file:line joined by "|", so that the two
# compare with cmp.  Needs TOOLS (the binutils prefix, "" natively) and,
# for profile_chains, ROOT_BIN (the absolute path of the program).

pp() { go tool pprof -symbolize=none "$@" 2>/dev/null; }

# profile_chains PROFILE BINARY: one line per Location of BINARY's mapping:
# "LINKADDR CHAIN", CHAIN the Lines innermost first as name@file:line
# joined by "|", LINKADDR the address in the file's own numbering.
profile_chains() {
	pp -raw "$1" >raw || fail "pprof -raw $1"
	# The executable segment: its address in the file minus its offset.
	delta=$(${TOOLS}readelf -lW "$2" | awk '$1 == "LOAD" && ($7 ~ /E/ || $8 ~ /E/) { print $3 " " $2; exit }')
	set -- $delta
	delta=$(($1 - $2))
	awk -v bin="$ROOT_BIN" '
		/^Mappings/ { maps = 1; locs = 0; next }
		/^Locations/ { locs = 1; next }
		maps && index($0, " " bin " ") { split($1, id, ":"); split($2, r, "/"); print "M " id[1] " " r[1] " " r[3] }
		locs && /^ *[0-9]+: 0x/ { if (cur != "") print cur; cur = "L " $3 " " $2 " " frame(3); next }
		locs && /^        / && cur != "" { cur = cur "|" frame(0); next }
		locs { if (cur != "") print cur; cur = "" }
		END { if (cur != "") print cur }
		# name@file:line of a Lines row: "NAME FILE:LINE s=N[(SYS)]",
		# after skip fields ("ID: ADDR M=ID").
		function frame(skip,   i, n, name, s) {
			n = NF
			while (n > 0 && $n !~ /^s=/) n--
			s = ""
			for (i = skip + 1; i < n - 1; i++) s = s (s == "" ? "" : " ") $i
			if (skip > 0 && $(skip) !~ /^M=/) {
				s = ""
				for (i = skip; i < n - 1; i++) s = s (s == "" ? "" : " ") $i
			}
			return s "@" $(n - 1)
		}' raw >locs
	map=$(awk '$1 == "M" { print $2 " " $3 " " $4; exit }' locs)
	[ -n "$map" ] || { cat raw; fail "no mapping of $ROOT_BIN in $1"; }
	set -- $map
	awk -v m="M=$1" '$1 == "L" && $2 == m' locs | while read -r _ _ addr chain; do
		printf '0x%x %s\n' $((addr - $2 + $3 + delta)) "$chain"
	done
}

# addr2line_chains DEBUGFILE < "LINKADDR ..." lines: "LINKADDR CHAIN" as
# addr2line -f -i prints them.
addr2line_chains() {
	awk '{ print $1 }' | ${TOOLS}addr2line -f -i -a -e "$1" | awk '
		/^0x[0-9a-f]+$/ { if (a != "") print a " " c; a = sprintf("0x%x", 0); a = $0; c = ""; n = 0; next }
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
