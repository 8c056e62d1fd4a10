/*
 * shares.c -- the sampling noise of a share, its interval, and the test
 * of a change between two profiles (the method is in shares.h).  Sums
 * are doubles: a hostile profile's values may be anything, and nothing
 * here may overflow or divide by zero into a NaN that reaches a report.
 */
#include "shares.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The weight and the draws of sample s. */
static void weigh(const struct stack_sample *s, double *w, double *k)
{
	*w = s->value > 0 ? (double)s->value : 0;
	*k = s->count > 0 ? (double)s->count : 0;
}

/* Adds a sample of weight w and k draws to *s. */
static void add(struct share_sum *s, double w, double k)
{
	s->w += w;
	if (k > 0) {
		s->q += w * w / k;
		s->n += k;
	}
}

void share_base_of(struct share_base *b, const struct stackset *ss,
		   size_t first, size_t end)
{
	memset(b, 0, sizeof *b);
	for (size_t i = first; i < end && i < ss->nsamples; i++) {
		double w, k;
		weigh(&ss->samples[i], &w, &k);
		b->w += w;
		b->n += k;
		if (k > 0) {
			b->ws += w;
			b->q += w * w / k;
		}
	}
	b->neff = b->q > 0 ? b->ws * b->ws / b->q : 0;
}

int share_frames(const struct stackset *ss, size_t first, size_t end,
		 struct share_sum *flat, struct share_sum *cum)
{
	size_t nf = ss->nframes;
	memset(flat, 0, nf * sizeof *flat);
	memset(cum, 0, nf * sizeof *cum);
	size_t *stamp = calloc(nf ? nf : 1, sizeof *stamp);
	if (!stamp)
		return -1;
	for (size_t i = first; i < end && i < ss->nsamples; i++) {
		const struct stack_sample *smp = &ss->samples[i];
		double w, k;
		weigh(smp, &w, &k);
		for (uint32_t j = 0; j < smp->n; j++) {
			uint32_t f = ss->stack_frames[smp->off + j];
			if (j + 1 == smp->n)
				add(&flat[f], w, k);
			if (stamp[f] != i + 1) {
				stamp[f] = i + 1;
				add(&cum[f], w, k);
			}
		}
	}
	free(stamp);
	return 0;
}

int share_walk(const struct calltree *t, const struct stackset *ss, size_t nbase,
	       void (*visit)(uint32_t id, const struct share_sum s[2], void *arg), void *arg)
{
	/* Each leaf's own samples, in their order: by[end[l]..end[l + 1])
	 * (calltree_leaf_index()). */
	size_t nl = t->nleaves, nlev = 0, caplev = 64, wide = 1;
	uint32_t *end = calloc(nl + 2, sizeof *end), *by = malloc((ss->nsamples ? ss->nsamples : 1) * sizeof *by);
	uint32_t *lev = malloc(caplev * sizeof *lev);
	struct share_sum(*below)[2] = NULL, (*cur)[2] = NULL;
	int rc = -1;
	if (!end || !by || !lev)
		goto out;
	for (size_t i = 0; i < ss->nsamples; i++)
		end[calltree_leaf_index(t, t->leaf[i]) + 2]++;
	for (size_t l = 0; l < nl; l++)
		end[l + 2] += end[l + 1];
	for (size_t i = 0; i < ss->nsamples; i++)
		by[end[calltree_leaf_index(t, t->leaf[i]) + 1]++] = (uint32_t)i;
	/* The levels: nodes are made level by level, so the nodes at depth
	 * d are [lev[d], lev[d + 1]), and a level's children are the next
	 * level, in the order of their parents. */
	lev[nlev++] = 0;
	for (uint32_t lo = 0, hi = t->n ? 1 : 0; lo < hi;) {
		if (nlev + 1 >= caplev) {
			uint32_t *g = realloc(lev, 2 * caplev * sizeof *lev);
			if (!g)
				goto out;
			lev = g;
			caplev *= 2;
		}
		lev[nlev++] = hi;
		wide = hi - lo > wide ? hi - lo : wide;
		uint32_t next = calltree_child_end(t, hi - 1);
		lo = hi;
		hi = next > hi ? next : hi;
	}
	below = calloc(wide, sizeof *below);
	cur = calloc(wide, sizeof *cur);
	if (!below || !cur)
		goto out;
	/* Bottom-up, a level at a time: each node's own samples, then its
	 * children's sums, the last child first. */
	for (size_t d = nlev - 1; d-- > 0;) {
		uint32_t lo = lev[d], hi = lev[d + 1], blo = lev[d + 1];
		for (uint32_t id = lo; id < hi; id++) {
			struct share_sum *s = cur[id - lo];
			memset(s, 0, 2 * sizeof *s);
			long l = calltree_leaf_index(t, id);
			for (uint32_t j = l >= 0 ? end[l] : 0; l >= 0 && j < end[l + 1]; j++) {
				double w, k;
				weigh(&ss->samples[by[j]], &w, &k);
				add(&s[by[j] >= nbase], w, k);
			}
			for (uint32_t c = calltree_child_end(t, id); c-- > calltree_child(t, id);)
				for (int k = 0; k < 2; k++) {
					s[k].w += below[c - blo][k].w;
					s[k].q += below[c - blo][k].q;
					s[k].n += below[c - blo][k].n;
				}
			visit(id, s, arg);
		}
		struct share_sum(*swap)[2] = below;
		below = cur;
		cur = swap;
	}
	rc = 0;
out:
	free(end);
	free(by);
	free(lev);
	free(below);
	free(cur);
	return rc;
}

void share_nodes_self_q(const struct calltree *t, const struct stackset *ss,
			size_t first, size_t end, double *q)
{
	memset(q, 0, t->nleaves * sizeof *q);
	for (size_t i = first; i < end && i < ss->nsamples; i++) {
		double w, k;
		weigh(&ss->samples[i], &w, &k);
		if (k > 0)
			q[calltree_leaf_index(t, t->leaf[i])] += w * w / k;
	}
}

double share_of(const struct share_sum *s, const struct share_base *b)
{
	if (!(b->w > 0))
		return 0;
	double r = s->w / b->w;
	return r < 0 ? 0 : r > 1 ? 1 : r;
}

/* The delta method's variance of the share r of sums s in b. */
static double delta_var(const struct share_sum *s, const struct share_base *b,
			double r)
{
	double v = (s->q * (1 - 2 * r) + r * r * b->q) / (b->w * b->w);
	if (b->n > 1)
		v *= b->n / (b->n - 1);
	return v > 0 ? v : 0;
}

double share_var(const struct share_sum *s, const struct share_base *b)
{
	if (!(b->neff > 0) || !(b->w > 0))
		return INFINITY;
	double r = share_of(s, b);
	double bin = r * (1 - r) / b->neff, d = delta_var(s, b, r);
	return d > bin ? d : bin;
}

void share_interval(const struct share_sum *s, const struct share_base *b,
		    double z, double *lo, double *hi)
{
	double r = share_of(s, b), v = share_var(s, b);
	*lo = 0;
	*hi = 1;
	/* Nothing sampled, all measured (off-CPU time): the share is what
	 * it is. */
	if (!(b->ws > 0) && b->w > 0) {
		*lo = *hi = r;
		return;
	}
	if (!isfinite(v))
		return;
	/* The share's effective draws: neff, or fewer where the delta
	 * method's variance is the larger. */
	double n = b->neff;
	if (r > 0 && r < 1 && v > 0)
		n = r * (1 - r) / v;
	double z2 = z * z / n;
	double mid = (r + z2 / 2) / (1 + z2);
	double half = z * sqrt(r * (1 - r) / n + z2 / (4 * n)) / (1 + z2);
	*lo = mid - half < 0 ? 0 : mid - half;
	*hi = mid + half > 1 ? 1 : mid + half;
	/* Wilson's interval always holds r; rounding must not say else. */
	if (*lo > r)
		*lo = r;
	if (*hi < r)
		*hi = r;
}

/* The variance of profile b's share of a frame if its share were r0,
 * the frame's draws a fraction pi0 of all, and its draws' and the
 * others' squared weights sf and so times the profile's mean one: the
 * delta method's n/(n-1) sum of w^2 (x - r0)^2 / (sum of w)^2 with the
 * sums expected, not observed. */
static double h0_var(const struct share_base *b, double r0, double pi0,
		     double sf, double so)
{
	double msq = b->q / b->n;
	double v = b->n * msq * (pi0 * sf * (1 - r0) * (1 - r0) + (1 - pi0) * so * r0 * r0) /
		   (b->w * b->w);
	if (b->n > 1)
		v *= b->n / (b->n - 1);
	return v > 0 ? v : 0;
}

double share_pooled(const struct share_sum *sa, const struct share_base *ba, const struct share_sum *sb,
		    const struct share_base *bb)
{
	if (!(ba->neff > 0) || !(bb->neff > 0) || !(ba->w > 0) || !(bb->w > 0))
		return 0;
	return (ba->neff * share_of(sa, ba) + bb->neff * share_of(sb, bb)) / (ba->neff + bb->neff);
}

void share_test(const struct share_sum *sa, const struct share_base *ba,
		const struct share_sum *sb, const struct share_base *bb,
		struct share_change *c)
{
	memset(c, 0, sizeof *c);
	c->a = share_of(sa, ba);
	c->b = share_of(sb, bb);
	c->p = 1;
	if (!(ba->neff > 0) || !(bb->neff > 0) || !(ba->w > 0) || !(bb->w > 0))
		return;
	c->pooled = share_pooled(sa, ba, sb, bb);
	/* If nothing changed: the frame's draws are the same fraction of
	 * both profiles' draws, and its draws weigh the same relative to
	 * each profile's mean, as pooled over both. */
	double ma = ba->q / ba->n, mb = bb->q / bb->n;
	double k = sa->n + sb->n, n = ba->n + bb->n;
	double pi0 = k / n;
	double sf = k > 0 ? (sa->q / ma + sb->q / mb) / k : 1;
	double so = n > k ? ((ba->q - sa->q) / ma + (bb->q - sb->q) / mb) / (n - k) : 1;
	double h0 = h0_var(ba, c->pooled, pi0, sf, so) + h0_var(bb, c->pooled, pi0, sf, so);
	double delta = delta_var(sa, ba, c->a) + delta_var(sb, bb, c->b);
	double v = h0 > delta ? h0 : delta;
	double d = c->b - c->a;
	if (v > 0) {
		c->z = d / sqrt(v);
		c->p = erfc(fabs(c->z) / M_SQRT2);
	} else if (d != 0) {
		/* Neither profile has any noise here: only exact values. */
		c->z = d > 0 ? INFINITY : -INFINITY;
		c->p = 0;
	}
}

int share_testable(const struct share_change *c, const struct share_base *ba,
		   const struct share_base *bb, double thr)
{
	double sum = ba->neff + bb->neff;
	if (!(sum > 0) || !(c->pooled > 0))
		return 0;
	double wmin = (ba->neff < bb->neff ? ba->neff : bb->neff) / sum;
	return c->pooled >= wmin * thr;
}

/* qsort_r order of indexes into p: ascending p. */
static int by_p(const void *a, const void *b, void *arg)
{
	const double *p = arg;
	double x = p[*(const size_t *)a], y = p[*(const size_t *)b];
	return x < y ? -1 : x > y ? 1 : 0;
}

int share_holm(const double *p, size_t m, double *padj)
{
	size_t *order = malloc((m ? m : 1) * sizeof *order);
	if (!order)
		return -1;
	for (size_t i = 0; i < m; i++)
		order[i] = i;
	qsort_r(order, m, sizeof *order, by_p, (void *)p);
	/* The i-th smallest is multiplied by m - i, and the adjusted values
	 * made monotone: a hypothesis is rejected only if all the smaller
	 * ones are. */
	double run = 0;
	for (size_t i = 0; i < m; i++) {
		double v = p[order[i]] * (double)(m - i);
		if (v > 1 || isnan(v))
			v = 1;
		if (v < run)
			v = run;
		run = v;
		padj[order[i]] = v;
	}
	free(order);
	return 0;
}

double normal_upper_quantile(double p)
{
	/* Bisection on erfc: slow next to a rational approximation, but
	 * plainly right to the last bit, and called a few times a report. */
	double lo = -40, hi = 40;
	for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / M_SQRT2) / 2 > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* The sum of the two quantiles of a test of m at alpha with `power`. */
static double z_sum(double alpha, size_t m, double power)
{
	return normal_upper_quantile(alpha / (2.0 * (double)(m ? m : 1))) +
	       normal_upper_quantile(1 - power);
}

double share_mde(const struct share_base *ba, const struct share_base *bb,
		 double share, double alpha, size_t m, double power)
{
	if (!(ba->neff > 0) || !(bb->neff > 0))
		return INFINITY;
	return z_sum(alpha, m, power) *
	       sqrt(share * (1 - share) * (1 / ba->neff + 1 / bb->neff));
}

double share_draws_needed(double thr, double alpha, size_t m, double power)
{
	double z = z_sum(alpha, m, power);
	return thr > 0 ? 2 * z * z * 0.25 / (thr * thr) : INFINITY;
}
