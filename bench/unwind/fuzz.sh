#!/bin/sh
# fuzz.sh [ITERATIONS [SEED]] -- builds the .eh_frame parser with
# AddressSanitizer and UndefinedBehaviorSanitizer and runs fuzz_ehframe on
# mutated copies of libc's, the loader's and libm's .eh_frame.  By hand,
# not in CI: it takes minutes.
set -e
cd "$(dirname "$0")/../.."
ARCH=$(uname -m)
O=build/fuzz
mkdir -p $O
SAN="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
${CC:-cc} $SAN -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -Isrc/arch/$ARCH -o $O/fuzz_ehframe \
	bench/unwind/fuzz_ehframe.c src/unwind/ehframe.c src/unwind/encode.c src/sig/unwind_dwarf.c src/sig/state.c \
	src/sig/stack.c src/sig/walk.c src/sig/ring.c src/sig/unwind_fp.c
L=/lib/$ARCH-linux-gnu
$O/fuzz_ehframe "${1:-100000}" "${2:-1}" $L/libc.so.6 $L/libm.so.6 $(ls /lib64/ld-linux-*.so.* 2>/dev/null | head -1)
