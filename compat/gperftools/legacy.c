/*
 * legacy.c -- gperftools' binary CPU profile, which pprof calls the legacy
 * format: machine words in the host's byte order, a header {0, 3, 0,
 * sampling period in microseconds, 0}, one record {count, n, pc[0..n)}
 * per distinct stack (the interrupted PC first, then return addresses),
 * the trailer {0, 1, 0}, and then the text of /proc/self/maps, by which
 * the reader finds the objects whose symbols name the PCs.  Everything is
 * written with write(2) from a static buffer, so that a ProfilerFlush()
 * from a signal handler calls nothing that can lock or allocate.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "legacy.h"

typedef uintptr_t word; /* the format's unit: a machine word */

struct out {
	int fd;
	int err;       /* the first write error, as a negative errno */
	size_t used;
	size_t written;
	char buf[65536];
};

static struct out out; /* callers take turns (see legacy.h) */

static void drain(struct out *o)
{
	size_t done = 0;
	while (!o->err && done < o->used) {
		ssize_t w = write(o->fd, o->buf + done, o->used - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err = w < 0 ? -errno : -EIO;
		else
			done += (size_t)w;
	}
	o->written += done;
	o->used = 0;
}

static void put(struct out *o, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		if (o->used == sizeof o->buf)
			drain(o);
		size_t k = sizeof o->buf - o->used < n ? sizeof o->buf - o->used : n;
		memcpy(o->buf + o->used, c, k);
		o->used += k;
		c += k;
		n -= k;
	}
}

static void put_word(struct out *o, uint64_t v)
{
	word w = (word)v;
	put(o, &w, sizeof w);
}

/* Appends the text of /proc/self/maps. */
static void put_maps(struct out *o)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		if (o->used == sizeof o->buf)
			drain(o);
		ssize_t r = read(fd, o->buf + o->used, sizeof o->buf - o->used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		o->used += (size_t)r;
	}
	close(fd);
}

int gpt_legacy_write(int fd, const struct gpt_stacks *t, uint64_t period_us, size_t *binary)
{
	struct out *o = &out;
	o->fd = fd;
	o->err = 0;
	o->used = o->written = 0;
	/* A FIFO or a terminal has no start to go back to: written on. */
	if (lseek(fd, 0, SEEK_SET) == 0 && ftruncate(fd, 0) < 0) {
		/* seekable but not a regular file (a block device): written over */
	}

	static const uint64_t header[] = { 0, 3, 0 };
	for (size_t i = 0; i < 3; i++)
		put_word(o, header[i]);
	put_word(o, period_us);
	put_word(o, 0);
	for (size_t i = 0; i < t->nst; i++) {
		const struct gpt_stack *s = &t->st[i];
		put_word(o, s->count);
		put_word(o, s->n);
		for (uint32_t k = 0; k < s->n; k++)
			put_word(o, t->pcs[s->off + k]);
	}
	put_word(o, 0);
	put_word(o, 1);
	put_word(o, 0);
	*binary = o->written + o->used;
	put_maps(o);
	drain(o);
	return o->err;
}
