/*
 * probe.c -- bare sampling mechanisms measured against the workload's
 * ground truth, in process, without cpuprof: what each mechanism delivers
 * (signals against hz x CPU seconds), how much of the CPU its samples
 * account for when each is weighed by its nominal period and when each is
 * weighed by the thread CPU clock read in the handler, where the samples
 * land (by the interrupted PC: a leaf, the sleep call, elsewhere), and
 * whether the program's sleeps were cut short (EINTR).
 *
 *   probe MECH HZ [workload options, see workload.h]
 *
 * MECH is one of
 *   itimer          setitimer(ITIMER_PROF), process-wide
 *   timer           timer_create on each worker's CPU clock (weight 1 + overruns)
 *   perf            perf task-clock per worker (weight: the event's count)
 *   hw              perf PERF_COUNT_HW_CPU_CYCLES per worker (period: cycles of 1/HZ at 1 GHz)
 *   sampler-all     a sampler thread wakes at HZ, reads each worker's CPU clock and
 *                   signals (tgkill) every worker that used CPU since its last look
 *   sampler-running the same, but signals only a worker whose CPU clock advances
 *                   between two reads (it is on a CPU now); others keep their debt
 * PROBE_PIN=CPU pins the sampler thread; PROBE_PERF_KERNEL=1 opens the perf
 * events without exclude_kernel (privileged where perf_event_paranoid >= 2).  Prints the workload's truth lines
 * and one "probe key=value..." line.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../workload.h"

enum mech { M_ITIMER, M_TIMER, M_PERF, M_HW, M_SAMPLER_ALL, M_SAMPLER_RUNNING };
static const char *const mech_name[] = { "itimer", "timer", "perf", "hw", "sampler-all", "sampler-running" };

/* Where a sample landed: the three leaves, the sleep call, anything else. */
enum { B_SLEEP = WL_LEAVES, B_OTHER, NBUCKETS };

struct worker {
	_Atomic pid_t tid; /* 0 until the worker starts, -1 after it ends */
	clockid_t cpu_clock;
	int perf_fd;
	timer_t timer;
	int has_timer;
	uint64_t last_cpu;   /* handler: the thread's CPU at its previous sample */
	uint64_t perf_last;  /* handler: the perf event's count at its previous sample */
	uint64_t seen_cpu;   /* sampler: the worker's CPU when the sampler last signalled it */
	uint64_t end_cpu;    /* the worker's CPU when it ended */
	_Atomic uint64_t signals, nominal_ns, clock_ns;
	_Atomic uint64_t bucket_ns[NBUCKETS], bucket_n[NBUCKETS];
};

static struct worker W[WL_MAX_THREADS];
static __thread struct worker *self;
static enum mech M;
static uint64_t period_ns;
static _Atomic uint64_t unowned; /* signals that found no worker (main or sampler thread) */
static _Atomic int sampler_quit;
static struct {
	uint64_t wakes, looks, signalled, running_seen, debt_left;
	uint64_t cpu_ns, wall_ns, oversleep_ns;
} S;

/* The clock c, in nanoseconds. */
static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Signal context: one sample, weighed both ways and put in its bucket. */
static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	struct worker *w = self;
	(void)sig;
	if (!w) {
		atomic_fetch_add(&unowned, 1);
		errno = saved;
		return;
	}
	uint64_t nominal = period_ns;
	if (M == M_TIMER)
		nominal = (1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0)) * period_ns;
	else if (M == M_PERF || M == M_HW) {
		uint64_t v;
		if (w->perf_fd >= 0 && read(w->perf_fd, &v, sizeof v) == (ssize_t)sizeof v) {
			nominal = M == M_PERF ? v - w->perf_last : period_ns;
			w->perf_last = v;
		}
	}
	uint64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t weight = cpu - w->last_cpu;
	w->last_cpu = cpu;

	const ucontext_t *uc = ucv;
#if defined(__aarch64__)
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#endif
	int b = wl_leaf_of(pc);
	if (b < 0)
		b = wl_in_sleep ? B_SLEEP : B_OTHER;
	atomic_fetch_add(&w->signals, 1);
	atomic_fetch_add(&w->nominal_ns, nominal);
	atomic_fetch_add(&w->clock_ns, weight);
	atomic_fetch_add(&w->bucket_ns[b], weight);
	atomic_fetch_add(&w->bucket_n[b], 1);
	errno = saved;
}

/* Opens the perf event of the perf or hw mechanism on thread tid,
 * disabled; returns the fd or -1 with errno set. */
static int open_perf(pid_t tid, int hw)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	a.config = hw ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns; /* ns of task clock, or cycles at 1 GHz */
	a.disabled = 1;
	a.exclude_kernel = getenv("PROBE_PERF_KERNEL") ? 0 : 1; /* 0 needs perf_event_paranoid <= 1 */
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Arms the per-thread mechanisms on the worker itself, at its start. */
static void worker_start(int i)
{
	struct worker *w = &W[i];
	pid_t tid = (pid_t)syscall(SYS_gettid);
	w->perf_fd = -1;
	pthread_getcpuclockid(pthread_self(), &w->cpu_clock);
	w->last_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w->seen_cpu = w->last_cpu;
	self = w;
	if (M == M_TIMER) {
		struct sigevent ev;
		memset(&ev, 0, sizeof ev);
		ev.sigev_notify = SIGEV_THREAD_ID;
		ev.sigev_signo = SIGPROF;
		ev._sigev_un._tid = tid;
		struct itimerspec its = { { 0, (long)period_ns }, { 0, (long)period_ns } };
		if (period_ns >= 1000000000u)
			its.it_interval = its.it_value = (struct timespec){ 1, 0 };
		if (timer_create(w->cpu_clock, &ev, &w->timer) < 0 || timer_settime(w->timer, 0, &its, NULL) < 0) {
			perror("probe: timer_create");
			exit(1);
		}
		w->has_timer = 1;
	} else if (M == M_PERF || M == M_HW) {
		int fd = open_perf(tid, M == M_HW);
		if (fd < 0) {
			fprintf(stderr, "probe: perf_event_open(%s): %s\n", M == M_HW ? "cycles" : "task-clock",
				strerror(errno));
			printf("probe mech=%s unavailable=%d\n", mech_name[M], errno);
			exit(0);
		}
		struct f_owner_ex o = { F_OWNER_TID, tid };
		if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
		    fcntl(fd, F_SETOWN_EX, &o) < 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
			perror("probe: perf fd setup");
			exit(1);
		}
		w->perf_fd = fd;
	}
	atomic_store(&w->tid, tid);
}

/* Disarms the worker's mechanism and notes its final CPU time. */
static void worker_end(int i)
{
	struct worker *w = &W[i];
	if (w->has_timer)
		timer_delete(w->timer);
	if (w->perf_fd >= 0)
		ioctl(w->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
	atomic_store(&w->tid, -1);
	w->end_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Reads clock c (another thread's CPU clock); *ok says whether it worked. */
static uint64_t clock_of(clockid_t c, int *ok)
{
	struct timespec ts;
	*ok = clock_gettime(c, &ts) == 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The sampler thread: wakes every period (as the kernel's timers allow),
 * looks at every live worker's CPU clock and signals those that used CPU
 * since the sampler last signalled them (sampler-running: only those on a
 * CPU right now). */
static void *sampler_main(void *arg)
{
	int nthreads = *(int *)arg;
	const char *pin = getenv("PROBE_PIN");
	if (pin) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(pin), &set);
		sched_setaffinity(0, sizeof set, &set);
	}
	struct timespec nap = { (time_t)(period_ns / 1000000000u), (long)(period_ns % 1000000000u) };
	uint64_t wall0 = now_ns(CLOCK_MONOTONIC);
	while (!atomic_load(&sampler_quit)) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		uint64_t slept = now_ns(CLOCK_MONOTONIC) - t0;
		S.oversleep_ns += slept > period_ns ? slept - period_ns : 0;
		S.wakes++;
		for (int i = 0; i < nthreads; i++) {
			struct worker *w = &W[i];
			pid_t tid = atomic_load(&w->tid);
			if (tid <= 0)
				continue;
			int ok;
			uint64_t c = clock_of(w->cpu_clock, &ok);
			S.looks++;
			if (!ok || c <= w->seen_cpu)
				continue;
			if (M == M_SAMPLER_RUNNING) {
				uint64_t c2 = clock_of(w->cpu_clock, &ok);
				if (!ok || c2 == c)
					continue; /* not on a CPU now: keep the debt for later */
				S.running_seen++;
			}
			w->seen_cpu = c;
			if (syscall(SYS_tgkill, getpid(), tid, SIGPROF) == 0)
				S.signalled++;
		}
	}
	S.wall_ns = now_ns(CLOCK_MONOTONIC) - wall0;
	S.cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: probe itimer|timer|perf|hw|sampler-all|sampler-running HZ [workload options]\n");
		return 2;
	}
	int found = 0;
	for (size_t i = 0; i < sizeof mech_name / sizeof mech_name[0]; i++)
		if (strcmp(argv[1], mech_name[i]) == 0)
			M = (enum mech)i, found = 1;
	int hz = atoi(argv[2]);
	if (!found || hz < 1 || hz > 100000) {
		fprintf(stderr, "probe: bad mechanism or rate\n");
		return 2;
	}
	period_ns = 1000000000u / (unsigned)hz;
	argv[2] = argv[0];
	struct wl_config c;
	if (wl_parse(argc - 2, argv + 2, &c) < 0)
		return 2;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	wl_thread_start = worker_start;
	wl_thread_end = worker_end;

	pthread_t sampler;
	int nthreads = c.threads;
	if (M == M_SAMPLER_ALL || M == M_SAMPLER_RUNNING)
		pthread_create(&sampler, NULL, sampler_main, &nthreads);
	if (M == M_ITIMER) {
		struct itimerval it = { { 0, (long)(period_ns / 1000) }, { 0, (long)(period_ns / 1000) } };
		setitimer(ITIMER_PROF, &it, NULL);
	}
	struct wl_result r;
	wl_run(&c, &r);
	if (M == M_ITIMER) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_PROF, &off, NULL);
	}
	if (M == M_SAMPLER_ALL || M == M_SAMPLER_RUNNING) {
		atomic_store(&sampler_quit, 1);
		pthread_join(sampler, NULL);
	}
	wl_print(stdout, &c, &r);

	uint64_t signals = 0, nominal = 0, clockw = 0, tail = 0, bns[NBUCKETS] = { 0 }, bn[NBUCKETS] = { 0 };
	for (int i = 0; i < c.threads; i++) {
		struct worker *w = &W[i];
		signals += w->signals;
		nominal += w->nominal_ns;
		clockw += w->clock_ns;
		tail += w->end_cpu - w->last_cpu;
		for (int b = 0; b < NBUCKETS; b++)
			bns[b] += w->bucket_ns[b], bn[b] += w->bucket_n[b];
	}
	/* Only the workers are armed: judge against their CPU, without the
	 * main thread's calibration. */
	r.leaf_ns[0] -= r.calib_ns;
	double proc = (double)r.threads_ns, expected = (double)r.threads_ns * hz / 1e9;
	double err = 0, err_leaves = 0, err_cnt = 0, leaf_sum_true = 0, leaf_sum_prof = 0;
	for (int i = 0; i < WL_LEAVES; i++)
		leaf_sum_true += (double)r.leaf_ns[i], leaf_sum_prof += (double)bns[i];
	/* cov_flushed: as if each worker's CPU after its last sample were
	 * added when it ends (what a profiler can do at disarm). */
	printf("probe mech=%s hz=%d signals=%llu expected=%.0f delivered=%.3f unowned=%llu cov_nominal=%.3f "
	       "cov_clock=%.3f tail_pct=%.1f cov_flushed=%.3f",
	       mech_name[M], hz, (unsigned long long)signals, expected, signals / expected,
	       (unsigned long long)atomic_load(&unowned), nominal / proc, clockw / proc, 100.0 * tail / proc,
	       (double)(clockw + tail) / proc);
	for (int i = 0; i < WL_LEAVES; i++) {
		double share = clockw ? 100.0 * bns[i] / clockw : 0, truth = 100.0 * r.leaf_ns[i] / proc;
		double share_l = leaf_sum_prof ? 100.0 * bns[i] / leaf_sum_prof : 0;
		double truth_l = 100.0 * r.leaf_ns[i] / leaf_sum_true;
		if (share - truth > err || truth - share > err)
			err = share > truth ? share - truth : truth - share;
		if (share_l - truth_l > err_leaves || truth_l - share_l > err_leaves)
			err_leaves = share_l > truth_l ? share_l - truth_l : truth_l - share_l;
		/* The same with every sample counted once, whatever its weight. */
		double share_c = signals ? 100.0 * bn[i] / signals : 0;
		if (share_c - truth > err_cnt || truth - share_c > err_cnt)
			err_cnt = share_c > truth ? share_c - truth : truth - share_c;
		printf(" %s=%.1f/%.1f", wl_leaf_name[i], share, truth);
	}
	printf(" outside_true_pct=%.1f outside_prof_pct=%.1f", 100.0 - 100.0 * leaf_sum_true / proc,
	       clockw ? 100.0 - 100.0 * leaf_sum_prof / clockw : 0);
	printf(" err_pp=%.1f err_leaves_pp=%.1f err_count_pp=%.1f sleep_pct=%.1f other_pct=%.1f sleep_samples=%llu eintr=%llu "
	       "sleeps=%llu",
	       clockw ? err : 100.0, leaf_sum_prof ? err_leaves : 100.0, signals ? err_cnt : 100.0, clockw ? 100.0 * bns[B_SLEEP] / clockw : 0,
	       clockw ? 100.0 * bns[B_OTHER] / clockw : 0, (unsigned long long)bn[B_SLEEP],
	       (unsigned long long)r.eintr, (unsigned long long)r.sleeps);
	if (M == M_SAMPLER_ALL || M == M_SAMPLER_RUNNING)
		printf(" wakes=%llu wakes_per_s=%.0f looks=%llu signalled=%llu caught_running=%llu sampler_cpu_pct=%.2f "
		       "ns_per_look=%.0f oversleep_us=%.0f",
		       (unsigned long long)S.wakes, S.wakes * 1e9 / (double)S.wall_ns, (unsigned long long)S.looks,
		       (unsigned long long)S.signalled, (unsigned long long)S.running_seen,
		       100.0 * S.cpu_ns / (double)S.wall_ns, S.looks ? (double)S.cpu_ns / S.looks : 0,
		       S.wakes ? S.oversleep_ns / 1000.0 / S.wakes : 0);
	printf("\n");
	return 0;
}
