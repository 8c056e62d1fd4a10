/*
 * test_unwind_churn.c -- unwind tables replaced under load: while two
 * threads run hot code in a library loaded once and are sampled at 4 kHz,
 * the main thread loads, calls and unloads another library over and over,
 * so that the drain thread keeps rebuilding and swapping the set of tables
 * and retiring the old ones while handlers walk stacks with them.  Nothing
 * may crash, the profile must be written, and the chains through the
 * library that stays loaded must stay whole.  With the perf engine the
 * stacks are walked by cpuprof's own thread, the one that rebuilds the
 * tables; with the timer engine by handlers in the program's threads,
 * while the tables change under them.  (Build it with -fsanitize=address
 * by hand to catch a table freed too early; unit_unwind_retire catches
 * that deterministically.)
 *
 * TEST_ENGINES: perf timer
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

static _Atomic int stop;
static uint64_t (*entry_a)(uint64_t);
static volatile uint64_t sink;

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		sink += entry_a(200000);
	return NULL;
}

static void run(const char *engine);

int main(void)
{
	static const char *const engines[] = { "perf", "timer", NULL };
	for_each_engine(engines, run);
	return 0;
}

static void run(const char *engine)
{
	char exe[PATH_MAX], tmp[] = "/tmp/test_unwind_churn.XXXXXX";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0'; /* the build's tests directory */
	char *src, *fold, *liba, *libb, *prof, *cmd;
	CHECK(asprintf(&src, "%s/libunwind_dl_nofp.so", exe) > 0 && asprintf(&fold, "%s/tool_fold", exe) > 0, "oom");
	CHECK(access(src, R_OK) == 0 && access(fold, X_OK) == 0, "%s or %s is not built (make tests)", src, fold);
	CHECK(mkdtemp(tmp), "mkdtemp");
	CHECK(asprintf(&liba, "%s/liba.so", tmp) > 0 && asprintf(&libb, "%s/libb.so", tmp) > 0 &&
		      asprintf(&prof, "%s/churn.pb.gz", tmp) > 0 &&
		      asprintf(&cmd, "cp '%s' '%s' && cp '%s' '%s'", src, liba, src, libb) > 0,
	      "oom");
	CHECK(system(cmd) == 0, "cannot copy the library");
	free(cmd);

	struct cpuprof_options o = { .hz = 4000, .engine = engine };
	START_ENGINE(prof, &o);
	void *ha = dlopen(liba, RTLD_NOW);
	CHECK(ha, "dlopen %s: %s", liba, dlerror());
	entry_a = (uint64_t(*)(uint64_t))dlsym(ha, "dl_entry");
	CHECK(entry_a, "dl_entry");
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, worker, NULL), 0);

	double end = thread_cpu_ms() + 1200;
	int rounds = 0;
	while (thread_cpu_ms() < end) {
		void *hb = dlopen(libb, RTLD_NOW);
		CHECK(hb, "dlopen %s: %s", libb, dlerror());
		uint64_t (*entry_b)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(hb, "dl_entry");
		CHECK(entry_b, "dl_entry in libb");
		sink += entry_b(3000000); /* a few ms: samples land in libb */
		CHECK_EQ(dlclose(hb), 0);
		rounds++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(cpuprof_stop(), 0);
	dlclose(ha);
	printf("# %d load/unload rounds of libb while sampling\n", rounds);
	CHECK(rounds >= 20, "only %d rounds", rounds);

	/* The chain through the library that stayed loaded, per sample. */
	/* tool_fold is a program of this build: under emulation it runs as
	 * $EMU tool_fold (tests/run.sh). */
	const char *emu = getenv("EMU");
	CHECK(asprintf(&cmd, "%s '%s' '%s'", emu ? emu : "", fold, prof) > 0, "oom");
	FILE *p = popen(cmd, "r");
	CHECK(p, "popen %s", cmd);
	long total = 0, good = 0, count;
	static char line[1 << 16];
	while (fgets(line, sizeof line, p)) {
		char *chain = strchr(line, ' ');
		if (!chain || sscanf(line, "%ld", &count) != 1 || strncmp(chain + 1, "dl_hot@liba.so;", 15) != 0)
			continue;
		total += count;
		if (!strncmp(chain + 1, "dl_hot@liba.so;dl_mid@liba.so;dl_entry@liba.so;worker@", 54))
			good += count;
	}
	CHECK(pclose(p) == 0, "%s failed", cmd);
	printf("# %ld of %ld samples in liba's dl_hot carry dl_mid, dl_entry, worker\n", good, total);
	CHECK(total >= 100, "only %ld samples in liba's dl_hot", total);
	CHECK(good * 100 >= total * 95, "%ld of %ld samples whole", good, total);
	free(cmd);
	CHECK(asprintf(&cmd, "rm -rf '%s'", tmp) > 0, "oom");
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	free(cmd);
	free(src);
	free(fold);
	free(liba);
	free(libb);
	free(prof);
}
