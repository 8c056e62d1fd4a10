/*
 * unit_thread_names.c -- the names `cpuprof record` keeps for the threads
 * of each process it watches (cli/record/kernel_tables.c, proctree.c): a
 * new thread is named after its creator (cp_image_thread_name, then
 * kc_name_thread), and the creator's name is one of the image's own,
 * which growing the image's names moves.  Here the names grow past their
 * capacity again and again, each time with memory taken right after them
 * so that they must move, while every new thread is named after the
 * first: each must read "creator" (before, the name was read from the
 * array just freed: garbage, or record's crash with threads churning,
 * t_robust's "sleeps 4 2500 churn").  Also: the last name given to a tid
 * wins, and a thread never named has its process's.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "record/kernel_int.h"
#include "record/proctree.h"

int main(void)
{
	struct cp_image m;
	memset(&m, 0, sizeof m);
	strcpy(m.comm, "proc");
	CHECK(strcmp(cp_image_thread_name(&m, 7), "proc") == 0, "an unnamed thread: %s", cp_image_thread_name(&m, 7));
	kc_name_thread(&m, 100, "creator");
	void *blockers[64];
	size_t nb = 0;
	for (pid_t tid = 101; tid < 3000; tid++) {
		size_t cap = m.capnames;
		kc_name_thread(&m, tid, cp_image_thread_name(&m, 100));
		const char *got = cp_image_thread_name(&m, tid);
		CHECK(strcmp(got, "creator") == 0, "thread %d named after its creator: \"%.15s\"", (int)tid, got);
		/* Grown: take the memory after the names, so that the next
		 * growth moves them. */
		if (m.capnames != cap && nb < 64)
			CHECK((blockers[nb++] = malloc(64)) != NULL, "malloc");
	}
	CHECK(nb >= 5, "the names grew only %zu times", nb);
	kc_name_thread(&m, 100, "renamed");
	CHECK(strcmp(cp_image_thread_name(&m, 100), "renamed") == 0, "the last name of a tid");
	CHECK(strcmp(cp_image_thread_name(&m, 2999), "creator") == 0, "another thread renamed too");
	while (nb > 0)
		free(blockers[--nb]);
	free(m.names);
	printf("ok\n");
	return 0;
}
