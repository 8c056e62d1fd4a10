/*
 * unit_late_signal.c -- a timer engine's signal that arrives after its
 * profile stopped is dropped, never passed to the program.  A thread can
 * take one before a stop and run the handler only after it: preempted
 * between the kernel's delivery and the handler's first instruction, it
 * may resume under a later profile's engine, or with none running.  The
 * signal carries the timer engine's cookie, so it is cpuprof's; taken for
 * the program's, SIGPROF's disposition SIG_DFL killed the process
 * ("Profiling timer expired": test_stress died so in about 1 run in 4
 * beside a busy CPU).  Deterministic: the late signals are forged with
 * rt_tgsigqueueinfo exactly as the timer sends them, in a child whose
 * death is the failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"
#include "sig/sigstate.h"

DEFINE_BURNER(burn)

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

/* Sends the calling thread SIGPROF as the timer engine's timers send it. */
static void late_timer_signal(void)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGPROF;
	si.si_code = SI_TIMER;
	si.si_value.sival_ptr = &cp_sig; /* the timer engine's cookie */
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGPROF, &si) != 0)
		_exit(20);
}

/* In the child: a timer profile, then its late signal with no profile
 * running and under each later engine this machine has. */
static int child(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/late.pb.gz", dir);
	struct cpuprof_options timer = { .engine = "timer", .hz = 1 };
	if (cpuprof_start(path, &timer) != 0)
		return 10;
	burn(10);
	if (cpuprof_stop() != 0)
		return 11;
	late_timer_signal();
	static const char *const later[] = { "itimer", "perf" };
	for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
		struct cpuprof_options o = { .engine = later[i], .hz = 1 };
		if (engine_unavailable(o.engine)) {
			fprintf(stderr, "late under %s: not run (%s)\n", later[i], engine_unavailable(o.engine));
			continue;
		}
		if (cpuprof_start(path, &o) != 0)
			return 10;
		late_timer_signal();
		burn(10);
		if (cpuprof_stop() != 0)
			return 11;
	}
	return 0;
}

int main(void)
{
	if (engine_unavailable("timer"))
		SKIP("%s", engine_unavailable("timer"));
	CHECK(mkdtemp(dir), "mkdtemp");
	signal(SIGPROF, SIG_DFL);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(child());
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a timer engine's signal arriving after its profile stopped, "
	      "SIGPROF's disposition SIG_DFL: the child ended with status %#x (killed by signal %d)", st,
	      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
