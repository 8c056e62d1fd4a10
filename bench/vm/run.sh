#!/bin/sh
# run.sh -- the tick-bound VM: boots Debian 12's own kernel under
# qemu-system-x86_64 with TCG and `highres=off nohz=off` (every timer,
# CPU-time timers and hrtimers alike, then fires only from the 250 Hz
# tick: the situation of shared/seeds/go-issue-cpu-profiles-bad-signal-
# accounting.txt), runs the requested cells in an initramfs and prints
# a markdown table of what each profiler delivered.
#
#   sh bench/vm/run.sh CELL...
#
# CELL is PROFILER:PATTERN:THREADS:HZ[:CPU_S]
#   PROFILER  perf | timer | itimer | auto    cpuprof record --engine ...
#             gperf                           gperftools' libprofiler.so.0 (LD_PRELOAD)
#             none                            the workload alone
#             probe-MECH                      bench/vm/experiments/probe MECH (itimer, timer,
#                                             perf, hw, sampler-all, sampler-running)
#             ticks                           bench/vm/experiments/ticks (other fields ignored)
#   PATTERN   busy | sleepy (bursts of ~240 us of work, then a 200 us sleep)
#   CPU_S     CPU seconds per worker thread (default $VM_CPU_S, else 1)
# or a named set: @profilers (cpuprof's four engines and gperftools, busy
# and sleepy, 1 and 4 threads, 100 Hz and 1 kHz: 40 cells, ~10 min),
# @probes (the bare mechanisms of experiments/probe.c on the sleepy
# pattern: 20 cells) or @check (the one cell `make check-vm` runs).
#
# Environment: VM_CACHE (the kernel cache; default ~/.cache/cpuprof-vm),
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

sh scripts/deps.sh gcc make libc6-dev zlib1g-dev qemu-system-x86 busybox-static cpio \
	google-perftools libgoogle-perftools4 >&2
make -s vm-progs >&2

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
	@profilers) cells="$cells ticks $(expand perf timer itimer auto gperf)" ;;
	@probes) cells="$cells ticks $(expand probe-itimer probe-timer probe-perf probe-sampler-all probe-sampler-running | grep sleepy)" ;;
	@check) cells="$cells auto:sleepy:2:1000:0.5" ;;
	*) cells="$cells $c" ;;
	esac
done
set -- $cells

CACHE=${VM_CACHE:-$HOME/.cache/cpuprof-vm}
VMB=$ROOT/build/vm
LOG=${VM_LOG:-$VMB/console.log}
mkdir -p "$CACHE" "$VMB"

# --- the kernel: Debian 12's own, the package linux-image-amd64 depends on.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$kpkg" ] && [ "$(id -u)" -eq 0 ] && ! ls "$CACHE"/*/vmlinuz >/dev/null 2>&1; then
	apt-get update -qq >&2
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
fi
if [ -z "$kpkg" ]; then
	# Offline, or apt knows no kernel: use the newest one already cached.
	kpkg=$(ls -t "$CACHE" 2>/dev/null | grep '^linux-image-' | head -n 1)
fi
if [ -z "$kpkg" ]; then
	echo "run.sh: no Debian kernel package known (apt-cache depends linux-image-amd64 failed) and none cached" >&2
	exit 1
fi
KDIR=$CACHE/$kpkg
if [ ! -s "$KDIR/vmlinuz" ]; then
	echo "run.sh: downloading $kpkg into $KDIR" >&2
	tmp=$(mktemp -d)
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get download "$kpkg" >&2)
	mkdir -p "$tmp/x"
	dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp/x" ./boot
	mkdir -p "$KDIR"
	cp "$tmp"/x/boot/vmlinuz-* "$KDIR/vmlinuz.tmp"
	cp "$tmp"/x/boot/config-* "$KDIR/config"
	ls "$tmp"/*.deb | sed 's|.*/||' > "$KDIR/package"
	mv "$KDIR/vmlinuz.tmp" "$KDIR/vmlinuz"
	rm -rf "$tmp"
fi

# --- the initramfs: busybox, the programs, every shared library they need.
IRD=$VMB/initramfs
rm -rf "$IRD"
mkdir -p "$IRD/bin" "$IRD/proc" "$IRD/sys" "$IRD/dev" "$IRD/tmp" "$IRD/opt/vm" "$IRD/opt/cpuprof"
cp /bin/busybox "$IRD/bin/busybox"
cp build/cpuprof build/libcpuprof.so "$IRD/opt/cpuprof/"
cp "$VMB/vmwork" "$VMB/vmprof" "$VMB/probe" "$VMB/ticks" "$IRD/opt/vm/"
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
libs=$( (for f in "$IRD"/opt/cpuprof/* "$IRD"/opt/vm/* $GPERF; do ldd "$f" 2>/dev/null; done) |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
for l in $libs $GPERF; do
	mkdir -p "$IRD$(dirname "$l")"
	cp -L "$l" "$IRD$l"
done
# The dynamic loader's path is fixed in every executable.
[ -e "$IRD/lib64/ld-linux-x86-64.so.2" ] || { mkdir -p "$IRD/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$IRD/lib64/"; }

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
GPERF=/usr/lib/x86_64-linux-gnu/libprofiler.so.0
while read -r cell; do
	IFS=: read -r prof pat thr hz cpus <<CELL
$cell
CELL
	[ -n "$cpus" ] || cpus=${VM_CPU_S:-1}
	args="-t $thr -p $pat -s $cpus"
	echo "=== CELL $cell"
	rm -f /tmp/p.pb.gz /tmp/g.prof /tmp/truth
	t0=$(cut -d' ' -f1 /proc/uptime)
	loc0=$(awk '$1 == "LOC:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s, i - 2 }' /proc/interrupts)
	case $prof in
	none)
		/opt/vm/vmwork $args ;;
	perf|timer|itimer|auto)
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
	loc1=$(awk '$1 == "LOC:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
	echo "cellwall $t0 $t1"
	echo "cellticks $loc0 $loc1"
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
APPEND="console=ttyS0 highres=off nohz=off mitigations=off panic=-1 quiet ${VM_APPEND:-}"
echo "run.sh: booting $kpkg ($ncells cells, timeout ${TIMEOUT}s)" >&2
start=$(date +%s)
rc=0
timeout "$TIMEOUT" qemu-system-x86_64 -accel "${VM_ACCEL:-tcg}" ${VM_CPU:+-cpu "$VM_CPU"} -smp "${VM_SMP:-2}" -m "${VM_MEM:-1024}" \
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
