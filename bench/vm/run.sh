#!/bin/sh
# run.sh -- the tick-bound VM: boots Debian 12's own kernel under qemu
# with TCG (qemu-system-x86_64, or qemu-system-aarch64 with VM_ARCH=aarch64)
# and `highres=off nohz=off` (every timer, CPU-time timers and hrtimers
# alike, then fires only from the 250 Hz tick: the situation of
# shared/seeds/go-issue-cpu-profiles-bad-signal-accounting.txt), runs the
# requested cells in an initramfs and prints a markdown table of what each
# profiler delivered.
#
#   sh bench/vm/run.sh CELL...
#
# CELL is PROFILER:PATTERN:THREADS:HZ[:CPU_S]
#   PROFILER  perf | hw | timer | itimer | auto  cpuprof record --engine ...
#             gperf                           gperftools' libprofiler.so.0 (LD_PRELOAD)
#             none                            the workload alone
#             probe-MECH                      bench/vm/experiments/probe MECH (itimer, timer,
#                                             perf, hw, sampler-all, sampler-running)
#             ticks                           bench/vm/experiments/ticks (other fields ignored)
#   PATTERN   busy | sleepy (bursts of ~240 us of work, then a 200 us sleep)
#   CPU_S     CPU seconds per worker thread (default $VM_CPU_S, else 1)
# or a named set: @profilers (cpuprof's engines, hw only on aarch64, and
# gperftools, busy and sleepy, 1 and 4 threads, 100 Hz and 1 kHz: 40
# cells, ~15 min; 48 on aarch64),
# @probes (the bare mechanisms of experiments/probe.c on the sleepy
# pattern: 20 cells) or @check (the one cell `make check-vm` runs).
#
# Environment: VM_ARCH (x86_64, the default: qemu-system-x86_64 with Debian's
# amd64 kernel; aarch64: qemu-system-aarch64 -M virt -cpu max with Debian's
# arm64 kernel and the programs cross-built into build-aarch64/, a machine
# whose emulated CPU has a PMU), VM_CACHE (the kernel cache; default ~/.cache/cpuprof-vm),
# VM_TIMEOUT (seconds for the whole boot; default 120 + 90 per cell),
# VM_SMP (2), VM_MEM (1024), VM_ACCEL (tcg), VM_CPU (qemu's -cpu), VM_QEMU_ARGS
# (more qemu arguments), VM_APPEND (more kernel
# arguments), VM_CPU_S, VM_LOG (where the console log goes; default
# build/vm/console.log).  Needs root the first time (it installs
# qemu-system-x86, busybox-static, cpio and google-perftools with
# scripts/deps.sh, and downloads the kernel package with apt-get download).
set -e
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

if [ $# -eq 0 ]; then
	sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
fi

VM_ARCH=${VM_ARCH:-x86_64}
case $VM_ARCH in
x86_64)
	DEBARCH=amd64 QEMU="qemu-system-x86_64" CONSOLE=ttyS0 BUILD=build LIBDIR=/usr/lib/x86_64-linux-gnu
	sh scripts/deps.sh gcc make libc6-dev zlib1g-dev libiberty-dev qemu-system-x86 busybox-static cpio \
		google-perftools libgoogle-perftools4 >&2
	make -s vm-progs >&2 ;;
aarch64)
	# -cpu max: QEMU's emulated Armv8 CPU with a PMU whose cycle counter
	# raises its overflow interrupt on time (a QEMU timer, not the
	# guest's tick).
	DEBARCH=arm64 QEMU="qemu-system-aarch64 -M virt -cpu max" CONSOLE=ttyAMA0 BUILD=build-aarch64
	LIBDIR=/usr/lib/aarch64-linux-gnu
	sh scripts/deps.sh gcc make gcc-aarch64-linux-gnu libc6-dev-arm64-cross zlib1g-dev:arm64 \
		libiberty-dev libiberty-dev:arm64 qemu-system-arm cpio binutils libgoogle-perftools4:arm64 >&2
	make -s ARCH=aarch64 vm-progs >&2 ;;
*)
	echo "run.sh: VM_ARCH=$VM_ARCH: not x86_64 or aarch64" >&2
	exit 2 ;;
esac

# Expands the named sets.  At 100 Hz each worker burns 2 s of CPU, so that
# even one thread should get ~200 samples.
expand() {
	for pat in busy sleepy; do
		for thr in 1 4; do
			for hz in 100 1000; do
				cpus=1
				[ "$hz" -eq 100 ] && cpus=2
				for p in "$@"; do
					echo "$p:$pat:$thr:$hz:$cpus"
				done
			done
		done
	done
}
cells=
for c in "$@"; do
	case $c in
	@profilers)
		# hw needs a PMU: only the aarch64 machine emulates one.
		hw=
		[ "$VM_ARCH" = aarch64 ] && hw=hw
		cells="$cells ticks $(expand perf $hw timer itimer auto gperf)" ;;
	@probes) cells="$cells ticks $(expand probe-itimer probe-timer probe-perf probe-sampler-all probe-sampler-running | grep sleepy)" ;;
	@check) cells="$cells auto:sleepy:2:1000:0.5" ;;
	*) cells="$cells $c" ;;
	esac
done
set -- $cells

CACHE=${VM_CACHE:-$HOME/.cache/cpuprof-vm}
VMB=$ROOT/$BUILD/vm
LOG=${VM_LOG:-$VMB/console.log}
mkdir -p "$CACHE" "$VMB"

# Downloads Debian package $1 (of any architecture) once into the cache and
# prints the directory it is unpacked in.
unpacked() {
	d=$CACHE/deb/$(echo "$1" | tr ':' '_')
	if [ ! -d "$d" ]; then
		tmp=$(mktemp -d)
		chmod 755 "$tmp"
		# Stale package lists name versions the mirror no longer has.
		(cd "$tmp" && { apt-get download "$1" >&2 ||
			{ [ "$(id -u)" -eq 0 ] && apt-get update -qq >&2 && apt-get download "$1" >&2; }; }) ||
			{ rm -rf "$tmp"; return 1; }
		mkdir -p "$tmp/x"
		dpkg-deb -x "$tmp"/*.deb "$tmp/x"
		mkdir -p "$CACHE/deb"
		mv "$tmp/x" "$d"
		rm -rf "$tmp"
	fi
	echo "$d"
}

# --- the kernel: Debian 12's own, the package linux-image-$DEBARCH depends on.
kmeta=linux-image-$DEBARCH
[ "$DEBARCH" = "$(dpkg --print-architecture)" ] || kmeta=$kmeta:$DEBARCH
resolve_kernel() {
	apt-cache depends "$kmeta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }' | sed 's/:.*//'
}
# Fetches kernel package $1 into $CACHE/$1 (vmlinuz and config) unless it
# is there; fails if it cannot be downloaded.
fetch_kernel() {
	[ -s "$CACHE/$1/vmlinuz" ] && return 0
	echo "run.sh: downloading $1 into $CACHE/$1" >&2
	tmp=$(mktemp -d)
	chmod 755 "$tmp"
	if ! (cd "$tmp" && apt-get download "$1:$DEBARCH" >&2); then
		rm -rf "$tmp"
		return 1
	fi
	mkdir -p "$tmp/x" "$CACHE/$1"
	dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp/x" ./boot
	cp "$tmp"/x/boot/vmlinuz-* "$CACHE/$1/vmlinuz.tmp"
	cp "$tmp"/x/boot/config-* "$CACHE/$1/config"
	ls "$tmp"/*.deb | sed 's|.*/||' > "$CACHE/$1/package"
	mv "$CACHE/$1/vmlinuz.tmp" "$CACHE/$1/vmlinuz"
	rm -rf "$tmp"
}
kpkg=$(resolve_kernel)
if [ -n "$kpkg" ] && fetch_kernel "$kpkg"; then
	:
elif [ "$(id -u)" -eq 0 ]; then
	# No package lists, or stale ones: the kernel they name is gone from
	# the mirror.
	apt-get update -qq >&2
	kpkg=$(resolve_kernel)
	[ -n "$kpkg" ] && fetch_kernel "$kpkg" || kpkg=
fi
if [ -z "$kpkg" ] || [ ! -s "$CACHE/$kpkg/vmlinuz" ]; then
	# Offline, or apt knows no kernel: use the newest one already cached.
	kpkg=$(ls -t "$CACHE" 2>/dev/null | grep "^linux-image-.*-$DEBARCH" | head -n 1)
fi
if [ -z "$kpkg" ] || [ ! -s "$CACHE/$kpkg/vmlinuz" ]; then
	echo "run.sh: no Debian kernel for $DEBARCH (apt-cache depends $kmeta, apt-get download) and none cached" >&2
	exit 1
fi
KDIR=$CACHE/$kpkg

# --- the initramfs: busybox, the programs, every shared library they need.
IRD=$VMB/initramfs
rm -rf "$IRD"
mkdir -p "$IRD/bin" "$IRD/proc" "$IRD/sys" "$IRD/dev" "$IRD/tmp" "$IRD/opt/vm" "$IRD/opt/cpuprof"
if [ "$VM_ARCH" = x86_64 ]; then
	cp /bin/busybox "$IRD/bin/busybox"
else
	bb=$(unpacked "busybox-static:$DEBARCH")
	cp "$bb/bin/busybox" "$IRD/bin/busybox"
fi
cp $BUILD/cpuprof $BUILD/libcpuprof.so "$IRD/opt/cpuprof/"
cp "$VMB/vmwork" "$VMB/vmprof" "$VMB/probe" "$VMB/ticks" "$IRD/opt/vm/"
GPERF=$(ls $LIBDIR/libprofiler.so.0 2>/dev/null || true)
# Every shared library the programs need, at its own path, found by the
# NEEDED entries of their dynamic sections (readelf reads any
# architecture's) in the architecture's library directory; and the
# dynamic loader each executable names.
needed() { readelf -d "$@" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u; }
interp=$(readelf -l "$VMB/vmwork" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
todo=$(needed "$IRD"/opt/cpuprof/* "$IRD"/opt/vm/* $GPERF)
libs=
while [ -n "$todo" ]; do
	next=
	for n in $todo; do
		case " $libs " in *" $n "*) continue ;; esac
		libs="$libs $n"
		f=$(ls "$LIBDIR/$n" "/lib/$(basename "$LIBDIR")/$n" 2>/dev/null | head -n 1)
		[ -n "$f" ] || { echo "run.sh: $n: not in $LIBDIR" >&2; exit 1; }
		mkdir -p "$IRD$LIBDIR"
		cp -L "$f" "$IRD$LIBDIR/$n"
		next="$next $(needed "$f")"
	done
	todo=$next
done
[ -z "$GPERF" ] || cp -L "$GPERF" "$IRD$GPERF"
mkdir -p "$IRD$(dirname "$interp")"
cp -L "$interp" "$IRD$interp" 2>/dev/null || cp -L "$LIBDIR/$(basename "$interp")" "$IRD$interp"

: > "$IRD/cells"
for c in "$@"; do
	echo "$c" >> "$IRD/cells"
done
cat > "$IRD/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "=== VMINFO"
echo "kernel $(uname -r)"
echo "cmdline $(cat /proc/cmdline)"
echo "cpus $(grep -c ^processor /proc/cpuinfo)"
grep -E '^ *\.resolution' /proc/timer_list | sort | uniq -c | sed 's/^ */timer_list /'
grep -E 'event_handler' /proc/timer_list | sort | uniq -c | sed 's/^ */timer_list /'
echo "=== END VMINFO"
GPERF=$(ls /usr/lib/*/libprofiler.so.0 2>/dev/null)
# The PMU's overflow interrupts so far, all CPUs (nothing without a PMU).
pmu_irqs() {
	awk '/arm-pmu/ { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s; exit }' /proc/interrupts
}
while read -r cell; do
	IFS=: read -r prof pat thr hz cpus <<CELL
$cell
CELL
	[ -n "$cpus" ] || cpus=${VM_CPU_S:-1}
	args="-t $thr -p $pat -s $cpus"
	echo "=== CELL $cell"
	rm -f /tmp/p.pb.gz /tmp/g.prof /tmp/truth
	t0=$(cut -d' ' -f1 /proc/uptime)
	pmu0=$(pmu_irqs)
	loc0=$(awk '$1 == "LOC:" || /arch_timer/ { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s, i - 2; exit }' /proc/interrupts)
	case $prof in
	none)
		/opt/vm/vmwork $args ;;
	perf|hw|timer|itimer|auto)
		/opt/cpuprof/cpuprof record -o /tmp/p.pb.gz -F "$hz" --engine "$prof" -- /opt/vm/vmwork $args > /tmp/truth
		cat /tmp/truth
		/opt/vm/vmprof /tmp/truth /tmp/p.pb.gz ;;
	gperf)
		CPUPROFILE=/tmp/g.prof CPUPROFILE_FREQUENCY=$hz LD_PRELOAD=$GPERF /opt/vm/vmwork $args > /tmp/truth
		cat /tmp/truth
		/opt/vm/vmprof /tmp/truth /tmp/g.prof ;;
	probe-*)
		/opt/vm/probe "${prof#probe-}" "$hz" $args ;;
	ticks)
		/opt/vm/ticks ;;
	*)
		echo "unknown profiler $prof" ;;
	esac 2>&1
	t1=$(cut -d' ' -f1 /proc/uptime)
	loc1=$(awk '$1 == "LOC:" || /arch_timer/ { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s; exit }' /proc/interrupts)
	echo "cellwall $t0 $t1"
	echo "cellticks $loc0 $loc1"
	echo "cellpmu $pmu0 $(pmu_irqs)"
	echo "=== END CELL"
done < /cells
echo "=== DONE"
poweroff -f
EOF
[ -n "$VM_CPU_S" ] && sed -i "2i export VM_CPU_S=$VM_CPU_S" "$IRD/init"
chmod 755 "$IRD/init"
(cd "$IRD" && find . | cpio -o -H newc 2>/dev/null) | gzip -1 > "$VMB/initrd.gz"

# --- boot.
ncells=$#
TIMEOUT=${VM_TIMEOUT:-$((120 + 90 * ncells))}
# mitigations=off: no page-table isolation, so a system call does not
# flush TCG's software TLB twice; the timers are untouched by it.
# softlockup_panic=1: a guest CPU stuck in the kernel for 20 s panics the
# guest, and panic=-1 with -no-reboot ends qemu, instead of the boot
# waiting out its timeout (bench/vm/check.sh boots again).
APPEND="console=$CONSOLE highres=off nohz=off mitigations=off panic=-1 softlockup_panic=1 quiet ${VM_APPEND:-}"
echo "run.sh: booting $kpkg ($ncells cells, timeout ${TIMEOUT}s)" >&2
start=$(date +%s)
rc=0
timeout "$TIMEOUT" $QEMU -accel "${VM_ACCEL:-tcg}" ${VM_CPU:+-cpu "$VM_CPU"} -smp "${VM_SMP:-2}" -m "${VM_MEM:-1024}" \
	-nographic -no-reboot -kernel "$KDIR/vmlinuz" -initrd "$VMB/initrd.gz" -append "$APPEND" ${VM_QEMU_ARGS:-} \
	< /dev/null 2>&1 | tr -d '\r' > "$LOG" || rc=$?
end=$(date +%s)
echo "run.sh: VM ran $((end - start)) s; console log in $LOG" >&2
if ! grep -q '^=== DONE' "$LOG"; then
	echo "run.sh: the VM did not finish its cells (timeout or crash; exit $rc); see $LOG" >&2
	tail -n 20 "$LOG" >&2
	exit 1
fi
sh bench/vm/table.sh "$LOG"
