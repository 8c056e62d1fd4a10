#!/bin/sh
# table.sh LOG -- turns the tick-bound VM's console log (written by
# bench/vm/run.sh) into markdown: the VM's facts (kernel, command line,
# timer resolution), a table of the profiler cells, a table of the probe
# cells and the ticks experiment's lines.
#
# Columns: samples and the number expected (hz x CPU seconds); coverage
# (profile CPU / process CPU; for probes: samples weighed by the thread CPU
# clock, in brackets with each thread's CPU after its last sample added,
# and weighed by their nominal period: 1 period, 1 + overruns, perf count);
# attributed = the part of coverage in sampled stacks (not in cpuprof's
# "[unsampled: ...]", "[lost]" or "[profiler: ...]" frames); err = the largest |profile share -
# true share| of a leaf in percentage points; err/leaves the same among
# the leaves only; outside leaves = the CPU outside the three leaves (system
# calls, mostly the sleep's), truly and in the profile (for probes, also the
# part found inside the sleep call);
# EINTR = sleeps the program saw cut short; wall = the cell's wall seconds;
# ticks/s = local timer interrupts per second per CPU during the cell (250
# when the emulation keeps up; fewer when the host starves the VM); PMU
# irqs = the PMU's overflow interrupts during the cell, all CPUs (aarch64;
# "-" where the VM has no PMU): each is a hw engine's sample.
set -e
[ $# -eq 1 ] || { echo "usage: table.sh CONSOLE_LOG" >&2; exit 2; }
awk '
function kv(line, key,    n, i, a, p) {
	n = split(line, a, " ")
	for (i = 1; i <= n; i++) {
		p = index(a[i], "=")
		if (p && substr(a[i], 1, p - 1) == key)
			return substr(a[i], p + 1)
	}
	return ""
}
{ gsub(/\033\[[?0-9;]*[a-zA-Z]/, ""); gsub(/\033c/, "") }
/^=== VMINFO/ { info = 1; next }
/^=== END VMINFO/ { info = 0; next }
info { vminfo[++nv] = $0; next }
/^=== CELL / { cell = $3; truth = judged = probe = comments = tps = ""; pmu = "-"; next }
/^truth / { truth = $0; next }
/^judged / { judged = $0; next }
/^probe / { probe = $0; next }
/^comment / {
	c = substr($0, 9)
	if (c ~ /^(engine|engine_reason|coverage|unarmed_threads)=/)
		comments = comments (comments ? "; " : "") c
	else if (c ~ /^warning=/) {
		w = ""
		if (c ~ /covers only/) w = w (w ? ", " : "") "low coverage"
		if (c ~ /were lost/) w = w (w ? ", " : "") "lost samples"
		if (c ~ / samples where /) w = w (w ? ", " : "") "few samples"
		if (c ~ /between waits/) w = w (w ? ", " : "") "runs shorter than the tick"
		if (c ~ /spent in the kernel/) w = w (w ? ", " : "") "kernel time (hw)"
		if (c ~ /in no function/) w = w (w ? ", " : "") "unsampled CPU"
		comments = comments (comments ? "; " : "") "warns: " w
	}
	next
}
/^ticks / { ticks[++nt] = substr($0, 7); next }
/^cellwall / { wall = sprintf("%.1f", $3 - $2); wallf = $3 - $2; next }
/^cellticks / { tps = ($2 != "" && $4 != "" && wallf > 0 && $3 > 0) ? sprintf("%.0f", ($4 - $2) / $3 / wallf) : "?"; next }
/^cellpmu / { if (NF == 3) pmu = $3 - $2; next }
/^=== END CELL/ {
	split(cell, f, ":")
	prof = f[1]; pat = f[2]; thr = f[3]; hz = f[4]
	if (prof == "ticks")
		next
	# The CPU before main() (exec, the dynamic loader: slow under TCG,
	# which charges code translation to the guest) is for no profiler to see.
	pns = kv(truth, "process_ns") - kv(truth, "main_ns")
	eintr = kv(truth, "eintr") "/" kv(truth, "sleeps")
	if (probe != "") {
		if (kv(probe, "unavailable") != "") {
			prow[++np] = sprintf("| %s | %s | %s | %s | unavailable (errno %s) | | | | | | | | | | |", substr(prof, 7), pat, thr, hz, kv(probe, "unavailable"))
			next
		}
		extra = ""
		if (kv(probe, "wakes") != "")
			extra = sprintf("wakes/s %s, caught running %s of %s signalled, sampler CPU %s%%, %s ns/look", kv(probe, "wakes_per_s"), kv(probe, "caught_running"), kv(probe, "signalled"), kv(probe, "sampler_cpu_pct"), kv(probe, "ns_per_look"))
		prow[++np] = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", substr(prof, 7), pat, thr, hz, kv(probe, "signals"), kv(probe, "expected"), kv(probe, "cov_clock") " (" kv(probe, "cov_flushed") ")", kv(probe, "cov_nominal"), kv(probe, "err_pp"), kv(probe, "err_leaves_pp"), sprintf("%.0f / %.0f (%.0f)", kv(probe, "outside_true_pct"), kv(probe, "outside_prof_pct"), kv(probe, "sleep_pct")), kv(probe, "eintr") "/" kv(probe, "sleeps"), wall, tps, extra)
		next
	}
	if (prof == "none") {
		row[++nr] = sprintf("| none | %s | %s | - | - | - | - | - | - | - | - | %s | %s | %s | %s | CPU %.2f s |", pat, thr, eintr, wall, tps, pmu, pns / 1e9)
		next
	}
	if (judged == "") {
		row[++nr] = sprintf("| %s | %s | %s | %s | no profile | | | | | | | %s | %s | %s | %s | |", prof, pat, thr, hz, eintr, wall, tps, pmu)
		next
	}
	expect = sprintf("%.0f", hz * pns / 1e9)
	row[++nr] = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", prof, pat, thr, hz, kv(judged, "samples"), expect, kv(judged, "coverage"), kv(judged, "attributed"), kv(judged, "err_pp"), kv(judged, "err_leaves_pp"), sprintf("%.0f / %.0f", kv(judged, "other_true_pp"), kv(judged, "other_prof_pp")), eintr, wall, tps, pmu, comments)
	next
}
END {
	for (i = 1; i <= nv; i++)
		print "    " vminfo[i]
	print ""
	if (nr) {
		print "| profiler | pattern | threads | Hz | samples | expected | coverage | attributed | err pp | err/leaves pp | outside leaves %: true / profile | EINTR | wall s | ticks/s | PMU irqs | profile says |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= nr; i++)
			print row[i]
		print ""
	}
	if (np) {
		print "| probe | pattern | threads | Hz | signals | expected | coverage: CPU clock (+ tail) | coverage: nominal | err pp | err/leaves pp | outside leaves %: true / profile (in sleep) | EINTR | wall s | ticks/s | sampler |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= np; i++)
			print prow[i]
		print ""
	}
	for (i = 1; i <= nt; i++)
		print "    " ticks[i]
}
' "$1"
