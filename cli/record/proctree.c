/*
 * proctree.c -- the images of the processes of a recorded tree (proctree.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "proctree.h"
#include "symbolize/jit.h"

struct cp_image *cp_tree_new_image(struct cp_tree *t)
{
	if (cp_array_grow((void **)&t->images, &t->capimages, t->nimages + 1, sizeof *t->images, 16))
		return NULL;
	struct cp_image *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->pidfd = -1;
	m->wait_cpu_ns = -1;
	t->images[t->nimages++] = m;
	return m;
}

int cp_image_add_epoch(struct cp_image *m, uint32_t gen)
{
	struct cp_epoch *e = realloc(m->epochs, (m->nepochs + 1) * sizeof *e);
	if (!e)
		return -1;
	m->epochs = e;
	e[m->nepochs].gen = gen;
	cp_stacktab_init(&e[m->nepochs].tab);
	m->nepochs++;
	return 0;
}

struct cp_epoch *cp_image_epoch_for(struct cp_image *m, uint32_t gen)
{
	size_t k = 0;
	while (k + 1 < m->nepochs && m->epochs[k + 1].gen <= gen)
		k++;
	return &m->epochs[k];
}

void cp_tree_status(struct cp_tree *t, pid_t pid, int status, int64_t cpu_ns)
{
	struct cp_image *last = NULL;
	for (size_t k = 0; k < t->nimages; k++)
		if (t->images[k]->pid == pid && !t->images[k]->have_status &&
		    (!last || t->images[k]->order >= last->order))
			last = t->images[k];
	if (!last)
		return;
	last->have_status = 1;
	last->status = status;
	last->wait_cpu_ns = cpu_ns;
	last->dead = 1;
}

const char *cp_image_thread_name(const struct cp_image *m, int32_t tid)
{
	for (size_t i = m->nnames; i-- > 0;)
		if (m->names[i].tid == tid)
			return m->names[i].name;
	return m->comm;
}

void cp_image_clear_samples(struct cp_image *m)
{
	for (size_t e = 0; e < m->nepochs; e++)
		cp_stacktab_clear(&m->epochs[e].tab);
	m->samples = m->sampled_ns = m->dropped = m->dropped_ns = 0;
}

void cp_image_free(struct cp_image *m)
{
	for (size_t e = 0; e < m->nepochs; e++)
		cp_stacktab_free(&m->epochs[e].tab);
	free(m->epochs);
	for (uint32_t j = 0; m->files && j < m->nobjs; j++)
		free(m->files[j]);
	free(m->files);
	free(m->objs);
	free(m->names);
	cp_jit_free(m->jit);
	if (m->pidfd >= 0)
		close(m->pidfd);
	free(m);
}

void cp_tree_free(struct cp_tree *t)
{
	for (size_t k = 0; k < t->nimages; k++)
		cp_image_free(t->images[k]);
	free(t->images);
	memset(t, 0, sizeof *t);
}

static double image_factor;

static double constant_factor(uint32_t tid)
{
	(void)tid;
	return image_factor;
}

void cp_image_scale(struct cp_image *m, double f)
{
	if (!(f < 1.0))
		return;
	image_factor = f < 0 ? 0 : f;
	for (size_t e = 0; e < m->nepochs; e++)
		cp_stacktab_scale_down(&m->epochs[e].tab, constant_factor);
	m->sampled_ns = (uint64_t)((double)m->sampled_ns * image_factor + 0.5);
	m->dropped_ns = (uint64_t)((double)m->dropped_ns * image_factor + 0.5);
}
