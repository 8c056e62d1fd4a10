/*
 * unit_calltree.c -- the call tree that report's tree, folded and html
 * formats and diff are made from (cli/report/stacks.c), and the walk that
 * sums both sides of a diff over it (share_walk, cli/report/shares.c), on
 * stacks made by hand and on random ones checked against a plain count:
 * a node per distinct path, siblings in the order the samples first pass
 * to them, each node's children after it and together, every sample's
 * leaf, self and total, and the leaves' numbers (calltree_leaf_index);
 * calltree_walk's order and depths; share_walk's
 * sums of each side and its order (children before their parent).
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "report/shares.h"
#include "report/stacks.h"

#define MAXS 4000
#define MAXD 12

static uint32_t frames_of[MAXS * MAXD];
static struct stack_sample samples[MAXS];

/* A stackset of n stacks: stack i is st[i][0..len[i]) with value v[i]
 * and count 1. */
static void make(struct stackset *ss, size_t n, const uint32_t (*st)[MAXD], const uint32_t *len,
		 const int64_t *v, size_t nframes)
{
	uint32_t off = 0;
	memset(ss, 0, sizeof *ss);
	for (size_t i = 0; i < n; i++) {
		samples[i] = (struct stack_sample){ .off = off, .n = len[i], .value = v[i], .count = 1 };
		memcpy(frames_of + off, st[i], len[i] * sizeof *frames_of);
		off += len[i];
	}
	ss->samples = samples;
	ss->nsamples = n;
	ss->stack_frames = frames_of;
	ss->nframes = nframes;
}

/* Each node's parent by the children's ranges (UINT32_MAX for the root
 * and for a node no range holds), for the tree last given to parents(). */
static uint32_t parent[MAXS * MAXD + 1];

static void parents(const struct calltree *t)
{
	for (uint32_t id = 0; id < t->n; id++)
		parent[id] = UINT32_MAX;
	for (uint32_t p = 0; p < t->n; p++)
		for (uint32_t c = calltree_child(t, p); c < calltree_child_end(t, p) && c < t->n; c++) {
			CHECK(parent[c] == UINT32_MAX, "node %u: two parents, %u and %u", c, parent[c], p);
			parent[c] = p;
		}
	for (uint32_t id = 1; id < t->n; id++)
		CHECK(parent[id] != UINT32_MAX, "node %u: no parent", id);
}

static uint32_t parent_of(const struct calltree *t, uint32_t id)
{
	(void)t;
	return parent[id];
}

/* Whether sample s's stack passes through node id (its path is a prefix
 * of the stack). */
static int passes(const struct calltree *t, const struct stackset *ss, size_t s, uint32_t id)
{
	uint32_t path[MAXD + 1], d = 0;
	for (uint32_t a = id; a != 0; a = parent_of(t, a))
		path[d++] = t->nodes[a].frame;
	const struct stack_sample *smp = &ss->samples[s];
	if (d > smp->n)
		return 0;
	for (uint32_t k = 0; k < d; k++)
		if (ss->stack_frames[smp->off + k] != path[d - 1 - k])
			return 0;
	return 1;
}

/* Every property of the header against a plain count. */
static int64_t totals[MAXS * MAXD + 1];

static void check_tree(const struct calltree *t, const struct stackset *ss)
{
	calltree_totals(t, totals);
	CHECK(t->n >= 1, "no root");
	CHECK_EQ(calltree_child(t, 0), 1);
	parents(t);
	for (uint32_t id = 0; id < t->n; id++) {
		uint32_t c0 = calltree_child(t, id), c1 = calltree_child_end(t, id);
		CHECK(c0 <= c1 && c1 <= t->n && (c0 > id || c0 == c1), "node %u: children [%u, %u)", id, c0, c1);
		if (id + 1 < t->n)
			CHECK_EQ(c1, calltree_child(t, id + 1));
		/* Siblings: distinct frames, in the order of their first sample. */
		size_t last_first = 0;
		for (uint32_t a = c0; a < c1; a++) {
			for (uint32_t b = c0; b < a; b++)
				CHECK(t->nodes[a].frame != t->nodes[b].frame, "siblings %u and %u: one frame", a, b);
			size_t first = ss->nsamples;
			for (size_t s = 0; s < ss->nsamples && first == ss->nsamples; s++)
				if (passes(t, ss, s, a))
					first = s;
			CHECK(first < ss->nsamples, "node %u: no sample passes", a);
			CHECK(a == c0 || first > last_first, "sibling %u before its elder's first sample", a);
			last_first = first;
		}
		if (id)
			CHECK(parent_of(t, id) < id, "node %u: no parent before it", id);
		int64_t self = 0, total = 0;
		for (size_t s = 0; s < ss->nsamples; s++) {
			if (t->leaf[s] == id)
				self += ss->samples[s].value;
			if (passes(t, ss, s, id))
				total += ss->samples[s].value;
		}
		CHECK(t->nodes[id].self == self, "node %u: self %lld, not %lld", id, (long long)t->nodes[id].self,
		      (long long)self);
		CHECK(totals[id] == total, "node %u: total %lld, not %lld", id, (long long)totals[id],
		      (long long)total);
	}
	/* The leaves (nodes some stack ends at) are numbered in node
	 * order; other nodes have no number. */
	size_t leaves = 0;
	for (uint32_t id = 0; id < t->n; id++) {
		int ends = 0;
		for (size_t s = 0; s < ss->nsamples && !ends; s++)
			ends = t->leaf[s] == id;
		long want = ends ? (long)leaves++ : -1;
		CHECK(calltree_leaf_index(t, id) == want, "node %u: leaf index %ld, not %ld", id,
		      calltree_leaf_index(t, id), want);
	}
	CHECK_EQ(t->nleaves, leaves);
	/* Each sample's leaf is the node of its whole stack. */
	for (size_t s = 0; s < ss->nsamples; s++) {
		uint32_t d = 0;
		for (uint32_t a = t->leaf[s]; a != 0; a = parent_of(t, a))
			d++;
		CHECK(d == ss->samples[s].n && passes(t, ss, s, t->leaf[s]), "sample %zu: leaf %u", s, t->leaf[s]);
	}
}

/* ---- calltree_walk: ascending node ids, each visit's path ------------ */

struct walk_log {
	const struct calltree *t;
	uint32_t seen[64];
	size_t n;
};

static int by_id(const void *a, const void *b, void *arg)
{
	(void)arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static void visit(const uint32_t *path, size_t depth, void *arg)
{
	struct walk_log *w = arg;
	for (size_t k = 1; k < depth; k++)
		CHECK_EQ(parent_of(w->t, path[k]), path[k - 1]);
	CHECK_EQ(parent_of(w->t, path[0]), 0);
	w->seen[w->n++] = path[depth - 1];
}

/* ---- share_walk --------------------------------------------------------- */

struct share_log {
	const struct calltree *t;
	const struct stackset *ss;
	size_t nbase;
	char *done;
	size_t n;
};

static void share_visit(uint32_t id, const struct share_sum s[2], void *arg)
{
	struct share_log *l = arg;
	for (uint32_t c = calltree_child(l->t, id); c < calltree_child_end(l->t, id); c++)
		CHECK(l->done[c], "node %u before its child %u", id, c);
	CHECK(!l->done[id], "node %u twice", id);
	l->done[id] = 1;
	l->n++;
	double w[2] = { 0, 0 }, n[2] = { 0, 0 };
	for (size_t i = 0; i < l->ss->nsamples; i++)
		if (passes(l->t, l->ss, i, id)) {
			w[i >= l->nbase] += (double)l->ss->samples[i].value;
			n[i >= l->nbase] += 1;
		}
	for (int k = 0; k < 2; k++) {
		CHECK(s[k].w == w[k], "node %u side %d: w %g, not %g", id, k, s[k].w, w[k]);
		CHECK(s[k].n == n[k], "node %u side %d: n %g, not %g", id, k, s[k].n, n[k]);
	}
}

static void check_shares(const struct calltree *t, const struct stackset *ss, size_t nbase)
{
	struct share_log l = { t, ss, nbase, calloc(t->n, 1), 0 };
	CHECK(l.done, "out of memory");
	CHECK_EQ(share_walk(t, ss, nbase, share_visit, &l), 0);
	CHECK_EQ(l.n, t->n);
	free(l.done);
}

/* Frames A B C D: the tree of the header's example. */
static void test_by_hand(void)
{
	enum { A, B, C, D };
	static const uint32_t st[][MAXD] = { { A, B, C }, { A, D }, { A, B }, { A, B, D }, { D }, { 0 }, { A, D } };
	static const uint32_t len[] = { 3, 2, 2, 3, 1, 0, 2 };
	static const int64_t v[] = { 1, 2, 4, 8, 16, 32, 64 };
	struct stackset ss;
	struct calltree t;
	make(&ss, 7, st, len, v, 4);
	CHECK_EQ(calltree_build(&t, &ss), 0);
	/* root; A, D; A's B, D; B's C, D */
	CHECK_EQ(t.n, 7);
	static const uint32_t frame[] = { 0, A, D, B, D, C, D };
	static const int64_t self[] = { 32, 0, 16, 4, 66, 1, 8 };
	static const int64_t total[] = { 127, 79, 16, 13, 66, 1, 8 };
	static const uint32_t leaf[] = { 5, 4, 3, 6, 2, 0, 4 };
	for (uint32_t i = 1; i < t.n; i++)
		CHECK(t.nodes[i].frame == frame[i], "node %u: frame %u", i, t.nodes[i].frame);
	calltree_totals(&t, totals);
	for (uint32_t i = 0; i < t.n; i++) {
		CHECK_EQ(t.nodes[i].self, self[i]);
		CHECK_EQ(totals[i], total[i]);
	}
	for (size_t s = 0; s < 7; s++)
		CHECK_EQ(t.leaf[s], leaf[s]);
	CHECK_EQ(calltree_child(&t, 0), 1);
	CHECK_EQ(calltree_child_end(&t, 0), 3);
	CHECK_EQ(calltree_child(&t, 1), 3);
	CHECK_EQ(calltree_child_end(&t, 1), 5);
	CHECK_EQ(calltree_child(&t, 2), calltree_child_end(&t, 2));
	CHECK_EQ(calltree_child(&t, 3), 5);
	CHECK_EQ(calltree_child_end(&t, 3), 7);
	check_tree(&t, &ss);
	CHECK_EQ(parent_of(&t, 6), 3);
	/* Depth first, children by id: A B C D(B) D(A) D. */
	struct walk_log w = { .t = &t };
	CHECK_EQ(calltree_walk(&t, by_id, NULL, visit, &w), 0);
	static const uint32_t order[] = { 1, 3, 5, 6, 4, 2 };
	CHECK_EQ(w.n, 6);
	for (size_t k = 0; k < 6; k++)
		CHECK_EQ(w.seen[k], order[k]);
	check_shares(&t, &ss, 3);
	calltree_free(&t);
}

/* Random stacks over few frames: much sharing, deep paths. */
static void test_random(unsigned seed, size_t n, uint32_t nframes)
{
	static uint32_t st[MAXS][MAXD], len[MAXS];
	static int64_t v[MAXS];
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		len[i] = (uint32_t)(rand() % MAXD);
		for (uint32_t k = 0; k < len[i]; k++)
			st[i][k] = (uint32_t)(rand() % (int)nframes);
		v[i] = rand() % 1000;
	}
	struct stackset ss;
	struct calltree t;
	make(&ss, n, (const uint32_t(*)[MAXD])st, len, v, nframes);
	CHECK_EQ(calltree_build(&t, &ss), 0);
	check_tree(&t, &ss);
	check_shares(&t, &ss, n / 3);
	calltree_free(&t);
}

int main(void)
{
	test_by_hand();
	test_random(1, 300, 3);
	test_random(2, 200, 40);
	test_random(3, 1, 2);
	struct stackset empty;
	struct calltree t;
	make(&empty, 0, NULL, NULL, NULL, 0);
	CHECK_EQ(calltree_build(&t, &empty), 0);
	CHECK_EQ(t.n, 1);
	parents(&t);
	check_shares(&t, &empty, 0);
	calltree_free(&t);
	printf("ok\n");
	return 0;
}
