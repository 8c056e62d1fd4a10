/*
 * static_dlsym.c -- libprofiler.a only: cpuprof's pthread_create() finds
 * the C library's with dlsym(RTLD_NEXT, "pthread_create"), which in a
 * fully static executable (gcc -static) finds nothing, and every thread
 * the program made would fail with EAGAIN.  The build points cpuprof's
 * calls of dlsym() here (objcopy --redefine-sym): in a static executable
 * the C library's own pthread_create is linked in under its internal
 * name, and this hands that over.  Otherwise it is dlsym() itself.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* glibc's pthread_create under its own name: in libc.a, not exported by
 * libc.so, so weak (NULL when linked dynamically, where dlsym works). */
extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
	__attribute__((weak));

void *gpt_dlsym(void *handle, const char *name);
void *gpt_dlsym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);
	if (!p && handle == RTLD_NEXT && !strcmp(name, "pthread_create"))
		p = (void *)__pthread_create_2_1;
	return p;
}
