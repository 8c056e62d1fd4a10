/*
 * autostart.c -- what gperftools does without being called: before
 * main(), a profile of the whole run from CPUPROFILE, or the
 * CPUPROFILESIGNAL switch (toggle.c); at exit, the stop that writes it.
 * The top of the drop-in (gp_session.h): it calls the environment, the
 * profile and the switch, and nothing calls it.  Setuid and other
 * secure-exec programs are never profiled.
 */
#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "environ.h"
#include "gp_session.h"
#include "toggle.h"

/* After cpuprof's constructor (the build links cpuprof first): see
 * gpt_profiler_init(). */
__attribute__((constructor)) static void gpt_autostart(void)
{
	gpt_profiler_init();
	if (getauxval(AT_SECURE))
		return;
	const char *sig = getenv("CPUPROFILESIGNAL");
	char path[PATH_MAX];
	if (!gpt_unique_path("CPUPROFILE", path)) {
		if (sig)
			gpt_warn("CPUPROFILESIGNAL is set but CPUPROFILE names no file; profiling disabled");
		return;
	}
	if (sig) {
		gpt_switch_base(path);
		gpt_toggle_init(sig);
		return;
	}
	gpt_start(path, GPT_BY_ENV); /* says why if it cannot */
}

__attribute__((destructor)) static void gpt_autostop(void)
{
	gpt_stop(1);
}
