/*
 * sigfloor.c -- the floor under any signal-based profiler: the CPU that
 * the kernel's own timer and signal delivery cost per sample, measured
 * with an empty handler.  The same fixed work as overhead.c (without the
 * deep stack) runs with no timer, with a perf task-clock event signalling
 * this thread (what cpuprof's perf engine did before it stopped using
 * signals), or with a timer_create timer on the thread CPU clock (its
 * timer engine), at HZ.  And the floor under the signal-free perf engine:
 * "ring", a task-clock event writing each sample with the user registers
 * and a 16 KiB copy of the stack into a ring (as engine_perf.c asks, the
 * ring sized as it sizes it), whose tail a second thread only moves on
 * every millisecond: the kernel's cost of the samples, with no unwinding.
 *
 * Usage: sigfloor none|perf|timer|ring HZ MSTEPS
 * Prints "signals N" (ring: the samples written), then the lines of
 * report_run().
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clocks.h"

static volatile sig_atomic_t signals;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	signals++;
}

/* A user-mode task-clock event of this thread, disabled, that samples
 * every period_ns of its CPU time. */
static struct perf_event_attr task_clock(uint64_t period_ns)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return a;
}

/* Arms a perf task-clock event on this thread that sends SIGPROF every
 * period_ns of its CPU time; 0 or -1. */
static int arm_perf(uint64_t period_ns)
{
	struct perf_event_attr a = task_clock(period_ns);
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	struct f_owner_ex owner = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	if (fd < 0 || fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -1;
	return 0;
}

/* Arms a timer on this thread's CPU clock that sends SIGPROF every
 * period_ns; 0 or -1. */
static int arm_timer(uint64_t period_ns)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t t;
	struct timespec p = { (time_t)(period_ns / 1000000000), (long)(period_ns % 1000000000) };
	struct itimerspec its = { p, p };
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0)
		return -1;
	return 0;
}

/* The ring mode: what engine_perf.c samples and how its rings are sized
 * (STACK_COPY, RING_PAGES_MIN/MAX, RING_MS there). */
#define STACK_COPY 16384
#if defined(__x86_64__)
#define REGS_MASK ((1ull << 6) | (1ull << 7) | (1ull << 8)) /* bp, sp, ip */
#elif defined(__aarch64__)
#define REGS_MASK ((1ull << 29) | (1ull << 30) | (1ull << 31) | (1ull << 32)) /* x29, lr, sp, pc */
#endif

static struct perf_event_mmap_page *ring;
static _Atomic int ring_quit;
static long ring_samples;

static void *ring_mover(void *arg)
{
	(void)arg;
	uint8_t *data = (uint8_t *)ring + ring->data_offset;
	uint64_t size = ring->data_size, tail = 0;
	while (!atomic_load(&ring_quit)) {
		uint64_t head = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE);
		while (tail < head) {
			struct perf_event_header h;
			uint64_t off = tail & (size - 1);
			if (off + sizeof h > size)
				break; /* a header that wraps: skip to head */
			memcpy(&h, data + off, sizeof h);
			ring_samples += h.type == PERF_RECORD_SAMPLE;
			tail += h.size ? h.size : head - tail;
		}
		__atomic_store_n(&ring->data_tail, head, __ATOMIC_RELEASE);
		tail = head;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return NULL;
}

static int arm_ring(uint64_t period_ns, long hz, pthread_t *mover)
{
	struct perf_event_attr a = task_clock(period_ns);
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = REGS_MASK;
	a.sample_stack_user = STACK_COPY;
	a.watermark = 1;
	a.wakeup_watermark = 1024u * 4096u;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return -1;
	uint64_t want = ((uint64_t)hz * 25 / 1000 * (STACK_COPY + 256) + 4095) / 4096, pages = 128;
	while (pages < want && pages < 1024)
		pages *= 2;
	void *p = mmap(NULL, (pages + 1) * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	ring = p;
	if (pthread_create(mover, NULL, ring_mover, NULL) != 0)
		return -1;
	return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "none") && strcmp(argv[1], "perf") && strcmp(argv[1], "timer") &&
			  strcmp(argv[1], "ring"))) {
		fprintf(stderr, "usage: sigfloor none|perf|timer|ring HZ MSTEPS\n");
		return 2;
	}
	long hz = atol(argv[2]), msteps = atol(argv[3]);
	if (hz < 1 || msteps < 1) {
		fprintf(stderr, "sigfloor: HZ and MSTEPS must be positive\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	uint64_t period = 1000000000 / (uint64_t)hz;
	pthread_t mover;
	int is_ring = !strcmp(argv[1], "ring");
	if ((!strcmp(argv[1], "perf") && arm_perf(period) < 0) || (!strcmp(argv[1], "timer") && arm_timer(period) < 0) ||
	    (is_ring && arm_ring(period, hz, &mover) < 0)) {
		perror("sigfloor: arming");
		return 1;
	}
	sink += spin(1, (uint64_t)msteps * 1000000);
	if (is_ring) {
		atomic_store(&ring_quit, 1);
		pthread_join(mover, NULL);
	}
	printf("signals %ld\n", is_ring ? ring_samples : (long)signals);
	report_run(cpu0, mono0);
	return 0;
}
