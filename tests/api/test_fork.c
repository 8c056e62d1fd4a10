/*
 * test_fork.c -- a profile survives fork() and exit paths: a child forked
 * during a profile neither crashes, nor writes the parent's file, nor
 * leaks its samples into it, and can start a profile of its own; a child
 * forked while other threads are born, named and die (holding cpuprof's
 * locks) does not hang in cpuprof's fork handler; a child forked while
 * cpuprof's keeper walks the loader's list can walk it too; and a profile
 * stopped from an atexit handler is written whole.
 *
 * TEST_ENGINES: perf hw timer itimer
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(parent_work)
DEFINE_BURNER(child_work)
DEFINE_BURNER(child_own_profile_work)
DEFINE_BURNER(atexit_work)
DEFINE_BURNER(churn_work)

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

static void fork_during_profile(const char *engine)
{
	char path[600], cpath[600], name[256];
	snprintf(path, sizeof path, "%s/parent.pb.gz", dir);
	snprintf(cpath, sizeof cpath, "%s/child.pb.gz", dir);
	struct cpuprof_options o = { .engine = engine, .hz = 2000 };
	START_ENGINE(path, &o);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		child_work(200);
		/* The parent's profile is gone here; a new one works. */
		if (cpuprof_stop() != -ESRCH)
			_exit(10);
		if (cpuprof_start(cpath, NULL) != 0)
			_exit(11);
		child_own_profile_work(100);
		if (cpuprof_stop() != 0)
			_exit(12);
		exit(3); /* atexit handlers and destructors run */
	}
	parent_work(300);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "%s: child ended with status %#x", engine, st);
	CHECK(access(path, F_OK) != 0, "%s: the child wrote the parent's profile", engine);
	CHECK_EQ(cpuprof_stop(), 0);
	char *top = pprof_run("-top", path);
	CHECK(top && strstr(top, "parent_work"), "%s: parent_work missing", engine);
	CHECK(!strstr(top, "child_work") && !strstr(top, "child_own"), "%s: child samples in the parent's profile",
	      engine);
	free(top);
	CHECK(pprof_top_row(cpath, 0, name, sizeof name) == 0 && !strcmp(name, "child_own_profile_work"),
	      "%s: child's own profile leads with %s", engine, name);
	unlink(path);
	unlink(cpath);
}

static void stop_at_exit(void)
{
	char marker[600];
	snprintf(marker, sizeof marker, "%s/stopped", dir);
	if (cpuprof_stop() == 0) {
		FILE *f = fopen(marker, "w");
		if (f)
			fclose(f);
	}
}

static void stop_from_atexit(const char *engine)
{
	char path[600], marker[600], name[256];
	snprintf(path, sizeof path, "%s/atexit.pb.gz", dir);
	snprintf(marker, sizeof marker, "%s/stopped", dir);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct cpuprof_options o = { .engine = engine };
		if (cpuprof_start(path, &o) != 0)
			_exit(10);
		atexit(stop_at_exit);
		atexit_work(200);
		exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "atexit child: status %#x", st);
	CHECK(access(marker, F_OK) == 0, "cpuprof_stop() from atexit failed");
	CHECK(pprof_top_row(path, 0, name, sizeof name) == 0 && !strcmp(name, "atexit_work"), "leader %s", name);
}

/* A child is reaped within 10 s, or the test fails (and kills it). */
static int reap(pid_t pid)
{
	int st;
	for (int i = 0; i < 10000; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void fork_amid_churn(const char *engine)
{
	const char *emu = getenv("EMU");
	if (emu && *emu) {
		/* A child that profiles itself hangs there (timer and itimer,
		 * child 50 or 100, 3 runs in 3) waiting for a lock in
		 * qemu-user's own memory, not the program's or cpuprof's.
		 * The emulator's fork amid guest threads being born is not
		 * what this tests, and cpuprof's locks are the same on every
		 * CPU. */
		fprintf(stderr, "%s: forks amid thread churn not run under %s\n", engine, emu);
		return;
	}
	char path[600], cpath[600];
	snprintf(path, sizeof path, "%s/churn.pb.gz", dir);
	struct cpuprof_options o = { .engine = engine, .hz = 2000 };
	START_ENGINE(path, &o);
	struct churn c;
	churn_start(&c, churn_work, 1, "churn");
	for (int i = 0; i < 300; i++) {
		int own = i % 50 == 0; /* a few children profile themselves */
		snprintf(cpath, sizeof cpath, "%s/churn-child.pb.gz", dir);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			if (own && (cpuprof_start(cpath, &(struct cpuprof_options){ .engine = engine }) != 0 ||
				    cpuprof_stop() != 0))
				_exit(1);
			_exit(0);
		}
		int st = reap(pid);
		CHECK(st == 0, "%s: child %d forked amid thread churn: %s (status %#x)", engine, i,
		      st < 0 ? "hung, killed after 10 s" : "failed", st);
	}
	churn_stop(&c);
	CHECK_EQ(cpuprof_stop(), 0);
	unlink(path);
	unlink(cpath);
}

/* ---- forks amid the keeper's walks of the loader's list ---- */

/* While slow_walks is set, a walk of the loader's list (dl_iterate_phdr,
 * which holds the loader's lock throughout) by any thread but the main
 * one, which is cpuprof's keeper here, lasts 20 ms more: long enough that
 * forks land inside it.  This program's definition is the one that
 * libcpuprof.a, linked in, calls. */
static _Atomic int slow_walks;
typedef int (*walk_cb)(struct dl_phdr_info *, size_t, void *);
struct slow_walk {
	walk_cb cb;
	void *arg;
	int slept;
};

static int slow_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct slow_walk *w = arg;
	if (!w->slept++)
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	return w->cb(info, size, w->arg);
}

int dl_iterate_phdr(walk_cb cb, void *arg)
{
	static int (*real)(walk_cb, void *);
	if (!real)
		real = (int (*)(walk_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
	if (!atomic_load(&slow_walks) || syscall(SYS_gettid) == getpid())
		return real(cb, arg);
	struct slow_walk w = { cb, arg, 0 };
	return real(slow_cb, &w);
}

static int count_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	++*(int *)arg;
	return 0;
}

/* The keeper looks for new objects every 100 ms; its walks now last 20
 * ms of that.  A child forked inside one, and not kept out of it, would
 * wait for the loader's lock forever on its own first walk. */
static void fork_amid_walks(const char *engine)
{
	char path[600];
	snprintf(path, sizeof path, "%s/walks.pb.gz", dir);
	struct cpuprof_options o = { .engine = engine, .hz = 2000 };
	START_ENGINE(path, &o);
	atomic_store(&slow_walks, 1);
	for (int i = 0; i < 60; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			int n = 0;
			dl_iterate_phdr(count_objects, &n);
			_exit(n > 0 ? 0 : 1);
		}
		int st = reap(pid);
		CHECK(st == 0, "%s: child %d forked amid the keeper's walks: %s (status %#x)", engine, i,
		      st < 0 ? "hung, killed after 10 s" : "failed", st);
		nanosleep(&(struct timespec){ 0, 7000000 }, NULL);
	}
	atomic_store(&slow_walks, 0);
	CHECK_EQ(cpuprof_stop(), 0);
	unlink(path);
}

static void run(const char *engine)
{
	fork_during_profile(engine);
	fork_amid_churn(engine);
	fork_amid_walks(engine);
	stop_from_atexit(engine);
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	static const char *const engines[] = { "perf", "hw", "timer", "itimer", NULL };
	for_each_engine(engines, run);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
