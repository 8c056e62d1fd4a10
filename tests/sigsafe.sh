#!/bin/sh
# sigsafe.sh OBJ... -- the objects under src/sig/ run in signal context: the
# only outside functions they may call are these async-signal-safe system
# call wrappers.  Anything else (malloc, stdio, locks, dl*, __tls_get_addr,
# even memcpy) fails the build's check.
allowed='__errno_location read write syscall clock_gettime mmap munmap _GLOBAL_OFFSET_TABLE_'
defined=$(nm --defined-only "$@" | awk 'NF == 3 { print $3 }' | sort -u)
bad=0
for sym in $(nm -u "$@" | awk 'NF == 2 { print $2 }' | sort -u); do
	case " $allowed " in *" $sym "*) continue ;; esac
	echo "$defined" | grep -qx "$sym" && continue
	echo "sigsafe: signal-context code calls $sym" >&2
	bad=1
done
[ $bad -eq 0 ] && echo "sigsafe: src/sig calls only: $allowed"
exit $bad
