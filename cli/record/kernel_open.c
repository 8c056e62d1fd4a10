/*
 * kernel_open.c -- record's kernel collector (kernel.h): opening the events
 * on CMD before its exec, or attaching them to running processes, with
 * what the kernel allows.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "kernel_int.h"

/* ---- opening ---- */

static void attr_for(const struct cp_kcollector *k, struct perf_event_attr *a, int use_read, int build_id)
{
	cp_perf_sampler_attr(a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, k->period, k->kernel, use_read);
	if (k->kframes)
		cp_perf_kernel_chain_attr(a);
	a->comm_exec = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->build_id = (unsigned)build_id;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(k->ring_pages * 4096u / 4);
}

/* Opens the context-switch event of --off-cpu on pid and cpu, writing
 * into ring_fd's ring (or its own, for a probe: -1), and notes its id: a
 * sample at every switch-out (taken in the kernel, which needs
 * privileges) with the user registers and stack, and the switch records;
 * no side records of its own (the task clock's say what they say once).
 * The fd, or a negative errno. */
static int open_switch(struct cp_kcollector *k, pid_t pid, int cpu, int on_exec, int ring_fd)
{
	struct perf_event_attr a;
	cp_switches_attr(&a);
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(k->ring_pages * 4096u / 4);
	a.disabled = (unsigned)on_exec;
	a.enable_on_exec = (unsigned)on_exec;
	return cp_switches_open(&k->sw, &a, pid, cpu, ring_fd);
}

/* Off-CPU time could not be had after all (an event refused on some task
 * or CPU): what was opened of it is closed, and the profile says why. */
static void off_cpu_fails(struct cp_kcollector *k, int e, const char *what)
{
	cp_perf_fds_close(&k->swfds, 0);
	k->off_cpu = 0;
	snprintf(k->off_why, sizeof k->off_why, "the context-switch event could not be opened on %s: %s", what,
		 strerror(-e));
}

/* --kernel's frames refused with the kernel-mode samples (errno e): the
 * samples are the user's alone, and the profile says which setting
 * refused. */
static void kframes_refused(struct cp_kcollector *k, int e)
{
	if (!k->kframes)
		return;
	k->kframes = 0;
	int par = cp_perf_paranoid();
	if (par >= 2)
		snprintf(k->kframes_why, sizeof k->kframes_why, "kernel.perf_event_paranoid=%d refuses samples in "
			 "kernel mode to this user (root, CAP_PERFMON or perf_event_paranoid <= 1 allows them)", par);
	else
		snprintf(k->kframes_why, sizeof k->kframes_why, "samples in kernel mode were refused (perf_event_open: "
			 "%s), though kernel.perf_event_paranoid=%d allows them: a seccomp filter or a security module",
			 strerror(-e), par);
}

/* With --kernel asked for: the kernel's names, and the samples' chains
 * from the next event opened; where the names cannot be had
 * (kptr_restrict), no chains, and why. */
static void kframes_begin(struct cp_kcollector *k)
{
	if (!k->conf.kframes)
		return;
	if (cp_kallsyms_read(NULL, &k->ksyms, k->kframes_why, sizeof k->kframes_why) == 0)
		k->kframes = 1;
}

const char *cp_kernel_kframes_absent(const struct cp_kcollector *k)
{
	return k->conf.kframes && !k->kframes ? k->kframes_why : NULL;
}

/* Opens an event on pid and cpu with what this kernel and its settings
 * allow, best first: samples in kernel mode too (root, CAP_PERFMON or
 * perf_event_paranoid <= 1: a sample taken in a system call, a page fault
 * or a wake-up carries the user registers and stack of where the thread
 * entered the kernel, so that time is charged to the code that entered
 * it, not to the user code that runs next); PERF_SAMPLE_READ under
 * inherit (Linux 6.12: each sample weighs the CPU since the thread's
 * previous one) and build IDs in the mmap records (5.12).  What it did not
 * take is not tried again; with kernel-mode samples refused, --kernel's
 * chains go too (kframes_refused).  The fd, or a negative errno. */
static int open_tries(struct cp_kcollector *k, pid_t pid, int cpu, int on_exec)
{
	static const int tries[4][2] = { { 1, 1 }, { 1, 0 }, { 0, 1 }, { 0, 0 } };
	struct perf_event_attr a;
	int fd = -EINVAL;
	for (int i = 0; i < 4; i++) {
		if (tries[i][0] > k->use_read || tries[i][1] > k->build_id)
			continue;
		attr_for(k, &a, tries[i][0], tries[i][1]);
		a.disabled = (unsigned)on_exec;
		a.enable_on_exec = (unsigned)on_exec;
		fd = cp_perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if ((fd == -EACCES || fd == -EPERM) && k->kernel) {
			kframes_refused(k, fd);
			k->kernel = 0; /* user mode only, as an unprivileged user may */
			i--;
			continue;
		}
		if (fd >= 0) {
			k->use_read = tries[i][0];
			k->build_id = tries[i][1];
			return fd;
		}
		if (fd != -EINVAL)
			return fd;
	}
	return fd;
}

/* open_tries, and where the first event cannot be had with --kernel's
 * chains for another reason than privileges (a kernel that refuses them),
 * again without them: record never fails for --kernel.  Not after an
 * event was opened with them: one ring's samples have one layout. */
static int open_one(struct cp_kcollector *k, pid_t pid, int cpu, int on_exec)
{
	int fd = open_tries(k, pid, cpu, on_exec);
	if (fd < 0 && k->kframes && k->fds.n == 0 && fd != -ESRCH && fd != -EACCES && fd != -EPERM) {
		k->kframes = 0;
		snprintf(k->kframes_why, sizeof k->kframes_why, "perf_event_open refused the kernel's callchain: %s",
			 strerror(-fd));
		fd = open_tries(k, pid, cpu, on_exec);
	}
	return fd;
}

/* Opens the context-switch event of task pid on ring r's CPU, into it;
 * if it cannot be, off-CPU time is given up (off_cpu_fails). */
static void open_task_switches(struct cp_kcollector *k, pid_t pid, const struct cp_perf_ring *r, int on_exec)
{
	int fd = open_switch(k, pid, r->cpu, on_exec, r->fd);
	if (fd == -ESRCH)
		return; /* the thread ended meanwhile: so did its CPU */
	if (fd >= 0 && cp_perf_fds_keep(&k->swfds, fd) < 0) {
		close(fd);
		fd = -ENOMEM;
	}
	if (fd < 0) {
		char what[64];
		snprintf(what, sizeof what, "task %d, CPU %d", (int)pid, r->cpu);
		off_cpu_fails(k, fd, what);
		return;
	}
}

/* Opens the events of task pid on every CPU, each writing into its CPU's
 * ring.  0 or a negative errno. */
static int open_task(struct cp_kcollector *k, pid_t pid, int on_exec)
{
	int opened = 0, err = 0;
	for (size_t i = 0; i < k->nrings; i++) {
		struct cp_perf_ring *r = &k->rings[i];
		int fd = open_one(k, pid, r->cpu, on_exec);
		if (fd < 0) {
			err = fd;
			if (fd == -ESRCH || fd == -EACCES || fd == -EPERM)
				return fd;
			continue;
		}
		int e = cp_perf_fds_keep(&k->fds, fd);
		if (e == 0)
			e = cp_perf_ring_join(r, fd, &k->ring_pages);
		if (e < 0) {
			cp_perf_fds_drop_last(&k->fds, fd);
			close(fd);
			err = e;
			continue;
		}
		opened++;
		if (k->off_cpu)
			open_task_switches(k, pid, r, on_exec);
	}
	return opened ? 0 : err ? err : -ENODEV;
}

/* The common part of starting: rings, our vDSO, the facts every image
 * starts with. */
static int setup(struct cp_kcollector **out, const struct cp_kernel_conf *c)
{
	struct cp_kcollector *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	k->conf = *c;
	cp_switches_init(&k->sw, kc_off_into_image, k);
	k->off_cpu = c->off_cpu != 0;
	int hz = (int)cp_option_taken(&cp_options[CP_OPT_HZ], c->hz);
	k->period = 1000000000u / (unsigned)hz;
	k->use_read = k->build_id = k->kernel = 1;
	k->bounce_size = CP_PERF_STACK_COPY + 4096;
	k->bounce = malloc(k->bounce_size);
	k->cache = calloc(1, sizeof *k->cache);
	if (!k->bounce || !k->cache || cp_perf_rings(&k->rings, &k->nrings) < 0 ||
	    !(k->marks = calloc(k->nrings ? k->nrings : 1, sizeof *k->marks))) {
		cp_kernel_free(k);
		return -ENOMEM;
	}
	uint64_t want = ((uint64_t)hz * RING_MS / 1000 * (CP_PERF_STACK_COPY + 256) + 4095) / 4096;
	/* A switch-out costs a sample too, at whatever rate the program
	 * switches: the largest rings. */
	if (k->off_cpu)
		want = CP_PERF_RING_PAGES_MAX;
	k->ring_pages = cp_perf_ring_pages(k->nrings, want > UINT32_MAX ? UINT32_MAX : (unsigned)want);
	/* Our vDSO: the same kernel gives every process the same one. */
	struct cp_elf e;
	if (cp_elf_vdso(&k->vdso_lo, &k->vdso_hi) &&
	    cp_elf_open_image(&e, (const void *)k->vdso_lo, k->vdso_hi - k->vdso_lo) == 0)
		snprintf(k->vdso_build_id, sizeof k->vdso_build_id, "%s", e.build_id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	k->wall0_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	k->mono0 = cp_mono_ns();
	struct cp_facts *b = &k->base;
	snprintf(b->engine, sizeof b->engine, "%s", CP_ENGINE_PERF);
	b->hz = hz;
	b->hz_asked = c->hz;
	b->depth = (int32_t)c->depth;
	b->unwind = c->unwind;
	b->period_ns = k->period;
	b->wall0_ns = k->wall0_ns;
	clock_getres(CLOCK_MONOTONIC, &ts);
	b->timer_res_ns = ts.tv_sec * 1000000000l + ts.tv_nsec;
	*out = k;
	return 0;
}

/* What refused an event, and what would allow it, into why[len]. */
static void refused(int e, const char *what, char *why, size_t len)
{
	int par = cp_perf_paranoid();
	if ((e == -EACCES || e == -EPERM) && (par > 2 || par < -1))
		snprintf(why, len, "%s: perf_event_open: %s (perf_event_paranoid=%d; `sysctl kernel.perf_event_paranoid=2`, "
			 "or CAP_PERFMON, would allow it)", what, strerror(-e), par);
	else if (e == -EACCES || e == -EPERM)
		snprintf(why, len, "%s: perf_event_open: %s, though perf_event_paranoid=%d allows it: a seccomp filter, a "
			 "security module or a container's profile refuses it (Docker's default: run with a seccomp profile "
			 "that allows perf_event_open, or CAP_PERFMON)", what, strerror(-e), par);
	else if (e == -ENOSYS)
		snprintf(why, len, "%s: perf_event_open is not available here (ENOSYS: a seccomp filter, an emulator, or a "
			 "kernel without perf events)", what);
	else
		snprintf(why, len, "%s: perf_event_open: %s", what, strerror(-e));
}

int cp_kernel_probe(const struct cp_kernel_conf *c, char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	int fd = open_one(k, 0, k->rings[0].cpu, 1);
	if (fd >= 0)
		close(fd);
	else
		refused(fd, "sampling from outside", why, len);
	cp_kernel_free(k);
	return fd < 0 ? fd : 0;
}

int cp_kernel_pmu(char *why, size_t len)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = cp_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV)
		snprintf(why, len, "no PMU counts CPU cycles here (perf_event_open: %s)", strerror(-fd));
	else
		refused(fd, "the cycles event", why, len);
	return fd;
}

int cp_kernel_probe_off_cpu(const struct cp_kernel_conf *c, char *why, size_t len)
{
	struct cp_kcollector *k;
	struct cp_kernel_conf oc = *c;
	oc.off_cpu = 1;
	int rc = setup(&k, &oc);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	int fd = open_switch(k, 0, k->rings[0].cpu, 1, -1);
	if (fd >= 0)
		close(fd);
	else
		cp_switches_refused(fd, why, len);
	cp_kernel_free(k);
	return fd < 0 ? fd : 0;
}

int cp_kernel_start(struct cp_kcollector **out, const struct cp_kernel_conf *c, pid_t pid, char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc == 0)
		kframes_begin(k);
	if (rc == 0 && (rc = open_task(k, pid, 1)) < 0)
		refused(rc, "the command", why, len);
	else if (rc < 0)
		snprintf(why, len, "out of memory");
	if (rc < 0) {
		cp_kernel_free(k);
		return rc;
	}
	if (!kc_proc_new(k, pid, NULL)) {
		cp_kernel_free(k);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	k->first = pid;
	*out = k;
	return 0;
}

/* ---- attaching ---- */

/* Reads a small file into buf (NUL-terminated).  Bytes read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Process pid as it is now: an image with its program, name and threads'
 * names, and its executable mappings.  0, or a negative errno if its
 * memory map cannot be read (none of its code could be named). */
static int synthesize(struct cp_kcollector *k, pid_t pid)
{
	struct kproc *p = kc_proc_get(k, pid);
	if (!p && !(p = kc_proc_new(k, pid, NULL)))
		return -ENOMEM;
	char path[64], name[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if (read_small(path, name, sizeof name) <= 0)
		name[0] = '\0';
	name[strcspn(name, "\n")] = '\0';
	struct cp_image *m = kc_new_image(k, p, name);
	if (!m)
		return -ENOMEM;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, m->exe, sizeof m->exe - 1);
	m->exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		char tpath[96], tname[64];
		snprintf(tpath, sizeof tpath, "/proc/%d/task/%ld/comm", (int)pid, tid);
		if (read_small(tpath, tname, sizeof tname) > 0) {
			tname[strcspn(tname, "\n")] = '\0';
			kc_name_thread(m, (pid_t)tid, tname);
		}
		struct kthread *t = kc_thread_get(k, (pid_t)tid, pid);
		if (t) {
			t->img = m;
			m->facts.armed += t->tid != pid; /* the first is counted */
		}
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno; /* gone: open_threads says so */
	char line[4096 + 128];
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off, ino;
		unsigned maj, min;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj, &min, &ino, &at) < 7 ||
		    !strchr(perms, 'x'))
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = '\0';
		/* The build ID of the file on disk: what it is now is what we
		 * can read, and kc_file_open checks it is still the one mapped
		 * by its inode.  Anonymous code is a JIT's. */
		kc_code_mapping(k, p, file, "", (uint64_t)maj << 32 | min, ino, lo, hi, off);
	}
	fclose(f);
	return 0;
}

/* The CPU the live threads of processes pids[0..n) have run, by the
 * scheduler's own count (/proc/PID/task/TID/schedstat, ns), and into
 * *switches their context switches (.../status). */
int64_t kc_scheduler_cpu(const pid_t *pids, size_t n, int64_t *switches)
{
	int64_t sum = 0;
	*switches = 0;
	for (size_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/task", (int)pids[i]);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d)) != NULL) {
			char file[320], buf[128];
			if (de->d_name[0] == '.')
				continue;
			snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", (int)pids[i], de->d_name);
			if (read_small(file, buf, sizeof buf) > 0)
				sum += strtoll(buf, NULL, 10);
			char status[16384];
			snprintf(file, sizeof file, "/proc/%d/task/%s/status", (int)pids[i], de->d_name);
			if (read_small(file, status, sizeof status) > 0)
				for (const char *at = status; (at = strstr(at, "_ctxt_switches:")) != NULL; at++)
					*switches += strtoll(at + strlen("_ctxt_switches:"), NULL, 10);
		}
		if (d)
			closedir(d);
	}
	return sum;
}

/* Opens the events on every thread of pid not yet opened, listing its
 * threads again until a pass finds no new one.  0 or a negative errno. */
static int open_threads(struct cp_kcollector *k, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	struct pidmap opened = { 0 };
	int rc = 0, any = 0;
	for (int pass = 0; pass < 100; pass++) {
		DIR *d = opendir(path);
		if (!d)
			return any ? 0 : -ESRCH;
		int found = 0;
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (*end || tid <= 0 || kc_pidmap_get(&opened, (pid_t)tid))
				continue;
			found = 1;
			kc_pidmap_put(&opened, (pid_t)tid, k);
			/* Its life in the profile starts now, on the CPU or
			 * not: its first switch event says which. */
			if (k->off_cpu)
				cp_switches_begin(&k->sw, (pid_t)tid, cp_mono_ns(), 0);
			int e = open_task(k, (pid_t)tid, 0);
			if (e == 0)
				any = 1;
			else if (e != -ESRCH && !rc)
				rc = e;
		}
		closedir(d);
		if (!found)
			break;
	}
	cp_table_free(&opened.t);
	return any ? 0 : rc ? rc : -ESRCH;
}

int cp_kernel_attach(struct cp_kcollector **out, const struct cp_kernel_conf *c, const pid_t *pids, size_t n,
		     char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	kframes_begin(k);
	k->attached = calloc(n ? n : 1, sizeof *k->attached);
	if (!k->attached) {
		cp_kernel_free(k);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char what[64];
		snprintf(what, sizeof what, "process %d", (int)pids[i]);
		/* What it has mapped first: code it maps from now on comes in
		 * the events' records. */
		int maps = synthesize(k, pids[i]);
		/* The scheduler's count as its events open, not before the
		 * map was read: CPU between the two is the scheduler's only. */
		int64_t sw;
		k->sched0 += kc_scheduler_cpu(&pids[i], 1, &sw);
		k->switches0 += sw;
		rc = maps < 0 && maps != -ESRCH ? maps : open_threads(k, pids[i]);
		if (rc == -ESRCH) {
			snprintf(why, len, "process %d: no such process", (int)pids[i]);
		} else if (rc == -EACCES || rc == -EPERM) {
			struct stat st;
			char proc[32];
			snprintf(proc, sizeof proc, "/proc/%d", (int)pids[i]);
			if (stat(proc, &st) == 0 && st.st_uid != geteuid() && geteuid() != 0)
				snprintf(why, len, "process %d belongs to another user (uid %u): profiling it needs root, "
					 "CAP_PERFMON, or CAP_SYS_PTRACE", (int)pids[i], (unsigned)st.st_uid);
			else if (maps < 0)
				snprintf(why, len, "process %d: its memory map (/proc/%d/maps) may not be read here, even by "
					 "this user (another PID namespace, or a security module): none of its code could be "
					 "named", (int)pids[i], (int)pids[i]);
			else
				refused(rc, what, why, len);
		} else if (rc < 0 && maps < 0) {
			snprintf(why, len, "process %d: /proc/%d/maps: %s", (int)pids[i], (int)pids[i], strerror(-rc));
		} else if (rc < 0) {
			refused(rc, what, why, len);
		}
		if (rc < 0) {
			cp_kernel_free(k);
			return rc;
		}
		k->attached[k->nattached++] = pids[i];
	}
	k->first = pids[0];
	*out = k;
	return 0;
}

int cp_kernel_all_ended(const struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->nattached; i++) {
		const struct kproc *p = kc_proc_get(k, k->attached[i]);
		if (p && p->pidfd >= 0) {
			struct pollfd q = { p->pidfd, POLLIN, 0 };
			if (poll(&q, 1, 0) != 1)
				return 0;
		} else if (kill(k->attached[i], 0) == 0) {
			return 0;
		}
	}
	return 1;
}

size_t cp_kernel_pollfds(const struct cp_kcollector *k, struct pollfd *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < k->nrings && n < max; i++)
		if (k->rings[i].page)
			out[n++] = (struct pollfd){ k->rings[i].fd, POLLIN, 0 };
	return n;
}

void cp_kernel_status(struct cp_kcollector *k, pid_t pid, int status, int64_t cpu_ns, int64_t switches)
{
	/* With --every: the switches of its whole life, for its last window
	 * (its threads are gone from /proc). */
	struct kproc *p = kc_proc_get(k, pid);
	if (p && p->clock_end >= 0)
		p->switches_end = switches;
	/* Records of it may still wait in the rings: the image it ended in
	 * is the one it has once they are in. */
	cp_kernel_poll(k);
	cp_perf_queue_flush(&k->queue, UINT64_MAX, kc_handle, k);
	cp_tree_status(&k->tree, pid, status, cpu_ns);
}
