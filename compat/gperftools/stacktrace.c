/*
 * stacktrace.c -- ProfilerGetStackTrace(): the calling thread's stack, by
 * libgcc's unwinder (_Unwind_Backtrace reads each object's .eh_frame and
 * steps through signal frames; with glibc 2.35 and later it finds them
 * without the loader's lock).  From a signal handler, with the handler's
 * ucontext, the stack starts at the frame the signal interrupted: the
 * first that libgcc marks as a signal frame, whose PC is exact rather than
 * a return address.
 */
#include <stdint.h>
#include <unwind.h>

#include <gperftools/profiler.h>

#define GPT_API __attribute__((visibility("default")))

struct walk {
	void **out;
	int max, n;
	int skip;   /* frames still to skip */
	int signal; /* skip up to the interrupted frame instead */
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	int exact = 0;
	uintptr_t ip = _Unwind_GetIPInfo(ctx, &exact);
	if (w->signal) {
		if (!exact)
			return _URC_NO_REASON; /* the handler's frames */
		w->signal = 0;
	} else if (w->skip > 0) {
		w->skip--;
		return _URC_NO_REASON;
	}
	if (!ip || w->n >= w->max)
		return _URC_END_OF_STACK;
	w->out[w->n++] = (void *)ip;
	return _URC_NO_REASON;
}

GPT_API int ProfilerGetStackTrace(void **result, int max_depth, int skip_count, const void *uc)
{
	if (!result || max_depth <= 0)
		return 0;
	/* The first frame the unwinder reports is this function's. */
	struct walk w = { .out = result, .max = max_depth, .signal = uc != NULL };
	if (!uc)
		w.skip = 1 + (skip_count > 0 ? skip_count : 0);
	_Unwind_Backtrace(step, &w);
	return w.n;
}
