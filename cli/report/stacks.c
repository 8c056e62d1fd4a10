/*
 * stacks.c -- merges the profiles `cpuprof report` reads into one set of
 * root-first stacks of interned frames, and aggregates them into a call
 * tree (see stacks.h).  The work is linear in the profiles' frames, which
 * the reader bounds by the input's size (profile.h).
 */
#include "stacks.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/error.h"
#include "format.h"
#include "symbolize/jit.h"

static const char *const kind_names[FRAME_KINDS] = {
	[FRAME_FUNCTION] = "function",   [FRAME_INLINED] = "inlined",
	[FRAME_ADDRESS] = "address",     [FRAME_LOST] = "lost",
	[FRAME_UNSAMPLED] = "unsampled", [FRAME_PROFILER] = "profiler",
	[FRAME_TRUNCATED] = "truncated", [FRAME_NOSTACK] = "pseudo",
	[FRAME_WAITING] = "waiting",     [FRAME_PROCESS] = "process",
	[FRAME_THREAD] = "thread",       [FRAME_JIT] = "jit",
	[FRAME_KERNEL] = "kernel",
};

const char *frame_kind_name(enum frame_kind k)
{
	return k < FRAME_KINDS ? kind_names[k] : "?";
}

const char *frame_kind_mark(enum frame_kind k)
{
	return k == FRAME_INLINED ? " (inlined)" : k == FRAME_JIT ? " [jit]" : k == FRAME_KERNEL ? " [k]" : "";
}

/* ---- frames ------------------------------------------------------------- */

/* Keeps s (malloc'd) to be freed with ss; returns s, or NULL (and frees s)
 * if out of memory. */
static char *own(struct stackset *ss, char *s)
{
	if (!s)
		return NULL;
	if (cp_array_grow((void **)&ss->priv_.owned, &ss->priv_.capowned, ss->priv_.nowned + 1,
			  sizeof *ss->priv_.owned, 64)) {
		free(s);
		return NULL;
	}
	ss->priv_.owned[ss->priv_.nowned++] = s;
	return s;
}

/* An owned copy of the printf-formatted text, or NULL. */
__attribute__((format(printf, 2, 3))) static char *
own_printf(struct stackset *ss, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return own(ss, s);
}

/* FNV-1a over a string, continuing from h. */
static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

static uint64_t frame_hash(const struct frame *f)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)f->kind;
	h = hash_str(h, f->name);
	h = hash_str(h, f->file);
	return (h ^ (uint64_t)f->line) * 1099511628211ull;
}

static bool frame_eq(const struct frame *a, const struct frame *b)
{
	return a->kind == b->kind && a->line == b->line &&
	       strcmp(a->name, b->name) == 0 && strcmp(a->file, b->file) == 0;
}

/* Doubles the frame hash (1 + frame index per slot, 0 empty). */
static int rehash(struct stackset *ss)
{
	size_t n = ss->priv_.nhash ? 2 * ss->priv_.nhash : 1024;
	size_t *h = calloc(n, sizeof *h);
	if (!h)
		return -1;
	for (size_t i = 0; i < ss->nframes; i++) {
		size_t j = frame_hash(&ss->priv_.frames[i]) & (n - 1);
		while (h[j])
			j = (j + 1) & (n - 1);
		h[j] = i + 1;
	}
	free(ss->priv_.hash);
	ss->priv_.hash = h;
	ss->priv_.nhash = n;
	return 0;
}

/* The index of the frame equal to *f, added if new (its label made then,
 * from f's fields and `lines`; and f->name copied if it is `temporary`);
 * -1 if out of memory. */
static long intern(struct stackset *ss, const struct frame *f, bool lines,
		   bool temporary)
{
	if (2 * (ss->nframes + 1) > ss->priv_.nhash && rehash(ss) < 0)
		return -1;
	size_t mask = ss->priv_.nhash - 1, j;
	for (j = frame_hash(f) & mask; ss->priv_.hash[j]; j = (j + 1) & mask)
		if (frame_eq(&ss->priv_.frames[ss->priv_.hash[j] - 1], f))
			return (long)(ss->priv_.hash[j] - 1);
	if (cp_array_grow((void **)&ss->priv_.frames, &ss->priv_.capframes, ss->nframes + 1, sizeof *ss->priv_.frames,
			  256))
		return -1;
	ss->frames = ss->priv_.frames;
	struct frame nf = *f;
	/* Code its JIT left unnamed is named "[jit]" (pprof_write.c), its
	 * own mark: not marked again. */
	const char *mark = f->kind == FRAME_JIT && !strcmp(f->name, CP_JIT_MAPPING) ? "" : frame_kind_mark(f->kind);
	if (temporary && !(nf.name = own(ss, strdup(f->name))))
		return -1;
	if (lines && *f->file && f->line > 0)
		nf.label = own_printf(ss, "%s %s:%" PRId64 "%s", nf.name, f->file,
				      f->line, mark);
	else if (lines && *f->file)
		nf.label = own_printf(ss, "%s %s%s", nf.name, f->file, mark);
	else if (*mark)
		nf.label = own_printf(ss, "%s%s", nf.name, mark);
	else
		nf.label = nf.name;
	if (!nf.label)
		return -1;
	ss->priv_.frames[ss->nframes] = nf;
	ss->priv_.hash[j] = ++ss->nframes;
	return (long)(ss->nframes - 1);
}

/* The Mapping of the kernel's functions, as cpuprof record --kernel and
 * perf's converters write it. */
#define KERNEL_MAPPING "[kernel.kallsyms]"

/* The kind of a pseudo-function cpuprof writes ("[lost]", ...): a name in
 * brackets with no source file. */
static enum frame_kind pseudo_kind(const char *name)
{
	if (strcmp(name, "[lost]") == 0)
		return FRAME_LOST;
	if (strncmp(name, "[unsampled", 10) == 0)
		return FRAME_UNSAMPLED;
	if (strncmp(name, "[profiler", 9) == 0)
		return FRAME_PROFILER;
	if (strcmp(name, "[truncated]") == 0)
		return FRAME_TRUNCATED;
	if (strcmp(name, "[waiting to run]") == 0)
		return FRAME_WAITING;
	return FRAME_NOSTACK;
}

/* The index of the frame of `line` of location l (of the location itself
 * when it has no lines, line NULL), `inlined` into the next line or not;
 * -1 if out of memory. */
static long line_frame(struct stackset *ss, const struct profile_location *l,
		       const struct profile_line *line, bool inlined,
		       bool lines)
{
	struct frame fr, *f = &fr;
	const struct profile_function *fn = line ? line->function : NULL;
	f->file = fn ? fn->filename : "";
	f->line = lines && line && line->line > 0 ? line->line : 0;
	f->start_line = fn && fn->start_line > 0 ? fn->start_line : 0;
	f->name = fn && *fn->name ? fn->name : fn && *fn->system_name ? fn->system_name : NULL;
	if (f->name) {
		if (l->mapping && !strcmp(l->mapping->filename, CP_JIT_MAPPING))
			f->kind = FRAME_JIT; /* named by the JIT (cpuprof's pprof_write.c) */
		else if (f->name[0] == '[' && !*f->file)
			f->kind = pseudo_kind(f->name);
		else if (l->mapping && strcmp(l->mapping->filename, KERNEL_MAPPING) == 0)
			f->kind = FRAME_KERNEL;
		else
			f->kind = inlined ? FRAME_INLINED : FRAME_FUNCTION;
		return intern(ss, f, lines, false);
	}
	/* No name: "[file]" for the base name of its mapped file (all such
	 * frames of one file become one, as in pprof), else its address. */
	const char *map = l->mapping ? l->mapping->filename : "";
	const char *base = strrchr(map, '/');
	base = base ? base + 1 : map;
	char name[512];
	f->kind = FRAME_ADDRESS;
	f->file = "";
	f->line = 0;
	f->start_line = 0;
	if (*base)
		snprintf(name, sizeof name, "[%s]", base);
	else
		snprintf(name, sizeof name, "0x%" PRIx64, l->address);
	f->name = name;
	return intern(ss, f, lines, true);
}

/* Appends frame index fi to the stacks' frame pool. */
static int push_frame(struct stackset *ss, long fi)
{
	if (fi < 0)
		return -1;
	if (cp_array_grow((void **)&ss->priv_.stack_frames, &ss->priv_.capstack, ss->priv_.nstack + 1,
			  sizeof *ss->priv_.stack_frames, 4096))
		return -1;
	ss->stack_frames = ss->priv_.stack_frames;
	ss->priv_.stack_frames[ss->priv_.nstack++] = (uint32_t)fi;
	return 0;
}

/* The grouping frame of a sample's labels strkey (a name) and numkey (a
 * number), e.g. "worker (tid 12)"; *has false if it has neither. */
static long group_frame(struct stackset *ss, const struct profile_sample *s,
			const char *strkey, const char *numkey,
			enum frame_kind kind, bool *has)
{
	const struct profile_label *str = profile_label(s, strkey);
	const struct profile_label *num = profile_label(s, numkey);
	*has = (str && *str->str) || num;
	if (!*has)
		return 0;
	char name[512];
	if (str && *str->str && num)
		snprintf(name, sizeof name, "%s (%s %" PRId64 ")", str->str,
			 numkey, num->num);
	else if (num)
		snprintf(name, sizeof name, "%s %" PRId64, numkey, num->num);
	else
		snprintf(name, sizeof name, "%s", str->str);
	struct frame f = { .name = name, .file = "", .kind = kind };
	return intern(ss, &f, false, true);
}

/* "type/unit,type/unit" of p's sample types into buf. */
static void describe_types(const struct profile *p, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < p->nsample_types && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s/%s", i ? "," : "",
				      p->sample_types[i].type,
				      p->sample_types[i].unit);
	if (p->nsample_types == 0)
		snprintf(buf, len, "none");
}

/* Fails unless p has the sample types and period type of `first`, the
 * stackset's first profile; the message says they cannot be `verb`ed. */
static int check_compatible(const struct profile *first, const char *first_name, const struct profile *p,
			    const char *name, const char *verb, char *err, size_t errlen)
{
	bool same = p->nsample_types == first->nsample_types;
	for (size_t k = 0; same && k < first->nsample_types; k++)
		same = strcmp(p->sample_types[k].type, first->sample_types[k].type) == 0 &&
		       strcmp(p->sample_types[k].unit, first->sample_types[k].unit) == 0;
	if (!same) {
		char a[256], b[256];
		describe_types(first, a, sizeof a);
		describe_types(p, b, sizeof b);
		return cp_why(err, errlen, "cannot %s %s and %s: their "
			    "sample types differ (%s; %s)", verb, first_name,
			    name, a, b);
	}
	if (strcmp(p->period_type.type, first->period_type.type) ||
	    strcmp(p->period_type.unit, first->period_type.unit))
		return cp_why(err, errlen, "cannot %s %s and %s: their "
			    "period types differ (%s/%s; %s/%s)",
			    verb, first_name, name, first->period_type.type,
			    first->period_type.unit,
			    p->period_type.type,
			    p->period_type.unit);
	return 0;
}

/* The frames of location l, root first, into the stacks' frame pool:
 * made once per location of p and copied after (memo[l's index] is 1 +
 * where in the pool they were first pushed, 0 until then), so that a
 * profile of many stacks over few locations hashes each frame's strings
 * once, not once per stack.  0, or -1 if out of memory. */
static int push_location(struct stackset *ss, const struct profile *p, const struct profile_location *l,
			 bool lines, size_t *memo)
{
	size_t i = (size_t)(l - p->locations), n = l->nlines ? l->nlines : 1;
	if (memo && i < p->nlocations && memo[i]) {
		if (cp_array_grow((void **)&ss->priv_.stack_frames, &ss->priv_.capstack, ss->priv_.nstack + n,
				  sizeof *ss->priv_.stack_frames, 4096))
			return -1;
		ss->stack_frames = ss->priv_.stack_frames;
		memcpy(ss->priv_.stack_frames + ss->priv_.nstack, ss->priv_.stack_frames + memo[i] - 1,
		       n * sizeof *ss->priv_.stack_frames);
		ss->priv_.nstack += n;
		return 0;
	}
	size_t at = ss->priv_.nstack;
	if (l->nlines == 0 && push_frame(ss, line_frame(ss, l, NULL, false, lines)) < 0)
		return -1;
	for (size_t k = l->nlines; k-- > 0;)
		if (push_frame(ss, line_frame(ss, l, &l->lines[k], k + 1 < l->nlines, lines)) < 0)
			return -1;
	if (memo && i < p->nlocations)
		memo[i] = at + 1;
	return 0;
}

/* Appends the samples of p to ss, counting value vi, with the number of
 * samples each stands for from value ci (1 each if ci is negative). */
static int add_profile(struct stackset *ss, const struct profile *p,
		       size_t vi, int ci, const struct stack_options *o)
{
	size_t need = ss->nsamples + p->nsamples;
	struct stack_sample *grown = realloc(ss->samples, (need ? need : 1) * sizeof *grown);
	if (!grown)
		return -1;
	ss->samples = grown;
	/* Without it (out of memory) each location is made each time. */
	size_t *memo = calloc(p->nlocations ? p->nlocations : 1, sizeof *memo);
	int rc = -1;
	for (size_t s = 0; s < p->nsamples; s++) {
		const struct profile_sample *smp = &p->samples[s];
		size_t off = ss->priv_.nstack;
		bool has;
		if (o->group != GROUP_NONE) {
			long g = group_frame(ss, smp, "process", "pid",
					     FRAME_PROCESS, &has);
			if (has && push_frame(ss, g) < 0)
				goto done;
		}
		if (o->group == GROUP_THREAD) {
			long g = group_frame(ss, smp, "thread", "tid",
					     FRAME_THREAD, &has);
			if (has && push_frame(ss, g) < 0)
				goto done;
		}
		for (size_t j = smp->nlocations; j-- > 0;)
			if (push_location(ss, p, smp->locations[j], o->lines, memo) < 0)
				goto done;
		if (ss->priv_.nstack > UINT32_MAX)
			goto done;
		struct stack_sample *out = &ss->samples[ss->nsamples++];
		out->off = (uint32_t)off;
		out->n = (uint32_t)(ss->priv_.nstack - off);
		out->value = smp->values[vi];
		out->count = ci < 0 ? 1 : smp->values[ci];
		ss->total = sat_add(ss->total, out->value);
	}
	rc = 0;
done:
	free(memo);
	return rc;
}

int stackset_start(struct stackset *ss, const struct profile *p, const char *name,
		   const struct stack_options *o, char *err, size_t errlen)
{
	memset(ss, 0, sizeof *ss);
	ss->value_type = "";
	ss->unit = "";
	ss->priv_.o = *o;
	ss->priv_.first = p;
	ss->priv_.first_name = name;
	ss->priv_.vi = -1;
	if (p->nsample_types == 0)
		return 0; /* nothing to count; the formats say so */
	int vi = -1;
	/* "off-cpu", as the command line spells it, is off_cpu. */
	const char *value = o->value && strcmp(o->value, "off-cpu") == 0 ? "off_cpu" : o->value;
	if (value) {
		for (size_t k = 0; k < p->nsample_types && vi < 0; k++)
			if (strcmp(p->sample_types[k].type, value) == 0)
				vi = (int)k;
		if (vi < 0) {
			char a[256];
			describe_types(p, a, sizeof a);
			/* A profile that was asked for off-CPU time and has
			 * none says why in its comments. */
			const char *why = profile_comment(p, "off_cpu");
			bool off = strcmp(value, "off_cpu") == 0 || strcmp(value, "wall") == 0;
			if (off)
				return cp_why(err, errlen, "no sample type '%s' in %s (it has %s): %s", value,
					    name, a, why ? why : "it was not recorded with off-CPU time "
								"(cpuprof record --off-cpu, CPUPROF_OFF_CPU=1)");
			return cp_why(err, errlen, "no sample type '%s' in %s (it "
				    "has %s)", value, name, a);
		}
	} else {
		/* The profile's default, where it names one (wall in
		 * profiles of off-CPU time), else CPU, else the last. */
		const char *def = p->default_sample_type;
		for (size_t k = 0; def && *def && k < p->nsample_types && vi < 0; k++)
			if (strcmp(p->sample_types[k].type, def) == 0)
				vi = (int)k;
		if (vi < 0)
			vi = profile_find_sample_type(p, "cpu", "nanoseconds");
		if (vi < 0)
			vi = (int)p->nsample_types - 1;
	}
	ss->value_type = p->sample_types[vi].type;
	ss->unit = p->sample_types[vi].unit;
	ss->is_cpu = strcmp(ss->value_type, "cpu") == 0 &&
		     strcmp(ss->unit, "nanoseconds") == 0;
	ss->has_cpu = profile_find_sample_type(p, "cpu", "nanoseconds") >= 0;
	ss->what = ss->is_cpu ? "CPU" : strcmp(ss->value_type, "off_cpu") == 0 ? "off-CPU"
					 : strcmp(ss->value_type, "wall") == 0 ? "wall" : NULL;
	/* The sample types are the same in every profile. */
	ss->priv_.ci = profile_find_sample_type(p, "samples", "count");
	ss->has_count = ss->priv_.ci >= 0;
	ss->priv_.vi = vi;
	return 0;
}

int stackset_add(struct stackset *ss, const struct profile *p, const char *name, char *err, size_t errlen)
{
	const struct stack_options *o = &ss->priv_.o;
	if (check_compatible(ss->priv_.first, ss->priv_.first_name, p, name, o->verb ? o->verb : "merge", err,
			     errlen) < 0)
		return -1;
	for (size_t s = 0; s < p->nsamples && !ss->has_groups; s++) {
		const struct profile_sample *smp = &p->samples[s];
		ss->has_groups = profile_label(smp, "pid") || profile_label(smp, "tid") ||
				 profile_label(smp, "process") || profile_label(smp, "thread");
	}
	if (ss->priv_.vi < 0)
		return 0; /* no sample types: nothing to count */
	if (add_profile(ss, p, (size_t)ss->priv_.vi, ss->priv_.ci, o) < 0)
		return cp_why(err, errlen, "out of memory");
	return 0;
}

int stackset_build(struct stackset *ss, struct profile *const *p,
		   const char *const *names, size_t n,
		   const struct stack_options *o, char *err, size_t errlen)
{
	memset(ss, 0, sizeof *ss);
	ss->value_type = "";
	ss->unit = "";
	if (n == 0)
		return -1;
	/* Every profile's types are checked before p[0]'s value is looked
	 * for: profiles that cannot be merged say so first. */
	for (size_t i = 1; i < n; i++)
		if (check_compatible(p[0], names[0], p[i], names[i], o->verb ? o->verb : "merge", err, errlen) < 0)
			return -1;
	if (stackset_start(ss, p[0], names[0], o, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (stackset_add(ss, p[i], names[i], err, errlen) < 0)
			return -1;
	return 0;
}

void stackset_free(struct stackset *ss)
{
	for (size_t i = 0; i < ss->priv_.nowned; i++)
		free(ss->priv_.owned[i]);
	free(ss->priv_.owned);
	free(ss->priv_.frames);
	free(ss->priv_.stack_frames);
	free(ss->priv_.hash);
	free(ss->samples);
	memset(ss, 0, sizeof *ss);
}

/* ---- the call tree ------------------------------------------------------ */

/* The scratch of a build: the samples of a level's nodes, node by node
 * (in, out: those of the next level's), the frame at that depth of each
 * (fr, UINT32_MAX: its stack ends there), and per frame the child of the
 * node being split (slot, 0 none) and where its samples go next (at). */
struct split {
	uint32_t *in, *out, *fr, *slot, *at;
	size_t cap, nout;
};

/* The frame at depth `depth` of the level's samples in[0..n) into
 * fr[0..n), UINT32_MAX where a stack ends.  One pass over the level, the
 * memory of later samples fetched ahead: each sample's frames are far
 * from the next one's. */
static void level_frames(const struct stackset *ss, const uint32_t *in, size_t n, uint32_t depth, uint32_t *fr)
{
	enum { AHEAD = 64 };
	for (size_t k = 0; k < n; k++) {
		if (k + 2 * AHEAD < n)
			__builtin_prefetch(&ss->samples[in[k + 2 * AHEAD]]);
		if (k + AHEAD < n) {
			const struct stack_sample *a = &ss->samples[in[k + AHEAD]];
			if (a->n > depth)
				__builtin_prefetch(&ss->stack_frames[a->off + depth]);
		}
		const struct stack_sample *smp = &ss->samples[in[k]];
		fr[k] = smp->n == depth ? UINT32_MAX : ss->stack_frames[smp->off + depth];
	}
}

/* Makes the children of node id, whose m samples are in[0..m) (in their
 * order) and have frames fr[0..m) at the node's children's depth: a
 * child per frame, in the order the samples first have them, and their
 * samples appended to out, child by child.  Counts each child's samples
 * in its total (calltree_build sums the values later).  -1 if out of
 * memory. */
static int split_node(struct calltree *t, struct split *sp, const struct stackset *ss, uint32_t id,
		      const uint32_t *in, const uint32_t *fr, size_t m)
{
	uint32_t first = (uint32_t)t->n;
	int64_t self = 0;
	t->nodes[id].child = first;
	for (size_t k = 0; k < m; k++) {
		uint32_t f = fr[k];
		if (f == UINT32_MAX) {
			self = sat_add(self, ss->samples[in[k]].value);
			t->leaf[in[k]] = id;
			continue;
		}
		if (!sp->slot[f]) {
			if (t->n >= UINT32_MAX ||
			    cp_array_grow((void **)&t->nodes, &sp->cap, t->n + 1, sizeof *t->nodes, 1024))
				return -1;
			sp->slot[f] = (uint32_t)t->n;
			t->nodes[t->n++] = (struct cnode){ .frame = f };
		}
		t->nodes[sp->slot[f]].self++;
	}
	t->nodes[id].self = self;
	for (uint32_t c = first; c < t->n; c++) {
		sp->at[t->nodes[c].frame] = (uint32_t)sp->nout;
		sp->nout += (size_t)t->nodes[c].self;
		sp->slot[t->nodes[c].frame] = 0;
	}
	for (size_t k = 0; k < m; k++)
		if (fr[k] != UINT32_MAX)
			sp->out[sp->at[fr[k]]++] = in[k];
	return 0;
}

int calltree_build(struct calltree *t, const struct stackset *ss)
{
	/* The tree is as big as the frames of all stacks only when no two
	 * share a prefix: the nodes grow with it. */
	size_t ns = ss->nsamples ? ss->nsamples : 1;
	struct split sp = { .cap = 1024 };
	int rc = -1;
	memset(t, 0, sizeof *t);
	t->n = 1;
	t->nodes = calloc(sp.cap, sizeof *t->nodes);
	t->leaf = calloc(ns, sizeof *t->leaf);
	sp.in = malloc(ns * sizeof *sp.in);
	sp.out = malloc(ns * sizeof *sp.out);
	sp.fr = malloc(ns * sizeof *sp.fr);
	sp.slot = calloc(ss->nframes + 1, sizeof *sp.slot);
	sp.at = malloc((ss->nframes + 1) * sizeof *sp.at);
	if (!t->nodes || !t->leaf || !sp.in || !sp.out || !sp.fr || !sp.slot || !sp.at || ss->nsamples >= UINT32_MAX)
		goto out;
	for (size_t i = 0; i < ss->nsamples; i++)
		sp.in[i] = (uint32_t)i;
	t->nodes[0].self = (int64_t)ss->nsamples;
	/* Level by level: nodes [lo, hi) are those at depth `depth`. */
	for (size_t lo = 0, hi = 1, depth = 0; lo < hi; lo = hi, hi = t->n, depth++) {
		size_t pos = 0;
		level_frames(ss, sp.in, depth ? sp.nout : ss->nsamples, (uint32_t)depth, sp.fr);
		sp.nout = 0;
		for (size_t id = lo; id < hi; id++) {
			size_t m = (size_t)t->nodes[id].self;
			if (split_node(t, &sp, ss, (uint32_t)id, sp.in + pos, sp.fr + pos, m) < 0)
				goto out;
			pos += m;
		}
		uint32_t *swap = sp.in;
		sp.in = sp.out;
		sp.out = swap;
	}
	size_t words = t->n / 64 + 1;
	t->leafbits = calloc(words, sizeof *t->leafbits);
	t->leafrank = malloc(words * sizeof *t->leafrank);
	if (!t->leafbits || !t->leafrank)
		goto out;
	for (size_t i = 0; i < ss->nsamples; i++)
		t->leafbits[t->leaf[i] / 64] |= 1ull << (t->leaf[i] % 64);
	for (size_t w = 0; w < words; w++) {
		t->leafrank[w] = (uint32_t)t->nleaves;
		t->nleaves += (size_t)__builtin_popcountll(t->leafbits[w]);
	}
	rc = 0;
out:
	free(sp.in);
	free(sp.out);
	free(sp.fr);
	free(sp.slot);
	free(sp.at);
	if (rc < 0)
		calltree_free(t);
	return rc;
}

void calltree_totals(const struct calltree *t, int64_t *total)
{
	/* Children come after their parents: bottom-up, each node's
	 * children added last first. */
	for (size_t i = t->n; i-- > 0;) {
		total[i] = t->nodes[i].self;
		for (uint32_t k = calltree_child_end(t, (uint32_t)i); k-- > calltree_child(t, (uint32_t)i);)
			total[i] = sat_add(total[i], total[k]);
	}
}

void calltree_free(struct calltree *t)
{
	free(t->nodes);
	free(t->leaf);
	free(t->leafbits);
	free(t->leafrank);
	memset(t, 0, sizeof *t);
}

/* The children of node `node` into a new array *out (its length is the
 * return value; 0 and *out NULL when none), sorted by cmp; -1 if out of
 * memory. */
static long children(const struct calltree *t, uint32_t node, int (*cmp)(const void *, const void *, void *),
		     void *arg, uint32_t **out)
{
	uint32_t first = calltree_child(t, node), end = calltree_child_end(t, node);
	size_t n = end - first;
	*out = NULL;
	if (n == 0)
		return 0;
	uint32_t *a = malloc(n * sizeof *a);
	if (!a)
		return -1;
	/* The last made first: cmp's ties keep the order they always had. */
	for (size_t k = 0; k < n; k++)
		a[k] = end - 1 - (uint32_t)k;
	if (n > 1)
		qsort_r(a, n, sizeof *a, cmp, arg);
	*out = a;
	return (long)n;
}

/* One level of a walk: a node's sorted children and the next to visit. */
struct walk_level {
	uint32_t *kids;
	long n, next;
};

int calltree_walk(const struct calltree *t, int (*cmp)(const void *, const void *, void *),
		  int (*cut)(const uint32_t *kids, long n, size_t depth, void *arg),
		  void (*visit)(const uint32_t *path, size_t depth, void *arg), void *arg)
{
	size_t cap = 64, depth = 0;
	struct walk_level *st = malloc(cap * sizeof *st);
	uint32_t *path = malloc(cap * sizeof *path);
	int rc = -1;
	if (!st || !path)
		goto out;
	st[0].next = 0;
	if ((st[0].n = children(t, 0, cmp, arg, &st[0].kids)) < 0)
		goto out;
	depth = 1;
	while (depth > 0) {
		struct walk_level *lv = &st[depth - 1];
		if (lv->next >= lv->n || (cut && cut(lv->kids + lv->next, lv->n - lv->next, depth, arg))) {
			free(lv->kids);
			depth--;
			continue;
		}
		uint32_t id = lv->kids[lv->next++];
		path[depth - 1] = id;
		visit(path, depth, arg);
		if (depth == cap) {
			struct walk_level *ns = realloc(st, 2 * cap * sizeof *st);
			if (ns)
				st = ns;
			uint32_t *np = ns ? realloc(path, 2 * cap * sizeof *path) : NULL;
			if (!np)
				goto out;
			path = np;
			cap *= 2;
		}
		st[depth].next = 0;
		if ((st[depth].n = children(t, id, cmp, arg, &st[depth].kids)) < 0)
			goto out;
		depth++;
	}
	rc = 0;
out:
	for (size_t i = 0; st && i < depth; i++)
		free(st[i].kids);
	free(st);
	free(path);
	return rc;
}
