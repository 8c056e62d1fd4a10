/*
 * compare.c -- the tests of `cpuprof diff`: each function's flat and cum
 * share in BASE and in NEW, the z test of its change, Holm's correction
 * over the family of those that could change by the threshold, and the
 * verdict (beyond the noise and at least the threshold); the same for
 * each path of the call tree, a family of its own that only the flame
 * graph shows; and the smallest change the samples can detect.  The
 * statistics are report's (shares.h); the value compared is the sampled
 * one (diff.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "diff.h"

/* Whether frames of kind k are cpuprof's accounting rather than the
 * program's functions: [lost], [truncated], [unsampled: ...] and
 * [profiler: ...].  They say how the profile was taken, not what the
 * program did: never tested (and all but [truncated], which tops stacks
 * of the program's frames, are left out: diff.h). */
static bool accounting(enum frame_kind k)
{
	return k == FRAME_LOST || k == FRAME_TRUNCATED || k == FRAME_UNSAMPLED ||
	       k == FRAME_PROFILER;
}

/* Tests measure m of frame f (sums a and b set): it joins the family if
 * it could change by the threshold and is no accounting frame. */
static void test(struct diff_measure *m, const struct diff *d, uint32_t f)
{
	share_test(&m->a, &d->a, &m->b, &d->b, &m->c);
	m->padj = 1;
	m->tested = !accounting(d->ss->frames[f].kind) &&
		    share_testable(&m->c, &d->a, &d->b, d->o.threshold);
}

/* Holm's p-values of the m tests p[0..m) into padj[], and their
 * verdicts into verdict[]: +1 or -1 (the sign of delta[]) where the
 * test rejects at alpha and the change is at least the threshold, else
 * 0.  Returns 0, or -1 if out of memory. */
static int decide(const double *p, const double *delta, size_t m,
		  const struct diff *d, double *padj, int *verdict)
{
	if (share_holm(p, m, padj) < 0)
		return -1;
	for (size_t j = 0; j < m; j++) {
		/* A little slack below the threshold: a change of exactly
		 * the threshold counts, whatever the shares' rounding. */
		verdict[j] = padj[j] <= d->o.alpha &&
					     fabs(delta[j]) >= d->o.threshold - 1e-12
				     ? (delta[j] > 0 ? 1 : -1)
				     : 0;
	}
	return 0;
}

/* A family of tests, gathered one by one (the p-value and the change of
 * each, and where it came from), then corrected together (Holm) and
 * judged: padj and verdict, in the order they were added. */
struct family {
	double *p, *delta;
	size_t *which;
	size_t n, capp, capdelta, capwhich;
	double *padj;
	int *verdict;
};

/* Adds a test of p-value p and change delta, from `which`.  Returns 0,
 * or -1 if out of memory. */
static int family_add(struct family *f, size_t which, double p, double delta)
{
	if (cp_array_grow((void **)&f->p, &f->capp, f->n + 1, sizeof *f->p, 256) ||
	    cp_array_grow((void **)&f->delta, &f->capdelta, f->n + 1, sizeof *f->delta, 256) ||
	    cp_array_grow((void **)&f->which, &f->capwhich, f->n + 1, sizeof *f->which, 256))
		return -1;
	f->which[f->n] = which;
	f->delta[f->n] = delta;
	f->p[f->n++] = p;
	return 0;
}

/* Corrects and judges the family's tests.  Returns 0, or -1 if out of
 * memory. */
static int family_decide(struct family *f, const struct diff *d)
{
	f->padj = calloc(f->n ? f->n : 1, sizeof *f->padj);
	f->verdict = calloc(f->n ? f->n : 1, sizeof *f->verdict);
	if (!f->padj || !f->verdict)
		return -1;
	return decide(f->p, f->delta, f->n, d, f->padj, f->verdict);
}

static void family_free(struct family *f)
{
	free(f->p);
	free(f->delta);
	free(f->which);
	free(f->padj);
	free(f->verdict);
}

/* Holm over the tested measures of ms[0..n), then their verdicts.
 * Returns the number tested, or -1 if out of memory. */
static long correct(struct diff_measure **ms, size_t n, const struct diff *d)
{
	struct family f = { 0 };
	long rc = -1;
	for (size_t i = 0; i < n; i++)
		if (ms[i]->tested && family_add(&f, i, ms[i]->c.p, ms[i]->c.b - ms[i]->c.a) < 0)
			goto out;
	if (family_decide(&f, d) < 0)
		goto out;
	for (size_t j = 0; j < f.n; j++) {
		ms[f.which[j]]->padj = f.padj[j];
		ms[f.which[j]]->verdict = f.verdict[j];
	}
	rc = (long)f.n;
out:
	family_free(&f);
	return rc;
}

/* The largest change of a row, among its measures with a verdict if
 * `changed`, else among both. */
static double largest(const struct diff_row *r, bool changed)
{
	double x = 0;
	const struct diff_measure *m[2] = { &r->flat, &r->cum };
	for (int i = 0; i < 2; i++)
		if (!changed || m[i]->verdict) {
			double v = fabs(m[i]->c.b - m[i]->c.a);
			if (v > x)
				x = v;
		}
	return x;
}

/* qsort_r order of rows: those with a verdict first, each group by its
 * largest change, then growth before shrinkage, then by name. */
static int by_change(const void *pa, const void *pb, void *arg)
{
	const struct diff_row *x = pa, *y = pb;
	const struct stackset *ss = arg;
	bool cx = x->flat.verdict || x->cum.verdict, cy = y->flat.verdict || y->cum.verdict;
	if (cx != cy)
		return cx ? -1 : 1;
	double dx = largest(x, cx), dy = largest(y, cy);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	double gx = x->cum.c.b - x->cum.c.a, gy = y->cum.c.b - y->cum.c.a;
	if (gx != gy)
		return gx > gy ? -1 : 1;
	return strcmp(ss->frames[x->frame].label, ss->frames[y->frame].label);
}

/* The functions' family. */
static int compare_functions(struct diff *d)
{
	const struct stackset *ss = d->ss;
	size_t nf = ss->nframes ? ss->nframes : 1;
	struct share_sum *fa = calloc(nf, sizeof *fa), *ca = calloc(nf, sizeof *ca);
	struct share_sum *fb = calloc(nf, sizeof *fb), *cb = calloc(nf, sizeof *cb);
	struct diff_measure **ms = NULL;
	int rc = -1;
	d->rows = calloc(nf, sizeof *d->rows);
	if (!fa || !ca || !fb || !cb || !d->rows ||
	    share_frames(ss, 0, d->nbase, fa, ca) < 0 ||
	    share_frames(ss, d->nbase, ss->nsamples, fb, cb) < 0)
		goto out;
	for (size_t i = 0; i < ss->nframes; i++) {
		enum frame_kind k = ss->frames[i].kind;
		if (k == FRAME_PROCESS || k == FRAME_THREAD)
			continue; /* grouping frames are no functions */
		if (ca[i].w <= 0 && cb[i].w <= 0)
			continue;
		struct diff_row *r = &d->rows[d->nrows++];
		r->frame = (uint32_t)i;
		r->flat.a = fa[i];
		r->flat.b = fb[i];
		r->cum.a = ca[i];
		r->cum.b = cb[i];
		test(&r->flat, d, r->frame);
		test(&r->cum, d, r->frame);
	}
	ms = malloc((2 * d->nrows + 1) * sizeof *ms);
	if (!ms)
		goto out;
	for (size_t i = 0; i < d->nrows; i++) {
		ms[2 * i] = &d->rows[i].flat;
		ms[2 * i + 1] = &d->rows[i].cum;
	}
	long m = correct(ms, 2 * d->nrows, d);
	if (m < 0)
		goto out;
	d->ntests = (size_t)m;
	for (size_t i = 0; i < d->nrows; i++)
		if (d->rows[i].flat.verdict || d->rows[i].cum.verdict)
			d->nchanged++;
	if (d->nrows > 1)
		qsort_r(d->rows, d->nrows, sizeof *d->rows, by_change, (void *)ss);
	rc = 0;
out:
	free(fa);
	free(ca);
	free(fb);
	free(cb);
	free(ms);
	return rc;
}

/* The paths' tests, gathered in one walk over the tree (share_walk). */
struct node_tests {
	struct diff *d;
	struct family f;
	size_t capbased;
	int err;
};

/* Keeps BASE's sums of node id for the page, and tests it if it is
 * testable: only the few nodes tested are gathered (a profile may have
 * millions of nodes); the rest cost no test. */
static void test_node(uint32_t id, const struct share_sum s[2], void *arg)
{
	struct node_tests *nt = arg;
	struct diff *d = nt->d;
	struct share_change c = { .pooled = share_pooled(&s[0], &d->a, &s[1], &d->b) };
	/* The page draws only where NEW has value; BASE's sums are 0 where
	 * its w is (q is a sum of w * w / k). */
	if (s[1].w > 0 && s[0].w > 0) {
		if (cp_array_grow((void **)&d->based, &nt->capbased, d->nbased + 1, sizeof *d->based, 256)) {
			nt->err = 1;
			return;
		}
		d->based[d->nbased++] = (struct diff_node){ id, s[0].w, s[0].q };
		d->based_bit[id / 8] |= (uint8_t)(1u << id % 8);
	}
	if (id == 0 || accounting(d->ss->frames[d->t.nodes[id].frame].kind) ||
	    !share_testable(&c, &d->a, &d->b, d->o.threshold))
		return;
	share_test(&s[0], &d->a, &s[1], &d->b, &c);
	if (family_add(&nt->f, id, c.p, c.b - c.a) < 0)
		nt->err = 1;
}

/* qsort order of BASE's sums by node. */
static int by_based(const void *x, const void *y)
{
	uint32_t a = ((const struct diff_node *)x)->id, b = ((const struct diff_node *)y)->id;
	return (a > b) - (a < b);
}

/* qsort_r order of a family's tests by their nodes. */
static int by_node(const void *x, const void *y, void *arg)
{
	const size_t *which = arg;
	size_t a = which[*(const size_t *)x], b = which[*(const size_t *)y];
	return (a > b) - (a < b);
}

/* The paths' family. */
static int compare_nodes(struct diff *d)
{
	struct calltree *t = &d->t;
	struct node_tests nt = { .d = d };
	size_t *order = NULL;
	int rc = -1;
	d->based_bit = calloc(t->n / 8 + 1, sizeof *d->based_bit);
	d->status = malloc(t->n * sizeof *d->status);
	if (!d->based_bit || !d->status)
		goto out;
	memset(d->status, 2, t->n * sizeof *d->status);
	if (share_walk(t, d->ss, d->nbase, test_node, &nt) < 0 || nt.err || family_decide(&nt.f, d) < 0)
		goto out;
	if (d->nbased > 1)
		qsort(d->based, d->nbased, sizeof *d->based, by_based);
	size_t m = nt.f.n ? nt.f.n : 1;
	order = malloc(m * sizeof *order);
	d->tested = malloc(m * sizeof *d->tested);
	d->padj = malloc(m * sizeof *d->padj);
	if (!order || !d->tested || !d->padj)
		goto out;
	for (size_t j = 0; j < nt.f.n; j++)
		order[j] = j;
	qsort_r(order, nt.f.n, sizeof *order, by_node, nt.f.which);
	for (size_t j = 0; j < nt.f.n; j++) {
		size_t k = order[j];
		d->tested[j] = (uint32_t)nt.f.which[k];
		d->padj[j] = nt.f.padj[k];
		d->status[nt.f.which[k]] = (int8_t)nt.f.verdict[k];
	}
	d->nnode_tests = nt.f.n;
	rc = 0;
out:
	free(order);
	family_free(&nt.f);
	return rc;
}

void diff_node_base(const struct diff *d, uint32_t id, double *w, double *q)
{
	*w = *q = 0;
	if (!(d->based_bit[id / 8] & 1u << id % 8))
		return;
	size_t lo = 0, hi = d->nbased;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->based[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < d->nbased && d->based[lo].id == id) {
		*w = d->based[lo].w;
		*q = d->based[lo].q;
	}
}

double diff_node_padj(const struct diff *d, uint32_t id)
{
	size_t lo = 0, hi = d->nnode_tests;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->tested[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nnode_tests && d->tested[lo] == id ? d->padj[lo] : 1;
}

/* Leaves out of ss the samples diff_compare() leaves out (diff.h),
 * summing their values into left[0] (BASE's) and left[1] (NEW's). */
static void leave_out(struct stackset *ss, size_t nbase, double left[2])
{
	left[0] = left[1] = 0;
	for (size_t i = 0; i < ss->nsamples; i++) {
		struct stack_sample *s = &ss->samples[i];
		enum frame_kind leaf = s->n ? ss->frames[ss->stack_frames[s->off + s->n - 1]].kind
					   : FRAME_NOSTACK;
		if (s->count > 0 && leaf != FRAME_LOST && leaf != FRAME_UNSAMPLED &&
		    leaf != FRAME_PROFILER)
			continue;
		if (s->value > 0)
			left[i >= nbase] += (double)s->value;
		s->value = 0;
		s->count = 0;
	}
}

int diff_compare(struct diff *d, struct stackset *ss, size_t nbase,
		 const struct diff_options *o)
{
	memset(d, 0, sizeof *d);
	d->ss = ss;
	d->nbase = nbase;
	d->o = *o;
	double left[2];
	leave_out(ss, nbase, left);
	d->left_a = left[0];
	d->left_b = left[1];
	share_base_of(&d->a, ss, 0, nbase);
	share_base_of(&d->b, ss, nbase, ss->nsamples);
	if (compare_functions(d) < 0 ||
	    ((o->tree || o->paths) && calltree_build(&d->t, ss) < 0) ||
	    (o->paths && compare_nodes(d) < 0))
		return -1;
	size_t m = d->ntests ? d->ntests : 1;
	d->mde50 = share_mde(&d->a, &d->b, 0.5, o->alpha, m, DIFF_POWER);
	d->mde10 = share_mde(&d->a, &d->b, 0.1, o->alpha, m, DIFF_POWER);
	d->mde1 = share_mde(&d->a, &d->b, 0.01, o->alpha, m, DIFF_POWER);
	d->draws_needed = share_draws_needed(o->threshold, o->alpha, m, DIFF_POWER);
	d->too_few = o->threshold > 0 && d->mde50 > o->threshold;
	return 0;
}

void diff_free(struct diff *d)
{
	free(d->rows);
	free(d->based);
	free(d->based_bit);
	free(d->status);
	free(d->tested);
	free(d->padj);
	calltree_free(&d->t);
	memset(d, 0, sizeof *d);
}

void diff_too_few(char *buf, size_t len, const struct diff *d)
{
	buf[0] = '\0';
	if (!d->too_few)
		return;
	snprintf(buf, len, "too few samples to detect a change of %gpp: with "
		 "%.0f and %.0f effective samples a change below %.2fpp of a "
		 "function near 50%% can go unseen (80%% power); about %.0f "
		 "samples in each profile would detect %gpp, or raise --threshold",
		 100 * d->o.threshold, d->a.neff, d->b.neff, 100 * d->mde50,
		 ceil(d->draws_needed), 100 * d->o.threshold);
}
