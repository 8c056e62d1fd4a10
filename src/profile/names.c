/*
 * names.c -- thread names by thread id (names.h): an open-addressing
 * table under a mutex, grown by doubling.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"

struct entry {
	pid_t tid; /* 0 = empty */
	char name[CP_NAME_MAX];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void (*observer)(pid_t tid, const char *name);
static struct entry *tab;
static size_t cap, used;

static size_t slot(pid_t tid, size_t n)
{
	return ((size_t)(unsigned)tid * 0x9e3779b97f4a7c15ull >> 17) & (n - 1);
}

/* The entry of tid, made if new; NULL if out of memory.  Under lock. */
static struct entry *get_locked(pid_t tid)
{
	if ((used + 1) * 2 > cap) {
		size_t n = cap ? cap * 2 : 64;
		struct entry *t = calloc(n, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < cap; i++) {
			if (!tab[i].tid)
				continue;
			size_t j = slot(tab[i].tid, n);
			while (t[j].tid)
				j = (j + 1) & (n - 1);
			t[j] = tab[i];
		}
		free(tab);
		tab = t;
		cap = n;
	}
	size_t i = slot(tid, cap);
	while (tab[i].tid && tab[i].tid != tid)
		i = (i + 1) & (cap - 1);
	if (!tab[i].tid) {
		tab[i].tid = tid;
		tab[i].name[0] = '\0';
		used++;
	}
	return &tab[i];
}

void cp_names_observe(void (*fn)(pid_t tid, const char *name))
{
	pthread_mutex_lock(&lock);
	observer = fn;
	pthread_mutex_unlock(&lock);
}

void cp_names_reset(void)
{
	pthread_mutex_lock(&lock);
	free(tab);
	tab = NULL;
	cap = used = 0;
	pthread_mutex_unlock(&lock);
}

void cp_names_after_fork(void)
{
	/* Unlocked at the fork: the table is whole and ours to free.  Held
	 * by a thread the child does not have: it may be half made, and is
	 * left to leak. */
	if (pthread_mutex_trylock(&lock) == 0)
		free(tab);
	pthread_mutex_init(&lock, NULL);
	tab = NULL;
	cap = used = 0;
}

void cp_names_set(pid_t tid, const char *name)
{
	if (tid <= 0)
		return;
	pthread_mutex_lock(&lock);
	struct entry *e = get_locked(tid);
	if (e && strncmp(e->name, name, sizeof e->name - 1) != 0) {
		snprintf(e->name, sizeof e->name, "%s", name);
		if (observer)
			observer(tid, e->name);
	}
	pthread_mutex_unlock(&lock);
}

void cp_names_inherit(pid_t tid, pid_t parent)
{
	char name[CP_NAME_MAX];
	if (cp_names_get(parent, name))
		cp_names_set(tid, name);
}

int cp_names_get(pid_t tid, char *out)
{
	char path[64];
	out[0] = '\0';
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, out, CP_NAME_MAX - 1);
		close(fd);
		if (n > 0) {
			out[n] = '\0';
			out[strcspn(out, "\n")] = '\0';
			cp_names_set(tid, out);
			return 1;
		}
		out[0] = '\0';
	}
	pthread_mutex_lock(&lock);
	int found = 0;
	if (cap) {
		size_t i = slot(tid, cap);
		while (tab[i].tid && tab[i].tid != tid)
			i = (i + 1) & (cap - 1);
		if (tab[i].tid && tab[i].name[0]) {
			memcpy(out, tab[i].name, CP_NAME_MAX);
			found = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}
