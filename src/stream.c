/*
 * stream.c -- the record stream for language runtimes that build their own
 * profile: the words of Go's runtime/pprof profBuf stream, read by
 * cpuprof_read_stream().  A header {3, 0, hz} comes first, once; each sample
 * is {3+n, 0, count, pc...} (count in sampling periods: a sample weighed at
 * two periods of CPU time counts 2; fractions carry over to the next
 * sample), and lost samples are {4, 0, 0, lost}.  The reader drains the
 * sample ring itself (the keeper only fills it, for the perf engines).
 * End of stream comes only
 * after cpuprof_stop() and a full drain; the next profile cannot start
 * before it, so none of this profile's samples can reach the next one.
 */
#include <errno.h>
#include <unistd.h>

#include "base/error.h"
#include "cpuprof.h"
#include "session.h"

#define READ_WAIT_MS 100

/* Fills w[0..cap) with whole records; returns the words used.  Under
 * cp_tab_lock. */
static size_t fill_locked(uint64_t *w, size_t cap)
{
	size_t used = 0;
	struct cp_run *R = &cp_session.run;
	if (!R->hdr_sent) {
		w[used++] = 3;
		w[used++] = 0;
		w[used++] = (uint64_t)R->hz;
		R->hdr_sent = 1;
	}
	struct cp_ring *r = cp_sig.ring;
	struct cp_sample *s;
	uint64_t period = cp_sig.period_ns;
	while ((s = cp_ring_peek(r)) != NULL && used + 3 + s->n <= cap) {
		if (R->path)
			cp_session_keep_locked(s);
		uint64_t ns = s->weight_ns + R->carry_ns;
		uint64_t count = ns / period;
		R->carry_ns = ns % period;
		if (count) {
			/* A link-register frame is confirmed only against the
			 * symbols (see CP_STACK_LINK_REG), which the stream
			 * does not load: it leaves such a frame out rather
			 * than hand the runtime a stale one. */
			uint32_t skip = s->n > 1 && (s->flags & CP_SAMPLE_LINK_REG) ? 1 : 0;
			w[used++] = 3 + s->n - skip;
			w[used++] = 0;
			w[used++] = count;
			for (uint32_t i = 0; i < s->n; i++)
				if (i != 1 || !skip)
					w[used++] = s->pcs[i];
		}
		cp_ring_release(r, s);
	}
	struct cp_engine_stats st;
	cp_session_stats_locked(&st);
	uint64_t lost = atomic_load(&cp_sig.lost) + st.lost + R->dropped;
	if (lost > R->lost_sent && used + 4 <= cap) {
		w[used++] = 4;
		w[used++] = 0;
		w[used++] = 0;
		w[used++] = lost - R->lost_sent;
		R->lost_sent = lost;
	}
	return used;
}

/* End of stream: stopped, drained, every loss reported.  Writes the file
 * if the stream has one and releases the profile.  Under cp_tab_lock. */
static int finish_locked(void)
{
	int rc = 0;
	if (cp_session.run.path)
		rc = cp_session_write_locked(1); /* released next */
	cp_session_release();
	cp_session.stream_open = 0;
	return rc;
}

static int read_stream(uint64_t *words, size_t cap, size_t *nwords, int flags)
{
	*nwords = 0;
	for (;;) {
		pthread_mutex_lock(&cp_tab_lock);
		if (!cp_session.stream_open) {
			pthread_mutex_unlock(&cp_tab_lock);
			return CPUPROF_EOF;
		}
		if (cap < 4 + (size_t)cp_sig.max_depth) {
			cp_error_set("%s: cap is %zu words, and a record of max_depth %u frames takes %zu",
				     cpuprof_strerror(-EINVAL), cap, cp_sig.max_depth, 4 + (size_t)cp_sig.max_depth);
			pthread_mutex_unlock(&cp_tab_lock);
			return -EINVAL;
		}
		uint32_t seen = atomic_load(&cp_session.wake);
		atomic_store(&cp_sig.wake_pending, 0);
		size_t n = fill_locked(words, cap);
		int stopped = !cp_session.running && !cp_session.suspended;
		if (n == 0 && stopped) {
			int rc = finish_locked();
			pthread_mutex_unlock(&cp_tab_lock);
			return rc < 0 ? rc : CPUPROF_EOF;
		}
		pthread_mutex_unlock(&cp_tab_lock);
		if (n || (flags & CPUPROF_NONBLOCK)) {
			*nwords = n;
			return 0;
		}
		cp_session_wait(&cp_session.wake, seen, READ_WAIT_MS, 1);
	}
}

int cpuprof_read_stream(uint64_t *words, size_t cap, size_t *nwords, int flags)
{
	cp_error_begin();
	int rc = read_stream(words, cap, nwords, flags);
	return cp_error_end(rc, cpuprof_strerror(rc));
}
