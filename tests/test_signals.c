/*
 * test_signals.c -- signal ownership.  A program with its own SIGPROF
 * handler keeps it: the per-thread engines sample on a free real-time
 * signal, the program's own ITIMER_PROF keeps reaching its handler, and the
 * itimer engine refuses rather than steal SIGPROF.  A disposition found at
 * start is handed back exactly at stop.  Signals that did not come from the
 * engine go to the handler that was there before.  And once stop returns,
 * no sampling signal arrives: with SIGPROF back at its default action any
 * late one would kill this process.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "cpuprof.h"

DEFINE_BURNER(burn)

static char dir[] = "/tmp/cpuprof-test-XXXXXX";
static volatile sig_atomic_t own_prof, own_engine_like, usr1_seen;

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	own_prof++;
	if (si->si_code == SI_TIMER || si->si_code == POLL_IN)
		own_engine_like++;
}

static void usr1_handler(int sig)
{
	usr1_seen++;
}

static int same_action(const struct sigaction *a, const struct sigaction *b)
{
	if (a->sa_flags != b->sa_flags || (void *)a->sa_sigaction != (void *)b->sa_sigaction)
		return 0;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&a->sa_mask, s) != sigismember(&b->sa_mask, s))
			return 0;
	return 1;
}

static void program_itimer(long usec)
{
	struct itimerval v = { { 0, usec }, { 0, usec } };
	setitimer(ITIMER_PROF, &v, NULL);
}

static void keeps_own_sigprof(void)
{
	char path[600], val[64];
	snprintf(path, sizeof path, "%s/own.pb.gz", dir);
	struct sigaction mine, now;
	memset(&mine, 0, sizeof mine);
	mine.sa_sigaction = own_handler;
	mine.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&mine.sa_mask);
	sigaddset(&mine.sa_mask, SIGUSR2);
	CHECK_EQ(sigaction(SIGPROF, &mine, NULL), 0);
	CHECK_EQ(sigaction(SIGPROF, NULL, &mine), 0); /* as the kernel keeps it */

	struct cpuprof_options itimer = { .engine = "itimer" };
	CHECK_EQ(cpuprof_start(path, &itimer), -ENODEV);

	/* The default engine (perf where it works: it sends no signal at
	 * all), and the timer engine, which must take a real-time signal. */
	const char *engines[] = { NULL, "timer" };
	for (int e = 0; e < 2; e++) {
		struct cpuprof_options o = { .engine = engines[e] };
		CHECK_EQ(cpuprof_start(path, &o), 0);
		program_itimer(10000);
		burn(300);
		program_itimer(0);
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(own_prof > 0, "the program's own SIGPROF never reached its handler");
		CHECK_EQ(own_engine_like, 0);
		CHECK(sigaction(SIGPROF, NULL, &now) == 0 && same_action(&now, &mine), "SIGPROF disposition changed");
		char engine[64];
		CHECK(pprof_comment(path, "engine", engine, sizeof engine) == 0, "no engine comment");
		if (!strcmp(engine, "perf") || !strcmp(engine, "hw")) {
			CHECK(pprof_comment(path, "signal", val, sizeof val) != 0, "%s sent signal %s", engine, val);
		} else {
			CHECK(pprof_comment(path, "signal", val, sizeof val) == 0, "%s: no signal comment", engine);
			CHECK(atoi(val) >= SIGRTMIN && atoi(val) <= SIGRTMAX, "%s sampled on signal %s, not a real-time one",
			      engine, val);
		}
		char name[256];
		CHECK(pprof_top_row(path, 0, name, sizeof name) == 0 && !strcmp(name, "burn"), "%s: leader %s", engine,
		      name);
	}

	/* After stop the program's SIGPROF handler still gets SIGPROF. */
	int before = own_prof;
	program_itimer(10000);
	burn(200);
	program_itimer(0);
	CHECK(own_prof > before, "no SIGPROF for the program after stop");
	CHECK_EQ(own_engine_like, 0);
	signal(SIGPROF, SIG_DFL);
}

static void hands_back_exactly(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/rt.pb.gz", dir);
	struct sigaction mine, now;
	int rt = SIGRTMIN + 3;
	memset(&mine, 0, sizeof mine);
	mine.sa_handler = usr1_handler;
	mine.sa_flags = SA_RESTART | SA_NODEFER;
	sigemptyset(&mine.sa_mask);
	sigaddset(&mine.sa_mask, SIGTERM);
	CHECK_EQ(sigaction(rt, &mine, NULL), 0);
	CHECK_EQ(sigaction(rt, NULL, &mine), 0);

	/* Signals that mean something else to programs cannot sample. */
	int refused[] = { SIGHUP, SIGINT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGSEGV, SIGKILL };
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		struct cpuprof_options bad = { .signal = refused[i], .engine = "timer" };
		CHECK_EQ(cpuprof_start(path, &bad), -EINVAL);
	}

	struct cpuprof_options o = { .signal = rt, .engine = "timer" };
	CHECK_EQ(cpuprof_start(path, &o), 0);
	raise(rt); /* not the engine's: passed on */
	CHECK_EQ(usr1_seen, 1);
	burn(100);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(sigaction(rt, NULL, &now) == 0 && same_action(&now, &mine), "signal %d's disposition not restored", rt);
	raise(rt);
	CHECK_EQ(usr1_seen, 2);
	signal(rt, SIG_DFL);

	/* SIG_IGN comes back as SIG_IGN. */
	signal(SIGPROF, SIG_IGN);
	CHECK_EQ(cpuprof_start(path, NULL), 0);
	burn(20);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(sigaction(SIGPROF, NULL, &now) == 0 && now.sa_handler == SIG_IGN, "SIG_IGN not restored");
	signal(SIGPROF, SIG_DFL);
}

static void no_late_signals(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/late.pb.gz", dir);
	static const char *engines[] = { "perf", "hw", "timer", "itimer" };
	for (int i = 0; i < 150; i++) {
		struct cpuprof_options o = { .hz = 20000, .engine = engines[i % (sizeof engines / sizeof engines[0])] };
		int rc = cpuprof_start(path, &o);
		if (rc == -ENODEV)
			continue;
		CHECK_EQ(rc, 0);
		burn(3);
		CHECK_EQ(cpuprof_stop(), 0);
		/* SIGPROF is SIG_DFL again: a late sample signal terminates us. */
		burn(3);
	}
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	keeps_own_sigprof();
	hands_back_exactly();
	no_late_signals();
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
