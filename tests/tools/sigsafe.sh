#!/bin/sh
# sigsafe.sh OBJ... -- the objects under src/sig/ (and the gperftools
# drop-in's compat/gperftools/sig/) run in signal context: the
# only outside functions they may call are these async-signal-safe system
# call wrappers.  Anything else (malloc, stdio, locks, dl*, __tls_get_addr,
# even memcpy) fails the build's check.
# On aarch64, gcc turns C11 atomics into calls to libgcc's outline-atomics
# helpers (__aarch64_cas8_acq_rel, __aarch64_ldadd4_relax, ...): each is
# one LSE instruction or an exclusive load/store loop, with no lock and no
# state but a flag set at start-up, so they are as safe as the inline
# atomics they stand for.
# NM names the nm to use (a cross build's objects need its own binutils).
NM=${NM:-nm}
allowed='__errno_location read write syscall clock_gettime mmap munmap _GLOBAL_OFFSET_TABLE_'
outline_atomic() {
	case $1 in
	__aarch64_cas[0-9]*_* | __aarch64_swp[0-9]*_* | __aarch64_ldadd[0-9]*_* | \
	__aarch64_ldclr[0-9]*_* | __aarch64_ldeor[0-9]*_* | __aarch64_ldset[0-9]*_*) return 0 ;;
	esac
	return 1
}
atomics=
defined=$($NM --defined-only "$@" | awk 'NF == 3 { print $3 }' | sort -u)
bad=0
for sym in $($NM -u "$@" | awk 'NF == 2 { print $2 }' | sort -u); do
	case " $allowed " in *" $sym "*) continue ;; esac
	outline_atomic "$sym" && { atomics=" and libgcc's outline atomics"; continue; }
	echo "$defined" | grep -qx "$sym" && continue
	echo "sigsafe: signal-context code calls $sym" >&2
	bad=1
done
# What the objects are, for the message: build/src/sig/x.o is src/sig.
what=$(dirname "$1" | sed 's|^[^/]*/||')
[ $bad -eq 0 ] && echo "sigsafe: $what calls only: $allowed${atomics:-}"
exit $bad
