/*
 * test_signals.c -- signal ownership.  A program with its own SIGPROF
 * handler keeps it: the per-thread engines sample on a free real-time
 * signal, the program's own ITIMER_PROF keeps reaching its handler, and the
 * itimer engine refuses rather than steal SIGPROF.  A disposition found at
 * start is handed back exactly at stop.  Signals that did not come from the
 * engine go to the handler that was there before, an SA_SIGINFO one with
 * their siginfo and the interrupted code's context.  A disposition the
 * program sets while a timer engine samples with that very signal is the
 * one sigaction() reports, during the profile and after it, and the one
 * its signals get: its handler runs, SIG_IGN ignores, and SIG_DFL kills
 * (SIGPROF terminates), also while cpuprof's handler stays installed.  And
 * once stop returns, no sampling signal arrives: with SIGPROF back at its
 * default action any late one would kill this process.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h"
#include "../check.h"
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

/* ---- the program's SA_SIGINFO handlers ---- */

static volatile sig_atomic_t info_calls, info_value, info_code, info_pid_ok, info_uc_ok, info_mask_ok;

/* Records what it was given: the siginfo's value, code and sender, and
 * whether the context is the interrupted code's (its stack pointer just
 * above this frame, on the same stack; its mask the interrupted code's,
 * not the everything-blocked one cpuprof's own handler runs with), and
 * whether its own sa_mask (SIGUSR2) is in force. */
static void info_handler(int sig, siginfo_t *si, void *ucv)
{
	volatile int here = 0;
	const ucontext_t *uc = ucv;
	info_calls++;
	info_value = si ? si->si_value.sival_int : -1;
	info_code = si ? si->si_code : 0;
	info_pid_ok = si && si->si_pid == getpid();
	uintptr_t sp = uc ? cp_uc_sp(uc) : 0, me = (uintptr_t)&here;
	info_uc_ok = uc && sp > me && sp - me < 65536 && sigismember(&uc->uc_sigmask, SIGUSR2) == 0 &&
		     sigismember(&uc->uc_sigmask, SIGTERM) == 0;
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	info_mask_ok = sigismember(&cur, SIGUSR2) == 1;
	(void)here;
}

static void info_action(struct sigaction *a)
{
	memset(a, 0, sizeof *a);
	a->sa_sigaction = info_handler;
	a->sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&a->sa_mask);
	sigaddset(&a->sa_mask, SIGUSR2);
}

/* Queues sig to this process with value v (the only thread that takes it
 * is this one: cpuprof's own blocks every signal), and checks that the
 * program's info_handler got it, call number `calls`, whole. */
static void queue_and_check(int sig, int v, int calls, const char *when)
{
	CHECK_EQ(sigqueue(getpid(), sig, (union sigval){ .sival_int = v }), 0);
	CHECK(info_calls == calls, "%s: the program's handler ran %d times, expected %d", when, (int)info_calls, calls);
	CHECK(info_value == v && info_code == SI_QUEUE && info_pid_ok, "%s: its siginfo: value %d, code %d, pid %s",
	      when, (int)info_value, (int)info_code, info_pid_ok ? "ours" : "wrong");
	CHECK(info_uc_ok, "%s: the context handed on is not the interrupted code's", when);
	CHECK(info_mask_ok, "%s: the handler ran without its sa_mask", when);
}

/* A previous SA_SIGINFO handler of the sampling signal gets every signal
 * that is not the engine's, with its siginfo and context, while the
 * profile runs and after it. */
static void hands_on_siginfo(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/siginfo.pb.gz", dir);
	int rt = SIGRTMIN + 4;
	struct sigaction mine, now;
	info_action(&mine);
	CHECK_EQ(sigaction(rt, &mine, NULL), 0);
	CHECK_EQ(sigaction(rt, NULL, &mine), 0);
	info_calls = 0;
	struct cpuprof_options o = { .signal = rt, .engine = "timer", .hz = 1000 };
	CHECK_EQ(cpuprof_start(path, &o), 0);
	queue_and_check(rt, 4242, 1, "while sampling");
	burn(100); /* the engine's own signals are not passed on */
	CHECK(info_calls == 1, "the engine's signals reached the program's handler (%d calls)", (int)info_calls);
	CHECK_EQ(cpuprof_stop(), 0);
	char val[64];
	CHECK(pprof_comment(path, "signal", val, sizeof val) == 0 && atoi(val) == rt, "sampled on signal %s, not %d",
	      val, rt);
	CHECK(sigaction(rt, NULL, &now) == 0 && same_action(&now, &mine), "signal %d's disposition changed", rt);
	queue_and_check(rt, 4343, 2, "after the stop");
	signal(rt, SIG_DFL);
}

/* Runs fn in a child and returns how it ended (a wait status). */
static int in_child(void (*fn)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	return st;
}

static void sigprof_while_sampling(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/dfl-%d.pb.gz", dir, (int)getpid());
	struct cpuprof_options o = { .engine = "timer" };
	if (cpuprof_start(path, &o) != 0)
		_exit(10);
	burn(30);
	kill(getpid(), SIGPROF);
	burn(30);
	_exit(11); /* still alive */
}

static void sigprof_after_sampling(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/dfl-%d.pb.gz", dir, (int)getpid());
	struct cpuprof_options o = { .engine = "timer" };
	if (cpuprof_start(path, &o) != 0)
		_exit(10);
	burn(30);
	/* A handler of the program's own, then its default back. */
	struct sigaction mine;
	info_action(&mine);
	sigaction(SIGPROF, &mine, NULL);
	signal(SIGPROF, SIG_DFL);
	if (cpuprof_stop() != 0)
		_exit(12);
	kill(getpid(), SIGPROF);
	burn(30);
	_exit(11);
}

/* The program changes the disposition of the very signal a timer engine
 * samples with (SIGPROF, taken as the program had left it alone). */
static void replaced_while_sampling(void)
{
	char path[600], val[64];
	snprintf(path, sizeof path, "%s/replaced.pb.gz", dir);
	signal(SIGPROF, SIG_DFL);
	struct cpuprof_options o = { .engine = "timer", .hz = 1000 };
	CHECK_EQ(cpuprof_start(path, &o), 0);
	burn(30);
	struct sigaction mine, now;
	info_action(&mine);
	mine.sa_flags |= SA_NODEFER;
	sigaddset(&mine.sa_mask, SIGHUP);
	CHECK_EQ(sigaction(SIGPROF, &mine, NULL), 0);
	CHECK_EQ(sigaction(SIGPROF, NULL, &mine), 0);
	info_calls = 0;
	CHECK(sigaction(SIGPROF, NULL, &now) == 0 && same_action(&now, &mine),
	      "while sampling, sigaction() does not report the program's own SIGPROF handler");
	queue_and_check(SIGPROF, 77, 1, "SIGPROF to the program's handler while sampling on SIGPROF");
	burn(100);
	CHECK(info_calls == 1, "the engine's SIGPROFs reached the program's handler (%d calls)", (int)info_calls);
	/* SIG_IGN while sampling: a foreign SIGPROF is ignored, the engine
	 * samples on. */
	struct sigaction ign = { .sa_handler = SIG_IGN };
	CHECK_EQ(sigaction(SIGPROF, &ign, &now), 0);
	CHECK(same_action(&now, &mine), "sigaction()'s old action is not the program's handler");
	kill(getpid(), SIGPROF);
	burn(100);
	CHECK_EQ(sigaction(SIGPROF, &mine, NULL), 0);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(pprof_comment(path, "signal", val, sizeof val) == 0 && atoi(val) == SIGPROF, "sampled on signal %s", val);
	CHECK(pprof_top_row(path, 0, val, sizeof val) == 0 && !strcmp(val, "burn"), "leader %s", val);
	CHECK(sigaction(SIGPROF, NULL, &now) == 0 && same_action(&now, &mine),
	      "after the stop, sigaction() does not report the program's own SIGPROF handler");
	queue_and_check(SIGPROF, 78, 2, "SIGPROF to the program's handler after the stop");
	signal(SIGPROF, SIG_DFL);

	/* SIG_DFL: SIGPROF terminates, while a timer engine samples with it
	 * and after the program's handler came and went. */
	int st = in_child(sigprof_while_sampling);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGPROF, "a SIGPROF from kill() while sampling on SIGPROF, "
	      "disposition SIG_DFL: the child ended with status %#x, not killed by SIGPROF", st);
	st = in_child(sigprof_after_sampling);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGPROF, "a SIGPROF after the stop, disposition SIG_DFL again: the "
	      "child ended with status %#x, not killed by SIGPROF", st);
}

/* glibc's own sigaction, which a program (or a runtime that makes the
 * system call itself) calls without passing through cpuprof's. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static volatile sig_atomic_t behind_calls;

/* Counts the program's own SIGPROFs (raise: SI_TKILL).  The timer engine's
 * signals reach this handler too, from the moment it is installed until
 * the engine's timers are deleted in the stop: the program took the signal
 * over, so they are its own to take, and how many come is up to the tick. */
static void behind_handler(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SI_TKILL)
		behind_calls++;
}

static void behind_our_back(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/behind-%d.pb.gz", dir, (int)getpid());
	struct cpuprof_options o = { .engine = "timer" };
	if (cpuprof_start(path, &o) != 0)
		_exit(10);
	burn(30);
	struct sigaction mine;
	memset(&mine, 0, sizeof mine);
	mine.sa_sigaction = behind_handler;
	mine.sa_flags = SA_SIGINFO;
	__sigaction(SIGPROF, &mine, NULL);
	if (cpuprof_stop() != 0)
		_exit(12);
	raise(SIGPROF);
	_exit(behind_calls == 1 ? 0 : 13);
}

/* A program that replaces cpuprof's handler of the sampling signal behind
 * the interposed sigaction (glibc's __sigaction, or the system call, as
 * runtimes with their own signal code do) while a timer engine samples on
 * it keeps its handler after the stop: cpuprof gives the disposition back
 * only if its own handler is still the one installed (before: it put its
 * own back, believed the program's disposition still SIG_DFL, and the
 * program's next SIGPROF killed it, status 0x1b). */
static void replaced_behind_our_back(void)
{
	int st = in_child(behind_our_back);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a handler installed behind the interposed sigaction while "
	      "sampling: after the stop the child ended with status %#x (killed by signal %d)", st,
	      WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void no_late_signals(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/late.pb.gz", dir);
	static const char *engines[] = { "perf", "hw", "timer", "itimer" };
	for (int i = 0; i < 150; i++) {
		struct cpuprof_options o = { .hz = 20000, .engine = engines[i % (sizeof engines / sizeof engines[0])] };
		if (engine_unavailable(o.engine))
			continue; /* perf, hw: said in main */
		START_ENGINE(path, &o);
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
	hands_on_siginfo();
	replaced_while_sampling();
	replaced_behind_our_back();
	static const char *const engines[] = { "perf", "hw", NULL };
	for (int i = 0; engines[i]; i++)
		if (engine_unavailable(engines[i]))
			fprintf(stderr, "no late signals: without %s\n", engine_unavailable(engines[i]));
	no_late_signals();
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
