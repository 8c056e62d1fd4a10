/*
 * toggle.c -- CPUPROFILESIGNAL=N, gperftools' way of profiling a live
 * process on demand: each delivery of signal N starts or stops a profile
 * (gpt_switch).  The handler (sig/switch.c) only counts deliveries and
 * wakes a thread of ours through a futex; the thread, with every signal
 * blocked, does the starting and stopping, where locks, malloc and files
 * are allowed.  A forked child, which inherits the handler but not the
 * thread, gets a thread of its own (a fork handler registered after the
 * profile's, which has made the child's profile its own by then).
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "environ.h"
#include "gp_session.h"
#include "sig/switch.h"
#include "toggle.h"

static void *switch_main(void *arg)
{
	unsigned seen = (unsigned)(uintptr_t)arg;
	for (;;) {
		unsigned now = atomic_load_explicit(&gpt_switch_count, memory_order_acquire);
		if (now == seen) {
			syscall(SYS_futex, &gpt_switch_count, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
			continue;
		}
		for (; seen != now; seen++)
			gpt_switch();
	}
	return NULL;
}

/* Starts the switch thread, which acts on deliveries after the current
 * ones.  Returns 0 or an errno. */
static int start_thread(void)
{
	pthread_t th;
	unsigned now = atomic_load(&gpt_switch_count);
	int rc = gpt_spawn(&th, switch_main, (void *)(uintptr_t)now);
	if (rc == 0)
		pthread_detach(th);
	return rc;
}

/* Quietly: the child may be one of cpuprof's own, which reads source
 * lines with the program's stderr still open, and resets every signal
 * (ours too) before it does anything. */
static void after_fork_child(void)
{
	start_thread();
}

int gpt_toggle_init(const char *value)
{
	char *end;
	errno = 0;
	long n = strtol(value, &end, 10);
	struct sigaction cur;
	if (errno || end == value || *end || n < 1 || n > 64 || sigaction((int)n, NULL, &cur) < 0) {
		gpt_warn("CPUPROFILESIGNAL='%s' is not a signal number this program can catch (1..64); profiling "
			 "disabled", value);
		return -1;
	}
	int signo = (int)n;
	if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) {
		gpt_warn("CPUPROFILESIGNAL=%d: the signal already has a disposition of the program's; profiling "
			 "disabled", signo);
		return -1;
	}
	int rc = start_thread();
	if (rc != 0) {
		gpt_warn("CPUPROFILESIGNAL=%d: no thread for the switch: %s; profiling disabled", signo,
			 strerror(rc));
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = gpt_switch_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) < 0) {
		gpt_warn("CPUPROFILESIGNAL=%d: cannot catch it: %s; profiling disabled", signo, strerror(errno));
		return -1;
	}
	pthread_atfork(NULL, NULL, after_fork_child);
	/* gperftools' line, word for word. */
	fprintf(stderr, "Using signal %d as cpu profiling switch\n", signo);
	return 0;
}
