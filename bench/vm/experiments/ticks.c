/*
 * ticks.c -- what the kernel's timers can do here, measured: the clocks'
 * resolution (clock_getres), how long a 100 us sleep really takes, the
 * phase of each CPU's tick (threads pinned to each CPU sleep 100 us in a
 * loop and note when they wake, modulo the tick period: a tick-bound
 * kernel wakes them at its tick only, so the phases cluster), whether
 * hardware perf events open at all, and whether the RTC's periodic
 * interrupt (/dev/rtc0) or the HPET's (/dev/hpet, 64 Hz: the most an
 * unprivileged reader may ask for) wakes a reader off the tick, and what a
 * sampler thread's basic steps cost.
 *
 *   ticks [ROUNDS]     prints "ticks key=value ..." lines
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/hpet.h>
#include <linux/perf_event.h>
#include <linux/rtc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 8

static int rounds = 300;
static double tick_ns = 4e6;

/* CLOCK_MONOTONIC in nanoseconds. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Circular mean and resultant length (1: all the same phase, 0: spread
 * evenly) of times modulo the tick. */
static void phase_stats(const uint64_t *t, int n, double *mean_us, double *r)
{
	double c = 0, s = 0;
	for (int i = 0; i < n; i++) {
		double a = 2 * M_PI * fmod((double)t[i], tick_ns) / tick_ns;
		c += cos(a);
		s += sin(a);
	}
	c /= n;
	s /= n;
	double a = atan2(s, c);
	if (a < 0)
		a += 2 * M_PI;
	*mean_us = a / (2 * M_PI) * tick_ns / 1000.0;
	*r = sqrt(c * c + s * s);
}

struct pinned {
	int cpu;
	uint64_t *wake;
	pthread_barrier_t *go;
};

/* Pinned to its CPU, sleeps 100 us `rounds` times and notes each wake-up. */
static void *sleeper(void *arg)
{
	struct pinned *p = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(p->cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
	pthread_barrier_wait(p->go);
	struct timespec nap = { 0, 100000 };
	for (int i = 0; i < rounds; i++) {
		nanosleep(&nap, NULL);
		p->wake[i] = mono_ns();
	}
	return NULL;
}

/* qsort() order for uint64_t. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Tries to open a sampling perf event on this thread: "ok" or the errno's
 * name (in a static buffer). */
static const char *perf_try(uint32_t type, uint64_t config)
{
	static char buf[64];
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	a.sample_period = 1000000;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0) {
		close(fd);
		return "ok";
	}
	snprintf(buf, sizeof buf, "%s", strerrorname_np(errno) ? strerrorname_np(errno) : "error");
	return buf;
}

/* Spins until told to stop: a thread whose CPU clock another reads. */
static volatile int spin_stop;
static void *spinner(void *arg)
{
	(void)arg;
	while (!spin_stop)
		;
	return NULL;
}

/* What a sampler thread pays: CPU per read of another thread's CPU clock
 * (the thread running, and asleep), per tgkill of a thread that ignores
 * the signal, and per wake-up from a 1 ms clock_nanosleep. */
static void sampler_cost(void)
{
	pthread_t th;
	clockid_t cid;
	struct timespec ts;
	const int n = 20000;
	pthread_create(&th, NULL, spinner, NULL);
	pthread_getcpuclockid(th, &cid);
	uint64_t c0 = 0, c1;
	struct timespec a;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	c0 = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
	for (int i = 0; i < n; i++)
		clock_gettime(cid, &ts);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	c1 = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
	double running = (double)(c1 - c0) / n;
	spin_stop = 1;
	pthread_join(th, NULL);

	clockid_t self_cid;
	pthread_getcpuclockid(pthread_self(), &self_cid);
	c0 = c1;
	for (int i = 0; i < n; i++)
		clock_gettime(self_cid, &ts);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	c1 = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
	double own = (double)(c1 - c0) / n;

	signal(SIGURG, SIG_IGN);
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	c0 = c1;
	for (int i = 0; i < n; i++)
		syscall(SYS_tgkill, pid, tid, SIGURG);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	c1 = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
	double kill = (double)(c1 - c0) / n;

	const int wakes = 200;
	struct timespec nap = { 0, 1000000 };
	c0 = c1;
	for (int i = 0; i < wakes; i++)
		clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	c1 = (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
	printf("ticks cost_read_running_thread_clock_ns=%.0f cost_read_own_clock_ns=%.0f cost_tgkill_ns=%.0f "
	       "cost_wake_ns=%.0f\n", running, own, kill, (double)(c1 - c0) / wakes);
}

/* Reads the RTC's periodic interrupt at 1024 Hz; prints how its wake-ups
 * fall against the tick. */
static void rtc_probe(void)
{
	int fd = open("/dev/rtc0", O_RDONLY);
	if (fd < 0) {
		printf("ticks rtc=unavailable(%s)\n", strerrorname_np(errno));
		return;
	}
	if (ioctl(fd, RTC_IRQP_SET, 1024) < 0 || ioctl(fd, RTC_PIE_ON, 0) < 0) {
		printf("ticks rtc=no_periodic(%s)\n", strerrorname_np(errno));
		close(fd);
		return;
	}
	int n = rounds;
	uint64_t *t = calloc((size_t)n, sizeof *t);
	uint64_t t0 = mono_ns();
	for (int i = 0; i < n; i++) {
		unsigned long data;
		if (read(fd, &data, sizeof data) != (ssize_t)sizeof data) {
			n = i;
			break;
		}
		t[i] = mono_ns();
	}
	ioctl(fd, RTC_PIE_OFF, 0);
	close(fd);
	double mean, r;
	phase_stats(t, n, &mean, &r);
	printf("ticks rtc_1024hz_reads=%d per_s=%.0f phase_us=%.0f phase_r=%.2f\n", n,
	       n * 1e9 / (double)(mono_ns() - t0), mean, r);
	free(t);
}

/* Reads /dev/hpet's interrupt at 64 Hz; prints how its wake-ups fall
 * against the tick. */
static void hpet_probe(void)
{
	int fd = open("/dev/hpet", O_RDONLY);
	if (fd < 0) {
		printf("ticks hpet=unavailable(%s)\n", strerrorname_np(errno));
		return;
	}
	if (ioctl(fd, HPET_IRQFREQ, 64) < 0 || ioctl(fd, HPET_IE_ON, 0) < 0) {
		printf("ticks hpet=no_interrupt(%s)\n", strerrorname_np(errno));
		close(fd);
		return;
	}
	int n = 64;
	uint64_t t[64], t0 = mono_ns();
	for (int i = 0; i < n; i++) {
		unsigned long data;
		if (read(fd, &data, sizeof data) != (ssize_t)sizeof data) {
			n = i;
			break;
		}
		t[i] = mono_ns();
	}
	ioctl(fd, HPET_IE_OFF, 0);
	close(fd);
	double mean, r;
	phase_stats(t, n, &mean, &r);
	printf("ticks hpet_64hz_reads=%d per_s=%.0f phase_us=%.0f phase_r=%.2f\n", n, n * 1e9 / (double)(mono_ns() - t0),
	       mean, r);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	struct timespec res;
	clock_getres(CLOCK_MONOTONIC, &res);
	long mono_res = res.tv_nsec;
	clock_getres(CLOCK_THREAD_CPUTIME_ID, &res);
	printf("ticks getres_monotonic_ns=%ld getres_thread_cputime_ns=%ld\n", mono_res, res.tv_nsec);
	if (mono_res > 1000)
		tick_ns = (double)mono_res;

	/* How long does a 100 us sleep take? */
	uint64_t d[101];
	for (int i = 0; i < 101; i++) {
		struct timespec nap = { 0, 100000 };
		uint64_t a = mono_ns();
		nanosleep(&nap, NULL);
		d[i] = mono_ns() - a;
	}
	qsort(d, 101, sizeof *d, cmp_u64);
	printf("ticks sleep100us_min_us=%.0f median_us=%.0f max_us=%.0f\n", d[0] / 1e3, d[50] / 1e3, d[100] / 1e3);

	/* Tick phase of each CPU, measured at the same time. */
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	pthread_t th[MAX_CPUS];
	struct pinned p[MAX_CPUS];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, (unsigned)ncpu);
	for (int c = 0; c < ncpu; c++) {
		p[c] = (struct pinned){ c, calloc((size_t)rounds, sizeof(uint64_t)), &go };
		pthread_create(&th[c], NULL, sleeper, &p[c]);
	}
	double phase[MAX_CPUS];
	for (int c = 0; c < ncpu; c++) {
		pthread_join(th[c], NULL);
		double r;
		phase_stats(p[c].wake, rounds, &phase[c], &r);
		printf("ticks cpu=%d wake_phase_us=%.0f phase_r=%.2f (period %.0f us)\n", c, phase[c], r, tick_ns / 1e3);
	}
	for (int c = 1; c < ncpu; c++) {
		double off = fmod(phase[c] - phase[0] + tick_ns / 1e3, tick_ns / 1e3);
		printf("ticks cpu%d_minus_cpu0_us=%.0f\n", c, off);
	}

	printf("ticks perf_sw_task_clock=%s perf_sw_cpu_clock=%s perf_hw_cycles=%s perf_hw_instructions=%s\n",
	       perf_try(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK), perf_try(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK),
	       perf_try(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
	       perf_try(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS));
	rtc_probe();
	hpet_probe();
	sampler_cost();
	return 0;
}
