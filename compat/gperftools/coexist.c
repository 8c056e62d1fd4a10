/*
 * coexist.c -- when gperftools' own library is in the process as well (a
 * program linked against its libprofiler.so.0, run with ours in
 * LD_PRELOAD), its static initialiser constructs its CpuProfiler object
 * by calling CpuProfiler::CpuProfiler() through its PLT, which finds this
 * one first.  We run gperftools' constructor with CPUPROFILE and
 * CPUPROFILESIGNAL hidden from the environment: its object is made
 * properly, for its destructor, but it starts no second profiler into the
 * same file and takes no switch signal.  Profiling is ours alone; the
 * program's calls of ProfilerStart() and the rest find ours first too.
 * Not in the static library, where no gperftools can be beside it.
 */
#include <dlfcn.h>
#include <string.h>

extern char **environ;

typedef void (*ctor_fn)(void *);

/* CpuProfiler::CpuProfiler(), the complete-object constructor. */
void gpt_cpuprofiler_ctor(void *self) __asm__("_ZN11CpuProfilerC1Ev") __attribute__((visibility("default")));

static int hides(const char *entry)
{
	return !strncmp(entry, "CPUPROFILE=", 11) || !strncmp(entry, "CPUPROFILESIGNAL=", 17);
}

void gpt_cpuprofiler_ctor(void *self)
{
	ctor_fn real = (ctor_fn)dlsym(RTLD_NEXT, "_ZN11CpuProfilerC1Ev");
	if (!real)
		return;
	/* Its constructor runs from a static initialiser, before main() or
	 * in dlopen(): the environment is swapped for that moment only. */
	static char placeholder[] = "CPUPROF_GPERFTOOLS_HIDDEN=1";
	char *saved[8];
	size_t where[8], n = 0;
	for (size_t i = 0; environ && environ[i] && n < 8; i++)
		if (hides(environ[i])) {
			saved[n] = environ[i];
			where[n++] = i;
			environ[i] = placeholder;
		}
	real(self);
	for (size_t k = 0; k < n; k++)
		environ[where[k]] = saved[k];
}
